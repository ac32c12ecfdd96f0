// <zklock/zklock.hpp>: the whole public API in one include (every header of include/zklock/;
// test/headers/check_headers.py fails when one is missing here). Including only the headers a
// file uses compiles faster; this one is for trying the library out and for small programs.
#pragma once

#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/export.hpp>
#include <zklock/lock_guard.hpp>
#include <zklock/lock_view.hpp>
#include <zklock/metrics.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/path.hpp>
#include <zklock/revoke.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/types.hpp>

// The harness's own plumbing, where a run that ends by an exception (a member that would not
// start again) must leave nothing behind: a child process not yet reaped is killed and reaped as
// it goes out of scope, and the io_context's thread is stopped and joined (a joinable
// std::thread's destructor would end the harness). No server, milliseconds.
#include "io_thread.hpp"
#include "processes.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

using namespace zklock::fault;
using namespace std::chrono_literals;

namespace {

// The process is gone: neither running nor a zombie waiting to be reaped.
bool gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

std::string log_path() { return (std::filesystem::temp_directory_path() / "zklock-processes-test.log").string(); }

}  // namespace

TEST_CASE("processes: a child not reaped is killed and reaped when it goes out of scope", "[unit][fault]") {
  pid_t pid = -1;
  {
    child c;
    c.pid = pid = spawn({"sleep", "60"}, log_path());
    REQUIRE(pid > 0);
    CHECK(::kill(pid, 0) == 0);
  }
  CHECK(gone(pid));
}

TEST_CASE("processes: a child moved to another owner is ended by that one only", "[unit][fault]") {
  std::optional<child> to;
  {
    child from;
    from.pid = spawn({"sleep", "60"}, log_path());
    REQUIRE(from.pid > 0);
    to.emplace(std::move(from));
  }
  CHECK(::kill(to->pid, 0) == 0);  // the moved-from child's end did not end it
  end_child(*to, 5s);
  CHECK(to->reaped);
  CHECK(gone(to->pid));
}

TEST_CASE("processes: an exception in an io_thread's scope stops and joins its thread", "[unit][fault]") {
  boost::asio::io_context ioc;
  auto work = boost::asio::make_work_guard(ioc);
  std::atomic<bool> ran{false};
  bool caught = false;
  try {
    io_thread io(ioc);
    boost::asio::post(ioc, [&] { ran = true; });
    while (!ran) std::this_thread::sleep_for(1ms);
    throw std::runtime_error("a member would not start again");
  } catch (const std::runtime_error&) {
    caught = true;
  }
  CHECK(caught);
  CHECK(ioc.stopped());
}

// What <zklock/session.hpp> needs from the library's internals: the engine's entry points
// (session_ops), a watch's shared state, the rebind trait, detail::access and the default
// completion token.
#pragma once

#include <zklock/detail/access.hpp>
#include <zklock/detail/rebind.hpp>
#include <zklock/detail/session_ops.hpp>
#include <zklock/detail/watch_state.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <type_traits>

namespace zklock::detail {

/// The executor's default completion token, or asio::deferred when it has none.
template <class Executor>
using default_token_t = std::conditional_t<std::is_void_v<asio::default_completion_token_t<Executor>>,
                                           asio::deferred_t, asio::default_completion_token_t<Executor>>;

}  // namespace zklock::detail

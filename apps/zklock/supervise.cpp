#include "supervise.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <variant>

namespace zklock_cli {

using namespace asio::experimental::awaitable_operators;

asio::awaitable<supervised_exit> supervise(zklock::session& s, zklock::lock_guard& guard, pid_t pid,
                                           const exec_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  const auto grace = std::min<std::chrono::milliseconds>(to_ms(o.kill_grace), s.negotiated_timeout() * 2 / 5);
  enum class watch {
    deadline,   // the deadline is far: wait for it to come within the grace (or a loss)
    loss,       // SIGTERM sent grace before the deadline: SIGKILL when the guard turns lost
    kill_timer, // SIGTERM sent on a loss: SIGKILL after --kill-grace
    none,       // SIGKILL sent (or nothing to watch): only signals and the child's exit
  } next = watch::deadline;
  bool lost = false;  // the command was terminated for the lock's sake: exit 76
  std::optional<int> wstatus;
  asio::steady_timer kill_timer(ex);
  auto sigkill = [&] {
    say("pid " + std::to_string(pid) + " still running at the deadline: SIGKILL");
    ::kill(pid, SIGKILL);
    next = watch::none;
  };
  while (!wstatus) {
    // index 0: a signal; index 1: what `next` watches
    std::variant<std::tuple<error_code, int>, std::tuple<error_code>> ev;
    switch (next) {
      case watch::deadline:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_deadline(grace, use_tuple));
        break;
      case watch::loss:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_lost(use_tuple));
        break;
      case watch::kill_timer:
        ev = co_await (sigs.async_wait(use_tuple) || kill_timer.async_wait(use_tuple));
        break;
      case watch::none:
        ev.emplace<0>(co_await sigs.async_wait(use_tuple));
        break;
    }
    if (ev.index() == 0) {
      auto [ec, sig] = std::get<0>(ev);
      if (ec) throw boost::system::system_error(ec, "signal wait");
      if (sig == SIGCHLD) {
        int st = 0;
        pid_t r = ::waitpid(pid, &st, WNOHANG);
        if (r == pid) wstatus = st;  // else a stop/continue notification
      } else {
        ::kill(pid, sig);
      }
      continue;
    }
    auto [ec] = std::get<1>(ev);
    if (next == watch::loss || next == watch::kill_timer) {
      sigkill();
    } else if (!ec) {
      lost = true;
      char left[32];
      std::snprintf(left, sizeof left, "%.2f",
                    std::max(0.0, std::chrono::duration<double>(guard.valid_until() - steady::now()).count()));
      say(o.path + ": no reply from ZooKeeper: the " + o.held() + " may be lost in " + left +
          " s (its validity deadline): terminating pid " + std::to_string(pid) + ", SIGKILL at the deadline");
      ::kill(pid, SIGTERM);
      next = watch::loss;
    } else if (ec == zklock::errc::lock_lost) {
      lost = true;
      say(o.path + ": " + o.held() + " lost (" +
          (s.state() == zklock::session_state::expired || s.state() == zklock::session_state::closed
               ? std::string("session expired")
               : std::string("no reply from ZooKeeper before its validity deadline, or our node was deleted")) +
          ") while the command ran: terminating pid " + std::to_string(pid));
      ::kill(pid, SIGTERM);
      kill_timer.expires_after(to_ms(o.kill_grace));
      next = watch::kill_timer;
    } else {  // cannot happen: we hold the lock until the child exits
      say(o.path + ": unexpected end of the " + o.held() + "'s supervision: " + ec.message());
      next = watch::none;
    }
  }
  co_return supervised_exit{*wstatus, lost};
}

}  // namespace zklock_cli

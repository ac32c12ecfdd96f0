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

std::string lost_reason(const zklock::session& s, const error_code& ec) {
  switch (zklock::lock_lost_cause(ec)) {
    case zklock::lost_cause::node_deleted: return "our node was deleted (zklock revoke --force-after, or by hand)";
    case zklock::lost_cause::session_expired: return "session expired";
    case zklock::lost_cause::session_closed: return "session closed";
    case zklock::lost_cause::session_replaced: return "session replaced";
    case zklock::lost_cause::deadline_passed: return "no reply from ZooKeeper before its validity deadline";
    case zklock::lost_cause::unknown: break;
  }
  return s.state() == zklock::session_state::expired ? "session expired" : ec.message();
}

asio::awaitable<supervised_exit> supervise(zklock::session& s, zklock::lock_guard& guard, const started_command& child,
                                           const exec_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  const pid_t pid = child.pid;
  const bool group = child.mode == tree_mode::process_group;
  const auto grace = std::min<std::chrono::milliseconds>(to_ms(o.kill_grace), s.negotiated_timeout() * 2 / 5);
  enum class watch {
    deadline,   // the deadline is far: wait for it to come within the grace (or a loss)
    loss,       // SIGTERM sent grace before the deadline: SIGKILL when the guard turns lost
    kill_timer, // SIGTERM sent on a loss or at --max-hold: SIGKILL after the grace
    none,       // SIGKILL sent (or nothing to watch): only signals and the child's exit
  } next = watch::deadline;
  supervised_exit result;
  std::optional<int> wstatus;
  asio::steady_timer kill_timer(ex);
  // --max-hold: from now (the lock is held), or never
  asio::steady_timer hold_timer(ex, o.max_hold > 0 ? steady::now() + to_ms(o.max_hold) : steady::time_point::max());
  auto sigkill = [&](const char* when) {
    say("pid " + std::to_string(pid) + " still running " + when + ": SIGKILL");
    ::kill(pid, SIGKILL);
    if (group) signal_descendants(SIGKILL);  // in a PID namespace the kernel does this
    next = watch::none;
  };
  while (!wstatus) {
    // index 0: a signal; index 1: what `next` watches; index 2: --max-hold
    std::variant<std::tuple<error_code, int>, std::tuple<error_code>, std::tuple<error_code>> ev;
    auto held_too_long = hold_timer.async_wait(use_tuple);
    switch (next) {
      case watch::deadline:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_deadline(grace, use_tuple) || std::move(held_too_long));
        break;
      case watch::loss:
        ev = co_await (sigs.async_wait(use_tuple) || guard.async_wait_lost(use_tuple) || std::move(held_too_long));
        break;
      case watch::kill_timer:
        ev = co_await (sigs.async_wait(use_tuple) || kill_timer.async_wait(use_tuple) || std::move(held_too_long));
        break;
      case watch::none:
        ev.emplace<0>(co_await sigs.async_wait(use_tuple));
        break;
    }
    if (ev.index() == 0) {
      auto [ec, sig] = std::get<0>(ev);
      if (ec) throw boost::system::system_error(ec, "signal wait");
      if (sig == SIGCHLD) {
        // The command (or our init), and in a process group the orphans we adopted.
        int st = 0;
        for (pid_t r; (r = ::waitpid(-1, &st, WNOHANG)) > 0;)
          if (r == pid) wstatus = st;
      } else {
        ::kill(pid, sig);
      }
      continue;
    }
    if (ev.index() == 2) {
      hold_timer.expires_at(steady::time_point::max());
      result.max_hold = true;
      if (next == watch::deadline) {
        say(o.path + ": held for " + seconds_str(o.max_hold) + " s (--max-hold): terminating pid " + std::to_string(pid) +
            ", SIGKILL in " + seconds_str(grace.count() / 1000.0) + " s");
        ::kill(pid, SIGTERM);
        kill_timer.expires_after(grace);
        next = watch::kill_timer;
      }
      continue;
    }
    auto [ec] = std::get<1>(ev);
    if (next == watch::loss) {
      sigkill("at the deadline");
    } else if (next == watch::kill_timer) {
      sigkill(result.lost ? "at the deadline" : "after the grace");
    } else if (!ec) {
      result.lost = true;
      char left[32];
      std::snprintf(left, sizeof left, "%.2f",
                    std::max(0.0, std::chrono::duration<double>(guard.valid_until() - steady::now()).count()));
      say(o.path + ": no reply from ZooKeeper: the " + o.held() + " may be lost in " + left +
          " s (its validity deadline): terminating pid " + std::to_string(pid) + ", SIGKILL at the deadline");
      ::kill(pid, SIGTERM);
      next = watch::loss;
    } else if (ec == zklock::errc::lock_lost) {
      result.lost = true;
      say(o.path + ": " + o.held() + " lost (" + lost_reason(s, ec) + ") while the command ran: terminating pid " +
          std::to_string(pid));
      ::kill(pid, SIGTERM);
      kill_timer.expires_after(to_ms(o.kill_grace));
      next = watch::kill_timer;
    } else {  // cannot happen: we hold the lock until the child exits
      say(o.path + ": unexpected end of the " + o.held() + "'s supervision: " + ec.message());
      next = watch::none;
    }
  }
  // What the command left running goes with it (in a PID namespace it is gone already).
  if (group) kill_descendants();
  result.wstatus = *wstatus;
  co_return result;
}

}  // namespace zklock_cli

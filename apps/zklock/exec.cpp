// zklock exec: run a command while holding a lock (a mutex, the read side of a shared lock, a
// semaphore's lease); zklock elect: the same while leading an election.
#include "child.hpp"
#include "command.hpp"
#include "locks.hpp"
#include "session_setup.hpp"
#include "supervise.hpp"

#include <zklock/election.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>

namespace zklock_cli {
namespace {

using namespace asio::experimental::awaitable_operators;

// --lock-delay: how long zklock keeps its session after a release before closing it, so that
// the successor's read of our beacon (one round trip after it heard the release) finds it.
constexpr auto lock_delay_release_grace = std::chrono::milliseconds(200);

// What blocks a --try (or a timed-out wait): who holds PATH, as `zklock holders` sees it. Reads
// for at most a second; "held by another contender" when that tells nothing.
asio::awaitable<std::string> who_blocks(zklock::session& s, const exec_options& o, asio::signal_set& sigs) {
  locks_options lo;
  lo.root = o.path;
  lo.depth = 0;
  asio::steady_timer limit(co_await asio::this_coro::executor, std::chrono::seconds(1));
  auto walked = co_await (walk_locks(s, lo, sigs) || limit.async_wait(use_tuple));
  std::optional<zklock::lock_dir_view> view;
  if (walked.index() == 0)
    for (auto& v : std::get<0>(walked).views)
      if (v.path == o.path) view = std::move(v);
  auto list = [](const std::vector<zklock::contender>& cs) {
    std::string t;
    for (const auto& c : cs) t += (t.empty() ? "" : ", ") + contender_text(c);
    return t;
  };
  if (o.semaphore > 0) {
    std::string r = "all " + std::to_string(o.semaphore) + (o.semaphore == 1 ? " lease is" : " leases are") + " taken";
    co_return view && !view->holders.empty() ? r + " (by " + list(view->holders) + ")" : r;
  }
  if (!view || view->holders.empty()) co_return o.elect() ? "another candidate leads" : "held by another contender";
  if (o.elect()) co_return "another candidate leads: " + list(view->holders);
  std::string r = "held by " + list(view->holders);
  if (o.shared && std::all_of(view->holders.begin(), view->holders.end(),
                              [](const auto& c) { return c.kind == zklock::lock_kind::read; })) {
    // readers hold: a writer queued ahead of us is what we would wait for
    std::vector<zklock::contender> writers;
    for (const auto& c : view->waiters)
      if (c.kind != zklock::lock_kind::read) writers.push_back(c);
    if (!writers.empty()) r += "; a writer waits ahead: " + list(writers);
  }
  co_return r;
}

// Runs the command while the lock is held (exec, elect): what supervise() saw, and 0; or zklock's
// exit status when the command could not be started.
asio::awaitable<std::pair<supervised_exit, int>> run_command(zklock::session& s, zklock::lock_guard& guard,
                                                                 const exec_options& o, const common_options& co,
                                                                 asio::signal_set& sigs) {
  // The command learns which hold it runs under (the fencing token is for its writes).
  ::setenv("ZKLOCK_PATH", o.path.c_str(), 1);
  ::setenv("ZKLOCK_NODE", guard.node_path().c_str(), 1);
  ::setenv("ZKLOCK_FENCING_TOKEN", std::to_string(guard.fencing_token()).c_str(), 1);
  // Who we are, for a session started under us (a zklock, a program using the library): it
  // records us as its parent, and `zklock locks` links our hold to its waits.
  ::setenv("ZKLOCK_SESSION", session_str(s.session_id()).c_str(), 1);
  if (!o.leader_id.empty()) ::setenv("ZKLOCK_LEADER_ID", o.leader_id.c_str(), 1);

  sigs.add(SIGCHLD);  // before the child exists: its exit cannot be missed
  const auto child = spawn(o.resolved, o.command, *parse_tree_mode(o.process_tree));
  if (child.pid < 0) {
    if (child.setup_failed)
      say(std::string("cannot run the command in ") +
          (child.mode == tree_mode::pid_namespace ? "a PID namespace of its own" : "a process group of its own") + ": " +
          (child.note.empty() ? std::strerror(child.error) : child.note) + " (--process-tree)");
    else
      say(o.command[0] + ": " + std::strerror(child.error));
    co_await s.async_close(use_tuple);  // removes our node
    if (child.setup_failed) co_return std::pair{supervised_exit{}, exit_error};
    co_return std::pair{supervised_exit{}, child.error == ENOENT ? exit_not_found : exit_cannot_exec};
  }
  if (co.verbose)
    say(child.mode == tree_mode::pid_namespace
            ? "process tree: a PID namespace of its own (pid " + std::to_string(child.pid) +
                  " is our init): everything the command starts stops with it, and with zklock"
            : "process tree: " + std::string(child.group ? "a process group of its own" : "zklock's process group") +
                  ", zklock the subreaper: everything the command starts is killed when it exits" +
                  (child.note.empty() ? std::string() : " (" + child.note + ")"));

  co_return std::pair{co_await supervise(s, guard, child, o, sigs), 0};
}

// Connects, acquires (racing with the termination signals and --timeout), runs the command
// under supervision, and leaves: the command's status, or one of zklock's own.
asio::awaitable<int> run_exec(const common_options& co, const exec_options& o, asio::signal_set& sigs,
                              steady::time_point started) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  // --timeout bounds the time from zklock's start to the command's: connecting and queueing.
  const auto deadline = o.timeout > 0 ? started + to_ms(o.timeout) : steady::time_point::max();
  if (int rc = co_await connect(s, sigs, co, *log, deadline)) co_return rc;

  // Acquire, racing with the termination signals and --timeout. When zklock gives up it closes
  // the session, which removes our node: no separate delete to wait for (and none that could
  // hang while ZooKeeper is unreachable: the node then goes with the session's expiry).
  struct acquire_state {
    explicit acquire_state(asio::any_io_executor ex) : done(ex) {}
    std::optional<std::tuple<error_code, zklock::lock_guard>> result;
    asio::steady_timer done;  // cancelled when the result is in
  };
  auto st = std::make_shared<acquire_state>(ex);
  auto on_acquired = [st](error_code ec, zklock::lock_guard g) {
    st->result.emplace(ec, std::move(g));
    st->done.cancel();
  };
  // (the lock objects may go: a pending acquire keeps what it needs)
  const auto lock_delay = to_ms(o.lock_delay);
  if (!o.leader_id.empty()) {
    // elect: the leadership's guard is supervised like a lock's
    zklock::election e(s, o.path, o.leader_id, {.lock_delay = lock_delay});
    auto on_leading = [on_acquired](error_code ec, zklock::leadership l) mutable {
      on_acquired(ec, std::move(l.guard()));
    };
    if (o.try_once)
      e.async_try_campaign(std::move(on_leading));
    else
      e.async_campaign(std::move(on_leading));
  } else if (o.semaphore > 0) {
    zklock::semaphore m(s, o.path, o.semaphore, {.lock_delay = lock_delay});
    if (o.try_once)
      m.async_try_acquire(std::move(on_acquired));
    else
      m.async_acquire(std::move(on_acquired));
  } else if (o.shared) {
    zklock::shared_mutex m(s, o.path, {.lock_delay = lock_delay});
    if (o.try_once)
      m.async_try_acquire_shared(std::move(on_acquired));
    else
      m.async_acquire_shared(std::move(on_acquired));
  } else {
    zklock::mutex m(s, o.path, {.lock_delay = lock_delay});
    if (o.try_once)
      m.async_try_acquire(std::move(on_acquired));
    else
      m.async_acquire(std::move(on_acquired));
  }

  // --try waits for one answer, for at most a session timeout.
  const auto give_up = o.try_once ? steady::now() + s.negotiated_timeout() : deadline;
  std::optional<int> signalled;
  while (!st->result && !signalled && steady::now() < give_up) {
    st->done.expires_at(give_up);
    auto r = co_await (st->done.async_wait(use_tuple) || sigs.async_wait(use_tuple));
    if (r.index() == 1) signalled = std::get<1>(std::get<1>(r));
  }
  if (signalled || !st->result) {
    co_await s.async_close(use_tuple);  // also when a guard came in after all
    if (signalled) co_return 128 + *signalled;
    if (o.try_once) {
      say(o.path + ": no answer from ZooKeeper (unreachable?): giving up");
      co_return exit_error;
    }
    say(o.path + (o.elect() ? ": leadership not won within " : ": not acquired within ") + seconds_str(o.timeout) + " s");
    co_return o.conflict_exit_code;
  }
  auto [aec, guard] = std::move(*st->result);
  if (aec) {
    if (aec == zklock::errc::lock_busy) {
      say(o.path + ": " + co_await who_blocks(s, o, sigs));
      co_await s.async_close(use_tuple);
      co_return o.conflict_exit_code;
    }
    co_await s.async_close(use_tuple);
    say(o.path + (o.elect() ? ": cannot campaign: " : ": cannot acquire: ") + aec.message());
    co_return exit_error;
  }

  int code = 0;
  bool lost = false;
  if (o.hold) {
    // zklock hold: the node and the token, then nothing until a signal (or the lock is lost)
    std::printf("%s %lld\n", guard.node_path().c_str(), static_cast<long long>(guard.fencing_token()));
    std::fflush(stdout);
    auto r = co_await (sigs.async_wait(use_tuple) || guard.async_wait_lost(use_tuple));
    if (r.index() == 1) {
      say(o.path + ": lock lost (" + lost_reason(s, std::get<0>(std::get<1>(r))) + ")");
      lost = true;
    }
  } else {
    auto [ran, failed] = co_await run_command(s, guard, o, co, sigs);
    if (failed) co_return failed;
    lost = ran.lost;
    code = ran.max_hold ? exit_max_hold : status_of(ran.wstatus);
  }
  if (lost || guard.status() == zklock::lock_status::lost) {
    if (!lost) say(o.path + ": " + o.held() + " lost (session expired) while the command ran");
    code = exit_lost;
  } else if (o.lock_delay <= 0 && guard.status() == zklock::lock_status::held && zklock::is_connected(s.state())) {
    // Closing the session (below) deletes our node: the next contender gets the lock from
    // that, without a separate delete to wait for. (With --lock-delay that would look like
    // the end of a session to a successor, which waits: a release first, below.)
  } else {
    // Release, but wait no longer than a session timeout: with ZooKeeper unreachable the
    // release would wait for a reconnection; the session's expiry removes the node anyway.
    bool was_suspended = guard.status() == zklock::lock_status::maybe_lost;
    struct release_state {
      std::optional<error_code> result;
      asio::steady_timer timer;
    };
    auto rs = std::make_shared<release_state>(release_state{{}, asio::steady_timer(ex, s.negotiated_timeout())});
    guard.async_release([rs](error_code ec) {
      rs->result = ec;
      rs->timer.cancel();
    });
    co_await rs->timer.async_wait(use_tuple);
    if (!rs->result || *rs->result == zklock::errc::release_pending) {
      say(o.path + (o.elect() ? ": resignation" : ": release") +
          " not confirmed within the session timeout (ZooKeeper unreachable?): our node goes when the session "
          "expires");
    } else if (*rs->result == zklock::errc::lock_lost && was_suspended) {
      // The connection was down when the command ended and the session has expired since:
      // the command may have run past the loss.
      say(o.path + ": " + o.held() + " lost (session expired) while the connection was down");
      code = exit_lost;
    } else if (*rs->result) {
      say(o.path + (o.elect() ? ": resign: " : ": release: ") + rs->result->message());
    } else if (o.lock_delay > 0) {
      // A successor tells our release from our session's end by our beacon (lock-delay): it
      // reads it once it heard the release. Closing at once could remove the beacon before that
      // read (the successor would wait --lock-delay): give its read a moment first.
      asio::steady_timer grace(ex, lock_delay_release_grace);
      co_await grace.async_wait(use_tuple);
    }
  }
  co_await s.async_close(use_tuple);
  co_return code;
}

// exec's, elect's and hold's options, as given (numbers as text: checked after parsing).
struct run_state {
  exec_options o;
  std::string timeout, kill_grace = "5", semaphore, max_hold, lock_delay, conflict_exit_code;
};

// The checks exec, elect and hold share, after parsing (an option the command lacks is not given).
int check_run(CLI::App* sub, run_state& st, cli_context& ctx) {
  auto& o = st.o;
  auto given = [sub](const char* name) {
    auto* opt = sub->get_option_no_throw(name);
    return opt && opt->count() > 0;
  };
  if (given("--timeout"))
    if (auto problem = parse_seconds("--timeout", st.timeout, false, o.timeout)) {
      say(*problem);
      return exit_usage;
    }
  if (auto problem = parse_seconds("--kill-grace", st.kill_grace, true, o.kill_grace)) {
    say(*problem);
    return exit_usage;
  }
  if (given("--max-hold"))
    if (auto problem = parse_seconds("--max-hold", st.max_hold, false, o.max_hold)) {
      say(*problem);
      return exit_usage;
    }
  if (given("--lock-delay"))
    if (auto problem = parse_seconds("--lock-delay", st.lock_delay, true, o.lock_delay)) {
      say(*problem);
      return exit_usage;
    }
  if (given("--conflict-exit-code")) {
    const auto& t = st.conflict_exit_code;
    auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), o.conflict_exit_code);
    if (t.empty() || err != std::errc() || end != t.data() + t.size() || o.conflict_exit_code < 0 ||
        o.conflict_exit_code > 255) {
      say("--conflict-exit-code: expected an exit status 0..255, got '" + t + "'");
      return exit_usage;
    }
  }
  if (!given("--process-tree"))
    if (const char* env = std::getenv("ZKLOCK_PROCESS_TREE"); env && *env) o.process_tree = env;
  if (!o.hold && !parse_tree_mode(o.process_tree)) {
    say("--process-tree: expected auto, namespace or group, got '" + o.process_tree + "'");
    return exit_usage;
  }
  if (given("--semaphore"))
    if (int rc = parse_leases(st.semaphore, o.semaphore)) return rc;
  if (int rc = check_lock_path(o.path)) return rc;
  if (o.hold) return 0;
  o.command.insert(o.command.end(), ctx.after_dashes.begin(), ctx.after_dashes.end());
  if (o.command.empty()) {
    say(o.leader_id.empty() ? "exec: no COMMAND (usage: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...])"
                            : "elect: no COMMAND (usage: zklock elect [OPTIONS] --id NAME PATH -- COMMAND [ARGS...])");
    return exit_usage;
  }
  o.resolved = resolve_command(o.command[0]);
  if (o.resolved.status) {
    say(o.resolved.error);
    return o.resolved.status;
  }
  return 0;
}

// -E/--conflict-exit-code (exec, elect, hold).
void add_conflict_exit_code(CLI::App* sub, run_state& st, const char* busy) {
  sub->add_option("-E,--conflict-exit-code", st.conflict_exit_code,
                  std::string("the exit status when --try finds ") + busy + " or --timeout runs out (as flock -E)")
      ->type_name("N")
      ->default_str("75");
}

// --max-hold and --process-tree, which exec and elect share.
void add_run_options(CLI::App* sub, run_state& st, const char* held) {
  sub->add_option("--max-hold", st.max_hold,
                  std::string("release the ") + held + " SECONDS after it was granted: the command gets SIGTERM, "
                  "SIGKILL after --kill-grace (at most 2/5 of the session timeout); status 77")
      ->type_name("SECONDS");
  sub->add_option("--lock-delay", st.lock_delay,
                  std::string("when the holder ahead went with its session (it expired: a stopped or cut-off "
                  "process) rather than releasing, wait SECONDS more before the command starts, so that what "
                  "it left in flight lands first; a release is not delayed. Give every contender the same "
                  "(a Curator, kazoo or zklock holder without it looks expired): see README.md"))
      ->type_name("SECONDS");
  sub->add_option("--process-tree", st.o.process_tree,
                  "how everything the command starts is stopped with it: 'namespace' (a PID namespace "
                  "of its own: also when zklock is killed), 'group' (a process group, zklock the subreaper: "
                  "killed when the command exits or is stopped), 'auto' (namespace where the kernel "
                  "allows it); -v says which is used")
      ->type_name("auto|namespace|group")
      ->default_str("$ZKLOCK_PROCESS_TREE, else auto");
}

}  // namespace

command add_exec(CLI::App& app, cli_context& ctx) {
  auto st = std::make_shared<run_state>();
  auto& eo = st->o;
  auto* exec = app.add_subcommand(
      "exec", "Run COMMAND while holding the lock PATH: zklock exec [OPTIONS] PATH -- COMMAND [ARGS...]");
  add_common(exec, ctx);
  auto* try_opt = exec->add_flag("--try", eo.try_once, "fail at once (status 75) if the lock is held");
  exec->add_flag("--shared", eo.shared,
                 "take the read side of a shared (read/write) lock on PATH: commands run with --shared "
                 "run together; plain ones (and Curator/kazoo write locks) run alone");
  exec->add_option("--semaphore", st->semaphore,
                   "take one of N leases of PATH (zklock::semaphore, Curator's InterProcessSemaphoreV2 "
                   "layout: PATH/locks, PATH/leases): at most N commands run at once")
      ->type_name("N")
      ->excludes("--shared");
  exec->add_option("--timeout", st->timeout,
                   "give up if the command has not started SECONDS after zklock did (connecting and "
                   "waiting for the lock): status 75 (1 if ZooKeeper was not reached); > 0, use --try "
                   "not to wait")
      ->type_name("SECONDS")
      ->excludes(try_opt);
  exec->add_option("--kill-grace", st->kill_grace,
                   "SECONDS between SIGTERM and SIGKILL to the command when the lock may be lost "
                   "(before the validity deadline: at most 2/5 of the session timeout)")
      ->type_name("SECONDS")
      ->capture_default_str();
  add_conflict_exit_code(exec, *st, "the lock held");
  add_run_options(exec, *st, "lock");
  exec->add_option("PATH", eo.path, "lock path (the lock dir in ZooKeeper)")->required();
  exec->add_option("COMMAND", eo.command, "command and arguments (after --)");
  exec->footer(
      "The command runs with ZKLOCK_PATH, ZKLOCK_NODE, ZKLOCK_FENCING_TOKEN and ZKLOCK_SESSION (zklock's\n"
      "session: a zklock or library session started under it records it as its parent) in its environment.\n"
      "SIGINT, SIGTERM and SIGHUP are passed to it; the lock is released when it exits.\n"
      "Exit status: the command's (128+N if killed by signal N); 1 ZooKeeper error; 2 usage;\n"
      "75 (or -E N) busy (--try) or timed out (--timeout); 76 lock lost while the command ran (it was\n"
      "terminated: SIGTERM, SIGKILL after --kill-grace); 77 --max-hold ran out (the command was\n"
      "terminated, the lock released); 126/127 command not executable/found; 70 internal error.");

  command c;
  c.app = exec;
  c.takes_command = true;
  c.check = [exec, st, &ctx] { return check_run(exec, *st, ctx); };
  c.run = [st, &ctx](asio::signal_set& sigs) { return run_exec(ctx.common, st->o, sigs, ctx.started); };
  return c;
}

command add_elect(CLI::App& app, cli_context& ctx) {
  auto st = std::make_shared<run_state>();
  auto& elo = st->o;  // exec's options, with the participant id
  auto* elect = app.add_subcommand(
      "elect", "Run COMMAND while leading the election PATH: zklock elect [OPTIONS] --id NAME PATH -- COMMAND [ARGS...]");
  add_common(elect, ctx);
  elect->add_option("--id", elo.leader_id, "participant id (the node's data; Curator LeaderLatch's id)")->required();
  auto* try_opt = elect->add_flag("--try", elo.try_once, "fail at once (status 75) if another candidate leads");
  elect->add_option("--timeout", st->timeout,
                    "give up if the command has not started SECONDS after zklock did (connecting and "
                    "campaigning): status 75 (1 if ZooKeeper was not reached); > 0, use --try not to wait")
      ->type_name("SECONDS")
      ->excludes(try_opt);
  elect->add_option("--kill-grace", st->kill_grace,
                    "SECONDS between SIGTERM and SIGKILL to the command when leadership may be lost "
                    "(before the leader-until deadline: at most 2/5 of the session timeout)")
      ->type_name("SECONDS")
      ->capture_default_str();
  add_conflict_exit_code(elect, *st, "another candidate leading");
  add_run_options(elect, *st, "leadership");
  elect->add_option("PATH", elo.path, "election path (Curator LeaderLatch's latch path)")->required();
  elect->add_option("COMMAND", elo.command, "command and arguments (after --)");
  elect->footer(
      "Campaigns as NAME; once leading, runs the command with ZKLOCK_LEADER_ID, ZKLOCK_FENCING_TOKEN,\n"
      "ZKLOCK_PATH, ZKLOCK_NODE and ZKLOCK_SESSION in its environment, and resigns when it exits.\n"
      "Exit status: the command's (128+N if killed by signal N); 1 ZooKeeper error; 2 usage;\n"
      "75 (or -E N) another leads (--try) or timed out (--timeout); 76 leadership lost while the command ran (it was terminated:\n"
      "SIGTERM, SIGKILL after --kill-grace, before anyone else can lead); 77 --max-hold ran out;\n"
      "126/127; 70.");

  command c;
  c.app = elect;
  c.takes_command = true;
  c.check = [elect, st, &ctx] {
    if (st->o.leader_id.empty()) {
      say("--id: expected a participant id, got ''");
      return exit_usage;
    }
    return check_run(elect, *st, ctx);
  };
  c.run = [st, &ctx](asio::signal_set& sigs) { return run_exec(ctx.common, st->o, sigs, ctx.started); };
  return c;
}

command add_hold(CLI::App& app, cli_context& ctx) {
  auto st = std::make_shared<run_state>();
  auto& ho = st->o;
  ho.hold = true;
  auto* hold = app.add_subcommand(
      "hold", "Take the lock PATH, print its node and fencing token, hold it until SIGINT/SIGTERM/SIGHUP: zklock hold [OPTIONS] PATH");
  add_common(hold, ctx);
  auto* try_opt = hold->add_flag("--try", ho.try_once, "fail at once (status 75, or -E N) if the lock is held");
  hold->add_flag("--shared", ho.shared, "take the read side of a shared (read/write) lock on PATH");
  hold->add_option("--semaphore", st->semaphore, "take one of N leases of PATH")->type_name("N")->excludes("--shared");
  hold->add_option("--timeout", st->timeout,
                   "give up if the lock is not held SECONDS after zklock started: status 75 (or -E N)")
      ->type_name("SECONDS")
      ->excludes(try_opt);
  add_conflict_exit_code(hold, *st, "the lock held");
  hold->add_option("--lock-delay", st->lock_delay, "as exec --lock-delay")->type_name("SECONDS");
  hold->add_option("PATH", ho.path, "lock path (the lock dir in ZooKeeper)")->required();
  hold->footer(
      "Once the lock is held, prints one line, NODE TOKEN (the lock node's path, the fencing token), and\n"
      "holds the lock until SIGINT, SIGTERM or SIGHUP; then releases it and exits 0.\n"
      "Exit status: 0 released after a signal; 1 ZooKeeper error; 2 usage; 75 (or -E N) busy (--try) or\n"
      "timed out (--timeout); 76 lock lost while held; 70 internal error; 128+N a signal before the lock was held.");
  command c;
  c.app = hold;
  c.check = [hold, st, &ctx] { return check_run(hold, *st, ctx); };
  c.run = [st, &ctx](asio::signal_set& sigs) { return run_exec(ctx.common, st->o, sigs, ctx.started); };
  return c;
}

}  // namespace zklock_cli

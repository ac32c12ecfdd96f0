#include "window.hpp"

#include "io_thread.hpp"
#include "processes.hpp"
#include "resource.hpp"
#include "tcp_proxy.hpp"

#include <boost/asio.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#ifndef ZKLOCK_CLI
#define ZKLOCK_CLI "zklock"
#endif

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace zklock::fault {

window_result measure_window(const options& o, zklock::test::zk_ensemble& ens, const std::string& client, int run,
                             const std::string& work) {
  window_result w;
  w.client = client;
  w.run = run;
  const int T = o.window_session_timeout_ms;
  const std::string dir = "/window/" + client + "-" + std::to_string(::getpid()) + "-" + std::to_string(run);
  const std::string run_dir = work + "/window-" + client + "-" + std::to_string(run);
  fs::create_directories(run_dir);
  asio::io_context ioc;
  auto guard = asio::make_work_guard(ioc);
  resource res(ioc);
  std::vector<std::unique_ptr<zklock::test::tcp_proxy>> proxies;
  std::string proxied;
  for (int s = 0; s < ens.size(); ++s) {
    proxies.push_back(std::make_unique<zklock::test::tcp_proxy>(ioc.get_executor(), ens.port(s)));
    proxied += (proxied.empty() ? "" : ",") + proxies.back()->connect_string();
  }
  io_thread io(ioc);
  child holder, waiter;
  holder.who = "holder";
  waiter.who = "waiter";
  std::string pidfile = run_dir + "/command.pid";
  options oo = o;
  oo.hold_ms = 3600 * 1000;
  if (client == "zklock") {
    // `zklock exec` as a user runs it; the command writes its pid (the host's, from /proc/self/stat:
    // in zklock's PID namespace $$ is 2) and becomes `sleep`
    holder.pid = spawn({ZKLOCK_CLI, "exec", "-c", proxied, "--session-timeout", std::to_string(T / 1000.0),
                        "--kill-grace", "1", dir, "--", "sh", "-c", "read -r pid rest < /proc/self/stat; echo $pid > '" + pidfile + "'; exec sleep 3600"},
                       run_dir + "/holder.log");
  } else if (client == "curator-latch") {
    // a Curator LeaderLatch leader, its stop its LeaderLatchListener.notLeader()
    holder.pid = spawn(client_command("curator", oo, res.port(), proxied, dir, "holder", "hold", T, {"latch"}),
                       run_dir + "/holder.log");
  } else if (client == "zklock-election") {
    // a zklock::election leader (the worker's election recipe), its stop the leadership's loss
    holder.pid = spawn(client_command("zklock", oo, res.port(), proxied, dir, "holder", "hold", T, {"election"}),
                       run_dir + "/holder.log");
  } else {
    holder.pid = spawn(client_command(client, oo, res.port(), proxied, dir, "holder", "hold", T), run_dir + "/holder.log");
  }
  // the holder holds
  pid_t command = -1;
  auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    if (client == "zklock") {
      std::ifstream in(pidfile);
      if (in >> command && command > 0) break;
    } else if (res.wait_for(100ms, [](auto& j) {
                 return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "grant" && x.who == "holder"; });
               })) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  // the waiter, directly connected, queues behind it
  // (election: a zklock::election candidate, the successor is the next leader)
  waiter.pid = spawn(client_command("zklock", oo, res.port(), ens.connect_string(), dir, "waiter", "hold", T,
                                    client == "zklock-election" || client == "curator-latch"
                                        ? std::vector<std::string>{"election"}
                                                                : std::vector<std::string>{}),
                     run_dir + "/waiter.log");
  res.wait_for(30s, [](auto& j) {
    return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "acquire" && x.who == "waiter"; });
  });
  std::this_thread::sleep_for(500ms);  // its node is in the queue and its watch set
  const std::int64_t t0 = mono_ns();
  asio::post(ioc, [&] {
    for (auto& p : proxies) p->blackhole(true);
  });
  auto ms = [&](std::int64_t t) { return (t - t0) / 1e6; };
  auto first = [&](const std::string& who, const std::string& kind, const std::string& extra = "") -> std::int64_t {
    for (auto& x : res.journal())
      if (x.who == who && x.kind == kind && (extra.empty() || x.extra.find(extra) != std::string::npos)) return x.t_client;
    return 0;
  };
  if (client == "zklock") {
    if (wait_pidfd(command, std::chrono::milliseconds(3 * T + 10000)) == 1) w.stop_ms = ms(mono_ns());
    reap(holder, std::chrono::milliseconds(3 * T));
    if (holder.reaped && WIFEXITED(holder.status)) w.note += "zklock exited " + std::to_string(WEXITSTATUS(holder.status)) + "; ";
  }
  // The successor's grant: its acquire completed. (A zklock waiter that waited longer than its
  // validity window gets a guard already past its deadline, "dead_grant": the server granted
  // it the lock all the same, which is what the window is measured against.)
  auto is_grant = [](const record& x) { return x.who == "waiter" && (x.kind == "grant" || x.kind == "dead_grant"); };
  bool granted = res.wait_for(std::chrono::milliseconds(3 * T + 10000),
                              [&](auto& j) { return std::any_of(j.begin(), j.end(), is_grant); });
  if (granted)
    for (auto& x : res.journal())
      if (is_grant(x)) {
        w.grant_ms = ms(x.t_client);
        if (x.kind == "dead_grant") w.note += "successor's guard came already past its deadline; ";
        break;
      }
  if (client == "zklock-lib" || client == "zklock-election") {
    // the library's own notification: the guard's lost_slot / validity check in the worker
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "lost" && x.who == "holder"; });
    });
    if (auto t = first("holder", "lost")) w.lost_ms = ms(t);
  } else if (client != "zklock") {
    if (client == "curator-latch") {
      res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
        return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "lost" && x.who == "holder"; });
      });
      if (auto t = first("holder", "lost")) w.stop_ms = ms(t);
    }
    // LOST may come only after the partition heals (kazoo): wait up to 2 T past the grant, heal
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "state" && x.who == "holder" && x.extra == "LOST"; });
    });
    w.healed_ms = ms(mono_ns());
    asio::post(ioc, [&] {
      for (auto& p : proxies) p->blackhole(false);
    });
    res.wait_for(std::chrono::milliseconds(2 * T), [](auto& j) {
      return std::any_of(j.begin(), j.end(), [](auto& x) { return x.kind == "state" && x.who == "holder" && x.extra == "LOST"; });
    });
    if (auto t = first("holder", "state", "SUSPENDED")) w.suspended_ms = ms(t);
    if (auto t = first("holder", "state", "LOST")) w.lost_ms = ms(t);
  }
  end_child(holder, 10s);
  end_child(waiter, 10s);
  if (command > 0) ::kill(command, SIGKILL);  // only if it outlived zklock (it must not)
  guard.reset();
  io.stop();
  write_journal(run_dir + "/journal.tsv", res.journal());
  return w;
}

}  // namespace zklock::fault

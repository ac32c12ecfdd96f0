#include "nemesis.hpp"

#include <signal.h>

#include <algorithm>
#include <future>
#include <sstream>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace zklock::fault {

bool direct_connections(const std::string&) { return false; }

std::vector<std::string> worker_options(const std::string&) { return {}; }

std::chrono::milliseconds nemesis::T(double f) const {
  return std::chrono::milliseconds(std::int64_t(e_.o.session_timeout_ms * f));
}
double nemesis::uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(e_.rng); }
int nemesis::pick(int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(e_.rng)); }

void nemesis::on_io(std::function<void()> f) {
  std::promise<void> done;
  asio::post(e_.ioc, [&] {
    f();
    done.set_value();
  });
  done.get_future().wait();
}

void nemesis::set_blackhole(int c, bool on) {
  on_io([&] {
    for (auto& p : e_.proxies[c]) p->blackhole(on);
  });
}

int nemesis::client_of(const std::string& who) const {
  auto it = e_.index_of.find(process_of(who));
  return it == e_.index_of.end() ? -1 : it->second;
}

void nemesis::heal() {
  const int k = static_cast<int>(e_.clients.size());
  for (int c = 0; c < k; ++c) {
    set_blackhole(c, false);
    ::kill(e_.clients[c].pid, SIGCONT);
  }
  for (int s = 0; s < e_.ens.size(); ++s)
    if (e_.ens.running(s)) e_.ens.resume(s);
  e_.ens.start_all();
}

std::string nemesis::apply(const std::string& fault) {
  std::ostringstream d;
  d << fault;
  if (fault == "kill-leader" || fault == "kill-follower") {
    int l = e_.ens.leader();
    int victim = l;
    if (fault == "kill-follower" || l < 0) victim = (std::max(l, 0) + 1 + pick(e_.ens.size() - 1)) % e_.ens.size();
    auto down = T(uniform(0.2, 1.0));
    d << " member " << victim << (victim == l ? " (leader)" : " (follower)") << ", down " << down.count() << " ms";
    e_.ens.kill(victim);
    std::this_thread::sleep_for(down);
    e_.ens.start(victim);
  } else if (fault == "pause-server-short" || fault == "pause-server-long") {
    int victim = pick(e_.ens.size());
    auto dur = fault == "pause-server-short" ? T(uniform(0.2, 0.6)) : T(uniform(1.5, 2.0));
    d << " member " << victim << (victim == e_.ens.leader() ? " (leader)" : "") << " for " << dur.count() << " ms";
    e_.ens.pause(victim);
    std::this_thread::sleep_for(dur);
    e_.ens.resume(victim);
    e_.ens.wait_quorum();
  } else if (fault == "partition-short" || fault == "partition-long") {
    bool lng = fault == "partition-long";
    auto dur = lng ? T(uniform(1.5, 2.5)) : T(uniform(0.2, 0.5));
    int hold = static_cast<int>(lng ? 4 * e_.o.session_timeout_ms : dur.count() + e_.o.session_timeout_ms);
    int victim = -1;
    e_.res.arm("grant", [&](const record& x) {
      victim = client_of(x.who);
      if (victim >= 0)
        for (auto& p : e_.proxies[victim]) p->blackhole(true);  // on the io thread already
      return "HOLD " + std::to_string(hold);
    });
    auto fired = e_.res.wait_fired(T(4) + 10s);
    if (!fired) {
      d << ": no grant to partition";
    } else {
      d << " " << fired->who << " (holding, asked to hold " << hold << " ms) for " << dur.count() << " ms";
      std::this_thread::sleep_for(dur);
      set_blackhole(victim, false);
    }
  } else if (fault == "cut") {
    int how = pick(3);
    if (how == 2) {
      d << ": RST every client's connections while they queue and watch";
      on_io([&] {
        for (auto& ps : e_.proxies)
          for (auto& p : ps) p->reset_all();
      });
    } else {
      std::string kind = how == 0 ? "end" : "acquire";
      auto delay = std::chrono::microseconds(std::int64_t(uniform(0, 3000)));
      d << ": RST a client's connections " << delay.count() << " us after its " << kind
        << (how == 0 ? " (release in flight)" : " (create in flight)");
      e_.res.arm(kind, [&, delay](const record& x) {
        int c = client_of(x.who);
        if (c >= 0) {
          auto t = std::make_shared<asio::steady_timer>(e_.ioc, delay);
          t->async_wait([&, c, t](boost::system::error_code) {
            for (auto& p : e_.proxies[c]) p->reset_all();
          });
        }
        return std::string();
      });
      auto fired = e_.res.wait_fired(10s);
      d << (fired ? " of " + fired->who : std::string(": never fired"));
      std::this_thread::sleep_for(T(1));
    }
  } else if (fault == "pause-client") {
    // alternately (first this one): the holder stopping itself between its validity check
    // and its write (a GC pause at the worst moment: only the fencing token can stop that
    // write), or SIGSTOP from outside right at the grant
    bool self = pause_faults_++ % 2 == 0;
    if (self) ++e_.r.self_pauses;
    auto dur = T(uniform(1.5, 2.5));
    int victim = -1;
    std::int64_t stopped_at = 0;
    // (shared: a writer, whose stale write the fencing check must refuse; a reader's late
    // read is stale only if a writer came in meanwhile)
    e_.res.arm(
        "grant",
        [&, self](const record& x) {
          victim = client_of(x.who);
          stopped_at = mono_ns();
          if (victim >= 0 && !self) ::kill(e_.clients[victim].pid, SIGSTOP);
          return self ? std::string("HOLD 1000 PAUSE") : std::string("HOLD 1000");
        },
        [&](const record& x) { return e_.o.recipe != "shared" || side_of_grant(x.extra) == "write"; });
    auto fired = e_.res.wait_fired(T(4) + 10s);
    if (!fired || victim < 0) {
      d << ": no grant";
    } else {
      if (self) {
        auto until = std::chrono::steady_clock::now() + 5s;
        while (proc_state(e_.clients[victim].pid) != 'T' && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(1ms);
      }
      d << " " << fired->who << (self ? " (stops itself before a write)" : " (SIGSTOP at its grant)") << " for "
        << dur.count() << " ms";
      std::this_thread::sleep_for(dur);
      ::kill(e_.clients[victim].pid, SIGCONT);
      e_.pauses.push_back({fired->who, stopped_at, mono_ns()});
    }
  } else if (fault == "restart-ensemble") {
    auto down = T(uniform(0.0, 0.3));
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < e_.ens.size(); ++s) e_.ens.kill(s);
    std::this_thread::sleep_for(down);
    e_.ens.start_all();
    d << ": all killed, down " << down.count() << " ms, serving again after "
      << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
      << " ms";
  } else if (fault == "long-hold") {
    // no fault: a holder keeps the lock 1.5 session timeouts, as a long job would
    int hold = e_.o.session_timeout_ms * 3 / 2;
    e_.res.arm("grant", [hold](const record&) { return "HOLD " + std::to_string(hold); });
    auto fired = e_.res.wait_fired(10s);
    d << (fired ? ": " + fired->who + " holds " + std::to_string(hold) + " ms" : std::string(": no grant"));
    if (fired) std::this_thread::sleep_for(std::chrono::milliseconds(hold + 500));
  } else if (fault == "none") {
    std::this_thread::sleep_for(T(1));
    d << ": no fault for " << e_.o.session_timeout_ms << " ms";
  }
  return d.str();
}

}  // namespace zklock::fault

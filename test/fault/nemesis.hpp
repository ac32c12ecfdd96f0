// The nemesis: applies one fault of a scenario to a run (run.cpp), its target and timing drawn
// from the run's seeded generator. Runs on the harness's main thread; what must happen on the
// io thread (proxies, the resource's triggers) is posted there.
#pragma once

#include "checker.hpp"
#include "options.hpp"
#include "processes.hpp"
#include "resource.hpp"
#include "tcp_proxy.hpp"
#include "zk_server.hpp"

#include <boost/asio.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <ostream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace zklock::fault {

// What a run's faults act on (owned by the run).
struct run_env {
  const options& o;
  zklock::test::zk_ensemble& ens;
  boost::asio::io_context& ioc;
  resource& res;
  // per client, one proxy per server (empty: the client connects to the servers directly)
  std::vector<std::vector<std::unique_ptr<zklock::test::tcp_proxy>>>& proxies;
  std::vector<child>& clients;
  std::map<std::string, int>& index_of;  // process name -> client index
  std::vector<pause_interval>& pauses;
  run_result& r;
  std::mt19937_64& rng;
  std::string dir;                     // the lock path
  std::set<int> fds_exhausted;         // fd-exhaust: clients whose descriptors are used up
  std::vector<outage> outages;         // ensemble-gone: when no server served (the checker's rule)
  std::vector<node_deletion> deletions;  // operator-delete: whose node was deleted when
};

// Whether a scenario's clients connect to the servers directly, without proxies (its entry in
// nemesis::faults).
bool direct_connections(const std::string& scenario);
// zklock_fault_worker's options for a scenario's runs (its entry in nemesis::faults).
std::vector<std::string> worker_options(const std::string& scenario);
// fd-exhaust: the signals that make a worker use up its descriptors, and give them back
int exhaust_signal();
int restore_signal();
// pause-close: the signal that makes a worker close every session it has at once (its
// even-numbered contenders' by async_close, the others destroyed); close_signal() + 1 the other
// way round
int close_signal();

// One member per fault; nemesis::faults is the table of them. Adding a fault is a member
// `void name(const std::string& fault, std::ostream& d)` (it acts on the run through e_, draws
// through uniform/pick and describes what it did on `d`, after the fault's name) and an entry
// in `faults` (nemesis.cpp): the scenario's name, the member, and where the scenario runs.
class nemesis {
 public:
  using fault_member = void (nemesis::*)(const std::string& fault, std::ostream& d);
  struct fault {
    std::string name;  // the scenario's name (--scenarios)
    fault_member act;
    bool default_pass;  // runs with no --scenarios (the short CI pass); else only when named
    // what "mixed" draws from: the seeded draw indexes these in table order, so an entry that
    // joins it changes the replay of every mixed seed
    bool mixed;
    // the clients connect to the servers directly, without proxies (a killed server's port then
    // refuses the reconnect, where a proxy would accept it)
    bool direct = false;
    // zklock_fault_worker's options ("sessions:3": three sessions and a user socket on one
    // io_context)
    std::vector<std::string> worker_options = {};
  };
  // Every fault, in the order the default pass runs them.
  static const std::vector<fault> faults;
  static const fault* find(const std::string& name);

  explicit nemesis(run_env& env) : e_(env) {}
  // Applies `fault` (a scenario name, or what "mixed" drew); returns its description.
  std::string apply(const std::string& fault);
  // Heals what the faults may have left: proxies open, clients running, descriptors back.
  void heal();
  // draws from the run's generator (the order of the draws is the replay: keep it)
  double uniform(double a, double b);
  int pick(int n);

 private:
  std::chrono::milliseconds T(double f) const;
  void on_io(std::function<void()> f);
  void set_blackhole(int c, bool on);
  void reset_all_connections();
  int client_of(const std::string& who) const;

  // the faults (see `faults` for what each scenario name runs)
  void no_fault(const std::string& fault, std::ostream& d);
  void kill_member(const std::string& fault, std::ostream& d);
  void pause_server(const std::string& fault, std::ostream& d);
  void partition(const std::string& fault, std::ostream& d);
  void cut(const std::string& fault, std::ostream& d);
  void pause_client(const std::string& fault, std::ostream& d);
  void restart_ensemble(const std::string& fault, std::ostream& d);
  void long_hold(const std::string& fault, std::ostream& d);
  void refuse(const std::string& fault, std::ostream& d);
  void foreign_write(const std::string& fault, std::ostream& d);
  void fd_exhaust(const std::string& fault, std::ostream& d);
  void storm(const std::string& fault, std::ostream& d);
  void ensemble_gone(const std::string& fault, std::ostream& d);
  void local_close(const std::string& fault, std::ostream& d);
  void operator_delete(const std::string& fault, std::ostream& d);
  void pause_close(const std::string& fault, std::ostream& d);
  // the zklock client of a message's sender (-1 for a peer's)
  bool from_zklock(const record& x) const;
  // who said "hello" with session `owner` ("0x..."), "" if nobody did
  std::string who_has_session(const std::string& owner) const;

  run_env& e_;
  int pause_faults_ = 0;
};

}  // namespace zklock::fault

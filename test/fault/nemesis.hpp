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
};

// The scenarios whose clients connect to the servers directly, without proxies: a killed
// server's port refuses the reconnect (a proxy would accept it).
bool direct_connections(const std::string& scenario);
// zklock_fault_worker's options for a scenario's runs ("sessions:3": three sessions and a user
// socket on one io_context).
std::vector<std::string> worker_options(const std::string& scenario);
// fd-exhaust: the signals that make a worker use up its descriptors, and give them back
int exhaust_signal();
int restore_signal();

class nemesis {
 public:
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
  int client_of(const std::string& who) const;

  run_env& e_;
  int pause_faults_ = 0;
};

}  // namespace zklock::fault

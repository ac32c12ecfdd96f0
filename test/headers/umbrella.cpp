// <zklock/zklock.hpp> alone is enough: a name from every public header, with no other zklock
// include. check_headers.py compiles it (-fsyntax-only) under the same strict flags as
// public_headers.cpp, and checks that the umbrella includes every header of include/zklock/.
#include <zklock/zklock.hpp>

#include <string>
#include <vector>

namespace zklock_umbrella_check {

void every_header(zklock::session& s, zklock::lock_guard& g, zklock::multi_guard& mg) {
  zklock::mutex m{s, "/locks/m"};                    // mutex.hpp
  zklock::shared_mutex rw{s, "/locks/rw"};           // shared_mutex.hpp
  zklock::semaphore sem{s, "/locks/sem", 2};         // semaphore.hpp
  zklock::election e{s, "/election", "node-1"};      // election.hpp
  zklock::multi_lock ml{s, {{"/locks/a", zklock::multi_lock::side::write}}};  // multi_lock.hpp
  m.async_acquire([](zklock::error_code, zklock::lock_guard) {});
  g.async_release([](zklock::error_code) {});        // lock_guard.hpp
  mg.async_release([](zklock::error_code) {});
  zklock::async_revoke_holders(s, "/locks/a", [](zklock::error_code, std::vector<std::string>) {});  // revoke.hpp
  zklock::error_code ec = zklock::validate_lock_path("/locks/a");  // path.hpp, error.hpp
  (void)ec;
  zklock::lock_metrics_snapshot snapshot{};          // metrics.hpp
  std::string text = zklock::to_prometheus(snapshot);
  (void)text;
  zklock::node_stat stat{};                          // types.hpp
  (void)stat;
  (void)rw;
  (void)sem;
  (void)e;
  (void)ml;
}

}  // namespace zklock_umbrella_check

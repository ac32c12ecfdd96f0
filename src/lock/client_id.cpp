#include "lock/client_id.hpp"

#include <boost/random/mersenne_twister.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <iterator>
#include <random>

namespace zklock::detail {

std::string new_client_id() {
  // One engine per thread, seeded with 256 bits from the system (random_generator_mt19937's
  // default seeding asks the kernel 624 times: ~15 ms on the first acquire here).
  // Reseeded in a forked child, which would otherwise repeat its parent's ids (and could take
  // the parent's node for its own when it looks for a create lost with the connection): a fork
  // handler counts forks, so the acquire path makes no system call to notice one.
  static std::atomic<unsigned> forks{0};
  [[maybe_unused]] static const bool registered = [] {
    ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  thread_local boost::random::mt19937 engine;
  thread_local unsigned seeded_at = ~0u;
  if (unsigned now = forks.load(std::memory_order_relaxed); seeded_at != now) {
    std::random_device rd;
    std::uint32_t seed[8];
    for (auto& w : seed) w = rd();
    std::seed_seq seq(std::begin(seed), std::end(seed));
    engine.seed(seq);
    seeded_at = now;
  }
  boost::uuids::basic_random_generator<boost::random::mt19937> gen(&engine);
  return boost::uuids::to_string(gen());
}

}  // namespace zklock::detail

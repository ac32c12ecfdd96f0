#include "engine/client_id.hpp"

#include <boost/random/mersenne_twister.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <pthread.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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

std::string default_identity() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  std::string pid = std::to_string(::getpid());
  // "NSpid:\t<outer> ... <inner>": more than one pid when we run in a nested PID namespace
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream pids(line.substr(6));
    std::string outer, inner;
    pids >> outer;
    for (std::string p; pids >> p;) inner = p;
    if (!outer.empty() && !inner.empty() && outer != inner) pid = outer + "/" + inner;
    break;
  }
  return std::string(host) + ":" + pid;
}

std::int64_t parse_session_id(std::string_view t) noexcept {
  if (t.size() < 3 || t.size() > 18 || !t.starts_with("0x")) return 0;
  std::uint64_t v = 0;
  auto [end, err] = std::from_chars(t.data() + 2, t.data() + t.size(), v, 16);
  if (err != std::errc() || end != t.data() + t.size()) return 0;
  return static_cast<std::int64_t>(v);
}

std::string node_identity(const std::optional<std::string>& configured) {
  std::string id = configured ? *configured : default_identity();
  if (id.empty()) return id;
  const char* parent = std::getenv(parent_session_variable);
  if (std::int64_t p = parent ? parse_session_id(parent) : 0) {
    char buf[40];
    std::snprintf(buf, sizeof buf, " parent=0x%llx", static_cast<unsigned long long>(p));
    id += buf;
  }
  return id;
}

identity_parts split_parent(std::string_view identity) noexcept {
  constexpr std::string_view tag = " parent=";
  auto i = identity.rfind(tag);
  if (i == std::string_view::npos) return {identity, 0};
  std::int64_t p = parse_session_id(identity.substr(i + tag.size()));
  if (p == 0) return {identity, 0};
  return {identity.substr(0, i), p};
}

}  // namespace zklock::detail

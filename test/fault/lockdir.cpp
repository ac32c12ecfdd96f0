#include "lockdir.hpp"

#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace zklock::fault {

int count_nodes(const std::string& connect, const std::string& dir, std::vector<std::string>* names) {
  asio::io_context ioc;
  int n = -1;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        zklock::session_options o;
        o.connect = connect;
        o.session_timeout = 10s;
        zklock::session s{ex, o};
        auto [cec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
        if (cec) co_return;
        auto [gec, kids] = co_await s.async_get_children(dir, asio::as_tuple(asio::use_awaitable));
        if (!gec) {
          n = static_cast<int>(kids.children.size());
          if (names) {
            // "name owner=0x<session>": whose node it is
            for (auto& c : kids.children) {
              auto [eec, st] = co_await s.async_exists(dir + "/" + c, asio::as_tuple(asio::use_awaitable));
              std::ostringstream owner;
              if (!eec && st) owner << " owner=0x" << std::hex << st->ephemeral_owner;
              names->push_back(c + owner.str());
            }
          }
        } else if (gec == zklock::zk_errc::no_node) {
          n = 0;
        }
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  ioc.run_for(20s);
  return n;
}

// `wchp` (path -> sessions) of every serving member: watches on the lock dir or its children.
int count_watches(const zklock::test::zk_ensemble& ens, const std::string& dir, std::vector<std::string>* lines) {
  int n = 0;
  for (int i = 0; i < ens.size(); ++i) {
    std::istringstream in(ens.four_letter(i, "wchp"));
    bool ours = false;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] == '/') {
        ours = line == dir || line.rfind(dir + "/", 0) == 0;
      } else if (ours && line.find("0x") != std::string::npos) {
        ++n;
        if (lines) lines->push_back("server " + std::to_string(i) + ": " + line);
      }
    }
  }
  return n;
}

int write_to_lock_nodes(const std::string& connect, const std::vector<std::string>& dirs, int rounds, int gap_ms,
                        std::mt19937_64& rng, std::vector<std::string>* log) {
  // what other clients write: Curator's Revoker, zklock's own markers where they do not belong
  // (a release marker on a live holder's node), an operator's `set` of nothing or of junk
  static const std::vector<std::string> fixed = {"__REVOKE__", "zklock/2:released", "", "zklock/2",
                                                 "zklock/2:downgraded"};
  std::vector<std::string> datas = fixed;
  std::string junk;
  for (int i = 0; i < 16; ++i) junk.push_back(static_cast<char>(rng() % 256));
  datas.push_back(junk);
  asio::io_context ioc;
  int written = 0;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        zklock::session_options o;
        o.connect = connect;
        o.session_timeout = 10s;
        zklock::session s{ex, o};
        auto [cec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
        if (cec) {
          if (log) log->push_back("connect: " + cec.message());
          co_return;
        }
        for (int round = 0; round < rounds; ++round) {
          if (round > 0) {
            asio::steady_timer t(ex, std::chrono::milliseconds(gap_ms));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
          }
          for (auto& dir : dirs) {
            auto [gec, kids] = co_await s.async_get_children(dir, asio::as_tuple(asio::use_awaitable));
            if (gec) continue;
            for (auto& c : kids.children) {
              const std::size_t pick = rng() % datas.size();
              auto [sec, st] = co_await s.async_set_data(dir + "/" + c, datas[pick], -1,
                                                         asio::as_tuple(asio::use_awaitable));
              if (!sec) ++written;
              if (log)
                log->push_back(dir + "/" + c + " <- " +
                               (pick + 1 == datas.size() ? std::string("16 random bytes") : "'" + datas[pick] + "'") +
                               (sec ? ": " + sec.message() : std::string()));
            }
          }
        }
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  ioc.run_for(std::chrono::milliseconds(20000 + std::int64_t(rounds) * gap_ms));
  return written;
}

}  // namespace zklock::fault

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

}  // namespace zklock::fault

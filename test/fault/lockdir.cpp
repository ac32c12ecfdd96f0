#include "lockdir.hpp"

#include "resource_client.hpp"

#include <zklock/session.hpp>

#include <boost/asio.hpp>

#include <algorithm>
#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace zklock::fault {

namespace {

// Runs `body(session)` on a session of the harness's own, direct to the ensemble, then closes
// it; gives up after `bound`. Returns the connect's error (the body did not run) or none.
template <class Body>
error_code on_own_session(const std::string& connect, std::chrono::milliseconds bound, Body body) {
  asio::io_context ioc;
  error_code connect_error;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        zklock::session_options o;
        o.connect = connect;
        o.session_timeout = 10s;
        zklock::session s{co_await asio::this_coro::executor, o};
        auto [cec] = co_await s.async_connect(asio::as_tuple(asio::use_awaitable));
        if ((connect_error = cec)) co_return;
        co_await body(s);
        co_await s.async_close(asio::as_tuple(asio::use_awaitable));
      },
      asio::detached);
  ioc.run_for(bound);
  return connect_error;
}

std::string session_id_text(std::int64_t id) {
  std::ostringstream sid;
  sid << "0x" << std::hex << id;
  return sid.str();
}

}  // namespace

int count_nodes(const std::string& connect, const std::string& dir, std::vector<std::string>* names) {
  int n = -1;
  on_own_session(connect, 20s, [&](zklock::session& s) -> asio::awaitable<void> {
    auto [gec, kids] = co_await s.async_get_children(dir, asio::as_tuple(asio::use_awaitable));
    if (!gec) {
      n = static_cast<int>(kids.children.size());
      if (names) {
        // "name owner=0x<session>": whose node it is
        for (auto& c : kids.children) {
          auto [eec, st] = co_await s.async_exists(dir + "/" + c, asio::as_tuple(asio::use_awaitable));
          names->push_back(c + (!eec && st ? " owner=" + session_id_text(st->ephemeral_owner) : std::string()));
        }
      }
    } else if (gec == zklock::zk_errc::no_node) {
      n = 0;
    }
  });
  return n;
}

// A four-letter word costs a member 2-4 ms of CPU (a thread each; `srvr` 2.2 ms, `mntr` 4 ms, 900
// of each to a 3.8 ensemble): the counts first, the lists only where they have something to say.
std::vector<member_watch_answers> ask_watches(const zklock::test::zk_ensemble& ens) {
  std::vector<member_watch_answers> v(ens.size());
  for (int i = 0; i < ens.size(); ++i) {
    v[i].wchs = ens.four_letter(i, "wchs");
    v[i].mntr = ens.four_letter(i, "mntr");
  }
  return v;
}

int count_watches(const zklock::test::zk_ensemble& ens, const std::string& dir,
                  const std::vector<member_watch_answers>& before, std::vector<watches_note>* notes,
                  int* silent) {
  auto now = ask_watches(ens);
  int n = 0;
  if (silent) *silent = 0;
  for (int i = 0; i < ens.size(); ++i) {
    if (silent && child_watches(now[i]) < 0) ++*silent;
    const member_watch_answers was = i < int(before.size()) ? before[i] : member_watch_answers{};
    if (data_watches(now[i]) > 0) now[i].wchp = ens.four_letter(i, "wchp");
    if (child_watches(now[i]) > std::max(child_watches(was), 0)) now[i].cons = ens.four_letter(i, "cons");
    n += watches_left(was, now[i], i, dir, notes);
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
  int written = 0;
  auto cec = on_own_session(connect, std::chrono::milliseconds(20000 + std::int64_t(rounds) * gap_ms),
                            [&](zklock::session& s) -> asio::awaitable<void> {
    for (int round = 0; round < rounds; ++round) {
      if (round > 0) {
        asio::steady_timer t(s.get_executor(), std::chrono::milliseconds(gap_ms));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      }
      for (auto& dir : dirs) {
        auto [gec, kids] = co_await s.async_get_children(dir, asio::as_tuple(asio::use_awaitable));
        if (gec) continue;
        for (auto& c : kids.children) {
          const std::size_t pick = rng() % datas.size();
          auto [sec, st] =
              co_await s.async_set_data(dir + "/" + c, datas[pick], -1, asio::as_tuple(asio::use_awaitable));
          if (!sec) ++written;
          if (log)
            log->push_back(dir + "/" + c + " <- " +
                           (pick + 1 == datas.size() ? std::string("16 random bytes") : "'" + datas[pick] + "'") +
                           (sec ? ": " + sec.message() : std::string()));
        }
      }
    }
  });
  if (cec && log) log->push_back("connect: " + cec.message());
  return written;
}

std::string delete_node(const std::string& connect, const std::string& path, std::string* owner, std::int64_t* at) {
  std::string what = "no answer within 20 s";
  auto cec = on_own_session(connect, 20s, [&](zklock::session& s) -> asio::awaitable<void> {
    auto [eec, st] = co_await s.async_exists(path, asio::as_tuple(asio::use_awaitable));
    if (eec || !st) {
      what = "exists: " + (eec ? eec.message() : std::string("no node"));
      co_return;
    }
    if (owner) *owner = session_id_text(st->ephemeral_owner);
    if (at) *at = mono_ns();
    auto [dec] = co_await s.async_delete(path, -1, asio::as_tuple(asio::use_awaitable));
    what = dec ? "delete: " + dec.message() : "";
  });
  return cec ? "connect: " + cec.message() : what;
}

}  // namespace zklock::fault

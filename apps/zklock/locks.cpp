// zklock locks: the walk (listings and reads pipelined, at most `window` in flight), then the
// library's view of each lock directory (zklock/lock_view.hpp) and the output.
#include "locks.hpp"

#include "command.hpp"
#include "session_setup.hpp"

#include <zklock/lock_view.hpp>
#include <zklock/path.hpp>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace zklock_cli {

namespace {

using namespace asio::experimental::awaitable_operators;
using zklock::contender;

// Requests in flight at once: enough to keep one server busy without holding its
// throttle (globalOutstandingLimit, 1000 by default) to itself.
constexpr std::size_t window = 500;

// A directory as listed: its contenders (read one by one) and whether it may be a
// semaphore's (a child "leases"; "locks" is created by the first acquire).
struct listed_dir {
  std::string path;
  std::vector<contender> queue;
  std::vector<bool> read;  // queue[i] was read (a node deleted before its read is left out)
  bool semaphore_layout = false;
  std::string head_mark;  // the head writer's downgrade mark, when the listing has it
  std::optional<zklock::node_stat> head_mark_stat;  // its stat, once read
};

// Lists ROOT and the directories under it breadth first, reads each contender's node; keeps
// `window` requests in flight. Runs on the session's executor; `done` is called once.
class walker : public std::enable_shared_from_this<walker> {
 public:
  walker(zklock::session& s, const locks_options& o, std::function<void()> done)
      : s_(s), o_(o), done_(std::move(done)) {}

  void start() {
    to_list_.push_back({o_.root, 0});
    pump();
  }
  // The caller gives up (a signal): no further request, no call of `done`.
  void stop() { stopped_ = true; }

  std::map<std::string, listed_dir> dirs;  // by path
  std::size_t listed = 0, reads = 0;
  bool truncated = false, root_missing = false;
  int errors = 0;

 private:
  struct to_list {
    std::string path;
    int depth;
  };

  void pump() {
    while (!stopped_ && in_flight_ < window) {
      if (!to_read_.empty()) {  // finish the directories under way first
        auto [path, i] = to_read_.front();
        to_read_.pop_front();
        read(path, i);
      } else if (!to_list_.empty()) {
        auto d = std::move(to_list_.front());
        to_list_.pop_front();
        if (listed >= o_.limit) {
          truncated = true;
          continue;
        }
        ++listed;
        list(std::move(d));
      } else {
        break;
      }
    }
    if (!stopped_ && in_flight_ == 0 && to_read_.empty() && to_list_.empty()) {
      stopped_ = true;
      done_();
    }
  }

  void failed(const std::string& path, error_code ec) {
    ++errors;
    say(path + ": " + ec.message());
  }

  void list(to_list d) {
    ++in_flight_;
    s_.async_get_children(d.path, [self = shared_from_this(), d](error_code ec, zklock::children_result r) {
      --self->in_flight_;
      if (self->stopped_) return;
      if (ec == zklock::zk_errc::no_node) {  // gone since its parent's listing: nothing there
        if (d.depth == 0) self->root_missing = true;
      } else if (ec) {
        self->failed(d.path, ec);
      } else {
        self->listed_children(d, std::move(r.children));
      }
      self->pump();
    });
  }

  void listed_children(const to_list& d, std::vector<std::string> children) {
    auto queue = zklock::lock_contenders(children);
    std::set<std::string> contenders;
    for (const auto& c : queue) contenders.insert(c.node);
    bool layout = std::count(children.begin(), children.end(), "leases") > 0;
    if (!queue.empty() || layout) {
      auto& ld = dirs[d.path];
      ld.path = d.path;
      ld.semaphore_layout = layout;
      ld.read.assign(queue.size(), false);
      for (std::size_t i = 0; i < queue.size(); ++i) to_read_.push_back({d.path, i});
      auto mark = queue.empty() ? std::string{} : zklock::downgrade_mark_of(queue[0]);
      if (!mark.empty() && std::count(children.begin(), children.end(), mark) > 0) {
        ld.head_mark = mark;
        to_read_.push_back({d.path, mark_index});
      }
      ld.queue = std::move(queue);
    }
    // Contenders are ephemeral: nothing under them. The rest may hold lock directories.
    std::sort(children.begin(), children.end());
    for (auto& c : children) {
      if (contenders.count(c)) continue;
      // a semaphore's leases and locks: listed beyond --depth
      bool part = layout && (c == "leases" || c == "locks");
      if (d.depth < o_.depth || part) to_list_.push_back({zklock::join_path(d.path, c), d.depth + 1});
    }
  }

  void read(const std::string& path, std::size_t i) {
    ++in_flight_;
    ++reads;
    if (i == mark_index) return read_mark(path);
    auto node = zklock::join_path(path, dirs[path].queue[i].node);
    s_.async_get_data(node, [self = shared_from_this(), path, i, node](error_code ec, zklock::data_result r) {
      --self->in_flight_;
      if (self->stopped_) return;
      if (!ec) {
        auto& ld = self->dirs[path];
        zklock::set_contender_data(ld.queue[i], std::move(r));
        ld.read[i] = true;
      } else if (ec != zklock::zk_errc::no_node) {  // no_node: released since the listing
        self->failed(node, ec);
      }
      self->pump();
    });
  }

  // The head writer's downgrade mark: its owner tells whether the writer downgraded.
  void read_mark(const std::string& path) {
    auto node = zklock::join_path(path, dirs[path].head_mark);
    s_.async_exists(node, [self = shared_from_this(), path, node](error_code ec, std::optional<zklock::node_stat> st) {
      --self->in_flight_;
      if (self->stopped_) return;
      if (!ec) self->dirs[path].head_mark_stat = st;  // none: deleted since the listing
      else self->failed(node, ec);
      self->pump();
    });
  }

  // to_read_'s index of a directory's head mark (the others are queue indexes).
  static constexpr std::size_t mark_index = static_cast<std::size_t>(-1);

  zklock::session& s_;
  const locks_options& o_;
  std::function<void()> done_;
  std::deque<to_list> to_list_;
  std::deque<std::pair<std::string, std::size_t>> to_read_;
  std::size_t in_flight_ = 0;
  bool stopped_ = false;
};

// The contenders that were read, in queue order.
std::vector<contender> read_queue(listed_dir& d) {
  std::vector<contender> r;
  if (d.head_mark_stat && !d.queue.empty() && d.read[0]) zklock::set_downgrade_mark(d.queue[0], *d.head_mark_stat);
  for (std::size_t i = 0; i < d.queue.size(); ++i)
    if (d.read[i]) r.push_back(std::move(d.queue[i]));
  return r;
}

// Every lock directory's view, by path; a semaphore's leases and locks as one, at its path.
// `layouts`: the paths of the semaphores seen with their PATH/leases and PATH/locks.
std::vector<zklock::lock_dir_view> views(std::map<std::string, listed_dir>& dirs, std::set<std::string>& layouts) {
  std::set<std::string> parts;
  std::vector<zklock::lock_dir_view> r;
  for (auto& [path, d] : dirs) {
    if (!d.semaphore_layout) continue;
    auto leases = dirs.find(zklock::join_path(path, "leases"));
    auto locks = dirs.find(zklock::join_path(path, "locks"));
    // a "leases" of anything but lease nodes is some other lock
    if (leases != dirs.end() && std::any_of(leases->second.queue.begin(), leases->second.queue.end(),
                                            [](const contender& c) { return c.kind != zklock::lock_kind::lease; }))
      continue;
    std::vector<contender> queues[2];
    for (auto [i, it] : {std::pair{0, leases}, std::pair{1, locks}}) {
      if (it == dirs.end()) continue;
      queues[i] = read_queue(it->second);
      parts.insert(it->first);
    }
    if (!queues[0].empty() || !queues[1].empty()) {
      r.push_back(zklock::view_semaphore(path, std::move(queues[0]), std::move(queues[1])));
      layouts.insert(path);
    }
  }
  for (auto& [path, d] : dirs) {
    if (parts.count(path) || d.queue.empty()) continue;
    auto q = read_queue(d);
    if (!q.empty()) r.push_back(zklock::view_lock_dir(path, std::move(q)));
  }
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return r;
}

}  // namespace

namespace {

struct printer {
  std::int64_t now_ms;
  double age(const contender& c) const { return std::max<double>(0, static_cast<double>(now_ms - c.stat.ctime) / 1000.0); }

};

}  // namespace

std::optional<std::string> parse_locks_options(const std::string& depth, const std::string& limit,
                                               const std::string& older_than, locks_options& o) {
  auto whole = [](const std::string& name, const std::string& t, long long min, auto& out) -> std::optional<std::string> {
    long long v = 0;
    auto [end, err] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || err != std::errc() || end != t.data() + t.size() || v < min || v > 1000000000)
      return name + ": expected a whole number >= " + std::to_string(min) + ", got '" + t + "'";
    out = static_cast<std::remove_reference_t<decltype(out)>>(v);
    return std::nullopt;
  };
  if (!depth.empty())
    if (auto p = whole("--depth", depth, 0, o.depth)) return p;
  if (!limit.empty())
    if (auto p = whole("--limit", limit, 1, o.limit)) return p;
  if (!older_than.empty()) {
    char* end = nullptr;
    double v = std::strtod(older_than.c_str(), &end);
    if (end == older_than.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
      return "--older-than: expected a number of seconds >= 0, got '" + older_than + "'";
    o.older_than = v;
  }
  return std::nullopt;
}

asio::awaitable<lock_walk> walk_locks(zklock::session& s, const locks_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto started = std::chrono::steady_clock::now();
  auto requests_before = s.stats().requests_sent;
  asio::steady_timer finished(ex, asio::steady_timer::time_point::max());
  auto w = std::make_shared<walker>(s, o, [&finished] { finished.cancel(); });
  w->start();
  lock_walk result;
  auto r = co_await (finished.async_wait(use_tuple) || sigs.async_wait(use_tuple));
  if (r.index() == 1) {
    w->stop();
    result.signalled = std::get<1>(std::get<1>(r));
    co_return result;
  }
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (o.verbose) {
    char line[200];
    std::snprintf(line, sizeof line, "listed %zu directories and read %zu nodes: %" PRIu64 " requests in %.3f s",
                  w->listed, w->reads, s.stats().requests_sent - requests_before, seconds);
    say(line);
  }
  result.root_missing = w->root_missing;
  result.truncated = w->truncated;
  result.errors = w->errors;
  result.views = views(w->dirs, result.semaphore_layouts);
  co_return result;
}

asio::awaitable<int> run_locks(zklock::session& s, const locks_options& o, asio::signal_set& sigs) {
  auto walk = co_await walk_locks(s, o, sigs);
  if (walk.signalled) co_return 128 + walk.signalled;
  if (walk.root_missing) {
    say(o.root + ": no such node");
    co_return exit_error;
  }
  if (walk.truncated)
    say("stopped after --limit " + std::to_string(o.limit) + " directories: the list is incomplete");

  auto& all = walk.views;
  auto deadlocks = zklock::find_deadlocks(all);
  printer p{now_ms()};
  std::string out;
  if (o.json) out = "{\"locks\":[";
  bool first = true;
  for (const auto& v : all) {
    std::vector<contender> holders;
    for (const auto& h : v.holders)
      if (o.older_than < 0 || p.age(h) > o.older_than) holders.push_back(h);
    if (o.older_than >= 0 && holders.empty()) continue;  // only stuck holders asked for
    std::optional<double> oldest_wait;
    for (const auto& c : v.waiters) oldest_wait = std::max(oldest_wait.value_or(0), p.age(c));
    if (o.json) {
      out += std::string(first ? "" : ",") + view_json(v, holders, p.now_ms);
    } else {
      // PATH KIND holders: SESSION (IDENTITY) AGE, ... waiters: N oldest AGE: SESSION (IDENTITY) AGE, ...
      // (an election's other candidates: "campaigning: N: ...")
      out += line_field(v.path, " ") + " " + zklock::to_string(v.kind) + " holders:";
      auto list = [&](const std::vector<contender>& cs) {
        for (std::size_t i = 0; i < cs.size(); ++i) out += (i ? ", " : " ") + contender_text(cs[i]) + " " + age_str(p.age(cs[i]));
      };
      if (holders.empty()) out += " -";
      list(holders);
      bool campaign = v.kind == zklock::lock_dir_kind::leader_election;
      out += (campaign ? " campaigning: " : " waiters: ") + std::to_string(v.waiters.size());
      if (oldest_wait && !campaign) out += " oldest " + age_str(*oldest_wait);
      if (!v.waiters.empty()) {
        out += ":";
        list(v.waiters);
      }
      out += "\n";
    }
    first = false;
  }
  if (o.json) out += "],\"deadlocks\":[";
  first = true;
  for (const auto& d : deadlocks) {
    if (o.json) {
      std::string sessions, paths, cycle;
      for (const auto& st : d.cycle) {
        sessions += (sessions.empty() ? "" : ",") + json_string(session_str(st.session));
        paths += (paths.empty() ? "" : ",") + json_string(st.path);
        cycle += std::string(cycle.empty() ? "" : ",") + "{\"session\":" + json_string(session_str(st.session)) +
                 ",\"path\":" + json_string(st.path) + ",\"node\":" + json_string(st.node) +
                 ",\"waits_for\":" + json_string(session_str(st.blocker)) +
                 ",\"holds\":" + (st.blocker_holds ? "true" : "false") +
                 ",\"child\":" + (st.child ? "true" : "false") + "}";
      }
      out += std::string(first ? "" : ",") + "{\"sessions\":[" + sessions + "],\"paths\":[" + paths +
             "],\"cycle\":[" + cycle + "]}";
    } else {
      // deadlock: S1 waits in P1 for S2, S2 waits in P2 for S1 ("(queued ahead)": not holding yet;
      // "S waits for its child C": C runs under S's zklock exec)
      out += "deadlock:";
      for (std::size_t i = 0; i < d.cycle.size(); ++i) {
        const auto& st = d.cycle[i];
        out += (i ? ", " : " ") + session_str(st.session) +
               (st.child ? " waits for its child " + session_str(st.blocker)
                         : " waits in " + line_field(st.path, " ,") + " for " + session_str(st.blocker) +
                               (st.blocker_holds ? "" : " (queued ahead)"));
      }
      out += "\n";
    }
    first = false;
  }
  if (o.json) out += "],\"truncated\":" + std::string(walk.truncated ? "true" : "false") + "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  co_return walk.errors ? exit_error : 0;
}

namespace {
asio::awaitable<int> connect_and_run_locks(const common_options& co, const locks_options& o, asio::signal_set& sigs) {
  auto ex = co_await asio::this_coro::executor;
  auto log = std::make_shared<zk_log>();
  zklock::session s(ex, make_session_options(co, log));
  if (int rc = co_await connect(s, sigs, co, *log)) co_return rc;
  int rc = co_await run_locks(s, o, sigs);
  co_await s.async_close(use_tuple);
  co_return rc;
}
}  // namespace

command add_locks(CLI::App& app, cli_context& ctx) {
  struct texts {
    locks_options o;
    std::string depth, limit, older_than;
  };
  auto t = std::make_shared<texts>();
  auto* locks = app.add_subcommand("locks", "List every lock under ROOT: its holders, its waiters, and the deadlocks.");
  add_common(locks, ctx);
  locks->add_option("--depth", t->depth, "levels of directories to walk below ROOT (0: ROOT alone)")
      ->type_name("N")
      ->default_str("10");
  locks->add_option("--limit", t->limit, "list at most N directories (then say the list is incomplete)")
      ->type_name("N")
      ->default_str("100000");
  locks->add_option("--older-than", t->older_than, "only holders whose node is older than SECONDS (stuck jobs)")
      ->type_name("SECONDS");
  locks->add_flag("--json", t->o.json, "one JSON object {\"locks\": [...], \"deadlocks\": [...], \"truncated\": BOOL}");
  locks->add_option("ROOT", t->o.root, "where to look (\"/\": everywhere)")->required();
  locks->footer(
      "One line per lock directory: PATH KIND holders: SESSION (IDENTITY) AGE, ... waiters: N [oldest AGE]\n"
      "[: SESSION (IDENTITY) AGE, ...] (an election's other candidates: \"campaigning: N: ...\"; they wait in no\n"
      "deadlock); KIND mutex, read/write, semaphore or election; then a line per deadlock: \"deadlock: S1 waits\n"
      "in P1 for S2, S2 waits in P2 for S1\" (\"S waits for its child C\": C runs under S's zklock exec, see\n"
      "ZKLOCK_SESSION). Ages in seconds since the node was created. Reads only.\n"
      "Exit status: 0 (also when nothing is found), 1 ROOT missing or ZooKeeper error, 2 usage.");
  command c;
  c.app = locks;
  c.check = [t, &ctx] {
    t->o.verbose = ctx.common.verbose;
    if (auto problem = parse_locks_options(t->depth, t->limit, t->older_than, t->o)) {
      say(*problem);
      return exit_usage;
    }
    if (auto ec = zklock::validate_path(t->o.root)) {
      say("bad path '" + t->o.root + "': " + ec.message());
      return exit_usage;
    }
    return 0;
  };
  c.run = [t, &ctx](asio::signal_set& sigs) { return connect_and_run_locks(ctx.common, t->o, sigs); };
  return c;
}

}  // namespace zklock_cli

// A simulated session for the runner (src/lock/runner.hpp): an in-memory tree answering the
// runner's calls in order on an executor, as one ZooKeeper session does, with its watches
// (data and exists watches on a node, child watches on its parent) and a connection that can
// drop and come back, a state followers hear of (follow_session), and an expiry. The runner is
// templated over its session: with this one, the unit tests run a machine through the same
// runner the library uses, without a server. `wire` records each request as sent
// ("get_data /e/n watch"). Several sessions may share one tree (sim_tree: the server), each
// with its own id, ephemerals and watches. `by_hand`: the answers and watch events wait in the
// session's outbox, in the order the server sends them, until the test delivers them
// (deliver_one): the property tests interleave sessions so, and drop a connection with
// replies on their way. No Catch2 here.
#pragma once

#include "engine/hooks.hpp"

#include <zklock/detail/session_ops.hpp>
#include <zklock/detail/watch_state.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zklock::testing {

namespace asio = boost::asio;
using detail::watch_state;
using watch_ptr = boost::intrusive_ptr<watch_state>;

class session_sim;

/// The server's tree, shared by the sessions on it: a change fires each session's watches.
struct sim_tree {
  struct node {
    std::string data;
    node_stat stat;
  };
  std::map<std::string, node> nodes;
  std::int64_t zxid = 0;
  std::vector<session_sim*> sessions;

  static std::string parent(const std::string& path) { return path.substr(0, path.rfind('/')); }
  bool has(const std::string& path) const { return nodes.count(path) > 0; }
  children_result children_of(const std::string& path) const {
    children_result r;
    if (auto it = nodes.find(path); it != nodes.end()) r.stat = it->second.stat;
    for (const auto& [p, n] : nodes)
      if (parent(p) == path && p.size() > path.size()) r.children.push_back(p.substr(path.size() + 1));
    return r;
  }
  inline void add(const std::string& path, std::string data, std::int64_t owner = 0);
  inline void erase(const std::string& path);
  inline void set(const std::string& path, std::string data);
};

class session_sim : public std::enable_shared_from_this<session_sim> {
 public:
  explicit session_sim(asio::any_io_executor ex, std::shared_ptr<sim_tree> tree = std::make_shared<sim_tree>(),
                       std::int64_t id = 0x5e55)
      : ex_(std::move(ex)), tree_(std::move(tree)), session_id_(id) {
    tree_->sessions.push_back(this);
  }
  ~session_sim() { std::erase(tree_->sessions, this); }
  session_sim(const session_sim&) = delete;
  session_sim& operator=(const session_sim&) = delete;

  // ---- what the runner calls ----
  const asio::any_io_executor& executor() const noexcept { return ex_; }
  session_state state() const noexcept { return state_; }
  std::int64_t session_id() const noexcept { return session_id_; }
  std::chrono::steady_clock::time_point last_acknowledged() const noexcept { return last_ack_; }
  std::chrono::milliseconds negotiated_timeout() const noexcept { return timeout; }
  std::chrono::steady_clock::time_point valid_until() const noexcept { return last_ack_ + timeout - timeout / 10; }

  class send_batch {
   public:
    explicit send_batch(session_sim* s) : s_(s), opened_(!s->in_batch_) { s_->in_batch_ = true; }
    ~send_batch() {
      if (opened_) s_->in_batch_ = false;
    }
    send_batch(const send_batch&) = delete;
    send_batch& operator=(const send_batch&) = delete;

   private:
    session_sim* s_;
    bool opened_;
  };

  void create(const std::string& path, const std::string& data, create_mode mode, detail::create_handler h) {
    log("create " + path);
    if (auto ec = down()) return answer(std::move(h), ec, create_result{});
    auto made = path;
    const bool sequential = mode == create_mode::ephemeral_sequential || mode == create_mode::persistent_sequential;
    const bool ephemeral = mode == create_mode::ephemeral_sequential || mode == create_mode::ephemeral;
    auto up = nodes().find(sim_tree::parent(path));
    if (up == nodes().end() && !sim_tree::parent(path).empty()) return answer(std::move(h), zk_errc::no_node, create_result{});
    if (sequential) {
      char seq[16];
      std::snprintf(seq, sizeof seq, "%010d", up == nodes().end() ? 0 : up->second.stat.cversion);
      made += seq;
    }
    if (nodes().count(made)) return answer(std::move(h), zk_errc::node_exists, create_result{});
    tree_->add(made, data, ephemeral ? session_id_ : 0);
    answer(std::move(h), error_code{}, create_result{.path = made, .stat = nodes().at(made).stat});
  }
  void remove(const std::string& path, int, detail::void_handler h) {
    log("remove " + path);
    if (auto ec = down()) return answer(std::move(h), ec);
    if (!nodes().count(path)) return answer(std::move(h), zk_errc::no_node);
    tree_->erase(path);
    answer(std::move(h), error_code{});
  }
  void exists(const std::string& path, watch_ptr* w, detail::exists_handler h) {
    log("exists " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, std::optional<node_stat>{});
    if (w) *w = setting_ = watch(path, false);  // set whether the node is there or not
    auto it = nodes().find(path);
    answer(std::move(h), error_code{}, it == nodes().end() ? std::optional<node_stat>{} : it->second.stat);
  }
  void get_data(const std::string& path, watch_ptr* w, detail::data_handler h) {
    log("get_data " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, data_result{});
    auto it = nodes().find(path);
    if (it == nodes().end()) return answer(std::move(h), zk_errc::no_node, data_result{});
    if (w) *w = setting_ = watch(path, false);
    answer(std::move(h), error_code{}, data_result{it->second.data, it->second.stat});
  }
  void get_children(const std::string& path, watch_ptr* w, detail::children_handler h) {
    log("get_children " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, children_result{});
    if (!nodes().count(path)) return answer(std::move(h), zk_errc::no_node, children_result{});
    if (w) *w = setting_ = watch(path, true);
    answer(std::move(h), error_code{}, children_of(path));
  }
  /// The engine's form (the runner's): the result shared.
  void get_children(const std::string& path, watch_ptr* w, detail::shared_children_handler h) {
    log("get_children " + path + (w ? " watch" : ""));
    auto none = std::make_shared<const children_result>();
    if (auto ec = down()) return answer(std::move(h), ec, none);
    if (!nodes().count(path)) return answer(std::move(h), zk_errc::no_node, none);
    if (w) *w = setting_ = watch(path, true);
    answer(std::move(h), error_code{}, std::make_shared<const children_result>(children_of(path)));
  }
  children_result children_of(const std::string& path) const { return tree_->children_of(path); }
  void set_data(const std::string& path, const std::string& data, int version, detail::stat_handler h) {
    log("set_data " + path);
    if (auto ec = down()) return answer(std::move(h), ec, node_stat{});
    auto it = nodes().find(path);
    if (it == nodes().end()) return answer(std::move(h), zk_errc::no_node, node_stat{});
    if (version >= 0 && version != it->second.stat.version) return answer(std::move(h), zk_errc::bad_version, node_stat{});
    tree_->set(path, data);
    answer(std::move(h), error_code{}, nodes().at(path).stat);
  }
  void sync(const std::string& path, detail::void_handler h) {
    log("sync " + path);
    answer(std::move(h), down());
  }
  void multi(const std::vector<multi_op>&, detail::multi_handler h) {
    log("multi");
    answer(std::move(h), down() ? down() : error_code(zk_errc::unimplemented), std::vector<multi_result>{});  // (no machine on the runner sends one yet)
  }
  void wait_watch(const watch_ptr& w, detail::watch_handler h) {
    if (w->fired) return answer_event(std::move(h), w->fired->first, w->fired->second);
    // (emplaced: Boost 1.81's any_completion_handler move-assignment wraps the handler in another)
    waiters_.erase(w.get());
    waiters_.emplace(w.get(), std::move(h));
  }
  void remove_watch(const watch_ptr& w, detail::void_handler h) {
    log("remove_watch " + w->path);
    if (auto ec = down()) return answer(std::move(h), ec);
    unregister(w);
    if (auto it = waiters_.find(w.get()); it != waiters_.end()) {
      auto waiter = std::move(it->second);
      waiters_.erase(it);
      answer_event(std::move(waiter), error_code{}, watch_event{watch_event_type::not_watching, w->path});
    }
    answer(std::move(h), error_code{});
  }

  // ---- what a test does to the server and the connection ----
  void add(const std::string& path, std::string data) { tree_->add(path, std::move(data)); }
  void erase(const std::string& path) { tree_->erase(path); }
  void set(const std::string& path, std::string data) { tree_->set(path, std::move(data)); }
  /// The connection drops: requests fail with connection_loss until reconnect(); the watches
  /// stay registered (the C client sets them again). By hand, the first `received` answers of
  /// the outbox had arrived and are delivered as they are; the replies behind them fail with
  /// connection_loss (their request reached the server), delivered now, before the state
  /// change; the events behind them come after the reconnect.
  void disconnect(std::size_t received = static_cast<std::size_t>(-1)) {
    if (by_hand) {
      auto out = std::exchange(outbox, {});
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (i < received) out[i].ok();
        else if (out[i].lost) out[i].lost(zk_errc::connection_loss);
        else held_events_.push_back(std::move(out[i]));
      }
    }
    change(session_state::suspended);
  }
  void reconnect() {
    if (by_hand) flush();  // (the requests made while down: their losses first)
    change(session_state::reconnected);
    for (auto& f : std::exchange(on_connected_, {})) asio::post(ex_, std::move(f));
    for (auto& e : std::exchange(held_events_, {})) outbox.push_back(std::move(e));
    for (auto& [w, type] : std::exchange(held_fires_, {}))
      if (w->registered) fired(w, type);
  }
  /// The server expired the session: its ephemeral nodes go, its watches end with the session.
  void expire() {
    for (auto& d : std::exchange(outbox, {}))
      if (d.lost) d.lost(zk_errc::session_expired);
    held_events_.clear();
    held_fires_.clear();
    change(session_state::expired);
    for (auto& w : std::exchange(registered_, {})) w->registered = false;
    for (auto& [w, h] : std::exchange(waiters_, {}))
      post_answer(std::move(h), error_code(zk_errc::session_expired), watch_event{watch_event_type::not_watching, w->path});
    std::vector<std::string> ours;
    for (const auto& [p, n] : nodes())
      if (n.stat.ephemeral_owner == session_id_) ours.push_back(p);
    for (const auto& p : ours) tree_->erase(p);
  }
  /// An ephemeral node of this session (as a lock's create makes).
  void add_ephemeral(const std::string& path, std::string data = {}) { tree_->add(path, std::move(data), session_id_); }
  bool has(const std::string& path) const { return tree_->has(path); }
  const std::string& data_of(const std::string& path) const { return nodes().at(path).data; }
  sim_tree& tree() noexcept { return *tree_; }
  std::chrono::milliseconds timeout{10000};
  /// The watches registered now.
  std::size_t watches() const noexcept { return registered_.size(); }
  /// Their paths ("child " before a child watch's).
  std::string watched() const {
    std::string r;
    for (const auto& w : registered_) r += (r.empty() ? "" : ", ") + std::string(w->child_watch ? "child " : "") + w->path;
    return r;
  }

  std::vector<std::string> wire;

  /// Forgets every answer, waiter and follower (what holds a runner): the end of a test.
  void drop_all() {
    outbox.clear();
    held_events_.clear();
    held_fires_.clear();
    waiters_.clear();
    followers_.clear();
    on_connected_.clear();
  }

  /// By hand: an answer or an event on its way to the session's runner (posted when delivered);
  /// `lost` (a reply's, none for an event) delivers the reply's failure instead.
  struct delivery {
    std::function<void()> ok;
    std::function<void(error_code)> lost;
  };
  bool by_hand = false;
  std::deque<delivery> outbox;
  /// Posts the next answer in the outbox; false when it is empty.
  bool deliver_one() {
    if (outbox.empty()) return false;
    auto d = std::move(outbox.front());
    outbox.pop_front();
    d.ok();
    return true;
  }
  void flush() {
    while (deliver_one()) {
    }
  }

  /// Calls f(owner, state) at each state change (posted) while owner and the result live.
  template <class Owner, class F>
  friend std::shared_ptr<void> follow_session(std::shared_ptr<session_sim> s, Owner owner, F f) {
    auto alive = std::make_shared<int>(0);
    s->followers_.push_back([ex = s->ex_, w = std::weak_ptr<int>(alive), owner = std::move(owner), f = std::move(f)](session_state st) {
      asio::post(ex, [w, owner, f, st] {
        if (w.expired()) return;
        if (auto self = detail::lock_owner(owner)) std::invoke(f, *self, st);
      });
    });
    return alive;
  }

  template <class Owner, class F>
  friend void await_connection(std::shared_ptr<session_sim> s, Owner owner, F f) {
    auto answer = [s, owner = std::move(owner), f = std::move(f)]() mutable {
      if (auto self = detail::lock_owner(owner)) f(*self, s->state_);
    };
    if (is_connected(s->state_)) return asio::post(s->ex_, std::move(answer));
    s->on_connected_.push_back(std::move(answer));
  }

 private:
  friend struct sim_tree;
  std::map<std::string, sim_tree::node>& nodes() noexcept { return tree_->nodes; }
  const std::map<std::string, sim_tree::node>& nodes() const noexcept { return tree_->nodes; }
  void log(std::string what) { wire.push_back(std::move(what)); }
  error_code down() const {
    if (state_ == session_state::expired) return zk_errc::session_expired;
    return is_connected(state_) ? error_code{} : error_code(zk_errc::connection_loss);
  }
  void change(session_state st) {
    if (by_hand) log("-- " + std::string(to_string(st)));
    state_ = st;
    for (auto& f : followers_) f(st);
  }

  template <class T>
  static T failed_value() {
    if constexpr (std::is_same_v<T, detail::shared_children>) return std::make_shared<const children_result>();
    else return T{};
  }
  template <class H, class... Rest>
  void post_answer(H h, error_code ec, Rest... rest) {
    asio::post(ex_, [h = std::move(h), ec, rest...]() mutable { std::move(h)(ec, rest...); });
  }
  // A reply: posted now, or by hand into the outbox (with its failure, should the connection drop).
  template <class H, class... Rest>
  void answer(H h, error_code ec, Rest... rest) {
    if (is_connected(state_)) last_ack_ = std::chrono::steady_clock::now();
    if (!by_hand) return setting_ = nullptr, post_answer(std::move(h), ec, rest...);
    auto hp = std::make_shared<H>(std::move(h));
    // A watch is the client's once its request's reply came: one lost with the connection is
    // set on neither side (the server drops a connection's watches; the C client sets again
    // only those it registered).
    outbox.push_back({.ok = [this, hp, ec, rest...] { post_answer(std::move(*hp), ec, rest...); },
                      .lost = [this, hp, w = std::exchange(setting_, nullptr)](error_code e) {
                        if (w) unregister(w);
                        post_answer(std::move(*hp), e, failed_value<Rest>()...);
                      }});
  }
  // A watch's event: as a reply, but never lost (the C client keeps it, or sets the watch again).
  template <class H>
  void answer_event(H h, error_code ec, watch_event ev) {
    if (!by_hand) return post_answer(std::move(h), ec, ev);
    auto hp = std::make_shared<H>(std::move(h));
    outbox.push_back({.ok = [this, hp, ec, ev] { post_answer(std::move(*hp), ec, ev); }, .lost = {}});
  }

  watch_ptr watch(const std::string& path, bool child) {
    watch_ptr w(new watch_state);
    w->ex = ex_;
    w->path = path;
    w->child_watch = child;
    w->registered = true;
    registered_.push_back(w);
    return w;
  }
  void unregister(const watch_ptr& w) {
    w->registered = false;
    std::erase(registered_, w);
  }
  // The server fires a watch: by hand while the connection is down, after the reconnect.
  void fire(const std::string& path, bool child, watch_event_type type) {
    auto hit = registered_;
    for (auto& w : hit) {
      if (w->path != path || w->child_watch != child) continue;
      if (by_hand && !is_connected(state_)) {
        held_fires_.emplace_back(w, type);
        continue;
      }
      fired(w, type);
    }
  }
  void fired(const watch_ptr& w, watch_event_type type) {
    unregister(w);
    w->fired.emplace(error_code{}, watch_event{type, w->path});
    if (auto it = waiters_.find(w.get()); it != waiters_.end()) {
      auto h = std::move(it->second);
      waiters_.erase(it);
      answer_event(std::move(h), error_code{}, watch_event{type, w->path});
    }
  }

  asio::any_io_executor ex_;
  std::shared_ptr<sim_tree> tree_;
  session_state state_ = session_state::connected;
  bool in_batch_ = false;  // (nothing is corked: the answers are posted in order anyway)
  std::vector<watch_ptr> registered_;
  watch_ptr setting_;  // the watch the request being answered set
  std::vector<delivery> held_events_;                           // by hand: lost with the connection
  std::vector<std::pair<watch_ptr, watch_event_type>> held_fires_;  // by hand: fired while down
  std::map<watch_state*, detail::watch_handler> waiters_;
  std::vector<std::function<void()>> on_connected_;
  std::vector<std::function<void(session_state)>> followers_;
  std::int64_t session_id_;
  std::chrono::steady_clock::time_point last_ack_ = std::chrono::steady_clock::now();
};

inline void sim_tree::add(const std::string& path, std::string data, std::int64_t owner) {
  auto& n = nodes[path];
  n.data = std::move(data);
  n.stat.ctime = n.stat.czxid = n.stat.mzxid = ++zxid;
  n.stat.ephemeral_owner = owner;
  if (auto up = nodes.find(parent(path)); up != nodes.end()) {
    ++up->second.stat.cversion;
    ++up->second.stat.num_children;
    up->second.stat.pzxid = zxid;
  }
  for (auto* s : std::vector(sessions)) s->fire(path, false, watch_event_type::created);
  for (auto* s : std::vector(sessions)) s->fire(parent(path), true, watch_event_type::child);
}
// A node goes: its data and exists watches, and child watches on it, hear it deleted.
inline void sim_tree::erase(const std::string& path) {
  if (!nodes.erase(path)) return;
  ++zxid;
  if (auto up = nodes.find(parent(path)); up != nodes.end()) {
    ++up->second.stat.cversion;
    --up->second.stat.num_children;
    up->second.stat.pzxid = zxid;
  }
  for (auto* s : std::vector(sessions)) s->fire(path, false, watch_event_type::deleted);
  for (auto* s : std::vector(sessions)) s->fire(path, true, watch_event_type::deleted);
  for (auto* s : std::vector(sessions)) s->fire(parent(path), true, watch_event_type::child);
}
inline void sim_tree::set(const std::string& path, std::string data) {
  auto& n = nodes.at(path);
  n.data = std::move(data);
  ++n.stat.version;
  n.stat.mzxid = ++zxid;
  for (auto* s : std::vector(sessions)) s->fire(path, false, watch_event_type::changed);
}

}  // namespace zklock::testing

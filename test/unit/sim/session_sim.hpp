// A simulated session for the runner (src/lock/runner.hpp): an in-memory tree answering the
// runner's calls in order on an executor, as one ZooKeeper session does, with its watches
// (data and exists watches on a node, child watches on its parent) and a connection that can
// drop and come back, a state followers hear of (follow_session), and an expiry. The runner is templated over its session: with this one, the unit tests
// run a machine through the same runner the library uses, without a server. `wire` records
// each request as sent ("get_data /e/n watch"). No Catch2 here.
#pragma once

#include "engine/hooks.hpp"

#include <zklock/detail/session_ops.hpp>
#include <zklock/detail/watch_state.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/post.hpp>

#include <chrono>
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

class session_sim : public std::enable_shared_from_this<session_sim> {
 public:
  explicit session_sim(asio::any_io_executor ex) : ex_(std::move(ex)) {}

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

  void create(const std::string& path, const std::string& data, create_mode, detail::create_handler h) {
    log("create " + path);
    if (auto ec = down()) return answer(std::move(h), ec, create_result{});
    if (nodes_.count(path)) return answer(std::move(h), zk_errc::node_exists, create_result{});
    add(path, data);
    answer(std::move(h), error_code{}, create_result{.path = path});
  }
  void remove(const std::string& path, int, detail::void_handler h) {
    log("remove " + path);
    if (auto ec = down()) return answer(std::move(h), ec);
    if (!nodes_.count(path)) return answer(std::move(h), zk_errc::no_node);
    erase(path);
    answer(std::move(h), error_code{});
  }
  void exists(const std::string& path, watch_ptr* w, detail::exists_handler h) {
    log("exists " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, std::optional<node_stat>{});
    if (w) *w = watch(path, false);  // set whether the node is there or not
    auto it = nodes_.find(path);
    answer(std::move(h), error_code{}, it == nodes_.end() ? std::optional<node_stat>{} : it->second.stat);
  }
  void get_data(const std::string& path, watch_ptr* w, detail::data_handler h) {
    log("get_data " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, data_result{});
    auto it = nodes_.find(path);
    if (it == nodes_.end()) return answer(std::move(h), zk_errc::no_node, data_result{});
    if (w) *w = watch(path, false);
    answer(std::move(h), error_code{}, data_result{it->second.data, it->second.stat});
  }
  void get_children(const std::string& path, watch_ptr* w, detail::children_handler h) {
    log("get_children " + path + (w ? " watch" : ""));
    if (auto ec = down()) return answer(std::move(h), ec, children_result{});
    if (!nodes_.count(path)) return answer(std::move(h), zk_errc::no_node, children_result{});
    if (w) *w = watch(path, true);
    answer(std::move(h), error_code{}, children_of(path));
  }
  /// The engine's form (the runner's): the result shared.
  void get_children(const std::string& path, watch_ptr* w, detail::shared_children_handler h) {
    log("get_children " + path + (w ? " watch" : ""));
    auto none = std::make_shared<const children_result>();
    if (auto ec = down()) return answer(std::move(h), ec, none);
    if (!nodes_.count(path)) return answer(std::move(h), zk_errc::no_node, none);
    if (w) *w = watch(path, true);
    answer(std::move(h), error_code{}, std::make_shared<const children_result>(children_of(path)));
  }
  children_result children_of(const std::string& path) const {
    children_result r;
    for (const auto& [p, n] : nodes_)
      if (parent(p) == path) r.children.push_back(p.substr(path.size() + 1));
    return r;
  }
  void set_data(const std::string& path, const std::string& data, int version, detail::stat_handler h) {
    log("set_data " + path);
    if (auto ec = down()) return answer(std::move(h), ec, node_stat{});
    auto it = nodes_.find(path);
    if (it == nodes_.end()) return answer(std::move(h), zk_errc::no_node, node_stat{});
    if (version >= 0 && version != it->second.stat.version) return answer(std::move(h), zk_errc::bad_version, node_stat{});
    set(path, data);
    answer(std::move(h), error_code{}, nodes_.at(path).stat);
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
    if (w->fired) return answer(std::move(h), w->fired->first, w->fired->second);
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
      answer(std::move(waiter), error_code{}, watch_event{watch_event_type::not_watching, w->path});
    }
    answer(std::move(h), error_code{});
  }

  // ---- what a test does to the server and the connection ----
  void add(const std::string& path, std::string data) {
    auto& n = nodes_[path];
    n.data = std::move(data);
    n.stat.ctime = n.stat.czxid = ++zxid_;
    fire(path, false, watch_event_type::created);
    fire(parent(path), true, watch_event_type::child);
  }
  void erase(const std::string& path) {
    nodes_.erase(path);
    fire(path, false, watch_event_type::deleted);
    fire(parent(path), true, watch_event_type::child);
  }
  void set(const std::string& path, std::string data) {
    auto& n = nodes_.at(path);
    n.data = std::move(data);
    ++n.stat.version;
    fire(path, false, watch_event_type::changed);
  }
  /// The connection drops: requests fail with connection_loss until reconnect(); the watches
  /// stay registered (the C client sets them again).
  void disconnect() { change(session_state::suspended); }
  void reconnect() {
    change(session_state::reconnected);
    for (auto& f : std::exchange(on_connected_, {})) asio::post(ex_, std::move(f));
  }
  /// The server expired the session: its ephemeral nodes go, its watches end with the session.
  void expire() {
    change(session_state::expired);
    for (auto it = nodes_.begin(); it != nodes_.end();)
      it = it->second.stat.ephemeral_owner == session_id_ ? nodes_.erase(it) : std::next(it);
    for (auto& w : std::exchange(registered_, {})) w->registered = false;
    for (auto& [w, h] : std::exchange(waiters_, {}))
      answer(std::move(h), error_code(zk_errc::session_expired), watch_event{watch_event_type::not_watching, w->path});
  }
  /// An ephemeral node of this session (as a lock's create makes).
  void add_ephemeral(const std::string& path, std::string data = {}) {
    add(path, std::move(data));
    nodes_.at(path).stat.ephemeral_owner = session_id_;
  }
  bool has(const std::string& path) const { return nodes_.count(path) > 0; }
  const std::string& data_of(const std::string& path) const { return nodes_.at(path).data; }
  std::chrono::milliseconds timeout{10000};
  /// The watches registered now.
  std::size_t watches() const noexcept { return registered_.size(); }

  std::vector<std::string> wire;

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
    s->on_connected_.push_back([s, owner = std::move(owner), f = std::move(f)]() mutable {
      if (auto self = detail::lock_owner(owner)) f(*self, s->state_);
    });
    if (is_connected(s->state_)) s->reconnect();
  }

 private:
  struct node {
    std::string data;
    node_stat stat;
  };

  static std::string parent(const std::string& path) { return path.substr(0, path.rfind('/')); }
  void log(std::string what) { wire.push_back(std::move(what)); }
  error_code down() const {
    if (state_ == session_state::expired) return zk_errc::session_expired;
    return is_connected(state_) ? error_code{} : error_code(zk_errc::connection_loss);
  }
  void change(session_state st) {
    state_ = st;
    for (auto& f : followers_) f(st);
  }

  template <class H, class... Args>
  void answer(H h, Args... args) {
    if (is_connected(state_)) last_ack_ = std::chrono::steady_clock::now();
    asio::post(ex_, [h = std::move(h), args...]() mutable { std::move(h)(args...); });
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
  void fire(const std::string& path, bool child, watch_event_type type) {
    auto hit = registered_;
    for (auto& w : hit) {
      if (w->path != path || w->child_watch != child) continue;
      unregister(w);
      w->fired.emplace(error_code{}, watch_event{type, path});
      if (auto it = waiters_.find(w.get()); it != waiters_.end()) {
        auto h = std::move(it->second);
        waiters_.erase(it);
        answer(std::move(h), error_code{}, watch_event{type, path});
      }
    }
  }

  asio::any_io_executor ex_;
  session_state state_ = session_state::connected;
  bool in_batch_ = false;  // (nothing is corked: the answers are posted in order anyway)
  std::int64_t zxid_ = 0;
  std::map<std::string, node> nodes_;
  std::vector<watch_ptr> registered_;
  std::map<watch_state*, detail::watch_handler> waiters_;
  std::vector<std::function<void()>> on_connected_;
  std::vector<std::function<void(session_state)>> followers_;
  std::int64_t session_id_ = 0x5e55;
  std::chrono::steady_clock::time_point last_ack_ = std::chrono::steady_clock::now();
};

}  // namespace zklock::testing

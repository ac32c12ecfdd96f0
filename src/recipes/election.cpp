// The election: Curator LeaderLatch's layout on the lock recipe. A campaign is one acquire of
// the election path by the lock runner (lock_kind::candidate: "-latch-" nodes, the identity as
// their data, the exclusive grant rule: the head leads), so cancellation, timeouts, connection
// loss, protected creation, container parents and the grant's session check are the mutex's.
// Observers (async_leader, async_observe) only read: the head of the queue and its data.
#include "lock/lock_dir.hpp"
#include "sansio/queue.hpp"

#include <zklock/election.hpp>
#include <zklock/path.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <functional>

namespace zklock::detail {

struct election_state {
  std::shared_ptr<lock_dir> dir;
  std::string identity;
};

std::shared_ptr<election_state> make_election_state(std::shared_ptr<session_impl> s, std::string path,
                                                    std::string identity) {
  auto e = std::make_shared<election_state>();
  e->dir = make_lock_dir(std::move(s), std::move(path));
  e->identity = std::move(identity);
  return e;
}

const std::string& election_path(const election_state& e) noexcept { return e.dir->path; }
const std::string& election_identity(const election_state& e) noexcept { return e.identity; }
std::shared_ptr<lock_dir> election_dir(const std::shared_ptr<election_state>& e) { return e->dir; }

namespace {

// ---- campaign: one acquire of the election path, its guard wrapped as a leadership ----------

class campaign_op : public std::enable_shared_from_this<campaign_op> {
 public:
  campaign_op(std::shared_ptr<election_state> e, pending<void(error_code, leadership)>::ptr op)
      : e_(std::move(e)), op_(std::move(op)) {}
  ~campaign_op() { op_->on_cancel = nullptr; }

  void start(std::chrono::steady_clock::duration timeout, lock_mode mode = lock_mode::wait) {
    // Cancellation goes to the acquire, which cleans up (node, watch) before it completes.
    op_->on_cancel = [weak = weak_from_this()](asio::cancellation_type t) {
      if (auto self = weak.lock()) self->inner_.emit(t);
    };
    start_acquire(e_->dir,
                  asio::bind_cancellation_slot(inner_.slot(),
                                               [self = shared_from_this()](error_code ec, lock_guard g) {
                                                 if (ec) return self->op_->complete(ec, leadership{});
                                                 self->op_->complete({}, election_access::make(std::move(g), self->e_->identity));
                                               }),
                  {.mode = mode, .kind = lock_kind::candidate, .timeout = timeout, .node_data = e_->identity});
  }

 private:
  std::shared_ptr<election_state> e_;
  pending<void(error_code, leadership)>::ptr op_;
  asio::cancellation_signal inner_;
};

bool connection_lost(const error_code& ec) { return ec == condition::connection_lost || ec == errc::not_connected; }

// ---- observers -------------------------------------------------------------------------------

// Reads the leader: list the path, read the head's data (no watch). Again when the head went
// between the two reads.
class leader_read : public std::enable_shared_from_this<leader_read> {
 public:
  using callback = std::function<void(error_code, std::optional<leader_info>)>;
  leader_read(std::shared_ptr<lock_dir> dir, callback cb) : d_(std::move(dir)), cb_(std::move(cb)) {}

  void start() {
    auto self = shared_from_this();
    d_->s->get_children(d_->path, nullptr, children_handler([self](error_code ec, children_result r) {
      if (ec == zk_errc::no_node) return self->cb_({}, std::nullopt);
      if (ec) return self->cb_(ec, std::nullopt);
      auto q = queue_order(r.children);
      if (q.empty()) return self->cb_({}, std::nullopt);
      std::string node = join_path(self->d_->path, q.front().name);
      self->d_->s->get_data(node, nullptr, data_handler([self, node](error_code ec, data_result d) {
        if (ec == zk_errc::no_node) return self->start();  // the leader went meanwhile: look again
        if (ec) return self->cb_(ec, std::nullopt);
        self->cb_({}, leader_info{std::move(d.data), node, d.stat.ctime});
      }));
    }));
  }

 private:
  std::shared_ptr<lock_dir> d_;
  callback cb_;
};

// async_observe: read the leader; if it is `known`, set one watch that fires when it changes
// (a data watch on the leader's node; a child watch on the path while nobody leads, an exists
// watch while the path does not exist), wait, and read again. A watch set for nothing (the
// leader changed between the read and the watch) is removed before looking again; so is the
// watch of a cancelled observer, before it completes.
class observe_op : public std::enable_shared_from_this<observe_op> {
 public:
  observe_op(std::shared_ptr<lock_dir> dir, std::optional<leader_info> known,
             pending<void(error_code, std::optional<leader_info>)>::ptr op)
      : d_(std::move(dir)), s_(d_->s), known_(std::move(known)), op_(std::move(op)) {}
  ~observe_op() { op_->on_cancel = nullptr; }

  void start() {
    op_->on_cancel = [weak = weak_from_this()](asio::cancellation_type) {
      if (auto self = weak.lock()) self->cancel();
    };
    read();
  }

 private:
  enum class next { read, finish };

  void read() {
    busy_ = true;
    std::make_shared<leader_read>(d_, [self = shared_from_this()](error_code ec, std::optional<leader_info> now) {
      self->busy_ = false;
      if (self->cancelled_) return self->drop_watch(next::finish);
      if (connection_lost(ec)) return self->after_reconnect();
      if (ec) return self->finish(ec, std::nullopt);
      if (now != self->known_) return self->finish({}, std::move(now));
      self->arm();
    })->start();
  }

  // The leader is `known_`: set the watch that tells when it is not.
  void arm() {
    busy_ = true;
    auto self = shared_from_this();
    watch_ = nullptr;
    if (known_) {
      s_->get_data(known_->node, &watch_, data_handler([self](error_code ec, data_result d) {
        self->on_armed(ec, !ec && d.data == self->known_->identity);
      }));
    } else {
      s_->get_children(d_->path, &watch_, children_handler([self](error_code ec, children_result r) {
        if (ec == zk_errc::no_node) {
          // No path: watch for its creation (exists sets a watch on a missing node).
          self->watch_ = nullptr;
          self->s_->exists(self->d_->path, &self->watch_,
                           exists_handler([self](error_code ec, std::optional<node_stat> st) {
                             self->on_armed(ec, !ec && !st);
                           }));
          return;
        }
        self->on_armed(ec, !ec && queue_order(r.children).empty());
      }));
    }
  }

  // `unchanged`: the reply that set the watch still shows `known_`; wait for the watch then.
  void on_armed(error_code ec, bool unchanged) {
    busy_ = false;
    if (cancelled_) return drop_watch(next::finish);
    if (connection_lost(ec)) return after_reconnect();  // (a watch set meanwhile: dropped first)
    if (ec && ec != zk_errc::no_node) return finish(ec, std::nullopt);
    if (ec || !unchanged) return drop_watch(next::read);  // changed meanwhile: look again
    auto self = shared_from_this();
    auto w = watch_;
    s_->wait_watch(w, watch_handler([self, w](error_code ec, watch_event ev) {
      if (w != self->watch_ || self->done_) return;
      if (ev.type == watch_event_type::not_watching && !ec) return;  // removed by us
      self->watch_ = nullptr;
      if (self->cancelled_) return self->finish(asio::error::operation_aborted, std::nullopt);
      if (ec) return self->finish(ec, std::nullopt);
      self->read();
    }));
  }

  // Removes our watch (if one is set and has not fired), then goes on with `then`.
  void drop_watch(next then) {
    auto w = std::exchange(watch_, nullptr);
    if (!w || w->fired || !w->registered) {
      if (then == next::read) return read();
      return finish(cancelled_ ? error_code(asio::error::operation_aborted) : error_code{}, std::nullopt);
    }
    busy_ = true;
    s_->remove_watch(w, void_handler([self = shared_from_this(), w, then](error_code ec) {
      self->busy_ = false;
      if (connection_lost(ec) && !self->ended()) {
        // The C client keeps the watcher and sets it again on the reconnect: remove it then.
        self->watch_ = w;
        return self->when_connected([self, then] { self->drop_watch(self->cancelled_ ? next::finish : then); });
      }
      if (self->cancelled_ || then == next::finish) return self->finish(asio::error::operation_aborted, std::nullopt);
      self->read();
    }));
  }

  void after_reconnect() {
    if (watch_) return drop_watch(next::read);
    when_connected([self = shared_from_this()] { self->read(); });
  }

  // Runs `fn` once the session is connected again; finishes if it ends (or on cancellation).
  template <class F>
  void when_connected(F fn) {
    busy_ = true;
    auto self = shared_from_this();
    if (is_connected(s_->state())) {
      return asio::post(s_->executor(), [self, fn] {
        self->busy_ = false;
        fn();
      });
    }
    s_->wait_state(s_->state(), state_handler([self, fn](error_code, session_state) {
      self->busy_ = false;
      if (self->ended()) return self->finish(self->end_reason(), std::nullopt);
      if (self->cancelled_ && !self->watch_) return self->finish(asio::error::operation_aborted, std::nullopt);
      if (!is_connected(self->s_->state())) return self->when_connected(fn);
      fn();
    }));
  }

  void cancel() {
    if (done_ || cancelled_) return;
    cancelled_ = true;
    if (!busy_) drop_watch(next::finish);  // waiting on the watch: remove it, then complete
  }

  bool ended() const {
    return s_->state() == session_state::expired || s_->state() == session_state::closed ||
           s_->state() == session_state::disconnected;
  }
  error_code end_reason() const {
    return s_->state() == session_state::closed ? error_code(errc::session_closed) : error_code(errc::session_expired);
  }

  void finish(error_code ec, std::optional<leader_info> r) {
    if (done_) return;
    done_ = true;
    if (cancelled_) ec = asio::error::operation_aborted, r.reset();
    op_->complete(ec, std::move(r));
  }

  std::shared_ptr<lock_dir> d_;
  std::shared_ptr<session_impl> s_;
  std::optional<leader_info> known_;
  pending<void(error_code, std::optional<leader_info>)>::ptr op_;
  boost::intrusive_ptr<watch_state> watch_;
  bool busy_ = false;  // a request or a state wait is under way: its callback goes on
  bool cancelled_ = false, done_ = false;
};

error_code session_unusable(const session_impl& s) {
  switch (s.state()) {
    case session_state::expired: return errc::session_expired;
    case session_state::closed: return errc::session_closed;
    case session_state::disconnected:
    case session_state::connecting: return errc::not_connected;
    default: return {};
  }
}

}  // namespace

void start_campaign(const std::shared_ptr<election_state>& e, leadership_handler h,
                    std::chrono::steady_clock::duration timeout) {
  on_executor(e->dir->s->executor(), std::move(h), [e, timeout](auto h) mutable {
    auto op = pending<void(error_code, leadership)>::make(std::move(h), e->dir->s->executor());
    if (e->dir->path_error) return op->complete(e->dir->path_error, leadership{});
    std::make_shared<campaign_op>(e, std::move(op))->start(timeout);
  });
}

void try_campaign(const std::shared_ptr<election_state>& e, leadership_handler h) {
  auto op = pending<void(error_code, leadership)>::make(std::move(h), e->dir->s->executor());
  if (e->dir->path_error) return op->complete(e->dir->path_error, leadership{});
  std::make_shared<campaign_op>(e, std::move(op))->start(std::chrono::steady_clock::duration::max(), lock_mode::try_once);
}

void query_leader(const std::shared_ptr<election_state>& e, leader_handler h) {
  on_executor(e->dir->s->executor(), std::move(h), [e](auto h) mutable {
    auto op = pending<void(error_code, std::optional<leader_info>)>::make(std::move(h), e->dir->s->executor());
    if (e->dir->path_error) return op->fail(e->dir->path_error);
    std::make_shared<leader_read>(e->dir, [op](error_code ec, std::optional<leader_info> r) {
      op->complete(ec, std::move(r));
    })->start();
  });
}

void observe_leader(const std::shared_ptr<election_state>& e, std::optional<leader_info> known, leader_handler h) {
  on_executor(e->dir->s->executor(), std::move(h), [e, known = std::move(known)](auto h) mutable {
    auto op = pending<void(error_code, std::optional<leader_info>)>::make(std::move(h), e->dir->s->executor());
    if (e->dir->path_error) return op->fail(e->dir->path_error);
    if (auto ec = session_unusable(*e->dir->s)) return op->fail(ec);
    std::make_shared<observe_op>(e->dir, std::move(known), std::move(op))->start();
  });
}

}  // namespace zklock::detail

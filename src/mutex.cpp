// The mutex's async operations: thin wrappers that carry out lock_fsm's actions on a session.
#include <zklock/detail/lock_fsm.hpp>
#include <zklock/mutex.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/random/mersenne_twister.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

#include <pthread.h>

#include <atomic>
#include <iterator>
#include <random>

namespace zklock {

const char* to_string(lock_status s) noexcept {
  switch (s) {
    case lock_status::held: return "held";
    case lock_status::maybe_lost: return "maybe_lost";
    case lock_status::lost: return "lost";
    case lock_status::released: return "released";
  }
  return "?";
}

namespace detail {

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

struct mutex_state {
  std::shared_ptr<session_impl> s;
  std::string path;
  error_code path_error;
  // reentrancy: the hold currently owned through this mutex object by a named owner
  std::weak_ptr<hold> owned;
  owner_id owner;
};

// One held lock (shared by the guards of a reentrant owner).
struct hold : std::enable_shared_from_this<hold> {
  std::shared_ptr<session_impl> s;
  std::string node;
  std::int64_t token = 0;
  bool mark_release = true;
  lock_status status = lock_status::held;
  int count = 1;
  std::uint64_t listener = 0;
  std::vector<pending<void(error_code)>::ptr> lost_waiters;
  std::vector<pending<void(error_code)>::ptr> release_waiters;
  bool deleting = false;
  std::unique_ptr<asio::steady_timer> suspended_timer;

  ~hold() {
    if (listener) s->unsubscribe(listener);
  }

  void watch_session() {
    std::weak_ptr<hold> weak = weak_from_this();
    listener = s->subscribe([weak](session_state st) {
      auto self = weak.lock();
      if (!self) return;
      self->on_session_state(st);
    });
    if (status == lock_status::maybe_lost) start_suspended_timer();
  }

  void mark_lost() {
    if (status != lock_status::held && status != lock_status::maybe_lost) return;
    status = lock_status::lost;
    auto waiters = std::move(lost_waiters);
    lost_waiters.clear();
    for (auto& w : waiters) w->complete(errc::lock_lost);
  }

  // Suspended for a whole session timeout: the server has most likely expired the session
  // (we cannot know while we cannot reach it), so treat the lock as lost, as Curator does.
  void start_suspended_timer() {
    suspended_timer = std::make_unique<asio::steady_timer>(s->executor(), s->options().session_timeout);
    suspended_timer->async_wait([weak = weak_from_this()](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->s->state() != session_state::suspended) return;
      self->mark_lost();
    });
  }

  void on_session_state(session_state st) {
    if (st != session_state::suspended && suspended_timer) suspended_timer->cancel();
    if (deleting) {
      if (is_connected(st)) send_delete();  // retry a release lost with the connection
      if (st == session_state::expired || st == session_state::closed) finish_release(errc::lock_lost);
    }
    if (st == session_state::suspended) {
      if (status == lock_status::held) {
        status = lock_status::maybe_lost;
        start_suspended_timer();
      }
    } else if (is_connected(st)) {
      if (status == lock_status::maybe_lost) status = lock_status::held;
    } else if (st == session_state::expired || st == session_state::closed) {
      mark_lost();
    }
  }

  void release_one(void_handler h) {
    pending<void(error_code)>::ptr op;
    if (h) op = pending<void(error_code)>::make(std::move(h), s->executor());
    if (status == lock_status::released) {
      if (op) op->complete(errc::already_released);
      return;
    }
    if (--count > 0) {
      if (op) op->complete({});
      return;
    }
    bool was_lost = status == lock_status::lost;
    status = lock_status::released;
    auto waiters = std::move(lost_waiters);
    lost_waiters.clear();
    for (auto& w : waiters) w->complete(errc::already_released);
    bool session_alive = is_connected(s->state()) || s->state() == session_state::suspended;
    if (session_alive) {
      // Even a lock reported lost may still have its node (the session survived a long
      // disconnection): delete it, now or after the reconnect.
      deleting = true;
      send_delete();
    }
    if (!op) return;
    if (was_lost) return op->complete(errc::lock_lost);
    if (!session_alive) return op->complete(errc::lock_lost);
    // While disconnected, do not make the caller wait for the network: the node goes either
    // with our delete after the reconnect or with the session if it expires.
    if (!is_connected(s->state())) return op->complete(errc::release_pending);
    release_waiters.push_back(op);
  }

  // The release: one transaction that marks our node released and deletes it. The data change
  // fires our successor's watch and tells it we were the holder (see release_marker): it takes
  // the lock from that event without listing the dir again. Granted alone (nobody behind us
  // when we listed), a plain delete: cheaper; a waiter that queued since saw us at the head in
  // its own listing, so our deletion is its turn.
  void send_delete() {
    if (!is_connected(s->state())) return;  // retried by on_session_state after the reconnect
    auto done = [self = shared_from_this()](error_code ec) {
      if (!self->deleting) return;
      if (ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout) return;  // retried on reconnect
      if (ec == zk_errc::no_node || ec == zk_errc::session_expired || ec == errc::session_expired ||
          ec == errc::session_closed)
        return self->finish_release(errc::lock_lost);
      self->finish_release(ec);
    };
    if (!mark_release) return s->remove(node, -1, void_handler(std::move(done)));
    std::vector<multi_op> ops;
    ops.push_back(multi_op::set_data(node, std::string(release_marker)));
    ops.push_back(multi_op::remove(node));
    s->multi(std::move(ops), multi_handler([done = std::move(done)](error_code ec, std::vector<multi_result>) mutable {
      done(ec);
    }));
  }

  void finish_release(error_code ec) {
    deleting = false;
    auto waiters = std::move(release_waiters);
    release_waiters.clear();
    for (auto& w : waiters) w->complete(ec);
  }
};

// One acquire: feeds lock_fsm and carries out its actions.
class acquire_op : public boost::intrusive_ref_counter<acquire_op, boost::thread_unsafe_counter> {
 public:
  using ptr = boost::intrusive_ptr<acquire_op>;

  acquire_op(std::shared_ptr<mutex_state> m, lock_mode mode, std::optional<owner_id> owner)
      : m_(std::move(m)), s_(m_->s), fsm_(m_->path, new_client_id(), mode), owner_(owner), timer_(s_->executor()) {}
  ~acquire_op() {
    if (op_) op_->on_cancel = nullptr;
  }

  void start(pending<void(error_code, lock_guard)>::ptr op, mutex::clock::duration timeout) {
    op_ = std::move(op);
    ptr self(this);
    // Not a strong reference: the pending op is ours, and a cycle would never be freed. The
    // destructor unhooks it, so it never outlives us.
    op_->on_cancel = [raw = this](asio::cancellation_type) {
      ptr keep(raw);
      keep->stop(asio::error::operation_aborted);
    };
    listener_ = s_->subscribe([self](session_state st) {
      // called inside the C client's callback: continue on the executor
      asio::post(self->s_->executor(), [self, st] { self->on_state(st); });
    });
    if (timeout != mutex::clock::duration::max()) {
      timer_.expires_after(timeout);
      timer_.async_wait([self](error_code ec) {
        if (!ec) self->stop(errc::lock_timeout);
      });
    }
    run(fsm_.start());
  }

 private:
  // Cancellation or timeout: clean up (our node, our watch), then complete. While the session
  // is disconnected the cleanup waits for the reconnect (or the expiry, which removes both):
  // complete the caller at once then, and let the cleanup finish in the background.
  void stop(error_code reason) {
    run(fsm_.cancel(reason));
    if (!fsm_.done() && !is_connected(s_->state())) {
      timer_.cancel();
      op_->complete(reason, lock_guard{});
    }
  }

  void on_state(session_state st) {
    if (is_connected(st))
      run(fsm_.on_reconnected());
    else if (st == session_state::expired)
      run(fsm_.on_expired(errc::session_expired));
    else if (st == session_state::closed)
      run(fsm_.on_expired(errc::session_closed));
  }

  void run(lock_fsm::actions actions) {
    ptr self(this);
    auto list = [&] {
      s_->get_children(m_->path, nullptr, children_handler([self](error_code ec, children_result r) {
                         self->run(self->fsm_.on_children(ec, r.children));
                       }));
    };
    for (auto& a : actions) {
      switch (a.type) {
        case lock_action::create_and_list: {
          session_impl::send_batch together(s_.get());  // one segment for both requests
          s_->create(a.path, std::string(contender_marker), create_mode::ephemeral_sequential,
                     create_handler([self](error_code ec, create_result r) {
                       self->run(self->fsm_.on_create(ec, r.path, r.stat.czxid));
                     }));
          list();
          break;
        }
        case lock_action::list:
          list();
          break;
        case lock_action::ensure_parents:
          ensure_parents();
          break;
        case lock_action::watch_predecessor: {
          // One watch request at a time: the reply belongs to watch_ as set below.
          s_->get_data(a.path, &watch_, data_handler([self](error_code ec, data_result d) {
                         auto w = self->watch_;
                         self->run(self->fsm_.on_watch_set(ec, classify_predecessor(d.data)));
                         if (!ec && w) self->wait(w);
                       }));
          break;
        }
        case lock_action::remove_watch:
          s_->remove_watch(watch_, void_handler([self](error_code ec) { self->run(self->fsm_.on_watch_removed(ec)); }));
          break;
        case lock_action::delete_node:
          s_->remove(a.path, -1, void_handler([self](error_code ec) { self->run(self->fsm_.on_deleted(ec)); }));
          break;
        case lock_action::stat_node:
          s_->exists(a.path, nullptr, exists_handler([self](error_code ec, std::optional<node_stat> st) {
                       if (!ec && !st) ec = zk_errc::no_node;
                       self->run(self->fsm_.on_stat(ec, st ? st->czxid : 0));
                     }));
          break;
        case lock_action::wait_reconnect:
          if (is_connected(s_->state()))
            asio::post(s_->executor(), [self] { self->run(self->fsm_.on_reconnected()); });
          break;
        case lock_action::complete:
          complete();
          break;
      }
    }
  }

  void wait(boost::intrusive_ptr<watch_state> w) {
    ptr self(this);
    s_->wait_watch(w, watch_handler([self, w](error_code ec, watch_event ev) {
      if (w != self->watch_) return;  // an older watch
      if (ec == errc::session_expired) return self->run(self->fsm_.on_expired(errc::session_expired));
      if (ec == errc::session_closed) return self->run(self->fsm_.on_expired(errc::session_closed));
      if (ec || ev.type == watch_event_type::not_watching) return;
      self->run(self->fsm_.on_watch_event(ev.type == watch_event_type::deleted));
    }));
  }

  // Creates the lock dir and its missing ancestors as containers, pipelined in one round trip.
  void ensure_parents() {
    std::vector<std::string> paths;
    for (std::string p = m_->path; !p.empty() && p != "/"; p = parent_path(p)) paths.push_back(p);
    auto remaining = std::make_shared<std::size_t>(paths.size());
    auto first_error = std::make_shared<error_code>();
    ptr self(this);
    session_impl::send_batch together(s_.get());
    for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
      s_->create(*it, {}, create_mode::container,
                 create_handler([self, remaining, first_error](error_code ec, create_result) {
                   if (ec && ec != zk_errc::node_exists && !*first_error) *first_error = ec;
                   if (--*remaining == 0) self->run(self->fsm_.on_parents(*first_error));
                 }));
    }
  }

  void complete() {
    timer_.cancel();
    if (listener_) s_->unsubscribe(listener_), listener_ = 0;
    const auto& r = fsm_.result();
    if (r.ec) return op_->complete(r.ec, lock_guard{});

    auto h = std::make_shared<hold>();
    h->s = s_;
    h->node = r.node;
    h->token = r.fencing_token;
    h->mark_release = r.mark_release;
    h->status = is_connected(s_->state()) ? lock_status::held : lock_status::maybe_lost;
    h->watch_session();
    if (owner_) {
      m_->owned = h;
      m_->owner = *owner_;
    }
    op_->complete({}, lock_guard{std::move(h)});
  }

  std::shared_ptr<mutex_state> m_;
  std::shared_ptr<session_impl> s_;
  lock_fsm fsm_;
  std::optional<owner_id> owner_;
  asio::steady_timer timer_;
  pending<void(error_code, lock_guard)>::ptr op_;
  boost::intrusive_ptr<watch_state> watch_;
  std::uint64_t listener_ = 0;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------

lock_guard& lock_guard::operator=(lock_guard&& other) noexcept {
  if (this != &other) {
    if (owns_lock()) hold_->release_one(nullptr);
    hold_ = std::move(other.hold_);
    released_ = other.released_;
    other.released_ = false;
  }
  return *this;
}

lock_guard::~lock_guard() {
  if (owns_lock()) hold_->release_one(nullptr);  // background release on the session's executor
}

bool lock_guard::owns_lock() const noexcept {
  return hold_ && (hold_->status == lock_status::held || hold_->status == lock_status::maybe_lost) && !released_;
}

lock_status lock_guard::status() const noexcept {
  if (!hold_ || released_) return lock_status::released;
  return hold_->status;
}

const std::string& lock_guard::node_path() const noexcept {
  static const std::string empty;
  return hold_ ? hold_->node : empty;
}

std::int64_t lock_guard::fencing_token() const noexcept { return hold_ ? hold_->token : 0; }

int lock_guard::hold_count() const noexcept { return hold_ ? hold_->count : 0; }

namespace {
// An empty guard has no session: complete through the handler's own executor.
void complete_empty(detail::void_handler h, error_code ec) {
  auto ex = asio::get_associated_executor(h);
  asio::dispatch(ex, asio::append(std::move(h), ec));
}
}  // namespace

void lock_guard::release(detail::void_handler h) {
  if (!hold_) return complete_empty(std::move(h), errc::already_released);
  if (released_) {
    detail::post_completion(hold_->s->executor(), std::move(h), error_code(errc::already_released));
    return;
  }
  released_ = true;
  hold_->release_one(std::move(h));
}

void lock_guard::wait_lost(detail::void_handler h) {
  if (!hold_) return complete_empty(std::move(h), errc::already_released);
  if (released_ || hold_->status == lock_status::released) {
    detail::post_completion(hold_->s->executor(), std::move(h), error_code(errc::already_released));
    return;
  }
  auto op = detail::pending<void(error_code)>::make(std::move(h), hold_->s->executor());
  if (hold_->status == lock_status::lost) return op->complete(errc::lock_lost);
  hold_->lost_waiters.push_back(op);
}

// ---------------------------------------------------------------------------------------------

mutex::mutex(session& s, std::string path) : state_(std::make_shared<detail::mutex_state>()) {
  state_->s = s.impl();
  state_->path_error = validate_path(path);
  if (path == "/") state_->path_error = errc::path_not_absolute;  // the root cannot be a lock dir
  state_->path = std::move(path);
}

mutex::~mutex() = default;

const std::string& mutex::path() const noexcept { return state_->path; }
mutex::executor_type mutex::get_executor() const noexcept { return state_->s->executor(); }

void mutex::start(const std::shared_ptr<detail::mutex_state>& state, acquire_handler h, mode m,
                  clock::duration timeout, std::optional<owner_id> owner) {
  auto op = detail::pending<void(error_code, lock_guard)>::make(std::move(h), state->s->executor());
  if (state->path_error) return op->complete(state->path_error, lock_guard{});
  if (owner) {
    if (auto held = state->owned.lock();
        held && state->owner == *owner && held->status != lock_status::released && held->status != lock_status::lost) {
      ++held->count;
      return op->complete({}, lock_guard{std::move(held)});
    }
  }
  if (!is_connected(state->s->state()) && state->s->state() != session_state::suspended)
    return op->complete(state->s->state() == session_state::expired ? error_code(errc::session_expired)
                        : state->s->state() == session_state::closed ? error_code(errc::session_closed)
                                                                      : error_code(errc::not_connected),
                        lock_guard{});
  boost::intrusive_ptr<detail::acquire_op> a(
      new detail::acquire_op(state, m == mode::wait ? detail::lock_mode::wait : detail::lock_mode::try_once, owner));
  a->start(std::move(op), timeout);
}

}  // namespace zklock

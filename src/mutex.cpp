// The mutex's async operations: thin wrappers that carry out lock_fsm's actions on a session.
#include "sansio/hold_fsm.hpp"
#include "sansio/lock_fsm.hpp"
#include "engine/session_impl.hpp"

#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
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
  int max_leases = 1;  // lock_kind::lease: how many hold at once (a semaphore's leases dir)
};

// One held lock (shared by the guards of a reentrant owner): carries out hold_fsm's actions,
// watches the session and the validity deadline.
struct hold : std::enable_shared_from_this<hold> {
  std::shared_ptr<session_impl> s;
  std::string node;
  std::int64_t token = 0;
  std::int64_t session_id = 0;  // the ZooKeeper session our node belongs to
  bool mark_release = true;
  lock_kind kind = lock_kind::exclusive;
  hold_fsm fsm;
  int count = 1;
  std::uint64_t listener = 0;
  std::vector<pending<void(error_code)>::ptr> lost_waiters;
  pending<void(error_code)>::ptr release_waiter;
  asio::steady_timer deadline_timer;
  bool keepalive_in_flight = false;
  asio::cancellation_signal lost_signal;
  // While a release is owed the guard may be gone (release_pending), and the session listener
  // only holds us weakly: the session keeps us (keep_owed) until the delete is settled, so
  // something sends it after the reconnect. Not a member pointing at ourselves: a cycle that
  // only a reply or a state event breaks leaks when the io_context is destroyed without them.
  bool owed = false;

  hold(std::shared_ptr<session_impl> session, bool connected)
      : s(std::move(session)), fsm(connected), deadline_timer(s->executor()) {}
  ~hold() {
    if (listener) s->unsubscribe(listener);
  }

  void start() {
    session_id = s->session_id();
    // Listeners run inside the C client's callbacks: continue on the executor.
    listener = s->subscribe([weak = weak_from_this(), ex = s->executor()](session_state st) {
      asio::post(ex, [weak, st] {
        if (auto self = weak.lock()) self->on_session_state(st);
      });
    });
    arm_deadline();
  }

  void on_session_state(session_state st) {
    if (st == session_state::suspended) {
      run(fsm.on_suspended());
    } else if (is_connected(st)) {
      run(fsm.on_connected(s->session_id() == session_id));
    } else if (st == session_state::expired || st == session_state::closed) {
      run(fsm.on_session_ended());
    }
    arm_deadline();
  }

  // The validity deadline (see lock_guard::valid_until): keep it ahead with a cheap request of
  // our own while the connection is idle, and report the lock lost when it passes.
  void arm_deadline() {
    if (fsm.status() != lock_status::held && fsm.status() != lock_status::maybe_lost) {
      deadline_timer.cancel();
      return;
    }
    auto now = std::chrono::steady_clock::now();
    auto until = s->valid_until();
    if (until <= now) return run(fsm.on_deadline());
    auto refresh = s->last_acknowledged() + s->negotiated_timeout() / 3;
    if (refresh <= now && is_connected(s->state()) && !keepalive_in_flight) {
      keepalive_in_flight = true;
      // exists on our own node: refreshes the deadline, and finds a node deleted under us.
      s->exists(node, nullptr, exists_handler([self = shared_from_this()](error_code ec, std::optional<node_stat> st) {
        self->keepalive_in_flight = false;
        if (!ec && !st && self->fsm.status() != lock_status::released) self->run(self->fsm.on_node_gone());
        self->arm_deadline();
      }));
    }
    auto next = refresh > now ? std::min(refresh, until) : until;
    deadline_timer.expires_at(next);
    deadline_timer.async_wait([weak = weak_from_this()](error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->arm_deadline();
    });
  }

  void run(const hold_fsm::actions& actions) {
    for (const auto& a : actions) {
      switch (a.type) {
        case hold_action::send_release:
          send_release();
          break;
        case hold_action::report_lost: {
          deadline_timer.cancel();
          auto waiters = std::move(lost_waiters);
          lost_waiters.clear();
          for (auto& w : waiters) w->complete(errc::lock_lost);
          lost_signal.emit(asio::cancellation_type::terminal);
          break;
        }
        case hold_action::complete_release:
          if (auto w = std::move(release_waiter)) w->complete(a.ec);
          break;
      }
    }
    // (callers hold a strong reference: dropping this one never destroys us mid-call)
    if (owed && !fsm.release_owed()) {
      owed = false;
      s->drop_owed(this);
    }
  }

  void release_one(void_handler h) {
    pending<void(error_code)>::ptr op;
    if (h) op = pending<void(error_code)>::make(std::move(h), s->executor());
    if (fsm.status() != lock_status::released && --count > 0) {
      if (op) op->complete({});
      return;
    }
    bool was_open = fsm.status() != lock_status::released;
    if (op) {
      if (release_waiter) release_waiter->complete(errc::already_released);
      release_waiter = op;
    }
    run(fsm.release(static_cast<bool>(op)));
    if (fsm.release_owed() && !owed) {
      owed = true;
      s->keep_owed(shared_from_this());
    }
    if (was_open) {
      deadline_timer.cancel();
      auto waiters = std::move(lost_waiters);
      lost_waiters.clear();
      for (auto& w : waiters) w->complete(errc::already_released);
    }
  }

  // The release: one transaction that marks our node released and deletes it. The data change
  // fires our successor's watch and tells it we were the holder (see release_marker): it takes
  // the lock from that event without listing the dir again. Granted alone (nobody behind us
  // when we listed), a plain delete: cheaper; a waiter that queued since saw us at the head in
  // its own listing, so our deletion is its turn.
  void send_release() {
    auto done = [self = shared_from_this()](error_code ec) { self->run(self->fsm.on_release_reply(ec)); };
    if (!mark_release) return s->remove(node, -1, void_handler(std::move(done)));
    std::vector<multi_op> ops;
    ops.push_back(multi_op::set_data(node, std::string(release_marker)));
    ops.push_back(multi_op::remove(node));
    s->multi(std::move(ops), multi_handler([done = std::move(done)](error_code ec, std::vector<multi_result>) mutable {
      done(ec);
    }));
  }
};

lock_guard access::make_guard(std::shared_ptr<hold> h) {
  auto ex = h->s->executor();
  return lock_guard(std::move(h), std::move(ex));
}

// One acquire: feeds lock_fsm and carries out its actions.
class acquire_op : public boost::intrusive_ref_counter<acquire_op, boost::thread_unsafe_counter> {
 public:
  using ptr = boost::intrusive_ptr<acquire_op>;

  acquire_op(std::shared_ptr<mutex_state> m, lock_mode mode, std::optional<owner_id> owner, lock_kind kind)
      : m_(std::move(m)),
        s_(m_->s),
        fsm_(m_->path, new_client_id(), mode, kind, m_->max_leases),
        owner_(owner),
        timer_(s_->executor()) {}
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
          s_->create(a.path, std::string(fsm_.node_data()), create_mode::ephemeral_sequential,
                     create_handler([self](error_code ec, create_result r) {
                       self->run(self->fsm_.on_create(ec, r.path, r.stat.czxid));
                     }));
          list();
          break;
        }
        case lock_action::list:
          list();
          break;
        case lock_action::sync_and_list: {
          session_impl::send_batch together(s_.get());
          s_->sync(a.path, void_handler([](error_code) {}));  // the listing's reply tells
          list();
          break;
        }
        case lock_action::ensure_parents:
          ensure_parents();
          break;
        case lock_action::watch_predecessor: {
          // One watch request at a time: the reply belongs to watch_ as set below.
          s_->get_data(a.path, &watch_, data_handler([self](error_code ec, data_result d) {
                         auto w = self->watch_;
                         self->run(self->fsm_.on_watch_set(ec, classify_predecessor(d.data)));
                         if (!ec && w) self->wait(std::move(w));
                       }));
          break;
        }
        case lock_action::watch_dir: {
          s_->get_children(a.path, &watch_, children_handler([self](error_code ec, children_result r) {
                             auto w = self->watch_;
                             self->run(self->fsm_.on_dir_watch_set(ec, r.children));
                             if (!ec && w) self->wait(std::move(w));
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
                       bool ours = st && st->ephemeral_owner == self->s_->session_id();
                       self->run(self->fsm_.on_stat(ec, st ? st->czxid : 0, ours));
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
      self->run(self->fsm_.on_watch_event(ev.type == watch_event_type::deleted ? watch_change::deleted
                                          : ev.type == watch_event_type::child ? watch_change::children_changed
                                                                                : watch_change::data_changed));
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
    // A grant straight from a watch event sends no request: after a long wait the validity
    // deadline (last answered request + session timeout - margin) is stale and the new hold
    // would be lost on arrival. One exists on our node refreshes it first (waits longer than a
    // third of the session timeout only: the keepalive's cadence).
    if (!refreshed_ && s_->last_acknowledged() + s_->negotiated_timeout() / 3 <= std::chrono::steady_clock::now() &&
        is_connected(s_->state())) {
      refreshed_ = true;
      ptr self(this);
      s_->exists(r.node, nullptr, exists_handler([self](error_code ec, std::optional<node_stat>) {
        if (ec == condition::session_lost) return self->op_->complete(errc::session_expired, lock_guard{});
        self->complete();  // otherwise the hold's own checks take over (deadline, node gone)
      }));
      return;
    }

    auto h = std::make_shared<hold>(s_, is_connected(s_->state()));
    h->node = r.node;
    h->token = r.fencing_token;
    h->mark_release = r.mark_release;
    h->kind = fsm_.kind();
    h->start();
    if (owner_) {
      m_->owned = h;
      m_->owner = *owner_;
    }
    op_->complete({}, access::make_guard(std::move(h)));
  }

  std::shared_ptr<mutex_state> m_;
  std::shared_ptr<session_impl> s_;
  lock_fsm fsm_;
  std::optional<owner_id> owner_;
  asio::steady_timer timer_;
  pending<void(error_code, lock_guard)>::ptr op_;
  boost::intrusive_ptr<watch_state> watch_;
  std::uint64_t listener_ = 0;
  bool refreshed_ = false;  // the validity deadline was refreshed before the grant
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------

namespace detail {

namespace {
// Gives back one hold from any thread: only posts to the session's executor.
void release_in_background(std::shared_ptr<hold> h) {
  auto ex = h->s->executor();
  asio::post(ex, [h = std::move(h)] { h->release_one(nullptr); });
}
}  // namespace

release_ticket::~release_ticket() {
  if (hold_) release_in_background(std::move(hold_));
}

void release_ticket::launch(void_handler h) {
  if (!hold_) return post_result(ex_, std::move(h), errc::already_released);
  std::exchange(hold_, nullptr)->release_one(std::move(h));
}

void post_result(const asio::any_io_executor& ex, void_handler h, error_code ec) {
  // asio::post(ex, handler) runs the handler on its associated executor (ex when it has none)
  // and keeps that executor's work count up meanwhile.
  if (ex)
    asio::post(ex, asio::append(std::move(h), ec));
  else  // a default-constructed guard has no executor of its own
    asio::post(asio::system_executor(), asio::append(std::move(h), ec));
}

void downgrade(const std::shared_ptr<hold>& h, void_handler handler) {
  auto op = pending<void(error_code)>::make(std::move(handler), h->s->executor());
  switch (h->fsm.status()) {
    case lock_status::released: return op->complete(errc::already_released);
    case lock_status::lost: return op->complete(errc::lock_lost);
    default: break;
  }
  if (h->kind != lock_kind::write) return op->complete(errc::not_downgradable);
  h->s->set_data(h->node, std::string(downgraded_marker), -1,
                 stat_handler([h, op](error_code ec, node_stat) {
                   if (!ec && h->fsm.status() != lock_status::released) h->kind = lock_kind::read;
                   if (ec == zk_errc::no_node) ec = errc::lock_lost;  // deleted under us
                   op->complete(ec);
                 }));
}

void wait_lost(const std::shared_ptr<hold>& h, void_handler handler) {
  auto op = pending<void(error_code)>::make(std::move(handler), h->s->executor());
  switch (h->fsm.status()) {
    case lock_status::released: return op->complete(errc::already_released);
    case lock_status::lost: return op->complete(errc::lock_lost);
    default: h->lost_waiters.push_back(op);
  }
}

}  // namespace detail

lock_guard& lock_guard::operator=(lock_guard&& other) noexcept {
  if (this != &other) {
    if (hold_ && !released_) detail::release_in_background(std::move(hold_));
    hold_ = std::move(other.hold_);
    ex_ = other.ex_;
    released_ = std::exchange(other.released_, false);
  }
  return *this;
}

lock_guard::~lock_guard() {
  if (hold_ && !released_) detail::release_in_background(std::move(hold_));
}

detail::release_ticket lock_guard::take_release_ticket() noexcept {
  bool was_released = std::exchange(released_, true);
  return detail::release_ticket(was_released ? nullptr : hold_, ex_);
}

bool lock_guard::owns_lock() const noexcept {
  if (!hold_ || released_) return false;
  auto st = hold_->fsm.status();
  return st == lock_status::held || st == lock_status::maybe_lost;
}

lock_status lock_guard::status() const noexcept {
  if (!hold_ || released_) return lock_status::released;
  return hold_->fsm.status();
}

const std::string& lock_guard::node_path() const noexcept {
  static const std::string empty;
  return hold_ ? hold_->node : empty;
}

std::int64_t lock_guard::fencing_token() const noexcept { return hold_ ? hold_->token : 0; }

int lock_guard::hold_count() const noexcept { return hold_ ? hold_->count : 0; }

lock_kind lock_guard::kind() const noexcept { return hold_ ? hold_->kind : lock_kind::exclusive; }

std::chrono::steady_clock::time_point lock_guard::valid_until() const noexcept {
  if (!owns_lock()) return std::chrono::steady_clock::time_point::min();
  return hold_->s->valid_until();
}

asio::cancellation_slot lock_guard::lost_slot() const noexcept {
  return hold_ ? hold_->lost_signal.slot() : asio::cancellation_slot();
}

// ---------------------------------------------------------------------------------------------

namespace detail {

std::shared_ptr<mutex_state> make_mutex_state(std::shared_ptr<session_impl> s, std::string path, int max_leases) {
  auto m = std::make_shared<mutex_state>();
  m->max_leases = max_leases;
  m->s = std::move(s);
  m->path_error = validate_path(path);
  if (path == "/") m->path_error = errc::path_not_absolute;  // the root cannot be a lock dir
  m->path = std::move(path);
  return m;
}

const std::string& mutex_path(const mutex_state& m) noexcept { return m.path; }

void list_contenders(const std::shared_ptr<mutex_state>& state, contenders_handler h) {
  auto op = detail::pending<void(error_code, std::vector<zklock::contender>)>::make(std::move(h), state->s->executor());
  if (state->path_error) return op->fail(state->path_error);
  auto s = state->s;
  auto dir = state->path;
  s->get_children(dir, nullptr, detail::children_handler([op, s, dir](error_code ec, children_result r) {
    if (ec == zk_errc::no_node) return op->complete({}, {});
    if (ec) return op->fail(ec);
    auto queue = detail::queue_order(r.children);
    auto result = std::make_shared<std::vector<zklock::contender>>(queue.size());
    auto found = std::make_shared<std::vector<bool>>(queue.size(), false);
    auto remaining = std::make_shared<std::size_t>(queue.size());
    auto first_error = std::make_shared<error_code>();
    if (queue.empty()) return op->complete({}, {});
    auto finish = [op, result, found, first_error] {
      if (*first_error) return op->fail(*first_error);
      std::vector<zklock::contender> out;
      for (std::size_t i = 0; i < result->size(); ++i)
        if ((*found)[i]) out.push_back(std::move((*result)[i]));
      op->complete({}, std::move(out));
    };
    detail::session_impl::send_batch together(s.get());
    for (std::size_t i = 0; i < queue.size(); ++i) {
      (*result)[i].node = queue[i].name;
      (*result)[i].sequence = queue[i].sequence;
      (*result)[i].kind = queue[i].kind;
      s->get_data(join_path(dir, queue[i].name), nullptr,
                  detail::data_handler([i, result, found, remaining, first_error, finish](error_code ec, data_result d) {
                    if (!ec) {
                      (*found)[i] = true;
                      if (d.data == downgraded_marker) (*result)[i].kind = lock_kind::read;
                      (*result)[i].stat = d.stat;
                      (*result)[i].data = std::move(d.data);
                    } else if (ec != zk_errc::no_node && !*first_error) {
                      *first_error = ec;
                    }
                    if (--*remaining == 0) finish();
                  }));
    }
  }));
}

void start_acquire(const std::shared_ptr<mutex_state>& state, acquire_handler h, acquire_kind m,
                   std::chrono::steady_clock::duration timeout, std::optional<owner_id> owner, lock_kind kind) {
  auto op = detail::pending<void(error_code, lock_guard)>::make(std::move(h), state->s->executor());
  if (state->path_error) return op->complete(state->path_error, lock_guard{});
  if (owner) {
    if (auto held = state->owned.lock();
        held && state->owner == *owner &&
        (held->fsm.status() == lock_status::held || held->fsm.status() == lock_status::maybe_lost)) {
      // A read hold cannot become a write hold by queueing: the write would wait behind our
      // own read. A write hold covers reading (as Curator's reentrant read-under-write).
      if (held->kind == lock_kind::read && kind != lock_kind::read) return op->complete(errc::upgrade_refused, lock_guard{});
      ++held->count;
      return op->complete({}, detail::access::make_guard(std::move(held)));
    }
  }
  if (!is_connected(state->s->state()) && state->s->state() != session_state::suspended)
    return op->complete(state->s->state() == session_state::expired ? error_code(errc::session_expired)
                        : state->s->state() == session_state::closed ? error_code(errc::session_closed)
                                                                      : error_code(errc::not_connected),
                        lock_guard{});
  boost::intrusive_ptr<detail::acquire_op> a(
      new detail::acquire_op(state, m == acquire_kind::wait ? lock_mode::wait : lock_mode::try_once, owner, kind));
  a->start(std::move(op), timeout);
}

// ---------------------------------------------------------------------------------------------
// The semaphore: Curator's InterProcessSemaphoreV2 layout. Behind an internal mutex on
// <path>/locks, create our lease node in <path>/leases and wait until at most max_leases lease
// nodes are there (one waiter at a time watches the leases dir: no herd); then give the
// internal mutex back. Both steps are the lock recipe's (lock_fsm): cancellation, timeouts and
// connection loss clean up as for a mutex, and a lease create lost with the connection is found
// again by its id instead of being orphaned.

struct semaphore_state {
  std::shared_ptr<mutex_state> locks, leases;  // leases->max_leases is the semaphore's maximum
};

std::shared_ptr<semaphore_state> make_semaphore_state(std::shared_ptr<session_impl> s, std::string path,
                                                      int max_leases) {
  auto st = std::make_shared<semaphore_state>();
  st->locks = make_mutex_state(s, join_path(path, "locks"));
  st->leases = make_mutex_state(s, join_path(path, "leases"), max_leases);
  if (auto ec = validate_path(path); ec || path == "/") {
    st->locks->path_error = st->leases->path_error = ec ? ec : error_code(errc::path_not_absolute);
  }
  return st;
}

const std::string& semaphore_leases_path(const semaphore_state& s) noexcept { return s.leases->path; }
int semaphore_max_leases(const semaphore_state& s) noexcept { return s.leases->max_leases; }
std::shared_ptr<mutex_state> semaphore_leases(const std::shared_ptr<semaphore_state>& s) { return s->leases; }

namespace {
// What the recipes made of several acquires share (the semaphore's two steps, a multi_lock's
// locks): one deadline across the steps, and cancellation forwarded to the step under way,
// whose own cleanup runs before it completes.
template <class Derived, class Result>
class chained_acquire : public std::enable_shared_from_this<Derived> {
 public:
  chained_acquire(typename pending<void(error_code, Result)>::ptr op, std::chrono::steady_clock::duration timeout)
      : op_(std::move(op)) {
    if (timeout != std::chrono::steady_clock::duration::max()) deadline_ = std::chrono::steady_clock::now() + timeout;
  }
  ~chained_acquire() { op_->on_cancel = nullptr; }

 protected:
  void forward_cancellation() {
    op_->on_cancel = [weak = this->weak_from_this()](asio::cancellation_type t) {
      if (auto self = weak.lock()) {
        self->cancelled_ = true;
        self->inner_.emit(t);
      }
    };
  }
  std::chrono::steady_clock::duration remaining() const {
    if (deadline_ == std::chrono::steady_clock::time_point::max()) return std::chrono::steady_clock::duration::max();
    return std::max(deadline_ - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
  }
  // The next step: acquire `state` with `kind`, bound to our inner cancellation signal.
  template <class F>
  void step(const std::shared_ptr<mutex_state>& state, acquire_kind k, lock_kind kind, F on_done) {
    start_acquire(state,
                  asio::bind_cancellation_slot(inner_.slot(),
                                               [self = this->shared_from_this(), on_done](error_code ec, lock_guard g) {
                                                 (static_cast<Derived&>(*self).*on_done)(ec, std::move(g));
                                               }),
                  k, remaining(), std::nullopt, kind);
  }

  typename pending<void(error_code, Result)>::ptr op_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  asio::cancellation_signal inner_;
  bool cancelled_ = false;
};

class lease_op : public chained_acquire<lease_op, lock_guard> {
 public:
  lease_op(std::shared_ptr<semaphore_state> st, pending<void(error_code, lock_guard)>::ptr op, acquire_kind k,
           std::chrono::steady_clock::duration timeout)
      : chained_acquire(std::move(op), timeout), st_(std::move(st)), kind_(k) {}

  void start() {
    forward_cancellation();
    if (kind_ == acquire_kind::try_once) {
      // All leases taken: say so on this one read, without queueing (no write).
      auto self = shared_from_this();
      st_->leases->s->get_children(st_->leases->path, nullptr, children_handler([self](error_code ec, children_result r) {
        if (self->cancelled_) return self->op_->complete(asio::error::operation_aborted, lock_guard{});
        if (!ec && blocked_at_tail(r.children, lock_kind::lease, self->st_->leases->max_leases))
          return self->op_->complete(errc::lock_busy, lock_guard{});
        self->take_internal();  // looks free (or no dir yet): the recipe decides
      }));
      return;
    }
    take_internal();
  }

 private:
  void take_internal() { step(st_->locks, kind_, lock_kind::exclusive, &lease_op::on_internal); }

  void on_internal(error_code ec, lock_guard g) {
    if (ec) return op_->complete(ec, lock_guard{});
    if (cancelled_) return op_->complete(asio::error::operation_aborted, lock_guard{});  // g releases
    internal_ = std::move(g);
    step(st_->leases, kind_, lock_kind::lease, &lease_op::on_lease);
  }

  void on_lease(error_code ec, lock_guard g) {
    // Give the internal mutex back (in the background: the next acquirer may go on at once).
    internal_ = lock_guard{};
    op_->complete(ec, std::move(g));
  }

  std::shared_ptr<semaphore_state> st_;
  acquire_kind kind_;
  lock_guard internal_;
};
}  // namespace

void start_lease(const std::shared_ptr<semaphore_state>& st, acquire_handler h, acquire_kind k,
                 std::chrono::steady_clock::duration timeout) {
  auto op = pending<void(error_code, lock_guard)>::make(std::move(h), st->leases->s->executor());
  if (st->leases->path_error) return op->complete(st->leases->path_error, lock_guard{});
  if (st->leases->max_leases < 1) return op->complete(errc::invalid_max_leases, lock_guard{});
  std::make_shared<lease_op>(st, std::move(op), k, timeout)->start();
}

// ---------------------------------------------------------------------------------------------
// multi_lock: one acquire after another, in the order given (sorted by path); all or nothing.

void release_all(std::vector<release_ticket> tickets, asio::any_io_executor ex, void_handler h) {
  if (tickets.empty()) return post_result(ex, std::move(h), errc::already_released);
  struct state {
    void_handler h;
    asio::any_io_executor ex;
    std::size_t left;
    error_code ec;
  };
  auto st = std::make_shared<state>(state{std::move(h), ex, tickets.size(), {}});
  for (auto& t : tickets) {
    t.launch(void_handler([st](error_code ec) {
      auto rank = [](const error_code& e) {
        return !e ? 0 : e == errc::lock_lost ? 3 : e == errc::release_pending ? 2 : 1;
      };
      if (rank(ec) > rank(st->ec)) st->ec = ec;
      if (--st->left == 0) post_result(st->ex, std::move(st->h), st->ec);
    }));
  }
}

namespace {
class multi_op_state : public chained_acquire<multi_op_state, multi_guard> {
 public:
  multi_op_state(std::vector<multi_lock_item> items, pending<void(error_code, multi_guard)>::ptr op,
                 std::chrono::steady_clock::duration timeout)
      : chained_acquire(std::move(op), timeout), items_(std::move(items)) {}

  void start() {
    forward_cancellation();
    next();
  }

 private:
  void next() {
    if (taken_.size() == items_.size()) return op_->complete({}, multi_guard(std::move(taken_)));
    const auto& item = items_[taken_.size()];
    step(item.state, acquire_kind::wait, item.kind, &multi_op_state::on_one);
  }

  void on_one(error_code ec, lock_guard g) {
    if (!ec && cancelled_) ec = asio::error::operation_aborted;
    if (ec) {
      // All or nothing: give back what we took (in the background) before completing.
      g = lock_guard{};
      taken_.clear();
      return op_->complete(ec, multi_guard{});
    }
    taken_.push_back(std::move(g));
    next();
  }

  std::vector<multi_lock_item> items_;
  std::vector<lock_guard> taken_;
};
}  // namespace

void start_multi(std::vector<multi_lock_item> items, multi_handler_t h, std::chrono::steady_clock::duration timeout) {
  if (items.empty()) {
    // nothing to take: an empty guard, at once (never inline)
    return asio::post(asio::system_executor(), asio::append(std::move(h), error_code(errc::path_empty), multi_guard{}));
  }
  auto op = pending<void(error_code, multi_guard)>::make(std::move(h), items.front().state->s->executor());
  for (auto& i : items)
    if (i.state->path_error) return op->complete(i.state->path_error, multi_guard{});
  std::make_shared<multi_op_state>(std::move(items), std::move(op), timeout)->start();
}

}  // namespace detail

}  // namespace zklock

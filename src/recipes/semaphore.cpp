#include "lock/chained_acquire.hpp"
#include "lock/lock_dir.hpp"
#include "sansio/acquire_fsm.hpp"

#include <zklock/path.hpp>
#include <zklock/semaphore.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <utility>

namespace zklock::detail {

// The semaphore: Curator's InterProcessSemaphoreV2 layout. Behind an internal mutex on
// <path>/locks, create our lease node in <path>/leases and wait until at most max_leases lease
// nodes are there (one waiter at a time watches the leases dir: no herd); then give the
// internal mutex back. Both steps are the lock recipe's (acquire_fsm): cancellation, timeouts and
// connection loss clean up as for a mutex, and a lease create lost with the connection is found
// again by its id instead of being orphaned.

// What the internal mutex watches. Less than a mutex does, because no one's safety rests on it:
//  - a lease is granted by its position among the leases (acquire_fsm's grant rule: fewer than
//    max_leases lease nodes ahead of ours), whoever holds the internal mutex. Nodes only leave
//    the queue ahead of a lease, and new ones queue behind it, so a lease granted stays among
//    the first max_leases (Curator's rule, the count of all leases at most max_leases, grants
//    only such a lease too). The internal mutex only keeps one waiter at a time on the leases
//    dir (no herd) and Curator's layout;
//  - so it does not watch its own node (acquire_fsm::set_watch_own_node, and its hold sets no
//    watch either): a request saved on every acquisition. When someone else deletes that node,
//    the waiter behind it and its owner may both go on to the lease step: two waiters watch the
//    leases dir for a while, and each lease is still granted by its position. The lease step
//    keeps its own node's watch: a lease holder whose lease node is deleted is lock_lost with
//    node_deleted at once;
//  - it watches K blockers as a mutex does (mutex_options::watched_blockers, 2), not only the
//    nearest. Its handoff is on the path to the next lease: a waiter that gets the internal
//    mutex often finds a lease free at once (8 contenders on 2 leases held 5 ms, counted through
//    a proxy: under one wait on the leases dir in a hundred acquisitions), and then the
//    acquisitions follow each other at the pace of the internal mutex's handoffs, not of the
//    leases (on a busy server especially). With one watched blocker a waiter that queued behind
//    several lists again when its predecessor goes: a round trip on every such handoff. With
//    two, the deletion of the last one is the grant; the listing that moves the window up comes
//    one handoff earlier, off the path, and costs one more watch.

struct semaphore_state {
  std::shared_ptr<lock_dir> locks, leases;  // leases->max_leases is the semaphore's maximum
};

std::shared_ptr<semaphore_state> make_semaphore_state(std::shared_ptr<session_impl> s, std::string path,
                                                      int max_leases, const std::optional<std::string>& identity) {
  auto st = std::make_shared<semaphore_state>();
  st->locks = make_lock_dir(s, join_path(path, "locks"));
  st->locks->watch_own_node = false;  // see above (its K is the lock_dir's default, a mutex's)
  st->leases = make_lock_dir(s, join_path(path, "leases"), max_leases);
  if (identity) st->locks->identity = st->leases->identity = *identity;
  if (auto ec = validate_lock_path(path)) st->locks->path_error = st->leases->path_error = ec;
  return st;
}

const std::string& semaphore_leases_path(const semaphore_state& s) noexcept { return s.leases->path; }
int semaphore_max_leases(const semaphore_state& s) noexcept { return s.leases->max_leases; }
std::shared_ptr<lock_dir> semaphore_leases(const std::shared_ptr<semaphore_state>& s) { return s->leases; }

namespace {
class lease_op : public chained_acquire<lease_op, lock_guard> {
 public:
  lease_op(std::shared_ptr<semaphore_state> st, pending<void(error_code, lock_guard)>::ptr op, lock_mode mode,
           std::chrono::steady_clock::duration timeout)
      : chained_acquire(std::move(op), timeout), st_(std::move(st)), mode_(mode) {}

  void start() {
    forward_cancellation();
    if (mode_ == lock_mode::try_once) {
      // All leases taken: say so on this one read (acquire_fsm::probe decides), without queueing
      // (no write). Looks free: the lease step writes at once, without looking again.
      auto self = shared_from_this();
      st_->leases->s->get_children(st_->leases->path, nullptr, children_handler([self](error_code ec, children_result r) {
        if (self->cancelled_) return self->op_->complete(asio::error::operation_aborted, lock_guard{});
        if (!ec && acquire_fsm::probe(r.children, lock_kind::lease, self->st_->leases->max_leases) == probe_result::busy)
          return self->op_->complete(errc::lock_busy, lock_guard{});
        self->take_internal();  // looks free (or no dir yet): the recipe decides
      }));
      return;
    }
    take_internal();
  }

 private:
  void take_internal() { step(st_->locks, mode_, lock_kind::exclusive, &lease_op::on_internal); }

  void on_internal(error_code ec, lock_guard g) {
    if (ec) return op_->complete(ec, lock_guard{});
    internal_ = std::move(g);
    if (cancelled_) return give_up(asio::error::operation_aborted);
    step(st_->leases, mode_ == lock_mode::try_once ? lock_mode::try_after_probe : mode_, lock_kind::lease,
         &lease_op::on_lease);
  }

  void on_lease(error_code ec, lock_guard g) {
    if (ec) return give_up(ec);
    // Give the internal mutex back (in the background: the next acquirer may go on at once).
    internal_ = lock_guard{};
    op_->complete(ec, std::move(g));
  }

  // No lease. Cancelled or timed out: our internal-mutex node goes before the caller is
  // answered, as the lease step's own node did, with a mutex's bounds (acquire_fsm.hpp,
  // stop_kind): a total cancellation waits for the release's answer; anything else waits for it
  // stop_answer_wait at most while connected, and not at all while disconnected (the release
  // answers release_pending at once then; the node goes after the reconnect or with the
  // session). The release goes on either way. Any other error (the session ended: the node
  // goes with it; a server's refusal) is answered at once, the release in the background.
  void give_up(error_code ec) {
    if (!cancelled_ && ec != errc::lock_timeout) {
      internal_ = lock_guard{};
      return op_->complete(ec, lock_guard{});
    }
    struct answer {
      std::shared_ptr<lease_op> self;
      error_code ec;
      std::optional<asio::steady_timer> bound;
      void operator()() {
        if (!self) return;
        if (bound) bound->cancel();
        std::exchange(self, nullptr)->op_->complete(ec, lock_guard{});
      }
    };
    auto a = std::make_shared<answer>(answer{this->shared_from_this(), ec, std::nullopt});
    if (!cancelled_ || cancels_at_once(cancel_type_)) {
      a->bound.emplace(st_->leases->s->executor(), stop_answer_wait);
      a->bound->async_wait([a](error_code) { (*a)(); });
    }
    // on the session's executor, as the timer: the answer is given once, on one strand
    std::exchange(internal_, lock_guard{})
        .async_release(asio::bind_executor(st_->leases->s->executor(), [a](error_code) { (*a)(); }));
  }

  std::shared_ptr<semaphore_state> st_;
  lock_mode mode_;
  lock_guard internal_;
};
}  // namespace

void start_lease(const std::shared_ptr<semaphore_state>& st, acquire_handler h, acquire_params p) {
  on_executor(st->leases->s->executor(), std::move(h), [st, p = std::move(p)](auto h) mutable {
    auto op = pending<void(error_code, lock_guard)>::make(std::move(h), st->leases->s->executor());
    if (st->leases->path_error) return op->complete(st->leases->path_error, lock_guard{});
    if (st->leases->max_leases < 1) return op->complete(errc::invalid_max_leases, lock_guard{});
    std::make_shared<lease_op>(st, std::move(op), p.mode, p.timeout)->start();
  });
}

}  // namespace zklock::detail

// The election: Curator LeaderLatch's layout on the lock recipe. A campaign is one acquire of
// the election path by the lock runner (lock_kind::candidate: "-latch-" nodes, the identity as
// their data, the exclusive grant rule: the head leads), so cancellation, timeouts, connection
// loss, protected creation, container parents and the grant's session check are the mutex's.
// Observers (async_leader, async_observe) only read: the head of the queue and its data
// (observe_leader_fsm decides, observe_op below carries its actions out).
#include "engine/hooks.hpp"
#include "lock/lock_dir.hpp"
#include "sansio/observe_leader_fsm.hpp"
#include "sansio/session_end.hpp"

#include <zklock/election.hpp>
#include <zklock/path.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>


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

// ---- campaign: one acquire of the election path, its guard handed over as a leadership -------

// The acquire's handler: the caller's, which gets a leadership for the guard. It carries the
// caller's executor and cancellation slot, so the acquire's one posted completion runs the
// leader's code (no second post between the grant and it, as for a mutex), and cancellation goes
// straight to the acquire, which cleans up (node, watch) before it completes.
acquire_handler to_leadership(std::shared_ptr<election_state> e, leadership_handler h) {
  auto ex = asio::get_associated_executor(h, e->dir->s->executor());
  auto slot = asio::get_associated_cancellation_slot(h);
  return asio::bind_executor(
      ex, asio::bind_cancellation_slot(slot, [e = std::move(e), h = std::move(h)](error_code ec, lock_guard g) mutable {
        if (ec) return std::move(h)(ec, leadership{});
        std::move(h)(error_code{}, access::construct<leadership>(std::move(g), e->identity));
      }));
}

void campaign(const std::shared_ptr<election_state>& e, leadership_handler h, std::chrono::steady_clock::duration timeout,
              lock_mode mode) {
  start_acquire(e->dir, to_leadership(e, std::move(h)),
                {.mode = mode, .kind = lock_kind::candidate, .timeout = timeout, .node_data = e->identity});
}

// ---- observers: async_leader and async_observe, observe_leader_fsm's actions carried out ----

class observe_op : public std::enable_shared_from_this<observe_op> {
 public:
  using op_ptr = pending<void(error_code, std::optional<leader_info>)>::ptr;
  observe_op(std::shared_ptr<lock_dir> dir, observe_leader_fsm::mode m, std::optional<leader_info> known, op_ptr op)
      : d_(std::move(dir)), s_(d_->s), fsm_(d_->path, m, std::move(known)), op_(std::move(op)),
        restore_timer_(s_->executor()) {}

  void start() {
    cancel_ = cancel_hook(op_, weak_from_this(), [](observe_op& self, asio::cancellation_type t) {
      self.run(self.fsm_.cancel(asio::error::operation_aborted, /*total=*/!cancels_at_once(t), is_connected(self.s_->state())));
    });
    run(fsm_.start(s_->state()));
  }

 private:
  void run(const observe_leader_fsm::actions& actions) {
    for (const auto& a : actions) act(a);
  }

  void act(const observe_action& a) {
    auto self = shared_from_this();
    auto on_children = children_handler([self](error_code ec, children_result r) {
      self->run(self->fsm_.on_children(ec, r.children));
    });
    auto on_data = data_handler([self](error_code ec, data_result d) {
      self->run(self->fsm_.on_data(ec, d.data, d.stat.ctime));
    });
    switch (a.type) {
      case observe_action::list: return s_->get_children(d_->path, nullptr, std::move(on_children));
      case observe_action::read_head: return s_->get_data(a.node, nullptr, std::move(on_data));
      case observe_action::watch_node:
        watch_ = nullptr;
        return s_->get_data(a.node, &watch_, std::move(on_data));
      case observe_action::watch_children:
        watch_ = nullptr;
        return s_->get_children(d_->path, &watch_, std::move(on_children));
      case observe_action::watch_creation:
        watch_ = nullptr;
        return s_->exists(d_->path, &watch_, exists_handler([self](error_code ec, std::optional<node_stat> st) {
                            self->run(self->fsm_.on_exists(ec, st.has_value()));
                          }));
      case observe_action::wait_watch: {
        auto w = watch_;
        return s_->wait_watch(w, watch_handler([self, w](error_code ec, watch_event ev) {
          if (w != self->watch_) return;  // removed by us (or being removed)
          if (ev.type == watch_event_type::not_watching && !ec) return;
          self->watch_ = nullptr;
          self->run(self->fsm_.on_watch_fired(ec));
        }));
      }
      case observe_action::remove_watch: {
        auto w = std::exchange(watch_, nullptr);
        if (!w || w->fired || !w->registered) return run(fsm_.on_watch_removed({}));
        return s_->remove_watch(w, void_handler([self, w](error_code ec) {
          if (ec == condition::connection_lost) self->watch_ = w;  // kept by the C client: removed later
          self->run(self->fsm_.on_watch_removed(ec));
        }));
      }
      case observe_action::await_connection:
        return detail::await_connection(s_, self, [](observe_op& op, session_state now) {
          if (is_connected(now)) return op.run(op.fsm_.on_connected());
          op.run(op.fsm_.on_session_ended(session_end_error(now, /*ran_on_session=*/true)));
        });
      case observe_action::arm_restore_timer:
        // A zklock leader writes its identity back within one round trip once connected, after
        // its reconnect otherwise: one session timeout covers both.
        restore_timer_.expires_after(s_->negotiated_timeout());
        return restore_timer_.async_wait([self](error_code ec) {
          if (!ec) self->run(self->fsm_.on_restore_timeout());
        });
      case observe_action::stop_restore_timer: restore_timer_.cancel(); return;
      case observe_action::complete: return op_->complete(a.ec, a.leader);
    }
  }

  std::shared_ptr<lock_dir> d_;
  std::shared_ptr<session_impl> s_;
  observe_leader_fsm fsm_;
  op_ptr op_;
  boost::intrusive_ptr<watch_state> watch_;  // the watch last set
  asio::steady_timer restore_timer_;
  cancel_hook<pending<void(error_code, std::optional<leader_info>)>> cancel_;
};

void start_observer(const std::shared_ptr<election_state>& e, observe_leader_fsm::mode m,
                    std::optional<leader_info> known, leader_handler h) {
  const auto& s = e->dir->s;
  on_executor(s->executor(), std::move(h), [e, m, known = std::move(known)](auto h) mutable {
    auto op = pending<void(error_code, std::optional<leader_info>)>::make(std::move(h), e->dir->s->executor());
    if (e->dir->path_error) return op->fail(e->dir->path_error);
    std::make_shared<observe_op>(e->dir, m, std::move(known), std::move(op))->start();
  });
}

}  // namespace

void start_campaign(const std::shared_ptr<election_state>& e, leadership_handler h,
                    std::chrono::steady_clock::duration timeout) {
  campaign(e, std::move(h), timeout, lock_mode::wait);
}

void try_campaign(const std::shared_ptr<election_state>& e, leadership_handler h) {
  campaign(e, std::move(h), std::chrono::steady_clock::duration::max(), lock_mode::try_once);
}

void query_leader(const std::shared_ptr<election_state>& e, leader_handler h) {
  start_observer(e, observe_leader_fsm::mode::read_once, std::nullopt, std::move(h));
}

void observe_leader(const std::shared_ptr<election_state>& e, std::optional<leader_info> known, leader_handler h) {
  start_observer(e, observe_leader_fsm::mode::until_changed, std::move(known), std::move(h));
}

}  // namespace zklock::detail

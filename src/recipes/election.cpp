// The election: Curator LeaderLatch's layout on the lock recipe. A campaign is one acquire of
// the election path by the lock runner (lock_kind::candidate: "-latch-" nodes, the identity as
// their data, the exclusive grant rule: the head leads), so cancellation, timeouts, connection
// loss, protected creation, container parents and the grant's session check are the mutex's.
// Observers (async_leader, async_observe) only read: the head of the queue and its data
// (observe_leader_fsm decides, the runner of src/lock/runner.hpp carries its requests out).
#include "engine/hooks.hpp"
#include "lock/lock_dir.hpp"
#include "lock/runner.hpp"
#include "sansio/observe_leader_fsm.hpp"
#include "sansio/session_end.hpp"

#include <zklock/election.hpp>
#include <zklock/path.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>


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

// ---- observers: async_leader and async_observe, observe_leader_fsm's requests carried out ----

// What an observer's completion becomes: the leader the machine read.
struct observer_hook {
  using op_type = pending<void(error_code, std::optional<leader_info>)>;
  template <class Runner>
  void on_outcome(Runner& r, const sansio::request& q) {
    if (q.type == sansio::request::complete) r.op()->complete(q.ec, r.machine().result());
  }
};
using observer = runner<observe_leader_fsm, observer_hook>;

void start_observer(const std::shared_ptr<election_state>& e, observe_leader_fsm::mode m,
                    std::optional<leader_info> known, leader_handler h) {
  const auto& s = e->dir->s;
  start_operation<observer_hook::op_type::signature>(s, std::move(h), [e, m, known = std::move(known)](auto op) mutable {
    if (e->dir->path_error) return op->fail(e->dir->path_error);
    const auto& s = e->dir->s;
    // A zklock leader writes its identity back within one round trip once connected, after its
    // reconnect otherwise: one session timeout covers both.
    auto r = std::make_shared<observer>(
        s, op, observe_leader_fsm(e->dir->path, m, std::move(known), s->negotiated_timeout()), observer_hook{});
    r->start(r->machine().start(s->state()));
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

// The lock dir: the object behind a mutex (and each dir of the other recipes): listing its
// queue, and starting an acquire (validation, reentrancy, the session's state) for the runner.
#include "lock/lock_dir.hpp"

#include "lock/acquire_op.hpp"
#include "lock/hold.hpp"
#include "lock/local_queue.hpp"
#include "sansio/acquire_fsm.hpp"
#include "sansio/grant_rule.hpp"
#include "sansio/node_data.hpp"
#include "sansio/node_name.hpp"
#include "sansio/session_end.hpp"

#include <zklock/lock_view.hpp>
#include <zklock/path.hpp>

#include <algorithm>

namespace zklock::detail {

static_assert(mutex_options{}.watched_blockers == default_watched_blockers, "one default for K");

std::shared_ptr<lock_dir> make_lock_dir(std::shared_ptr<session_impl> s, std::string path, int max_leases) {
  auto m = std::make_shared<lock_dir>();
  m->max_leases = max_leases;
  m->identity = s->identity();
  m->s = std::move(s);
  m->path_error = validate_lock_path(path);
  m->path = std::move(path);
  return m;
}

std::shared_ptr<lock_dir> make_lock_dir(std::shared_ptr<session_impl> s, std::string path, const mutex_options& o) {
  // How a node of this mutex is acquired: for the local queue's node as for the mutex's own.
  auto with_options = [&o](std::shared_ptr<lock_dir> d) {
    if (o.identity) d->identity = *o.identity;
    d->max_watched = o.watched_blockers;
    d->lock_delay = std::max(o.lock_delay, std::chrono::milliseconds(0));
    return d;
  };
  auto m = with_options(make_lock_dir(s, path));
  if (o.local_queue) m->local = make_local_queue(with_options(make_lock_dir(s, path)), o.max_local_handoffs);
  return m;
}

bool reentrant_hold::reenter(const acquire_params& p, const pending<void(error_code, lock_guard)>::ptr& op) {
  if (!p.owner || owner != p.owner) return false;
  auto h = held.lock();
  if (!h || !h->owns()) return false;
  if (h->kind() == lock_kind::read && p.kind != lock_kind::read) {
    op->complete(errc::upgrade_refused, lock_guard{});
    return true;
  }
  h->reenter();
  op->complete({}, make_guard(std::move(h)));
  return true;
}

const std::string& lock_dir_path(const lock_dir& d) noexcept { return d.path; }

void set_lock_delay(const std::shared_ptr<lock_dir>& dir, std::chrono::milliseconds delay) noexcept {
  dir->lock_delay = std::max(delay, std::chrono::milliseconds(0));
}

void list_contenders(const std::shared_ptr<lock_dir>& dir, contenders_handler h) {
  on_executor(dir->s->executor(), std::move(h), [dir](auto h) mutable {
    auto op = detail::pending<void(error_code, std::vector<zklock::contender>)>::make(std::move(h), dir->s->executor());
    if (dir->path_error) return op->fail(dir->path_error);
    auto s = dir->s;
    auto path = dir->path;
    s->get_children(path, nullptr, detail::children_handler([op, s, path](error_code ec, children_result r) {
      if (ec == zk_errc::no_node) return op->complete({}, {});
      if (ec) return op->fail(ec);
      auto queue = detail::queue_order(r.children);
      auto result = std::make_shared<std::vector<zklock::contender>>(queue.size());
      auto found = std::make_shared<std::vector<bool>>(queue.size(), false);
      auto remaining = std::make_shared<std::size_t>(queue.size());
      auto first_error = std::make_shared<error_code>();
      if (queue.empty()) return op->complete({}, {});
      // The head writer's downgrade mark, when listed: its stat tells whether it downgraded.
      auto mark = std::make_shared<std::optional<node_stat>>();
      std::string mark_name = queue[0].kind == lock_kind::write ? downgrade_mark_name(queue[0].name) : std::string{};
      bool read_mark = !mark_name.empty() && std::find(r.children.begin(), r.children.end(), mark_name) != r.children.end();
      if (read_mark) ++*remaining;
      auto finish = [op, result, found, first_error, mark] {
        if (*first_error) return op->fail(*first_error);
        if (*mark && (*found)[0]) set_downgrade_mark((*result)[0], **mark);
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
        s->get_data(join_path(path, queue[i].name), nullptr,
                    detail::data_handler([i, result, found, remaining, first_error, finish](error_code ec, data_result d) {
                      if (!ec) {
                        (*found)[i] = true;
                        set_contender_data((*result)[i], std::move(d));
                      } else if (ec != zk_errc::no_node && !*first_error) {
                        *first_error = ec;
                      }
                      if (--*remaining == 0) finish();
                    }));
      }
      if (read_mark)
        s->exists(join_path(path, mark_name), nullptr,
                  exists_handler([mark, remaining, first_error, finish](error_code ec, std::optional<node_stat> st) {
                    if (!ec && st) *mark = *st;  // gone since the listing: no downgrade to show
                    else if (ec && ec != zk_errc::no_node && !*first_error) *first_error = ec;
                    if (--*remaining == 0) finish();
                  }));
    }));
  });
}

void start_acquire(const std::shared_ptr<lock_dir>& dir, acquire_handler h, acquire_params p) {
  on_executor(dir->s->executor(), std::move(h), [dir, p = std::move(p)](auto h) mutable {
    auto op = detail::pending<void(error_code, lock_guard)>::make(std::move(h), dir->s->executor());
    if (dir->path_error) return op->complete(dir->path_error, lock_guard{});
    // The session first: a reentrant hold of a session that just ended (its state event still
    // queued) must not be handed out again.
    if (auto ec = session_end_error(dir->s->state())) return op->complete(ec, lock_guard{});
    if (dir->local) return start_local_acquire(dir->local, std::move(op), std::move(p));
    // Our node's data: the marker of its kind and who we are (an election passes its own).
    if (!p.node_data) p.node_data = make_node_data(creation_marker(p.kind), dir->identity);
    if (dir->owned.reenter(p, op)) return;
    // A try-acquire never waits: not connected, ZooKeeper cannot be asked now.
    if (p.mode != lock_mode::wait && !is_connected(dir->s->state()))
      return op->complete(errc::connection_unavailable, lock_guard{});
    run_acquire(dir, std::move(op), std::move(p));
  });
}

}  // namespace zklock::detail

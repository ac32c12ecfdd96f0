// The session's watch registry: the one-shot watches the C client holds for us, what reaches
// their waiters when they fire, are removed, or their session ends.
#include "engine/glue.hpp"
#include "engine/session_impl.hpp"

#include <utility>

namespace zklock {

namespace detail {

void watch_state::deliver(error_code ec, watch_event ev) {
  if (fired) return;
  if (waiter && waiter->active()) {
    auto w = std::move(waiter);
    w->complete(ec, std::move(ev));
    // consumed; later waits see the same outcome, never an event that could be taken for one
    fired.emplace(ec, watch_event{watch_event_type::not_watching, path});
    return;
  }
  fired.emplace(ec, std::move(ev));
}

boost::intrusive_ptr<watch_state> session_impl::new_watch(const std::string& path, bool child) {
  boost::intrusive_ptr<watch_state> w(new watch_state);
  w->owner = weak_from_this();
  w->ex = ex_;
  w->path = path;
  w->child_watch = child;
  w->registered = true;
  intrusive_ptr_add_ref(w.get());  // the registry's reference
  watches_.insert(w.get());
  return w;
}

void session_impl::drop_watch(watch_state* w) {
  if (!w->registered) return;
  w->registered = false;
  if (watches_.erase(w)) intrusive_ptr_release(w);
}

void session_impl::on_watch_fired(watch_state* w, int type, int zstate, const char* path) {
  if (type == ZOO_SESSION_EVENT) {
    // Connection state changes reach every watcher; the watch survives a reconnect.
    if (zstate == ZOO_EXPIRED_SESSION_STATE) w->deliver(errc::session_expired, {});
    return;
  }
  ++watch_events_;
  watch_event ev;
  ev.path = path ? path : "";
  if (type == ZOO_CREATED_EVENT) ev.type = watch_event_type::created;
  else if (type == ZOO_DELETED_EVENT) ev.type = watch_event_type::deleted;
  else if (type == ZOO_CHANGED_EVENT) ev.type = watch_event_type::changed;
  else if (type == ZOO_CHILD_EVENT) ev.type = watch_event_type::child;
  else ev.type = watch_event_type::not_watching;
  ++watch_events_by_type_[static_cast<int>(ev.type)];
  boost::intrusive_ptr<watch_state> keep(w);
  drop_watch(w);
  w->deliver({}, std::move(ev));
}

void session_impl::on_watch_removed(watch_state* w) {
  boost::intrusive_ptr<watch_state> keep(w);
  drop_watch(w);
  w->deliver({}, watch_event{watch_event_type::not_watching, w->path});
}

// The server keeps one watch per connection, path and type, whatever number of our watchers
// share it: removing one watcher while another stays only checks it there (the server keeps
// the watch for the other), and the last one's removal takes the server's watch away. A watcher
// whose own removal is on its way is not staying: two removals sent together would otherwise
// each count the other, and the server's watch would outlive both (until the node changed or
// the connection dropped).
bool session_impl::watched_by_another(const watch_state& w) const {
  for (const watch_state* other : watches_)
    if (other != &w && other->child_watch == w.child_watch && other->path == w.path && !removals_.count(other))
      return true;
  return false;
}

void session_impl::on_removal_replied(watch_state* w, int rc) {
  if (auto it = removals_.find(w); it != removals_.end()) removals_.erase(it);
  // On connection loss the C client keeps the watcher (and sets it again on the reconnect):
  // the watch stays, and so does the caller's job of removing it.
  if (rc == ZOK) on_watch_removed(w);
}

void session_impl::wait_watch(boost::intrusive_ptr<watch_state> w, watch_handler h) {
  auto op = pending<void(error_code, watch_event)>::make(std::move(h), ex_);
  if (w->fired) {
    op->complete(w->fired->first, w->fired->second);
    return;
  }
  if (w->waiter && w->waiter->active()) w->waiter->abort();  // one waiter at a time
  w->waiter = op;
}

namespace session_ops {

void wait_watch(boost::intrusive_ptr<watch_state> w, watch_handler h) {
  auto owner = w->owner.lock();
  if (!owner) {
    // session object gone: complete through its executor, never inline
    post_completion(w->ex, std::move(h), error_code(errc::session_closed), watch_event{});
    return;
  }
  // From any thread, as every entry point (its cancellation relayed to the executor too).
  auto ex = owner->executor();
  on_executor(ex, std::move(h), [owner = std::move(owner), w = std::move(w)](auto h) mutable {
    owner->wait_watch(std::move(w), std::move(h));
  });
}

}  // namespace session_ops

}  // namespace detail
}  // namespace zklock

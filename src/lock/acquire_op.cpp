#include "lock/acquire_op.hpp"

#include "engine/hooks.hpp"
#include "engine/lock_metrics.hpp"
#include "engine/client_id.hpp"
#include "lock/hold.hpp"
#include "sansio/acquire_fsm.hpp"
#include "sansio/session_end.hpp"

#include <zklock/path.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <map>
#include <utility>

namespace zklock::detail {

namespace {
// One acquire: feeds acquire_fsm and carries out its actions.
class acquire_op : public boost::intrusive_ref_counter<acquire_op, boost::thread_unsafe_counter> {
 public:
  using ptr = boost::intrusive_ptr<acquire_op>;

  acquire_op(std::shared_ptr<lock_dir> dir, const acquire_params& p)
      : dir_(std::move(dir)),
        s_(dir_->s),
        fsm_(dir_->path,
             dir_->lock_delay.count() > 0 ? lock_delay_client_id(new_client_id(), s_->session_id()) : new_client_id(),
             p.mode, p.kind, dir_->max_leases, dir_->max_watched),
        view_(s_->view_of(dir_->path)),
        owner_(p.owner),
        node_data_(p.node_data ? *p.node_data : std::string(fsm_.node_data())),
        timer_(s_->executor()),
        backoff_timer_(s_->executor()),
        delay_timer_(s_->executor()),
        stop_timer_(s_->executor()) {
    fsm_.set_lock_delay(dir_->lock_delay);
    fsm_.set_watch_own_node(dir_->watch_own_node);
  }

  void start(pending<void(error_code, lock_guard)>::ptr op, std::chrono::steady_clock::duration timeout) {
    op_ = std::move(op);
    session_id_ = s_->session_id();
    metrics_ = acquire_meter::start(*s_, dir_->path, fsm_.kind(), dir_->metering);
    ptr self(this);
    // Not a strong reference: the pending op is ours, and a cycle would never be freed. The
    // hook goes with us, so it never outlives us.
    cancel_ = cancel_hook(op_, this, [](acquire_op& a, asio::cancellation_type type) {
      a.stop(asio::error::operation_aborted, type);
    });
    listener_ = session_listener(s_, self, &acquire_op::on_state);  // (held by it until complete)
    if (timeout != std::chrono::steady_clock::duration::max()) {
      timer_.expires_after(timeout);
      timer_.async_wait([self](error_code ec) {
        if (!ec) self->run(self->fsm_.on_timeout(is_connected(self->s_->state())));
      });
    }
    run(fsm_.start());
  }

 private:
  // Cancellation: acquire_fsm::cancel decides what it answers when (stop_kind).
  void stop(error_code reason, asio::cancellation_type type) {
    run(fsm_.cancel(reason, cancels_at_once(type) ? stop_kind::at_once : stop_kind::total, is_connected(s_->state())));
  }

  void remove_watch(boost::intrusive_ptr<watch_state> w, const std::string& path) {
    ptr self(this);
    s_->remove_watch(w, void_handler([self, w, path](error_code ec) {
                       if (!ec || ec == zk_errc::no_watcher) self->blocker_watches_.erase(path);
                       if (self->fsm_.done() && w == self->watch_ && ec == condition::connection_lost) {
                         // The lease dir's, lost after the grant (which did not wait for it): the
                         // C client sets the watch again on the reconnect, so remove it then.
                         self->dir_removal_lost_ = true;
                         self->listener_ = session_listener(self->s_, self, &acquire_op::on_state);
                         if (is_connected(self->s_->state())) self->on_state(self->s_->state());
                         return;
                       }
                       self->run(self->fsm_.on_watch_removed(path, ec));
                     }));
  }

  void on_state(session_state st) {
    if (fsm_.done()) {
      // Only a lease dir's removal lost after the grant keeps us listening (remove_watch).
      if (!dir_removal_lost_ || st == session_state::suspended) return;
      dir_removal_lost_ = false;
      listener_.reset();
      if (is_connected(st) && watch_) remove_watch(watch_, dir_->path);
      return;
    }
    if (st == session_state::suspended)
      run(fsm_.on_suspended());
    else if (is_connected(st))
      run(fsm_.on_reconnected());
    else if (st == session_state::expired)
      run(fsm_.on_expired(errc::session_expired));
    else if (st == session_state::closed)
      run(fsm_.on_expired(errc::session_closed));
  }

  void run(acquire_fsm::actions actions) {
    ptr self(this);
    session_impl::send_batch together(s_.get());  // what one input asks for goes in one segment
    auto list = [&] {
      // (the listing's one result, shared with the session's other askers of it)
      s_->get_children(dir_->path, nullptr, shared_children_handler([self](error_code ec, shared_children r) {
                         self->heard_listing(ec, *r);
                         // A waiter in a deep queue evaluates the view's few names for its node, not
                         // every name (the queue would cost the session O(N^2) otherwise).
                         if (!ec && self->fsm_.takes_view_listing())
                           return self->run(self->fsm_.on_children(ec, self->view_listing()));
                         self->run(self->fsm_.on_children(ec, r->children));
                       }));
    };
    for (auto& a : actions) {
      switch (a.type) {
        case acquire_action::create_and_list:
        case acquire_action::sync_and_list: {
          session_impl::send_batch together(s_.get());  // one segment for both requests
          if (a.type == acquire_action::sync_and_list)
            s_->sync(a.path, void_handler([](error_code) {}));  // the listing's reply tells
          else
            s_->create(a.path, node_data_, create_mode::ephemeral_sequential,
                       create_handler([self](error_code ec, create_result r) {
                         self->run(self->fsm_.on_create(ec, r.path, r.stat.czxid));
                       }));
          list();
          break;
        }
        case acquire_action::list: list(); break;
        case acquire_action::ensure_parents: ensure_parents(); break;
        case acquire_action::watch_blocker: {
          metrics_.waited();
          // (several go in one segment: run's batch); each reply belongs to the watch set here.
          // The nearest blocker by getData, the others by getChildren (acquire_fsm.hpp, step 4).
          auto& w = blocker_watches_[a.path];
          auto on_set = [self, path = a.path](error_code ec, const node_stat& st) {
            if (ec == zk_errc::no_node) self->heard_gone(path);
            auto it = self->blocker_watches_.find(path);
            auto w = it == self->blocker_watches_.end() ? nullptr : it->second;
            if (ec && it != self->blocker_watches_.end()) self->blocker_watches_.erase(it);
            self->run(self->fsm_.on_watch_set(path, ec, st.ephemeral_owner));
            if (!ec && w) self->wait(std::move(w));
          };
          if (a.nearest)
            s_->get_data(a.path, &w, data_handler([on_set](error_code ec, data_result d) { on_set(ec, d.stat); }));
          else
            s_->get_children(a.path, &w,
                             children_handler([on_set](error_code ec, children_result r) { on_set(ec, r.stat); }));
          break;
        }
        case acquire_action::watch_own:
          own_reply_pending_ = true;
          own_read_.reset();
          s_->get_data(a.path, &own_watch_, data_handler([self](error_code ec, data_result d) {
                         self->own_reply_pending_ = false;
                         auto w = self->own_watch_;
                         if (ec) self->own_watch_ = nullptr;
                         if (!ec) self->own_read_ = d;
                         if (self->fsm_.done()) {
                           // granted before this reply came: the hold took the watch over
                           if (auto h = self->granted_.lock()) h->on_node_watch_reply(ec, d);
                           return;
                         }
                         self->run(self->fsm_.on_own_watch_set(ec));
                         if (!ec && w && !self->fsm_.done()) self->wait(std::move(w));
                       }));
          break;
        case acquire_action::ask_view: {
          auto v = view_->nearest(node_name(a.path), fsm_.kind(), static_cast<std::size_t>(fsm_.max_watched()),
                                  fsm_.counted_as_readers());
          v.alone = view_.use_count() == 1;  // (no other acquire of this session on the dir)
          run(fsm_.on_view(v));
          break;
        }
        case acquire_action::requeued:
          heard_gone(a.path);  // (deleted by someone else)
          s_->log(log_level::warn, "zklock: lock node " + a.path +
                                       " was deleted by someone else while it waited; queueing again");
          break;
        case acquire_action::watch_dir: {
          metrics_.waited();
          s_->get_children(a.path, &watch_, children_handler([self](error_code ec, children_result r) {
                             auto w = self->watch_;
                             self->run(self->fsm_.on_dir_watch_set(ec, r.children));
                             if (!ec && w) self->wait(std::move(w));
                           }));
          break;
        }
        case acquire_action::remove_watch: {
          boost::intrusive_ptr<watch_state> w = watch_;
          if (auto it = blocker_watches_.find(a.path); it != blocker_watches_.end()) w = it->second;
          remove_watch(std::move(w), a.path);
          break;
        }
        case acquire_action::delete_node:
          s_->remove(a.path, -1, void_handler([self](error_code ec) { self->run(self->fsm_.on_deleted(ec)); }));
          break;
        case acquire_action::stat_node:
          s_->exists(a.path, nullptr, exists_handler([self](error_code ec, std::optional<node_stat> st) {
                       if (!ec && !st) ec = zk_errc::no_node;
                       bool ours = st && st->ephemeral_owner == self->s_->session_id();
                       self->run(self->fsm_.on_stat(ec, st ? st->czxid : 0, ours));
                     }));
          break;
        case acquire_action::check_downgrade: {
          // One segment; the replies come in order, so the mark's finds the writer's owner.
          session_impl::send_batch together(s_.get());
          auto writer_owner = std::make_shared<std::int64_t>(0);
          s_->exists(a.path, nullptr, exists_handler([writer_owner](error_code, std::optional<node_stat> st) {
                       if (st) *writer_owner = st->ephemeral_owner;
                     }));
          s_->exists(downgrade_mark_path(a.path), nullptr,
                     exists_handler([self, writer_owner, path = a.path](error_code ec, std::optional<node_stat> st) {
                       if (ec == zk_errc::no_node) ec = {};  // (not there: owner 0)
                       self->run(self->fsm_.on_downgrade_checked(path, ec, *writer_owner, st ? st->ephemeral_owner : 0));
                     }));
          break;
        }
        case acquire_action::wait_reconnect:
          if (is_connected(s_->state()))
            asio::post(s_->executor(), [self] { self->run(self->fsm_.on_reconnected()); });
          break;
        case acquire_action::check_grant:
          run(fsm_.on_grant_check({.session_over = session_over(),
                                   .contact_stale = contact_refresh_due(s_->last_acknowledged(),
                                                                        s_->negotiated_timeout()) <= std::chrono::steady_clock::now(),
                                   .connected = is_connected(s_->state())}));
          break;
        case acquire_action::refresh_contact:
          s_->exists(a.path, nullptr, exists_handler([self](error_code ec, std::optional<node_stat> st) {
                       self->run(self->fsm_.on_refreshed(ec, st.has_value()));
                     }));
          break;
        case acquire_action::answer_early:
          timer_.cancel();
          fail(a.ec);
          break;
        case acquire_action::wait_stop_answer:
          // (the cleanup goes on after the answer: complete() cancels this wait)
          stop_timer_.expires_after(a.delay);
          stop_timer_.async_wait([self](error_code ec) {
            if (!ec) self->run(self->fsm_.on_stop_answer_due());
          });
          break;
        case acquire_action::backoff_delete:
          // (the timer holds us: the cleanup must finish even when the caller was answered)
          backoff_timer_.expires_after(a.delay);
          backoff_timer_.async_wait([self](error_code ec) {
            if (!ec) self->run(self->fsm_.on_backoff_due());
          });
          break;
        case acquire_action::report_cleanup_failed:
          s_->log(log_level::error, delete_refused_message(a.path, a.ec));
          break;
        case acquire_action::complete: complete(); break;
        case acquire_action::create_beacon: create_beacon(); break;
        case acquire_action::read_owner:
          s_->exists(a.path, nullptr, exists_handler([self, path = a.path](error_code ec, std::optional<node_stat> st) {
                       if (!ec && !st) ec = zk_errc::no_node;
                       self->run(self->fsm_.on_owner(path, ec, st ? st->ephemeral_owner : 0));
                     }));
          break;
        case acquire_action::check_session:
          s_->exists(a.path, nullptr, exists_handler([self, owner = a.owner](error_code ec, std::optional<node_stat> st) {
                       self->run(self->fsm_.on_session_checked(owner, ec, st ? st->ephemeral_owner : 0));
                     }));
          break;
        case acquire_action::start_lock_delay:
          s_->log(log_level::info, "zklock: " + (a.path.empty() ? std::string("a contender ahead") : a.path) +
                                       " went with its session (or could not be told from a release): the grant of " +
                                       dir_->path + " waits its lock-delay");
          // (a restart replaces the wait; a completion already queued finds a later expiry)
          delay_timer_.expires_after(a.delay);
          delay_timer_.async_wait([self](error_code ec) {
            if (!ec && self->delay_timer_.expiry() <= std::chrono::steady_clock::now())
              self->run(self->fsm_.on_lock_delay_due());
          });
          break;
      }
    }
  }

  // The session's view of the dir (sansio/dir_view.hpp): a listing's reply, merged once
  // however many contenders it answers (its version says); a node of the dir known gone.
  void heard_listing(error_code ec, const children_result& r) {
    if (!ec) view_->merge({r.stat.czxid, r.stat.pzxid}, r.children);
    else if (ec == zk_errc::no_node) view_->clear();
  }
  std::vector<std::string> view_listing() const {
    return view_->listing_for(node_name(fsm_.node()), fsm_.kind(), static_cast<std::size_t>(fsm_.max_watched()),
                              fsm_.counted_as_readers());
  }
  void heard_gone(const std::string& path) {
    if (parent_path(path) == dir_->path) view_->gone(node_name(path));
  }

  // Follows one of our watches (a blocker's, our node's, the lease dir's) until it fires.
  void wait(boost::intrusive_ptr<watch_state> w) {
    ptr self(this);
    s_->wait_watch(w, watch_handler([self, w](error_code ec, watch_event ev) {
      auto it = self->blocker_watches_.find(w->path);
      bool current = w == self->watch_ || w == self->own_watch_ || (it != self->blocker_watches_.end() && it->second == w);
      if (!current) return;  // an older watch (or one the hold took over)
      if (it != self->blocker_watches_.end() && it->second == w && !ec) self->blocker_watches_.erase(it);
      if (ec == errc::session_expired) return self->run(self->fsm_.on_expired(errc::session_expired));
      if (ec == errc::session_closed) return self->run(self->fsm_.on_expired(errc::session_closed));
      if (ec || ev.type == watch_event_type::not_watching) return;
      if (w == self->own_watch_) self->own_watch_ = nullptr;  // spent
      if (ev.type == watch_event_type::deleted) self->heard_gone(w->path);
      self->run(self->fsm_.on_watch_event(w->path, ev.type == watch_event_type::deleted ? watch_change::deleted
                                                   : ev.type == watch_event_type::child ? watch_change::children_changed
                                                                                         : watch_change::data_changed));
    }));
  }

  // Creates the lock dir as a container; when its parent is missing too, the dir and every
  // ancestor, pipelined in one round trip. The dir alone first: its parents nearly always
  // exist (a server's items under one parent whose empty lock dirs the server reaped), and a
  // create of an existing node is a failed write the server still logs.
  void ensure_parents(bool ancestors = false) {
    if (!ancestors) {
      ptr self(this);
      s_->create(dir_->path, {}, create_mode::container, create_handler([self](error_code ec, create_result) {
                   if (ec == zk_errc::no_node) return self->ensure_parents(true);
                   self->run(self->fsm_.on_parents(ec == zk_errc::node_exists ? error_code{} : ec));
                 }));
      return;
    }
    std::vector<std::string> paths;
    for (std::string p = dir_->path; !p.empty() && p != "/"; p = parent_path(p)) paths.push_back(p);
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

  // Lock-delay: our session's beacon (acquire_fsm.hpp), once per session and lock object; its
  // parent a container, made when missing. Best effort: without it our releases are delayed.
  void create_beacon(bool parent_made = false) {
    auto sid = s_->session_id();
    if (!parent_made && dir_->beacon_session == sid) return;
    dir_->beacon_session = sid;
    auto path = lock_delay_beacon(dir_->path, sid);
    ptr self(this);
    s_->create(path, {}, create_mode::ephemeral,
               create_handler([self, sid, path, parent_made](error_code ec, create_result) {
                 if (!ec || ec == zk_errc::node_exists) return;
                 if (ec == zk_errc::no_node && !parent_made) {
                   // the beacons' dir and its ancestors, then the beacon again, pipelined in one
                   // round trip (the server applies them in order): it exists before our node does
                   std::vector<std::string> dirs;
                   for (std::string p = parent_path(path); !p.empty() && p != "/"; p = parent_path(p)) dirs.push_back(p);
                   session_impl::send_batch together(self->s_.get());
                   for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
                     self->s_->create(*it, {}, create_mode::container, create_handler([](error_code, create_result) {}));
                   self->create_beacon(true);
                   return;
                 }
                 if (self->dir_->beacon_session == sid) self->dir_->beacon_session = 0;  // the next acquire tries again
                 self->s_->log(log_level::warn, "zklock: could not create the lock-delay beacon " + path + " (" +
                                                    ec.message() + "); releases of this session will look like its end");
               }));
  }

  void complete() {
    timer_.cancel();
    delay_timer_.cancel();
    stop_timer_.cancel();
    listener_.reset();
    const auto& r = fsm_.result();
    if (r.ec) {
      if (!fsm_.answered_early()) fail(r.ec);  // answered already: counted then
      return;
    }
    auto h = hold::granted(s_, {.node = r.node, .token = r.fencing_token, .kind = fsm_.kind(), .metrics = metrics_.granted()},
                           dir_->watch_own_node);
    // Our node's watch, set from its create on, is the hold's now (its reply may still come:
    // forwarded from the watch_own handler through granted_).
    granted_ = h;
    h->adopt_node_watch(std::exchange(own_watch_, nullptr), own_reply_pending_, own_read_ ? &*own_read_ : nullptr);
    // A candidate's node data is its identity (an election's participant id): a revocation
    // request written over it does not change who leads.
    if (h->kind() == lock_kind::candidate) h->keep_data_through_revocation(node_data_);
    if (owner_) dir_->owned = {h, owner_};
    op_->complete({}, make_guard(std::move(h)));
  }

  void fail(error_code ec) {
    metrics_.failed(ec);
    op_->complete(ec, lock_guard{});
  }

  // Why the session this acquire runs on is over (empty while it is the live one): closed,
  // expired, gone under a new connect, or replaced by a new session (session_end.hpp).
  error_code session_over() const {
    return session_end_error(s_->state(), true, s_->session_id() != session_id_);
  }

  std::shared_ptr<lock_dir> dir_;
  std::shared_ptr<session_impl> s_;
  std::int64_t session_id_ = 0;  // the ZooKeeper session the acquire started on
  acquire_fsm fsm_;
  // The session's view of the dir (sansio/dir_view.hpp), kept while we run: our listings are
  // merged into it, what our watches hear go is taken out, and it moves our window (ask_view).
  std::shared_ptr<dir_view> view_;
  std::optional<owner_id> owner_;
  std::string node_data_;      // what our node is created with
  asio::steady_timer timer_;
  asio::steady_timer backoff_timer_;  // acquire_action::backoff_delete
  asio::steady_timer delay_timer_;  // acquire_action::start_lock_delay
  asio::steady_timer stop_timer_;   // acquire_action::wait_stop_answer
  pending<void(error_code, lock_guard)>::ptr op_;
  boost::intrusive_ptr<watch_state> watch_;  // the lease dir's
  std::map<std::string, boost::intrusive_ptr<watch_state>> blocker_watches_;  // by the blocker's path
  boost::intrusive_ptr<watch_state> own_watch_;  // on our node (acquire_action::watch_own)
  bool own_reply_pending_ = false;
  std::optional<data_result> own_read_;          // what the getData that set own_watch_ read
  std::weak_ptr<hold> granted_;                  // the hold our grant made
  session_listener listener_;  // on_state
  bool dir_removal_lost_ = false;  // the lease dir's watch removal, lost after the grant: sent again
  acquire_meter metrics_;   // the session's lock metrics
  cancel_hook<pending<void(error_code, lock_guard)>> cancel_;  // stop
};

}  // namespace

void run_acquire(std::shared_ptr<lock_dir> dir, pending<void(error_code, lock_guard)>::ptr op, acquire_params p) {
  boost::intrusive_ptr<acquire_op> a(new acquire_op(std::move(dir), p));
  a->start(std::move(op), p.timeout);
}

}  // namespace zklock::detail

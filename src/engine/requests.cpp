// The session's requests. Each one makes its pending operation, checks that it can be sent
// (precheck), and goes through submit(): one path that hands a request<> to the C client
// inside a request scope, releases it when the C call refuses it, counts it and schedules the
// loop. The reply comes back through the callback given to the C call (engine/glue.hpp).
#include "engine/glue.hpp"
#include "engine/session_impl.hpp"

#include <zklock/path.hpp>

#include <algorithm>
#include <utility>

namespace zklock::detail {

namespace {
// Returns an error for a request that cannot be sent now, or {} when it can.
error_code precheck(zhandle_t* zh, session_state st, std::string_view path) {
  if (auto ec = validate_path(path)) return ec;
  if (!zh) {
    if (st == session_state::expired) return errc::session_expired;
    if (st == session_state::closed) return errc::session_closed;
    return errc::not_connected;
  }
  return {};
}

// Requests already on the wire may still take effect: they honour only the cancellation types
// that allow side effects (Asio's rule); total cancellation is refused.
constexpr auto write_cancellation = asio::cancellation_type::terminal | asio::cancellation_type::partial;

// A listing (get_children) answers its askers (listing_asker), any number of them; every other
// request its one op.
using listing = request<void(error_code, shared_children), std::vector<listing_asker>>;
template <class Request>
void fail_request(Request& r, error_code ec) {
  r.op->fail(ec);
}
void fail_request(listing& r, error_code ec) {
  for (auto& asker : r.extra) asker.fail(ec);
}
template <class Request>
bool wanted(const Request& r) {
  return r.op->active();
}
bool wanted(const listing& r) {
  return std::any_of(r.extra.begin(), r.extra.end(), [](const listing_asker& a) { return a.active(); });
}

const ACL_vector* acl_for(const session_options& o) {
  return o.default_acl == acl_policy::creator_all ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}
}  // namespace

template <class Request, class Call>
void session_impl::submit(const boost::intrusive_ptr<Request>& r, Call call, request_class cls, std::string path) {
  r->owner = weak_from_this();
  if (window_.try_send()) return send_now(r, call);
  queued_request q;
  q.send = [this, r, call = std::move(call)]() mutable { send_now(r, call); };
  q.fail = [this, r](error_code ec) {
    if (r->watch) drop_watch(r->watch.get());
    fail_request(*r, ec);
  };
  q.wanted = [r] { return wanted(*r); };
  window_.push(cls, std::move(path), std::move(q));
}

template <class Request, class Call>
void session_impl::send_now(const boost::intrusive_ptr<Request>& r, Call& call) {
  r->queued = std::chrono::steady_clock::now();
  request_scope scope(this);
  const int state_before = c_state(zh_);
  int rc = call(hand_over(r));
  note_request_sent(state_before);
  if (rc != ZOK) {
    intrusive_ptr_release(r.get());  // the C client did not take it
    window_.on_done();
    if (r->watch) drop_watch(r->watch.get());
    return fail_request(*r, zk_error(rc));
  }
  ++requests_sent_;
  schedule_pump();
}

void session_impl::on_answered() {
  window_.on_done();
  if (window_.queued()) schedule_pump();
}

void session_impl::send_queued() {
  if (!window_.queued()) return;
  send_batch together(this);  // what leaves now leaves in one segment
  while (zh_) {
    auto q = window_.next();
    if (!q) break;
    if (!q->wanted()) {
      window_.on_done();  // cancelled while it waited: never sent
      q->fail(asio::error::operation_aborted);
    } else if (state_ == session_state::expired) {
      window_.on_done();
      q->fail(errc::session_expired);
    } else {
      q->send();
    }
  }
}

void session_impl::fail_queued(error_code reason) {
  window_.forget_outstanding();  // the C client failed those as it closed
  const error_code ec = reason == errc::session_expired || expiring_locally_ || state_ == session_state::expired
                            ? error_code(errc::session_expired)
                            : error_code(errc::session_closed);
  for (auto& q : window_.take_all()) q.fail(ec);
}

std::shared_ptr<dir_view> session_impl::view_of(const std::string& dir) {
  auto& slot = views_[dir];
  auto v = slot.lock();
  if (!v) slot = v = std::make_shared<dir_view>();
  if (views_.size() > views_swept_at_) {  // dirs no acquire waits on any more
    std::erase_if(views_, [](const auto& e) { return e.second.expired(); });
    views_swept_at_ = 2 * views_.size() + 16;
  }
  return v;
}

void session_impl::create(std::string path, std::string data, create_mode mode, create_handler h) {
  auto op = pending<void(error_code, create_result)>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code, create_result)> r(new request<void(error_code, create_result)>(op));
  submit(r, [this, path = std::move(path), data = std::move(data), mode](void* d) {
    return zoo_acreate2(
        zh_, path.c_str(), data.data(), static_cast<int>(data.size()), acl_for(*opts_), to_flags(mode),
        [](int rc, const char* value, const Stat* stat, const void* d) {
          auto r = adopt<request<void(error_code, create_result)>>(d);
          auto owner = r->replied(rc);
          if (r->op->active()) {
            create_result res;
            if (rc == ZOK) {
              res.path = value ? value : "";
              res.stat = to_stat(stat);
            }
            r->op->complete(reply_error(rc), std::move(res));
          } else if (rc == ZOK && value && owner) {
            owner->on_abandoned_create(value);
          }
        },
        d);
  });
}

void session_impl::remove(std::string path, int version, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code)> r(new request<void(error_code)>(op));
  submit(r, [this, path = std::move(path), version](void* d) {
    return zoo_adelete(zh_, path.c_str(), version, void_completion, d);
  });
}

template <class Signature, class Call>
void session_impl::read(asio::any_completion_handler<Signature> h, const std::string& path,
                        boost::intrusive_ptr<watch_state>* watch, bool child_watch, Call&& call) {
  auto op = pending<Signature>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<Signature> r(new request<Signature>(op));
  if (watch) r->watch = *watch = new_watch(path, child_watch);
  submit(r, [call = std::forward<Call>(call), w = r->watch.get()](void* d) { return call(w, d); });
  if (watch && !r->watch->registered && !r->watch->fired) *watch = nullptr;
}

void session_impl::exists(std::string path, boost::intrusive_ptr<watch_state>* watch, exists_handler h) {
  using sig = void(error_code, std::optional<node_stat>);
  auto done = [](int rc, const Stat* stat, const void* d) {
    auto r = adopt<request<sig>>(d);
    r->replied(rc, rc == ZOK || rc == ZNONODE);  // an exists watch is set on a missing node too
    if (rc == ZNONODE) return r->op->complete({}, std::nullopt);
    if (rc != ZOK) return r->op->complete(reply_error(rc), std::nullopt);
    r->op->complete({}, to_stat(stat));
  };
  read(std::move(h), path, watch, false, [this, path, done](watch_state* w, void* d) {
    return w ? zoo_awexists(zh_, path.c_str(), node_watcher, w, done, d) : zoo_aexists(zh_, path.c_str(), 0, done, d);
  });
}

void session_impl::get_children(std::string path, boost::intrusive_ptr<watch_state>* watch, children_handler h) {
  auto op = pending<void(error_code, children_result)>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  list(std::move(path), watch, {.copy = std::move(op)});
}

void session_impl::get_children(std::string path, boost::intrusive_ptr<watch_state>* watch, shared_children_handler h) {
  listing_asker asker{.shared = pending<void(error_code, shared_children)>::make(std::move(h), ex_)};
  if (auto ec = precheck(zh_, state_, path)) return asker.fail(ec);
  list(std::move(path), watch, std::move(asker));
}

void session_impl::list(std::string path, boost::intrusive_ptr<watch_state>* watch, listing_asker asker) {
  auto done = [](int rc, const String_vector* strings, const Stat* stat, const void* d) {
    auto r = adopt<listing>(d);
    r->replied(rc, rc == ZOK);
    auto res = std::make_shared<children_result>();  // one copy of the names for every asker
    if (rc == ZOK) {
      if (strings) {
        res->children.reserve(strings->count);
        for (int i = 0; i < strings->count; ++i) res->children.emplace_back(strings->data[i]);
      }
      res->stat = to_stat(stat);
    }
    const error_code ec = reply_error(rc);
    for (std::size_t i = 0; i < r->extra.size(); ++i) r->extra[i].complete(ec, res, i + 1 == r->extra.size());
  };
  // A listing without a watch carries the askers that join it while it waits (request_window).
  if (!watch)
    if (auto* q = window_.join_listing(path)) return q->join(std::move(asker));
  // (the request's own op stays empty: its askers are answered instead, see fail_request)
  boost::intrusive_ptr<listing> r(new listing(nullptr));
  r->extra.push_back(std::move(asker));
  if (!watch) {
    auto call = [this, path, done](void* d) { return zoo_aget_children2(zh_, path.c_str(), 0, done, d); };
    r->owner = weak_from_this();
    if (window_.try_send()) return send_now(r, call);
    queued_request q;
    q.send = [this, r, call]() mutable { send_now(r, call); };
    q.fail = [r](error_code ec) { fail_request(*r, ec); };
    q.wanted = [r] { return wanted(*r); };
    q.join = [r](listing_asker a) { r->extra.push_back(std::move(a)); };
    window_.push(request_class::listing, std::move(path), std::move(q));
    return;
  }
  r->watch = *watch = new_watch(path, true);
  submit(r, [this, path, w = r->watch.get(), done](void* d) {
    return zoo_awget_children2(zh_, path.c_str(), node_watcher, w, done, d);
  });
  if (!r->watch->registered && !r->watch->fired) *watch = nullptr;
}

void session_impl::get_data(std::string path, boost::intrusive_ptr<watch_state>* watch, data_handler h) {
  using sig = void(error_code, data_result);
  auto done = [](int rc, const char* value, int len, const Stat* stat, const void* d) {
    auto r = adopt<request<sig>>(d);
    r->replied(rc, rc == ZOK);
    data_result res;
    if (rc == ZOK) {
      if (value && len > 0) res.data.assign(value, static_cast<std::size_t>(len));
      res.stat = to_stat(stat);
    }
    r->op->complete(reply_error(rc), std::move(res));
  };
  read(std::move(h), path, watch, false, [this, path, done](watch_state* w, void* d) {
    return w ? zoo_awget(zh_, path.c_str(), node_watcher, w, done, d) : zoo_aget(zh_, path.c_str(), 0, done, d);
  });
}

void session_impl::set_data(std::string path, std::string data, int version, stat_handler h) {
  using sig = void(error_code, node_stat);
  auto op = pending<sig>::make(std::move(h), ex_, write_cancellation);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<sig> r(new request<sig>(op));
  submit(r, [this, path = std::move(path), data = std::move(data), version](void* d) {
    return zoo_aset(
        zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version,
        [](int rc, const Stat* stat, const void* d) {
          auto r = adopt<request<sig>>(d);
          r->replied(rc);
          r->op->complete(reply_error(rc), rc == ZOK ? to_stat(stat) : node_stat{});
        },
        d);
  });
}

void session_impl::multi(std::vector<multi_op> ops, multi_handler h) {
  using sig = void(error_code, std::vector<multi_result>);
  auto op = pending<sig>::make(std::move(h), ex_, write_cancellation);
  for (auto& o : ops)
    if (auto ec = precheck(zh_, state_, o.path)) return op->fail(ec);
  if (ops.empty()) return op->complete(zh_ ? error_code{} : error_code(errc::not_connected), {});
  request_ptr<sig, multi_buffers> r(new request<sig, multi_buffers>(op));
  auto& m = r->extra;
  m.ops = std::move(ops);
  const std::size_t n = m.ops.size();
  m.zops.resize(n);
  m.zresults.resize(n);
  m.path_buffers.resize(n);
  m.stats.resize(n);
  c_client_lock lock;  // every call into the C client holds it, these too
  for (std::size_t i = 0; i < n; ++i) {
    auto& o = m.ops[i];
    switch (o.type) {
      case multi_op::kind::create:
        m.path_buffers[i].resize(o.path.size() + 32);
        zoo_create_op_init(&m.zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()),
                           acl_for(*opts_), to_flags(o.mode), m.path_buffers[i].data(),
                           static_cast<int>(m.path_buffers[i].size()));
        break;
      case multi_op::kind::remove:
        zoo_delete_op_init(&m.zops[i], o.path.c_str(), o.version);
        break;
      case multi_op::kind::set_data:
        zoo_set_op_init(&m.zops[i], o.path.c_str(), o.data.data(), static_cast<int>(o.data.size()), o.version,
                        &m.stats[i]);
        break;
      case multi_op::kind::check:
        zoo_check_op_init(&m.zops[i], o.path.c_str(), o.version);
        break;
    }
  }
  submit(r, [this, n, &m](void* d) {
    return zoo_amulti(
        zh_, static_cast<int>(n), m.zops.data(), m.zresults.data(),
        [](int rc, const void* d) {
          auto r = adopt<request<sig, multi_buffers>>(d);
          r->replied(rc);
          auto& m = r->extra;
          std::vector<multi_result> results(m.ops.size());
          error_code first;
          for (std::size_t i = 0; i < m.ops.size(); ++i) {
            results[i].ec = zk_error(m.zresults[i].err);
            if (results[i].ec && !first) first = results[i].ec;
            if (m.ops[i].type == multi_op::kind::create && m.zresults[i].err == ZOK)
              results[i].path = m.path_buffers[i].data();
            if (m.ops[i].type == multi_op::kind::set_data && m.zresults[i].err == ZOK)
              results[i].stat = to_stat(&m.stats[i]);
          }
          r->op->complete(rc == ZOK ? error_code{} : (first ? first : reply_error(rc)), std::move(results));
        },
        d);
  });
}

void session_impl::sync(std::string path, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  if (auto ec = precheck(zh_, state_, path)) return op->fail(ec);
  request_ptr<void(error_code)> r(new request<void(error_code)>(op));
  submit(r, [this, path = std::move(path)](void* d) {
    return zoo_async(
        zh_, path.c_str(),
        [](int rc, const char*, const void* d) {
          auto r = adopt<request<void(error_code)>>(d);
          r->replied(rc);
          r->op->complete(reply_error(rc));
        },
        d);
  });
}

void session_impl::remove_watch(boost::intrusive_ptr<watch_state> w, void_handler h) {
  auto op = pending<void(error_code)>::make(std::move(h), ex_);
  if (!w) return op->fail(zk_errc::no_watcher);
  if (auto ec = precheck(zh_, state_, w->path)) return op->fail(ec);
  if (!w->registered) return op->fail(zk_errc::no_watcher);
  // The watch it removes (not `watch`: that one would be dropped if the removal failed).
  using removal = request<void(error_code), boost::intrusive_ptr<watch_state>>;
  boost::intrusive_ptr<removal> r(new removal(op));
  r->extra = w;
  // Only the last of the session's watchers on the path removes the server's watch with its
  // own (removeWatches); before it, a removal only checks it there (checkWatches). See
  // watched_by_another.
  auto type = w->child_watch ? ZWATCHTYPE_CHILD : ZWATCHTYPE_DATA;
  // The header declares a void_completion_t*, but the C client stores and calls it as a
  // void_completion_t (as its own tests pass it).
  void_completion_t done_fn = [](int rc, const void* d) {
    auto r = adopt<removal>(d);
    // On connection loss the C client keeps the watcher (and sets it again on reconnect): the
    // caller must retry.
    if (auto owner = r->replied(rc)) owner->on_removal_replied(r->extra.get(), rc);
    r->op->complete(reply_error(rc));
  };
  auto done = reinterpret_cast<void_completion_t*>(done_fn);
  submit(r, [this, w, type, done](void* d) {
    // (decided when it is sent: it may have waited in the window)
    const bool shared = watched_by_another(*w);
    int rc = shared ? zoo_aremove_watches(zh_, w->path.c_str(), type, node_watcher, w.get(), 0, done, d)
                    : zoo_aremove_all_watches(zh_, w->path.c_str(), type, 0, done, d);
    if (rc == ZOK) removals_.insert(w.get());  // until its reply (on_removal_replied)
    return rc;
  });
}

// ---------------------------------------------------------------------------------------------
// the public header's entry points (detail/session_ops.hpp)

namespace session_ops {

// Operations may start on any thread: each runs on the session's executor (on_executor). The
// forms that set a watch fill it in at once, so they are called on the executor (documented).
template <class Handler, class F>
void run_on(session_impl& s, Handler h, F&& f) {
  on_executor(s.executor(), std::move(h),
              [self = s.shared_from_this(), f = std::forward<F>(f)](auto h) mutable { f(*self, std::move(h)); });
}

void create(session_impl& s, std::string path, std::string data, create_mode mode, create_handler h) {
  run_on(s, std::move(h), [path = std::move(path), data = std::move(data), mode](session_impl& self, auto h) mutable {
    self.create(std::move(path), std::move(data), mode, std::move(h));
  });
}
void remove(session_impl& s, std::string path, int version, void_handler h) {
  run_on(s, std::move(h), [path = std::move(path), version](session_impl& self, auto h) mutable {
    self.remove(std::move(path), version, std::move(h));
  });
}
void exists(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, exists_handler h) {
  if (watch) return s.exists(std::move(path), watch, std::move(h));
  run_on(s, std::move(h), [path = std::move(path)](session_impl& self, auto h) mutable {
    self.exists(std::move(path), nullptr, std::move(h));
  });
}
void get_children(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, children_handler h) {
  if (watch) return s.get_children(std::move(path), watch, std::move(h));
  run_on(s, std::move(h), [path = std::move(path)](session_impl& self, auto h) mutable {
    self.get_children(std::move(path), nullptr, std::move(h));
  });
}
void get_data(session_impl& s, std::string path, boost::intrusive_ptr<watch_state>* watch, data_handler h) {
  if (watch) return s.get_data(std::move(path), watch, std::move(h));
  run_on(s, std::move(h), [path = std::move(path)](session_impl& self, auto h) mutable {
    self.get_data(std::move(path), nullptr, std::move(h));
  });
}
void set_data(session_impl& s, std::string path, std::string data, int version, stat_handler h) {
  run_on(s, std::move(h), [path = std::move(path), data = std::move(data), version](session_impl& self, auto h) mutable {
    self.set_data(std::move(path), std::move(data), version, std::move(h));
  });
}
void multi(session_impl& s, std::vector<multi_op> ops, multi_handler h) {
  run_on(s, std::move(h), [ops = std::move(ops)](session_impl& self, auto h) mutable {
    self.multi(std::move(ops), std::move(h));
  });
}
void remove_watch(session_impl& s, boost::intrusive_ptr<watch_state> w, void_handler h) {
  run_on(s, std::move(h), [w = std::move(w)](session_impl& self, auto h) mutable {
    self.remove_watch(std::move(w), std::move(h));
  });
}

}  // namespace session_ops

}  // namespace zklock::detail

// The C client's callbacks and the conversions of its types (declared in session_glue.hpp).
#include "session_glue.hpp"

#include <cstdio>
#include <string_view>

namespace zklock::detail {

constinit thread_local session_impl* current_session = nullptr;

void log_callback(const char* message) {
  std::string_view m(message);
  log_level level = log_level::info;
  if (m.find("ZOO_ERROR@") != std::string_view::npos) level = log_level::error;
  else if (m.find("ZOO_WARN@") != std::string_view::npos) level = log_level::warn;
  else if (m.find("ZOO_DEBUG@") != std::string_view::npos) level = log_level::debug;
  if (current_session)
    current_session->log(level, m);
  else if (level <= log_level::warn)
    std::fprintf(stderr, "%s\n", message);
}

node_stat to_stat(const Stat* s) {
  node_stat r;
  if (!s) return r;
  r.czxid = s->czxid;
  r.mzxid = s->mzxid;
  r.ctime = s->ctime;
  r.mtime = s->mtime;
  r.version = s->version;
  r.cversion = s->cversion;
  r.aversion = s->aversion;
  r.ephemeral_owner = s->ephemeralOwner;
  r.data_length = s->dataLength;
  r.num_children = s->numChildren;
  r.pzxid = s->pzxid;
  return r;
}

int to_flags(create_mode m) {
  switch (m) {
    case create_mode::persistent: return ZOO_PERSISTENT;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL_SEQUENTIAL;
    case create_mode::container: return ZOO_CONTAINER;
  }
  return ZOO_PERSISTENT;
}


void global_watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) static_cast<session_impl*>(ctx)->on_session_event(state);
}

void node_watcher(zhandle_t*, int type, int state, const char* path, void* ctx) {
  auto* w = static_cast<watch_state*>(ctx);
  if (auto owner = w->owner.lock()) owner->on_watch_fired(w, type, state, path);
}

void void_completion(int rc, const void* data) {
  auto r = adopt<request<void(error_code)>>(data);
  r->replied(rc);
  r->op->complete(zk_error(rc));
}

}  // namespace zklock::detail

/* cfloor: the raw single-threaded ZooKeeper C client floor for the zklock contention benchmark
 * (see bench/peers/README.md). One thread, one poll() loop driving zookeeper_interest /
 * zookeeper_process for every handle, exactly like the ST client's own cli.
 *
 *  (a) delete -> watcher: session A creates an ephemeral node, session B sets an exists-watch on it
 *      (and waits for the exists reply), then A deletes it. Latency = just before A's zoo_adelete
 *      -> B's watcher callback for ZOO_DELETED_EVENT.
 *  (b) delete -> event -> get_children: as (a), but B issues zoo_aget_children2(parent) from its
 *      watcher callback and the latency ends when that reply arrives.
 *  (m) as (a), but A releases the way a zklock holder does, multi(setData(node), delete(node)), and
 *      B's watch fires "changed": the price of that transaction against a plain delete.
 *  (i) as (a), with --idle-us U > 0 only: both sessions idle for U us (nothing sent, the process
 *      asleep) between the exists reply and the delete, as a holder that holds U us before it lets
 *      go: the floor of a handoff that comes after idle (the election benchmark's leader holds
 *      20 ms before it resigns), where (a) is the floor of back-to-back handoffs.
 *  (c) uncontended cycle on one session: zoo_acreate(PATH/..., ephemeral|sequential) and
 *      zoo_aget_children2(PATH) sent back to back, both replies awaited, then zoo_adelete and its
 *      reply. Latency = whole cycle.
 *
 * --mode mutex instead runs the lock recipe itself, with the requests it needs and nothing more:
 * --contenders N sessions (at most 64) each create an ephemeral|sequential node, list, watch the
 * nearest blockers of the listing (exists, two at a time as zklock's mutex by default) and are
 * granted from the event that removes the last of them, without listing again, hold --hold-us,
 * delete and queue again, --cycles times; handoffs measured as zklock-bench's (the holder's release
 * start -> the next other contender's grant). The floor of a handoff under that contention, where
 * (a) is one on an idle server. impl=cmutex, with zklock-bench's mutex keys.
 *
 * --mode election runs the same recipe as a leader election, with zklock-election-bench's
 * protocol: --contenders N candidates (3 in scripts/bench) queue in order; the leader leads
 * --hold-us (the benchmark's 20 ms: the same idle as zklock's leader), takes a timestamp and
 * resigns (deletes its node), and campaigns again (creates a new node) only once its delete is
 * answered and the next leader's code ran; --warmup W resigns first, unrecorded, then --cycles R
 * recorded: resign -> the next leader's grant. The floor of zklock's election failover, a correct
 * recipe (a candidate ahead that gives up is not a grant while others are still ahead).
 * impl=celection, with zklock-election-bench's keys (failover_*, requests_per_term).
 *
 * Prints ONE line of key=value pairs (the common benchmark keys plus floor_*), --json FILE writes
 * the same keys as a flat JSON object. Diagnostics go to stderr.
 */
#define _GNU_SOURCE
#include <zookeeper/zookeeper.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---------- small utilities ---------- */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cfloor: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* nearest rank, like zklock-bench; v must be sorted */
static double percentile(const double* v, int n, double p) {
  if (n <= 0) return NAN;
  int idx = (int)ceil(p / 100.0 * n);
  idx = idx == 0 ? 0 : idx - 1;
  return v[idx < n ? idx : n - 1];
}

static int thread_count(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return 1;
  struct dirent* e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

static long rss_kb(const char* field) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t fl = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, fl) == 0) {
      v = strtol(line + fl, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

/* ---------- sessions and the event loop ---------- */

#define MAX_SESSIONS 64 /* the floors use 2; --mode mutex one per contender */

struct session {
  const char* name;
  zhandle_t* zh;
  int connected;
};

static struct session sessions[MAX_SESSIONS];
static int n_sessions;

static void session_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
  (void)zh;
  (void)path;
  struct session* s = ctx;
  if (type != ZOO_SESSION_EVENT) return;
  if (state == ZOO_CONNECTED_STATE) {
    s->connected = 1;
  } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
    die("session %s: %s", s->name, state == ZOO_EXPIRED_SESSION_STATE ? "expired" : "auth failed");
  } else {
    s->connected = 0;
  }
}

/* One round of the ST client's cli loop for every handle: zookeeper_interest, one poll() over all
 * fds with the smallest timeout they ask for, then zookeeper_process with what poll() reported. */
static int pump_cap_ms = 1000; /* the longest poll() waits (--mode mutex: until a hold ends) */

static void pump(void) {
  struct pollfd fds[MAX_SESSIONS];
  int fd_of[MAX_SESSIONS];
  int timeout = pump_cap_ms;
  for (int i = 0; i < n_sessions; ++i) {
    int fd = -1, interest = 0;
    struct timeval tv = {0, 0};
    int rc = zookeeper_interest(sessions[i].zh, &fd, &interest, &tv);
    if (rc != ZOK && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT)
      die("zookeeper_interest(%s): %s", sessions[i].name, zerror(rc));
    int t = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
    if (t < timeout) timeout = t;
    fd_of[i] = fd;
    fds[i].fd = fd; /* poll() ignores negative fds */
    fds[i].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
    fds[i].revents = 0;
  }
  if (timeout < 0) timeout = 0;
  if (poll(fds, (nfds_t)n_sessions, timeout) < 0 && errno != EINTR) die("poll: %s", strerror(errno));
  for (int i = 0; i < n_sessions; ++i) {
    int events = 0;
    if (fd_of[i] != -1) {
      events = (fds[i].revents & POLLIN) ? ZOOKEEPER_READ : 0;
      events |= ((fds[i].revents & POLLOUT) || (fds[i].revents & POLLHUP)) ? ZOOKEEPER_WRITE : 0;
    }
    zookeeper_process(sessions[i].zh, events);
  }
}

static double deadline_s = 60;

static void wait_until(const int* flag, const char* what) {
  double limit = now_us() + deadline_s * 1e6;
  while (!*flag) {
    if (now_us() > limit) die("timed out waiting for %s", what);
    pump();
  }
}

static void wait_until2(const int* f1, const int* f2, const char* what) {
  double limit = now_us() + deadline_s * 1e6;
  while (!*f1 || !*f2) {
    if (now_us() > limit) die("timed out waiting for %s", what);
    pump();
  }
}

/* ---------- completions ---------- */

struct op {
  int done;
  int rc;
  double t_done;
  char value[512]; /* created path */
};

static void reset(struct op* o) {
  o->done = 0;
  o->rc = 0;
  o->t_done = 0;
  o->value[0] = 0;
}

static void string_done(int rc, const char* value, const void* data) {
  struct op* o = (struct op*)data;
  o->t_done = now_us();
  o->rc = rc;
  if (rc == ZOK && value) snprintf(o->value, sizeof o->value, "%s", value);
  o->done = 1;
}

static void void_done(int rc, const void* data) {
  struct op* o = (struct op*)data;
  o->t_done = now_us();
  o->rc = rc;
  o->done = 1;
}

static void stat_done(int rc, const struct Stat* stat, const void* data) {
  (void)stat;
  void_done(rc, data);
}

static void children_done(int rc, const struct String_vector* strings, const struct Stat* stat, const void* data) {
  (void)strings;
  (void)stat;
  void_done(rc, data);
}

static void check(int rc, const char* what) {
  if (rc != ZOK) die("%s: %s", what, zerror(rc));
}

/* create every component of path as a persistent node; ZNODEEXISTS is fine */
static void ensure_path(zhandle_t* zh, const char* path) {
  char buf[512];
  size_t len = strlen(path);
  if (len >= sizeof buf) die("path too long");
  for (size_t i = 1; i <= len; ++i) {
    if (i != len && path[i] != '/') continue;
    memcpy(buf, path, i);
    buf[i] = 0;
    struct op o;
    reset(&o);
    check(zoo_acreate(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, string_done, &o), "zoo_acreate(parent)");
    wait_until(&o.done, "create parent");
    if (o.rc != ZOK && o.rc != ZNODEEXISTS) die("create %s: %s", buf, zerror(o.rc));
  }
}

/* create node with flags, re-creating the parent once if it vanished (e.g. a container that the
 * server reaped between runs) */
static void create_node(zhandle_t* zh, const char* parent, const char* node, int flags, struct op* o) {
  for (int attempt = 0;; ++attempt) {
    reset(o);
    check(zoo_acreate(zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, flags, string_done, o), "zoo_acreate");
    wait_until(&o->done, "create");
    if (o->rc == ZNONODE && attempt == 0) {
      ensure_path(zh, parent);
      continue;
    }
    if (o->rc != ZOK) die("create %s: %s", node, zerror(o->rc));
    return;
  }
}

/* ---------- floors (a) and (b) ---------- */

struct watch_ctx {
  int fired;
  int type;
  double t_event;
  int list_children;       /* (b): issue get_children on parent from the watcher */
  const char* parent;
  struct op children;      /* (b): reply of that get_children */
};

static void exists_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
  (void)state;
  (void)path;
  double t = now_us();
  struct watch_ctx* w = ctx;
  if (type == ZOO_SESSION_EVENT) return; /* one-shot data watch also hears session events */
  w->t_event = t;
  w->type = type;
  w->fired = 1;
  if (w->list_children && type == ZOO_DELETED_EVENT)
    check(zoo_aget_children2(zh, w->parent, 0, children_done, &w->children), "zoo_aget_children2");
}

/* one delete -> watch (-> get_children) measurement; returns latency in us */
static double delete_to_watch(zhandle_t* a, zhandle_t* b, const char* parent, const char* node, int with_children,
                              int as_multi, int idle_us) {
  struct op create, exists, del;
  create_node(a, parent, node, ZOO_EPHEMERAL, &create);

  struct watch_ctx w;
  memset(&w, 0, sizeof w);
  w.list_children = with_children;
  w.parent = parent;
  reset(&w.children);
  reset(&exists);
  check(zoo_awexists(b, node, exists_watcher, &w, stat_done, &exists), "zoo_awexists");
  wait_until(&exists.done, "exists reply");
  if (exists.rc != ZOK) die("exists %s: %s", node, zerror(exists.rc));
  if (idle_us > 0) {
    struct timespec idle = {idle_us / 1000000, (long)(idle_us % 1000000) * 1000};
    while (nanosleep(&idle, &idle) != 0 && errno == EINTR) {
    }
  }

  reset(&del);
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  struct Stat set_stat;
  if (as_multi) {
    zoo_set_op_init(&ops[0], node, "released", 8, -1, &set_stat);
    zoo_delete_op_init(&ops[1], node, -1);
  }
  double t0 = now_us();
  if (as_multi)
    check(zoo_amulti(a, 2, ops, results, void_done, &del), "zoo_amulti");
  else
    check(zoo_adelete(a, node, -1, void_done, &del), "zoo_adelete");
  wait_until2(&del.done, &w.fired, "delete reply and watch event");
  if (del.rc != ZOK) die("delete %s: %s", node, zerror(del.rc));
  if (w.type != (as_multi ? ZOO_CHANGED_EVENT : ZOO_DELETED_EVENT))
    die("watch on %s: unexpected event type %d", node, w.type);
  if (!with_children) return w.t_event - t0;
  wait_until(&w.children.done, "get_children reply");
  if (w.children.rc != ZOK) die("get_children %s: %s", parent, zerror(w.children.rc));
  return w.children.t_done - t0;
}

/* ---------- floor (c) ---------- */

static double uncontended_cycle(zhandle_t* zh, const char* parent, const char* prefix) {
  struct op create, children, del;
  for (int attempt = 0;; ++attempt) {
    reset(&create);
    reset(&children);
    double t0 = now_us();
    check(zoo_acreate(zh, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, string_done, &create),
          "zoo_acreate");
    check(zoo_aget_children2(zh, parent, 0, children_done, &children), "zoo_aget_children2");
    wait_until2(&create.done, &children.done, "create and get_children replies");
    if (create.rc == ZNONODE && attempt == 0) {
      ensure_path(zh, parent);
      continue;
    }
    if (create.rc != ZOK) die("create %s: %s", prefix, zerror(create.rc));
    if (children.rc != ZOK) die("get_children %s: %s", parent, zerror(children.rc));
    reset(&del);
    check(zoo_adelete(zh, create.value, -1, void_done, &del), "zoo_adelete");
    wait_until(&del.done, "delete reply");
    if (del.rc != ZOK) die("delete %s: %s", create.value, zerror(del.rc));
    return now_us() - t0;
  }
}

/* ---------- output ---------- */

struct kv {
  const char* key;
  char value[64];
};
static struct kv out[40];
static int n_out;

static void put_num(const char* key, double v) {
  out[n_out].key = key;
  if (isnan(v) || isinf(v))
    snprintf(out[n_out].value, sizeof out[n_out].value, "nan");
  else
    snprintf(out[n_out].value, sizeof out[n_out].value, "%.1f", v);
  ++n_out;
}
static void put_num2(const char* key, double v) {
  out[n_out].key = key;
  snprintf(out[n_out].value, sizeof out[n_out].value, "%.2f", v);
  ++n_out;
}
static void put_int(const char* key, long long v) {
  out[n_out].key = key;
  snprintf(out[n_out].value, sizeof out[n_out].value, "%lld", v);
  ++n_out;
}
static void put_str(const char* key, const char* v) {
  out[n_out].key = key;
  snprintf(out[n_out].value, sizeof out[n_out].value, "%s", v);
  ++n_out;
}

/* the one key=value line on stdout, and the same keys as flat JSON into json_file when given */
static void emit(const char* json_file) {
  for (int i = 0; i < n_out; ++i) printf("%s%s=%s", i ? " " : "", out[i].key, out[i].value);
  printf("\n");
  fflush(stdout);
  if (json_file) {
    FILE* f = fopen(json_file, "w");
    if (!f) die("cannot write %s: %s", json_file, strerror(errno));
    fputc('{', f);
    for (int i = 0; i < n_out; ++i) {
      const char* v = out[i].value;
      int numeric = (v[0] >= '0' && v[0] <= '9') || v[0] == '-';
      if (!strcmp(v, "nan"))
        fprintf(f, "%s\"%s\": null", i ? ", " : "", out[i].key);
      else if (numeric)
        fprintf(f, "%s\"%s\": %s", i ? ", " : "", out[i].key, v);
      else
        fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", out[i].key, v);
    }
    fputs("}\n", f);
    fclose(f);
  }
}

/* ---------- --mode mutex: the lock recipe on the raw client, N contenders ---------- */

/* Each contender is one session: create PATH/m- (ephemeral|sequential), list PATH; first: it
 * holds; else it keeps the names ahead of it (its blockers: they can only disappear) and
 * exists-watches the nearest MX_WATCHED of them; each deletion (or an exists that finds one
 * gone) takes one off and watches the next nearest still unwatched; the grant comes when every
 * blocker of the listing is gone (a waiter ahead that gives up or expires is not a grant while
 * others are still ahead), with no second listing. The holder holds --hold-us, deletes its
 * node, and once the delete is answered queues again, --cycles times. */

#define MX_WATCHED 2 /* blockers watched at once: zklock's mutex_options::watched_blockers default */

enum contender_state { C_CREATING, C_LISTING, C_WAITING, C_HELD, C_RELEASING, C_RESIGNED, C_DONE };

struct contender {
  int id;
  zhandle_t* zh;
  enum contender_state state;
  int cycles_left;
  double hold_until;
  char node[512]; /* our node (full path) */
  char blockers[MAX_SESSIONS][512]; /* the listing's nodes ahead of ours (full paths), nearest first */
  int n_blockers, next_blocker; /* next_blocker: the nearest not watched yet */
  int remaining, watched;       /* blockers not known gone; of them, watched (or being set) */
  int successor_ran, leaving;   /* --mode election: the next leader ran since our resign; a last release */
};

static struct {
  const char* path;
  char prefix[512];
  int hold_us;
  struct contender c[MAX_SESSIONS];
  int active, inside, violations;
  long acquisitions, requests, watch_events, wakeups;
  int releaser;          /* a handoff is from one contender to another, not a re-acquire */
  double release_started; /* 0: no release to hand off */
  double* handoffs;
  long n_handoffs;
  struct mark { double from, to; } * marks; /* --timeline: each handoff's two instants (CLOCK_MONOTONIC us) */
  int election;                 /* --mode election: rejoin after the next leader, count resigns */
  long resigns, warmup, total;  /* resigns made; the first `warmup` are not recorded; then leave */
} mx;

static void mx_list(struct contender* c);
static void mx_create(struct contender* c);

static void mx_rejoin(struct contender* c);

static void mx_grant(struct contender* c) {
  double t = now_us();
  if (mx.release_started > 0 && mx.releaser != c->id && (!mx.election || mx.resigns > mx.warmup)) {
    if (mx.marks) mx.marks[mx.n_handoffs] = (struct mark){mx.release_started, t};
    mx.handoffs[mx.n_handoffs++] = t - mx.release_started;
  }
  mx.release_started = 0;
  if (++mx.inside != 1) ++mx.violations;
  ++mx.acquisitions;
  c->state = C_HELD;
  /* the election's last leader leaves at once, as zklock-election-bench's */
  c->hold_until = mx.election && mx.resigns >= mx.total ? t : t + mx.hold_us;
  if (!mx.election) return;
  for (int i = 0; i < n_sessions; ++i) /* the resigner campaigns again once the next leader's code ran */
    if (&mx.c[i] != c && (mx.c[i].state == C_RELEASING || mx.c[i].state == C_RESIGNED)) {
      mx.c[i].successor_ran = 1;
      mx_rejoin(&mx.c[i]);
    }
}

static void mx_watch_more(struct contender* c);

/* One blocker is gone: the grant when it was the last. */
static void mx_blocker_gone(struct contender* c) {
  --c->watched;
  if (--c->remaining == 0) {
    mx_grant(c);
    return;
  }
  mx_watch_more(c);
}

static int mx_is_blocker(const struct contender* c, const char* path) {
  for (int i = 0; i < c->next_blocker; ++i)
    if (!strcmp(c->blockers[i], path)) return 1;
  return 0;
}

static void mx_watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx) {
  (void)zh;
  (void)state;
  struct contender* c = ctx;
  if (type == ZOO_SESSION_EVENT) return;
  ++mx.watch_events;
  if (type != ZOO_DELETED_EVENT || c->state != C_WAITING || !mx_is_blocker(c, path)) return;
  ++mx.wakeups;
  mx_blocker_gone(c);
}

static void mx_exists_done(int rc, const struct Stat* stat, const void* data) {
  (void)stat;
  struct contender* c = (struct contender*)data;
  if (c->state != C_WAITING) return;
  if (rc == ZNONODE) {
    mx_blocker_gone(c); /* gone before the watch was set */
    return;
  }
  if (rc != ZOK) die("exists: %s", zerror(rc));
}

static void mx_watch_more(struct contender* c) {
  while (c->watched < MX_WATCHED && c->next_blocker < c->n_blockers) {
    ++c->watched;
    ++mx.requests;
    check(zoo_awexists(c->zh, c->blockers[c->next_blocker++], mx_watcher, c, mx_exists_done, c), "zoo_awexists");
  }
}

static int mx_cmp_desc(const void* a, const void* b) { return -strcmp(*(const char* const*)a, *(const char* const*)b); }

static void mx_listed(int rc, const struct String_vector* children, const void* data) {
  struct contender* c = (struct contender*)data;
  if (rc != ZOK) die("get_children %s: %s", mx.path, zerror(rc));
  const char* mine = strrchr(c->node, '/') + 1;
  const char* ahead[MAX_SESSIONS];
  int n = 0, found = 0;
  for (int i = 0; i < children->count; ++i) {
    const char* name = children->data[i];
    if (strncmp(name, "m-", 2) != 0) continue;
    int order = strcmp(name, mine); /* same prefix, 10-digit sequence: the names sort as the queue */
    if (order == 0) found = 1;
    else if (order < 0 && n < MAX_SESSIONS) ahead[n++] = name;
  }
  if (!found) die("our node %s is not in the listing", c->node);
  if (n == 0) {
    mx_grant(c);
    return;
  }
  qsort(ahead, (size_t)n, sizeof *ahead, mx_cmp_desc); /* nearest first */
  for (int i = 0; i < n; ++i) snprintf(c->blockers[i], sizeof c->blockers[i], "%s/%s", mx.path, ahead[i]);
  c->n_blockers = c->remaining = n;
  c->next_blocker = c->watched = 0;
  c->state = C_WAITING;
  mx_watch_more(c);
}

static void mx_list(struct contender* c) {
  c->state = C_LISTING;
  ++mx.requests;
  check(zoo_aget_children(c->zh, mx.path, 0, mx_listed, c), "zoo_aget_children");
}

static void mx_created(int rc, const char* value, const void* data) {
  struct contender* c = (struct contender*)data;
  if (rc != ZOK) die("create %s: %s", mx.prefix, zerror(rc));
  snprintf(c->node, sizeof c->node, "%s", value);
  mx_list(c);
}

static void mx_create(struct contender* c) {
  c->state = C_CREATING;
  ++mx.requests;
  check(zoo_acreate(c->zh, mx.prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, mx_created, c),
        "zoo_acreate");
}

/* --mode election: a resigner whose delete was answered and whose successor ran campaigns again,
 * or leaves once the resigns are done */
static void mx_rejoin(struct contender* c) {
  if (c->state != C_RESIGNED || !c->successor_ran) return;
  if (!c->leaving && mx.resigns < mx.total) {
    mx_create(c);
    return;
  }
  c->state = C_DONE;
  --mx.active;
}

static void mx_deleted(int rc, const void* data) {
  struct contender* c = (struct contender*)data;
  if (rc != ZOK) die("delete %s: %s", c->node, zerror(rc));
  if (mx.election) {
    c->state = C_RESIGNED;
    if (c->leaving || mx.resigns >= mx.total) c->successor_ran = 1; /* no one to wait for */
    mx_rejoin(c);
    return;
  }
  if (--c->cycles_left > 0) {
    mx_create(c);
    return;
  }
  c->state = C_DONE;
  --mx.active;
}

/* releases every contender whose hold is over; returns the ms until the next hold ends (capped) */
static int mx_release_due(void) {
  int next_ms = 1000;
  double t = now_us();
  for (int i = 0; i < n_sessions; ++i) {
    struct contender* c = &mx.c[i];
    if (c->state != C_HELD) continue;
    if (t < c->hold_until) {
      int ms = (int)ceil((c->hold_until - t) / 1000);
      if (ms < next_ms) next_ms = ms;
      continue;
    }
    --mx.inside;
    mx.releaser = c->id;
    c->state = C_RELEASING;
    ++mx.requests;
    c->successor_ran = 0;
    c->leaving = mx.election && mx.resigns >= mx.total; /* the last leader: not a resign */
    if (mx.election && !c->leaving) ++mx.resigns;
    mx.release_started = c->leaving ? 0 : now_us();
    check(zoo_adelete(c->zh, c->node, -1, mx_deleted, c), "zoo_adelete");
  }
  return next_ms;
}

static int run_mutex(const char* path, int contenders, int cycles, int hold_us) {
  mx.path = path;
  mx.hold_us = hold_us;
  mx.releaser = -1;
  snprintf(mx.prefix, sizeof mx.prefix, "%s/m-", path);
  mx.handoffs = calloc((size_t)contenders * (size_t)cycles + 1, sizeof *mx.handoffs);
  if (!mx.handoffs) die("out of memory");
  ensure_path(sessions[0].zh, path);
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  double t0 = now_us();
  for (int i = 0; i < contenders; ++i) {
    mx.c[i].id = i;
    mx.c[i].zh = sessions[i].zh;
    mx.c[i].cycles_left = cycles;
    mx_create(&mx.c[i]);
  }
  mx.active = contenders;
  double limit = t0 + deadline_s * 1e6 * (1 + cycles / 100.0);
  while (mx.active > 0) {
    if (now_us() > limit) die("--mode mutex: timed out with %d contenders not done", mx.active);
    pump_cap_ms = mx_release_due();
    pump();
  }
  double seconds = (now_us() - t0) / 1e6;
  getrusage(RUSAGE_SELF, &ru1);
  double cpu_s = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                 (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) + (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
  int n = (int)mx.n_handoffs;
  qsort(mx.handoffs, (size_t)n, sizeof *mx.handoffs, cmp_double);
  double acq = mx.acquisitions > 0 ? (double)mx.acquisitions : 1;
  put_str("impl", "cmutex");
  put_int("contenders", contenders);
  put_int("cycles", cycles);
  put_int("hold_us", hold_us);
  put_int("acquisitions", mx.acquisitions);
  put_num("throughput", mx.acquisitions / seconds);
  put_num("handoff_p50_us", percentile(mx.handoffs, n, 50));
  put_num("handoff_p90_us", percentile(mx.handoffs, n, 90));
  put_num("handoff_p99_us", percentile(mx.handoffs, n, 99));
  put_num("handoff_p999_us", percentile(mx.handoffs, n, 99.9));
  put_num("handoff_max_us", percentile(mx.handoffs, n, 100));
  put_int("handoffs", n);
  put_num("solo_cycle_us", NAN);
  put_int("violations", mx.violations);
  put_int("threads", thread_count());
  put_int("rss_kb", rss_kb("VmHWM:"));
  put_num("cpu_us_per_acq", cpu_s * 1e6 / acq);
  /* create, listing, the predecessor's exists (none for a contender first in line), delete; a
   * listing more when the predecessor was gone before its exists */
  put_num2("requests_per_acq", mx.requests / acq);
  /* the events the waiters' exists-watches fire, and those that grant: one per release */
  put_num2("watch_events_per_release", mx.watch_events / acq);
  put_num2("wakeups_per_release", mx.wakeups / acq);
  free(mx.handoffs);
  return mx.violations == 0 ? 0 : 1;
}

static double cpu_seconds(const struct rusage* a, const struct rusage* b) {
  return (b->ru_utime.tv_sec - a->ru_utime.tv_sec) + (b->ru_utime.tv_usec - a->ru_utime.tv_usec) / 1e6 +
         (b->ru_stime.tv_sec - a->ru_stime.tv_sec) + (b->ru_stime.tv_usec - a->ru_stime.tv_usec) / 1e6;
}

/* --mode election: the candidates queue one after the other (each waiting before the next
 * creates, as zklock-election-bench's 20 ms apart), then the leader leads hold_us and resigns,
 * warmup + resigns times. */
static int run_election(const char* path, int candidates, int resigns, int warmup, int hold_us, const char* cdf_file,
                        const char* timeline_file) {
  mx.path = path;
  mx.hold_us = hold_us;
  mx.releaser = -1;
  mx.election = 1;
  mx.warmup = warmup;
  mx.total = (long)warmup + resigns;
  snprintf(mx.prefix, sizeof mx.prefix, "%s/m-", path);
  mx.handoffs = calloc((size_t)resigns + 1, sizeof *mx.handoffs);
  if (!mx.handoffs) die("out of memory");
  if (timeline_file && !(mx.marks = calloc((size_t)resigns + 1, sizeof *mx.marks))) die("out of memory");
  ensure_path(sessions[0].zh, path);
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  double t0 = now_us();
  for (int i = 0; i < candidates; ++i) {
    mx.c[i].id = i;
    mx.c[i].zh = sessions[i].zh;
    mx_create(&mx.c[i]);
    double limit = now_us() + deadline_s * 1e6;
    while (mx.c[i].state != C_HELD && mx.c[i].state != C_WAITING) {
      if (now_us() > limit) die("--mode election: candidate %d not queued", i);
      pump();
    }
  }
  mx.c[0].hold_until = now_us() + hold_us; /* the first term starts once everyone waits */
  mx.active = candidates;
  double limit = t0 + deadline_s * 1e6 * (1 + (warmup + resigns) * (hold_us / 1e6 + 0.01));
  while (mx.active > 0) {
    if (now_us() > limit) die("--mode election: timed out with %d candidates not done", mx.active);
    pump_cap_ms = mx_release_due();
    pump();
  }
  getrusage(RUSAGE_SELF, &ru1);
  int n = (int)mx.n_handoffs;
  if (timeline_file) { /* as zklock-election-bench's --timeline: ns, to lay beside a wire trace */
    FILE* f = fopen(timeline_file, "w");
    if (!f) die("cannot write %s: %s", timeline_file, strerror(errno));
    for (int i = 0; i < n; ++i) fprintf(f, "%.0f %.0f\n", mx.marks[i].from * 1e3, mx.marks[i].to * 1e3);
    fclose(f);
    free(mx.marks);
  }
  qsort(mx.handoffs, (size_t)n, sizeof *mx.handoffs, cmp_double);
  if (cdf_file) { /* every sample, us, one a line (as zklock-election-bench's --cdf) */
    FILE* f = fopen(cdf_file, "w");
    if (!f) die("cannot write %s: %s", cdf_file, strerror(errno));
    for (int i = 0; i < n; ++i) fprintf(f, "%.1f\n", mx.handoffs[i]);
    fclose(f);
  }
  double terms = mx.acquisitions > 0 ? (double)mx.acquisitions : 1;
  put_str("impl", "celection");
  put_str("kind", "election-resign");
  put_int("candidates", candidates);
  put_int("resigns", n);
  put_int("warmup", warmup);
  put_int("hold_us", hold_us);
  put_num("failover_p50_us", percentile(mx.handoffs, n, 50));
  put_num("failover_p90_us", percentile(mx.handoffs, n, 90));
  put_num("failover_p99_us", percentile(mx.handoffs, n, 99));
  put_num("failover_max_us", percentile(mx.handoffs, n, 100));
  put_int("violations", mx.violations);
  put_int("terms", mx.acquisitions);
  /* create, listing, an exists per blocker of the listing (two with 3 candidates), delete */
  put_num2("requests_per_term", mx.requests / terms);
  put_num2("watch_events_per_term", mx.watch_events / terms);
  put_num("cpu_us_per_term", cpu_seconds(&ru0, &ru1) * 1e6 / terms);
  put_int("rss_kb", rss_kb("VmHWM:"));
  free(mx.handoffs);
  return mx.violations == 0 && n == resigns ? 0 : 1;
}

static void usage(const char* msg) {
  fprintf(stderr, "cfloor: %s\nusage: zklock-cfloor --connect HOSTS --path PATH --contenders N --cycles M "
                  "[--mode floors|mutex|election] [--hold-us U] [--idle-us U] [--warmup W] [--session-timeout-ms T] "
                  "[--json FILE] [--cdf FILE] [--timeline FILE] [--resolve-delay-ms D]\n", msg);
  exit(2);
}

int main(int argc, char** argv) {
  const char *connect = "127.0.0.1:2181", *path = "/zklock-bench/lock", *json_file = NULL, *cdf_file = NULL, *timeline_file = NULL;
  int contenders = 8, cycles = 100, resolve_delay_ms = 0, set_resolve_delay = 0, idle_us = 0, hold_us = 0;
  int mutex_mode = 0, election_mode = 0, warmup = 0, session_timeout_ms = 30000;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = NULL;
    char key[64];
    const char* eq = strchr(a, '=');
    if (strncmp(a, "--", 2) != 0) usage("unexpected argument");
    if (eq) {
      size_t kl = (size_t)(eq - a) < sizeof key - 1 ? (size_t)(eq - a) : sizeof key - 1;
      memcpy(key, a, kl);
      key[kl] = 0;
      v = eq + 1;
    } else {
      snprintf(key, sizeof key, "%s", a);
      if (i + 1 >= argc) usage("missing option value");
      v = argv[++i];
    }
    if (!strcmp(key, "--connect")) connect = v;
    else if (!strcmp(key, "--path")) path = v;
    else if (!strcmp(key, "--contenders")) contenders = atoi(v);
    else if (!strcmp(key, "--cycles")) cycles = atoi(v);
    else if (!strcmp(key, "--hold-us")) hold_us = atoi(v); /* --mode mutex only; the floors hold nothing */
    else if (!strcmp(key, "--mode") && (!strcmp(v, "floors") || !strcmp(v, "mutex") || !strcmp(v, "election")))
      mutex_mode = strcmp(v, "floors") != 0, election_mode = !strcmp(v, "election");
    else if (!strcmp(key, "--warmup")) warmup = atoi(v); /* --mode election only */
    else if (!strcmp(key, "--session-timeout-ms")) session_timeout_ms = atoi(v);
    else if (!strcmp(key, "--idle-us")) idle_us = atoi(v);
    else if (!strcmp(key, "--json")) json_file = v;
    else if (!strcmp(key, "--cdf")) cdf_file = v; /* --mode election only */
    else if (!strcmp(key, "--timeline")) timeline_file = v; /* --mode election only */
    else if (!strcmp(key, "--resolve-delay-ms")) resolve_delay_ms = atoi(v), set_resolve_delay = 1;
    else usage("unknown option");
  }
  if (path[0] != '/' || strlen(path) > 400 || (strlen(path) > 1 && path[strlen(path) - 1] == '/'))
    usage("--path must be an absolute znode path");
  if (mutex_mode && (contenders < 1 || contenders > MAX_SESSIONS || cycles < 1 || hold_us < 0))
    usage("--mode mutex: --contenders 1 to 64, --cycles at least 1, --hold-us at least 0");
  if (election_mode && (contenders < 2 || warmup < 0))
    usage("--mode election: --contenders (candidates) 2 to 64, --cycles (resigns) at least 1, --warmup at least 0");
  /* --mode mutex resolves the hosts on connection loss only, as zklock's sessions do: re-resolving
   * on every zookeeper_interest call costs each of its N handles that much CPU on every pass of the
   * loop (2-3x the CPU per acquisition at 8 contenders) */
  if (mutex_mode && !set_resolve_delay) resolve_delay_ms = -1, set_resolve_delay = 1;
  int n = cycles < 200 ? 200 : cycles;

  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  static char names[MAX_SESSIONS][16];
  n_sessions = mutex_mode ? contenders : 2;
  for (int i = 0; i < n_sessions; ++i) {
    if (mutex_mode) snprintf(names[i], sizeof names[i], "contender %d", i);
    else snprintf(names[i], sizeof names[i], "%c", 'A' + i);
    sessions[i].name = names[i];
    sessions[i].zh = zookeeper_init(connect, session_watcher, session_timeout_ms, NULL, &sessions[i], 0);
    if (!sessions[i].zh) die("zookeeper_init(%s): %s", connect, strerror(errno));
    /* Not set by default, like the ST cli (and zklock): the client then re-resolves the host list
     * (getaddrinfo) on every zookeeper_interest call. -1 disables routine re-resolution. */
    if (set_resolve_delay) check(zoo_set_servers_resolution_delay(sessions[i].zh, resolve_delay_ms),
                                 "zoo_set_servers_resolution_delay");
  }
  for (int i = 0; i < n_sessions; ++i) wait_until(&sessions[i].connected, "session connect");
  if (mutex_mode) {
    fprintf(stderr, "cfloor: %d sessions connected; --mode %s, %d %s\n", n_sessions,
            election_mode ? "election" : "mutex", cycles, election_mode ? "resigns" : "cycles each");
    int rc = election_mode ? run_election(path, contenders, cycles, warmup, hold_us, cdf_file, timeline_file)
                           : run_mutex(path, contenders, cycles, hold_us);
    for (int i = 0; i < n_sessions; ++i) zookeeper_close(sessions[i].zh);
    emit(json_file);
    return rc;
  }
  fprintf(stderr, "cfloor: sessions connected; %d cycles per floor\n", n);
  zhandle_t* A = sessions[0].zh;
  zhandle_t* B = sessions[1].zh;
  ensure_path(A, path);

  char node[512], prefix[512];
  snprintf(node, sizeof node, "%s/cfloor-%ld", path, (long)getpid());
  snprintf(prefix, sizeof prefix, "%s/cfloor-c-", path);

  double* fa = calloc((size_t)n, sizeof *fa);
  double* fb = calloc((size_t)n, sizeof *fb);
  double* fc = calloc((size_t)n, sizeof *fc);
  double* fm = calloc((size_t)n, sizeof *fm);
  double* fi = calloc((size_t)n, sizeof *fi);
  if (!fa || !fb || !fc || !fm || !fi) die("out of memory");
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  for (int k = 0; k < n; ++k) fa[k] = delete_to_watch(A, B, path, node, 0, 0, 0);
  for (int k = 0; k < n; ++k) fb[k] = delete_to_watch(A, B, path, node, 1, 0, 0);
  for (int k = 0; k < n; ++k) fm[k] = delete_to_watch(A, B, path, node, 0, 1, 0);
  for (int k = 0; idle_us > 0 && k < n; ++k) fi[k] = delete_to_watch(A, B, path, node, 0, 0, idle_us);
  for (int k = 0; k < n; ++k) fc[k] = uncontended_cycle(A, path, prefix);
  getrusage(RUSAGE_SELF, &ru1);
  int threads = thread_count();
  long rss = rss_kb("VmHWM:");
  for (int i = 0; i < n_sessions; ++i) zookeeper_close(sessions[i].zh);
  double cpu_s = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                 (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) + (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
  fprintf(stderr, "cfloor: cpu %.1f us per measured round trip\n", cpu_s * 1e6 / ((idle_us > 0 ? 5.0 : 4.0) * n));
  qsort(fa, (size_t)n, sizeof *fa, cmp_double);
  qsort(fb, (size_t)n, sizeof *fb, cmp_double);
  qsort(fc, (size_t)n, sizeof *fc, cmp_double);
  qsort(fm, (size_t)n, sizeof *fm, cmp_double);
  if (idle_us > 0) qsort(fi, (size_t)n, sizeof *fi, cmp_double);

  put_str("impl", "cfloor");
  put_int("contenders", contenders);
  put_int("cycles", n);
  put_num("acquisitions", NAN);
  put_num("throughput", NAN);
  put_num("handoff_p50_us", percentile(fa, n, 50));
  put_num("handoff_p90_us", percentile(fa, n, 90));
  put_num("handoff_p99_us", percentile(fa, n, 99));
  put_num("handoff_p999_us", percentile(fa, n, 99.9));
  put_num("handoff_max_us", percentile(fa, n, 100));
  put_int("handoffs", n);
  put_num("solo_cycle_us", percentile(fc, n, 50));
  put_int("violations", 0);
  put_int("threads", threads);
  put_int("rss_kb", rss);
  put_num("cpu_us_per_acq", NAN);
  put_num("floor_a_p50_us", percentile(fa, n, 50));
  put_num("floor_a_p90_us", percentile(fa, n, 90));
  put_num("floor_a_p99_us", percentile(fa, n, 99));
  put_num("floor_b_p50_us", percentile(fb, n, 50));
  put_num("floor_b_p99_us", percentile(fb, n, 99));
  put_num("floor_m_p50_us", percentile(fm, n, 50));
  put_num("floor_m_p99_us", percentile(fm, n, 99));
  put_num("floor_c_p50_us", percentile(fc, n, 50));
  put_num("floor_c_p99_us", percentile(fc, n, 99));
  if (idle_us > 0) {
    put_int("floor_i_idle_us", idle_us);
    put_num("floor_i_p50_us", percentile(fi, n, 50));
    put_num("floor_i_p99_us", percentile(fi, n, 99));
  }

  emit(json_file);
  free(fa);
  free(fb);
  free(fc);
  free(fm);
  free(fi);
  return 0;
}

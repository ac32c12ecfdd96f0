/* zklock-cdistinct: the raw single-threaded ZooKeeper C client doing the distinct-keys workload
 * (zklock-bench --kind distinct-keys) with nothing but the requests: one session, C
 * keys PATH/k<i>, each key a loop of the uncontended lock cycle -- create(PATH/k<i>/lock-,
 * ephemeral|sequential) and getChildren(PATH/k<i>) sent back to back, both replies awaited, then
 * delete and its reply -- all C loops pipelined on the one session, driven by one poll() loop.
 * The server's ceiling for this workload: 3 requests and 2 writes per acquisition.
 *
 *   zklock-cdistinct --connect HOSTS --path PATH --contenders C --cycles M [--json FILE]
 *
 * --mode requeue measures the two-level lock's fairness re-queue instead: a node
 * of ours is held; re-queueing is either delete, its reply, then create + getChildren (today's
 * two round trips, "seq") or multi(delete ours, create our next) + getChildren pipelined (one
 * round trip, "multi"); M of each, alternating, latency per re-queue.
 *
 * Prints ONE line of key=value pairs (impl=cfloor kind=distinct-keys ...); --json FILE too. */
#define _GNU_SOURCE
#include <zookeeper/zookeeper.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char* what, int rc) {
  fprintf(stderr, "cdistinct: %s: %s\n", what, rc ? zerror(rc) : strerror(errno));
  exit(2);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double percentile(double* v, int n, double p) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  int idx = (int)ceil(p / 100.0 * n);
  idx = idx == 0 ? 0 : idx - 1;
  return v[idx < n ? idx : n - 1];
}

static zhandle_t* zh;
static int connected;
static long requests;

static void session_watcher(zhandle_t* h, int type, int state, const char* path, void* ctx) {
  (void)h, (void)path, (void)ctx;
  if (type != ZOO_SESSION_EVENT) return;
  if (state == ZOO_CONNECTED_STATE) connected = 1;
  else if (state == ZOO_EXPIRED_SESSION_STATE) fprintf(stderr, "cdistinct: session expired\n"), exit(2);
  else connected = 0;
}

static void pump(void) {
  int fd = -1, interest = 0;
  struct timeval tv = {0, 0};
  int rc = zookeeper_interest(zh, &fd, &interest, &tv);
  if (rc != ZOK && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT) die("zookeeper_interest", rc);
  int timeout = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
  struct pollfd p = {fd, (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)), 0};
  if (poll(&p, fd < 0 ? 0 : 1, timeout < 0 ? 0 : timeout) < 0 && errno != EINTR) die("poll", 0);
  int events = (p.revents & POLLIN) ? ZOOKEEPER_READ : 0;
  events |= (p.revents & (POLLOUT | POLLHUP)) ? ZOOKEEPER_WRITE : 0;
  zookeeper_process(zh, fd < 0 ? 0 : events);
}

/* ---------- one key's loop ---------- */

struct key {
  char dir[256], prefix[300], node[320];
  int left, pending, failed;
  double t0;
};
static struct key* keys;
static int active;
static double* cycle_us;
static long n_cycles;
static long acquisitions;

static void start_cycle(struct key* k);

static void deleted(int rc, const void* data) {
  struct key* k = (struct key*)data;
  if (rc != ZOK) die("delete", rc);
  ++acquisitions;
  cycle_us[n_cycles++] = now_us() - k->t0;
  if (--k->left > 0) start_cycle(k);
  else --active;
}

static void cycle_step(struct key* k) {
  if (--k->pending > 0) return;
  ++requests;
  int rc = zoo_adelete(zh, k->node, -1, deleted, k);
  if (rc != ZOK) die("zoo_adelete", rc);
}

static void created(int rc, const char* value, const void* data) {
  struct key* k = (struct key*)data;
  if (rc != ZOK) die("create", rc);
  snprintf(k->node, sizeof k->node, "%s", value);
  cycle_step(k);
}

static void listed(int rc, const struct String_vector* s, const struct Stat* st, const void* data) {
  (void)s, (void)st;
  if (rc != ZOK) die("getChildren", rc);
  cycle_step((struct key*)data);
}

static void start_cycle(struct key* k) {
  k->t0 = now_us();
  k->pending = 2;
  requests += 2;
  int rc = zoo_acreate(zh, k->prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, created, k);
  if (rc != ZOK) die("zoo_acreate", rc);
  rc = zoo_aget_children2(zh, k->dir, 0, listed, k);
  if (rc != ZOK) die("zoo_aget_children2", rc);
}

/* ---------- synchronous helpers (set-up, and the re-queue measurement) ---------- */

struct op {
  int done, rc;
  char value[320];
};
static void op_string(int rc, const char* value, const void* data) {
  struct op* o = (struct op*)data;
  o->rc = rc;
  if (rc == ZOK && value) snprintf(o->value, sizeof o->value, "%s", value);
  o->done = 1;
}
static void op_void(int rc, const void* data) {
  struct op* o = (struct op*)data;
  o->rc = rc;
  o->done = 1;
}
static void op_children(int rc, const struct String_vector* s, const struct Stat* st, const void* data) {
  (void)s, (void)st;
  op_void(rc, data);
}
static void wait_op(struct op* o) {
  double limit = now_us() + 60e6;
  while (!o->done) {
    if (now_us() > limit) fprintf(stderr, "cdistinct: timed out\n"), exit(2);
    pump();
  }
}

/* path and its ancestors as containers (zklock's and Curator's lock dirs are containers) */
static void ensure_dirs(const char* path) {
  char buf[256];
  size_t len = strlen(path);
  for (size_t i = 1; i <= len; ++i) {
    if (i != len && path[i] != '/') continue;
    memcpy(buf, path, i);
    buf[i] = 0;
    struct op o = {0};
    int rc = zoo_acreate(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, op_string, &o);
    if (rc != ZOK) die("zoo_acreate(dir)", rc);
    wait_op(&o);
    if (o.rc != ZOK && o.rc != ZNODEEXISTS) die(buf, o.rc);
  }
}

static void requeue(const char* path, int cycles, const char* json) {
  char dir[256], prefix[300], node[320];
  snprintf(dir, sizeof dir, "%s/requeue", path);
  snprintf(prefix, sizeof prefix, "%s/_c_cdistinct-lock-", dir);
  ensure_dirs(dir);
  struct op o = {0};
  if (zoo_acreate(zh, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, op_string, &o) != ZOK) die("create", 0);
  wait_op(&o);
  if (o.rc != ZOK) die("create", o.rc);
  snprintf(node, sizeof node, "%s", o.value);
  double* seq = calloc((size_t)cycles, sizeof *seq);
  double* multi = calloc((size_t)cycles, sizeof *multi);
  for (int k = 0; k < 2 * cycles; ++k) {
    double t0 = now_us();
    struct op c = {0}, l = {0};
    const char* multi_path = NULL;
    if (k % 2 == 0) { /* today: delete, its reply, then create + list */
      struct op d = {0};
      if (zoo_adelete(zh, node, -1, op_void, &d) != ZOK) die("zoo_adelete", 0);
      wait_op(&d);
      if (d.rc != ZOK) die("delete", d.rc);
      if (zoo_acreate(zh, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, op_string, &c) != ZOK)
        die("zoo_acreate", 0);
    } else { /* one transaction: multi(delete ours, create our next), the listing pipelined */
      static zoo_op_t ops[2];
      static zoo_op_result_t res[2];
      static char created_path[320];
      zoo_delete_op_init(&ops[0], node, -1);
      zoo_create_op_init(&ops[1], prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE, created_path,
                         sizeof created_path);
      if (zoo_amulti(zh, 2, ops, res, op_void, &c) != ZOK) die("zoo_amulti", 0);
      multi_path = created_path;
    }
    if (zoo_aget_children2(zh, dir, 0, op_children, &l) != ZOK) die("zoo_aget_children2", 0);
    wait_op(&c);
    wait_op(&l);
    if (multi_path) snprintf(c.value, sizeof c.value, "%s", multi_path);
    if (c.rc != ZOK || l.rc != ZOK) die("re-queue", c.rc ? c.rc : l.rc);
    snprintf(node, sizeof node, "%s", c.value);
    (k % 2 == 0 ? seq : multi)[k / 2] = now_us() - t0;
  }
  double s50 = percentile(seq, cycles, 50), s99 = percentile(seq, cycles, 99);
  double m50 = percentile(multi, cycles, 50), m99 = percentile(multi, cycles, 99);
  char line[512];
  snprintf(line, sizeof line,
           "impl=cfloor kind=requeue cycles=%d seq_p50_us=%.1f seq_p99_us=%.1f multi_p50_us=%.1f multi_p99_us=%.1f "
           "multi_over_seq_p50=%.3f",
           cycles, s50, s99, m50, m99, m50 / s50);
  puts(line);
  if (json) {
    FILE* f = fopen(json, "w");
    if (f) {
      fprintf(f, "{\"impl\": \"cfloor\", \"kind\": \"requeue\", \"cycles\": %d, \"seq_p50_us\": %.1f, \"seq_p99_us\": %.1f, "
                 "\"multi_p50_us\": %.1f, \"multi_p99_us\": %.1f, \"multi_over_seq_p50\": %.3f}\n",
              cycles, s50, s99, m50, m99, m50 / s50);
      fclose(f);
    }
  }
}

int main(int argc, char** argv) {
  const char *connect = "127.0.0.1:2181", *path = "/zklock-bench/keys", *json = NULL, *mode = "distinct-keys";
  int concurrency = 16, cycles = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (!strcmp(a, "--connect")) connect = v;
    else if (!strcmp(a, "--path")) path = v;
    else if (!strcmp(a, "--contenders") || !strcmp(a, "--concurrency")) concurrency = atoi(v);
    else if (!strcmp(a, "--cycles")) cycles = atoi(v);
    else if (!strcmp(a, "--json")) json = v;
    else if (!strcmp(a, "--mode") || !strcmp(a, "--kind")) mode = v;
    else fprintf(stderr, "cdistinct: unknown option %s\n", a), exit(2);
  }
  if (concurrency < 1 || cycles < 1 || path[0] != '/' || strlen(path) > 200) fprintf(stderr, "cdistinct: bad arguments\n"), exit(2);
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  zh = zookeeper_init(connect, session_watcher, 30000, NULL, NULL, 0);
  if (!zh) die("zookeeper_init", 0);
  double limit = now_us() + 60e6;
  while (!connected) {
    if (now_us() > limit) fprintf(stderr, "cdistinct: no session\n"), exit(2);
    pump();
  }
  if (!strcmp(mode, "requeue")) {
    requeue(path, cycles, json);
    zookeeper_close(zh);
    return 0;
  }
  keys = calloc((size_t)concurrency, sizeof *keys);
  cycle_us = calloc((size_t)concurrency * (size_t)(cycles + 1), sizeof *cycle_us);
  for (int i = 0; i < concurrency; ++i) {
    snprintf(keys[i].dir, sizeof keys[i].dir, "%s/k%d", path, i);
    snprintf(keys[i].prefix, sizeof keys[i].prefix, "%s/_c_cdistinct-lock-", keys[i].dir);
    ensure_dirs(keys[i].dir);
  }
  /* warm-up: one cycle per key, as zklock-bench's (not timed) */
  for (int i = 0; i < concurrency; ++i) keys[i].left = 1, start_cycle(&keys[i]);
  for (active = concurrency; active > 0;) pump();
  acquisitions = n_cycles = requests = 0;
  double c0 = cpu_s(), t0 = now_us();
  for (int i = 0; i < concurrency; ++i) keys[i].left = cycles, start_cycle(&keys[i]);
  for (active = concurrency; active > 0;) pump();
  double secs = (now_us() - t0) / 1e6, cpu = cpu_s() - c0;
  zookeeper_close(zh);
  double p50 = percentile(cycle_us, (int)n_cycles, 50), p99 = percentile(cycle_us, (int)n_cycles, 99);
  char line[1024];
  snprintf(line, sizeof line,
           "impl=cfloor kind=distinct-keys concurrency=%d cycles=%d acquisitions=%ld throughput=%.1f cpu_us_per_acq=%.1f "
           "requests_per_acq=%.3f cycle_p50_us=%.1f cycle_p99_us=%.1f seconds=%.3f violations=0",
           concurrency, cycles, acquisitions, acquisitions / secs, cpu * 1e6 / acquisitions,
           (double)requests / acquisitions, p50, p99, secs);
  puts(line);
  fflush(stdout);
  if (json) {
    FILE* f = fopen(json, "w");
    if (!f) die(json, 0);
    fprintf(f, "{\"impl\": \"cfloor\", \"kind\": \"distinct-keys\", \"concurrency\": %d, \"cycles\": %d, \"acquisitions\": %ld, "
               "\"throughput\": %.1f, \"cpu_us_per_acq\": %.1f, \"requests_per_acq\": %.3f, \"cycle_p50_us\": %.1f, "
               "\"cycle_p99_us\": %.1f, \"seconds\": %.3f, \"violations\": 0}\n",
            concurrency, cycles, acquisitions, acquisitions / secs, cpu * 1e6 / acquisitions, (double)requests / acquisitions,
            p50, p99, secs);
    fclose(f);
  }
  return 0;
}

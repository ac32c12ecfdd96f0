#!/usr/bin/python3
"""kazoo peer for the zklock contention benchmark (see bench/peers/README.md).

N contenders, each with its own KazooClient (= its own ZooKeeper session, threading handler) and
its own thread, acquire and release one kazoo Lock at PATH M times each, all in this one process.
Prints ONE line of key=value pairs on stdout (same keys as zklock-bench); --json FILE writes the
same keys as a flat JSON object. Diagnostics go to stderr. Exit 1 on any violation.

--kind shared (--readers R --writers W): kazoo ReadLock / WriteLock; --kind semaphore (--leases
L): kazoo Semaphore; same workload and keys as zklock-bench's kinds. kazoo 2.8.0's ReadLock can
deadlock behind a writer queued after it (python-zk/kazoo#649): --kind shared applies the fix of
kazoo #650 (a reader waits for the nearest writer *below* its own node), as test/interop does,
when the installed kazoo lacks it, and says so in its output (kazoo_rw_fix=650-patched).

Run it with Debian's /usr/bin/python3 (python3-kazoo), not a pyenv python.
"""
import collections
import math
import os
import sys
import threading
import time

from kazoo.recipe.lock import Lock

import kazoo_peer  # this directory: what the kazoo peers share
from kazoo_peer import connect_all, emit, percentile, say, write_cdf

# kazoo #650's ReadLock rule, shared with the interop tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "test", "interop"))
import kazoo_contender  # noqa: E402

NONE = -1


def thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def rss_kb(field="VmHWM:"):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line[len(field):].split()[0])
    except OSError:
        pass
    return -1


class Shared:
    """The in-process "resource" and the handoff bookkeeping."""

    def __init__(self):
        self.mu = threading.Lock()  # guards the fields below (stands in for atomics)
        self.holder = NONE
        self.violations = 0
        self.acquisitions = 0
        self.pending_release = None  # (monotonic ns at release start, releasing contender)
        self.handoffs = []


class Contended:
    """What every contended run measures besides its recipe's own figures."""

    def __init__(self, n):
        self.finished_s = [0.0] * n  # per contender: seconds from the common start to its last release
        self.cpu_s = 0.0  # process CPU over the contended phase
        self.threads_peak = thread_count()

    def seconds(self, first, last):
        """From the start to the last finish of contenders [first, last)."""
        return max(self.finished_s[first:last]) if last > first else math.nan


def run_contended(clients, body, threads_peak=0):
    """One thread per client, all released together, each running body(i); stops the clients when
    all have finished. Returns (Contended, failures)."""
    run = Contended(len(clients))
    run.threads_peak = max(run.threads_peak, threads_peak)
    start = threading.Event()
    failures = []
    t0 = []

    def contender(me):
        try:
            start.wait()
            body(me)
            run.finished_s[me] = time.monotonic() - t0[0]
        except BaseException as e:  # noqa: BLE001 - report any failure
            failures.append("contender %d: %r" % (me, e))

    workers = [threading.Thread(target=contender, args=(i,), name="contender-%d" % i)
               for i in range(len(clients))]
    for w in workers:
        w.start()
    run.threads_peak = max(run.threads_peak, thread_count())
    t0.append(time.monotonic())
    cpu_start = time.process_time()
    start.set()
    for w in workers:
        while w.is_alive():
            w.join(0.05)
            run.threads_peak = max(run.threads_peak, thread_count())
    run.cpu_s = time.process_time() - cpu_start
    run.threads_peak = max(run.threads_peak, thread_count())
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001
            pass
    for f in failures:
        say(f)
    return run, failures


def process_figures(run, acq):
    """threads, memory and CPU: the keys every kind reports after its own."""
    return [("threads", run.threads_peak), ("rss_kb", rss_kb("VmHWM:")), ("cpu_us_per_acq", run.cpu_s * 1e6 / max(1, acq))]


def run_shared(args):
    """Readers and writers on one kazoo ReadLock/WriteLock path. Handoffs as in zklock-bench: a
    read handoff is a writer's release start to the grant of a reader already waiting; a write
    handoff is the lock turning free (a writer, or the last reader inside, starts releasing) to
    the grant of a writer already waiting. The hold is a sleep (zklock-bench's is a timer)."""
    fix = "kazoo-%s" % kazoo_contender.kazoo_version()
    if not kazoo_contender.kazoo_has_fix():
        Lock._get_predecessor = kazoo_contender.predecessor_below_self
        fix = "650-patched"
        say("kazoo %s lacks the ReadLock fix of python-zk/kazoo#650 (kazoo#649: a reader waits for a writer "
            "queued after it, a deadlock); applying #650's rule" % kazoo_contender.kazoo_version())
    n = args.readers + args.writers
    clients = connect_all(args.connect, n)
    mu = threading.Lock()
    st = {"write_released": None, "free_since": None, "readers_inside": 0, "max_readers_inside": 0,
          "writer_inside": False, "violations": 0, "reads": 0, "writes": 0}
    read_h, write_h = [], []
    hold_s = args.hold_us / 1e6

    def body(me):
        reader = me < args.readers
        lk = (clients[me].ReadLock if reader else clients[me].WriteLock)(args.path, "contender-%d" % me)
        for _ in range(args.cycles):
            waiting_since = time.monotonic_ns()
            lk.acquire()
            now = time.monotonic_ns()
            with mu:
                if reader:
                    if st["write_released"] is not None and st["write_released"] > waiting_since:
                        read_h.append((now - st["write_released"]) / 1e3)
                    st["violations"] += st["writer_inside"]
                    st["readers_inside"] += 1
                    st["max_readers_inside"] = max(st["max_readers_inside"], st["readers_inside"])
                    st["reads"] += 1
                else:
                    if st["free_since"] is not None and st["free_since"] > waiting_since:
                        write_h.append((now - st["free_since"]) / 1e3)
                    st["violations"] += st["writer_inside"] or st["readers_inside"] > 0
                    st["writer_inside"] = True
                    st["writes"] += 1
            if hold_s > 0:
                time.sleep(hold_s)
            with mu:
                if reader:
                    st["readers_inside"] -= 1
                    if st["readers_inside"] == 0:
                        st["free_since"] = time.monotonic_ns()
                else:
                    st["writer_inside"] = False
                    st["write_released"] = st["free_since"] = time.monotonic_ns()
            lk.release()

    run, failures = run_contended(clients, body)
    if failures:
        return 2
    acq = st["reads"] + st["writes"]
    r = [
        ("impl", "kazoo"), ("kind", "shared"), ("readers", args.readers), ("writers", args.writers),
        ("cycles", args.cycles), ("read_acquisitions", st["reads"]), ("write_acquisitions", st["writes"]),
        ("throughput", acq / run.seconds(0, n)),
        ("read_throughput", st["reads"] / run.seconds(0, args.readers) if args.readers else math.nan),
        ("write_throughput", st["writes"] / run.seconds(args.readers, n) if args.writers else math.nan),
        ("read_handoff_p50_us", float(percentile(read_h, 50))), ("read_handoff_p99_us", float(percentile(read_h, 99))),
        ("read_handoffs", len(read_h)),
        ("write_handoff_p50_us", float(percentile(write_h, 50))),
        ("write_handoff_p99_us", float(percentile(write_h, 99))), ("write_handoffs", len(write_h)),
        ("max_readers_inside", st["max_readers_inside"]), ("violations", st["violations"]),
    ] + process_figures(run, acq) + [("kazoo_rw_fix", fix)]
    emit(r, args.json)
    return 0 if st["violations"] == 0 else 1


def run_semaphore(args):
    """Contenders on one kazoo Semaphore of --leases; a handoff as in zklock-bench: a release while
    every lease is taken, to the next grant if it went to a contender already waiting (each such
    release frees one lease, which the next grant takes). --warmup-cycles W: every contender runs W
    cycles first, unrecorded, and waits for the others to finish theirs; the measured cycles start
    together (as zklock-bench's)."""
    clients = connect_all(args.connect, args.contenders)
    mu = threading.Lock()
    st = {"inside": 0, "max_inside": 0, "violations": 0, "acquisitions": 0, "measured": 0, "measure_start": None,
          "last_finish": 0.0}
    freed = collections.deque()
    h = []
    hold_s = args.hold_us / 1e6
    warmed = threading.Barrier(args.contenders, action=lambda: (freed.clear(), st.update(measure_start=time.monotonic())))

    def body(me):
        sem = clients[me].Semaphore(args.path, "contender-%d" % me, max_leases=args.leases)
        for k in range(args.warmup_cycles + args.cycles):
            if k == args.warmup_cycles and args.warmup_cycles > 0:
                warmed.wait()
            recorded = k >= args.warmup_cycles
            waiting_since = time.monotonic_ns()
            sem.acquire()
            now = time.monotonic_ns()
            with mu:
                if freed:
                    f = freed.popleft()
                    if recorded and f > waiting_since:
                        h.append((now - f) / 1e3)
                st["inside"] += 1
                st["max_inside"] = max(st["max_inside"], st["inside"])
                st["violations"] += st["inside"] > args.leases
                st["acquisitions"] += 1
                st["measured"] += recorded
            if hold_s > 0:
                time.sleep(hold_s)
            with mu:
                if st["inside"] == args.leases:
                    freed.append(time.monotonic_ns())
                st["inside"] -= 1
            sem.release()
        with mu:
            st["last_finish"] = max(st["last_finish"], time.monotonic())

    run, failures = run_contended(clients, body)
    if failures:
        return 2
    acq = st["acquisitions"]
    seconds = (st["last_finish"] - st["measure_start"]) if args.warmup_cycles > 0 else run.seconds(0, args.contenders)
    r = [
        ("impl", "kazoo"), ("kind", "semaphore"), ("contenders", args.contenders), ("leases", args.leases),
        ("cycles", args.cycles), ("warmup_cycles", args.warmup_cycles), ("acquisitions", st["measured"]),
        ("throughput", st["measured"] / seconds),
        ("handoff_p50_us", float(percentile(h, 50))), ("handoff_p99_us", float(percentile(h, 99))),
        ("handoffs", len(h)), ("max_inside", st["max_inside"]), ("violations", st["violations"]),
    ] + process_figures(run, acq)
    emit(r, args.json)
    return 0 if st["violations"] == 0 else 1


def run_distinct_keys(args):
    """--kind distinct-keys: ONE client, C (--contenders) threads, each taking and
    releasing its own uncontended Lock PATH/k<i> M times after one warm-up cycle (as
    zklock-bench's kind): throughput, CPU per acquisition (the process's), cycle latency."""
    client = connect_all(args.connect, 1)[0]
    n, cycles = args.contenders, args.cycles
    locks = [client.Lock("%s/k%d" % (args.path, i), "key-%d" % i) for i in range(n)]
    cycle_us = [[] for _ in range(n)]
    warm = threading.Barrier(n + 1)
    start = threading.Event()
    failures = []
    last = [0]

    def body(me):
        try:
            lk = locks[me]
            lk.acquire()
            lk.release()
        except BaseException as e:  # noqa: BLE001
            failures.append(repr(e))
        warm.wait()
        start.wait()
        try:
            for _ in range(cycles):
                c0 = time.monotonic_ns()
                lk.acquire()
                lk.release()
                c1 = time.monotonic_ns()
                cycle_us[me].append((c1 - c0) / 1e3)
                last[0] = max(last[0], c1)
        except BaseException as e:  # noqa: BLE001
            failures.append(repr(e))

    workers = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for w in workers:
        w.start()
    warm.wait()
    threads_peak = thread_count()
    cpu0, t0 = time.process_time(), time.monotonic_ns()
    start.set()
    for w in workers:
        w.join()
    cpu = time.process_time() - cpu0
    client.stop()
    client.close()
    if failures:
        say(failures[0])
        return 2
    acq = n * cycles
    seconds = (last[0] - t0) / 1e9
    allc = [x for c in cycle_us for x in c]
    emit([("impl", "kazoo"), ("kind", "distinct-keys"), ("concurrency", n), ("cycles", cycles),
          ("acquisitions", acq), ("throughput", acq / seconds), ("cpu_us_per_acq", cpu * 1e6 / acq),
          ("cycle_p50_us", percentile(allc, 50)), ("cycle_p99_us", percentile(allc, 99)), ("seconds", seconds),
          ("threads", threads_peak), ("rss_kb", rss_kb("VmHWM:")), ("violations", 0)], args.json)
    return 0


def main():
    ap = kazoo_peer.parser("kazoo_bench", "kazoo Lock contention benchmark peer", "/zklock-bench/lock")
    ap.add_argument("--contenders", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--hold-us", type=int, default=0)
    ap.add_argument("--kind", choices=("mutex", "shared", "semaphore", "distinct-keys"), default="mutex")
    ap.add_argument("--readers", type=int, default=4, help="--kind shared: contenders taking a ReadLock")
    ap.add_argument("--writers", type=int, default=1, help="--kind shared: contenders taking a WriteLock")
    ap.add_argument("--leases", type=int, default=2, help="--kind semaphore: max_leases")
    ap.add_argument("--warmup-cycles", type=int, default=0,
                    help="--kind semaphore: cycles per contender first, unrecorded (as zklock-bench's)")
    args = ap.parse_args()
    if args.contenders < 1 or args.cycles < 1:
        ap.error("--contenders and --cycles must be >= 1")
    if args.kind == "shared":
        return run_shared(args)
    if args.kind == "semaphore":
        return run_semaphore(args)
    if args.kind == "distinct-keys":
        return run_distinct_keys(args)
    solo_cycles = max(50, args.cycles)

    threads_peak = thread_count()
    clients = connect_all(args.connect, args.contenders)

    # solo: one contender, uncontended
    solo = []
    lock = clients[0].Lock(args.path, "solo")
    for _ in range(solo_cycles):
        t0 = time.monotonic_ns()
        lock.acquire()
        lock.release()
        solo.append((time.monotonic_ns() - t0) / 1e3)
    threads_peak = max(threads_peak, thread_count())

    sh = Shared()
    hold_ns = args.hold_us * 1000

    def contender(me):
        lk = clients[me].Lock(args.path, "contender-%d" % me)
        for _ in range(args.cycles):
            lk.acquire()
            now = time.monotonic_ns()
            with sh.mu:
                rel, sh.pending_release = sh.pending_release, None
                if rel is not None and rel[1] != me:
                    sh.handoffs.append((now - rel[0]) / 1e3)
                if sh.holder != NONE:
                    sh.violations += 1
                else:
                    sh.holder = me
                sh.acquisitions += 1
            if hold_ns > 0:
                until = time.monotonic_ns() + hold_ns
                while time.monotonic_ns() < until:
                    pass
            with sh.mu:
                if sh.holder != me:
                    sh.violations += 1
                sh.holder = NONE
                sh.pending_release = (time.monotonic_ns(), me)
            lk.release()

    run, failures = run_contended(clients, contender, threads_peak)
    if failures:
        return 2

    acq = sh.acquisitions
    h = sh.handoffs
    r = [
        ("impl", "kazoo"),
        ("contenders", args.contenders),
        ("cycles", args.cycles),
        ("acquisitions", acq),
        ("throughput", acq / run.seconds(0, args.contenders)),
        ("handoff_p50_us", float(percentile(h, 50))),
        ("handoff_p90_us", float(percentile(h, 90))),
        ("handoff_p99_us", float(percentile(h, 99))),
        ("handoff_p999_us", float(percentile(h, 99.9))),
        ("handoff_max_us", float(percentile(h, 100))),
        ("handoffs", len(h)),
        ("solo_cycle_us", float(percentile(solo, 50))),
        ("violations", sh.violations),
    ] + process_figures(run, acq)
    emit(r, args.json)
    write_cdf(args.cdf, h)
    return 0 if sh.violations == 0 else 1


if __name__ == "__main__":
    kazoo_peer.main(main)

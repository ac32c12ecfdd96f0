#!/usr/bin/python3
"""kazoo peer for the zklock contention benchmark (see bench/peers/README.md).

N contenders, each with its own KazooClient (= its own ZooKeeper session, threading handler) and
its own thread, acquire and release one kazoo Lock at PATH M times each, all in this one process.
Prints ONE line of key=value pairs on stdout (same keys as zklock-bench); --json FILE writes the
same keys as a flat JSON object. Diagnostics go to stderr. Exit 1 on any violation.

Run it with Debian's /usr/bin/python3 (python3-kazoo), not a pyenv python.
"""
import argparse
import json
import logging
import math
import os
import sys
import threading
import time

from kazoo.client import KazooClient

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


def percentile(values, p):
    """Nearest rank, like zklock-bench."""
    if not values:
        return math.nan
    s = sorted(values)
    idx = math.ceil(p / 100.0 * len(s))
    return s[min(len(s) - 1, 0 if idx == 0 else idx - 1)]


def fmt(v):
    if isinstance(v, float):
        return "nan" if math.isnan(v) or math.isinf(v) else "%.1f" % v
    return str(v)


class Shared:
    """The in-process "resource" and the handoff bookkeeping."""

    def __init__(self):
        self.mu = threading.Lock()  # guards the fields below (stands in for atomics)
        self.holder = NONE
        self.violations = 0
        self.acquisitions = 0
        self.pending_release = None  # (monotonic ns at release start, releasing contender)
        self.handoffs = []


def main():
    ap = argparse.ArgumentParser(description="kazoo Lock contention benchmark peer")
    ap.add_argument("--connect", default="127.0.0.1:2181")
    ap.add_argument("--path", default="/zklock-bench/lock")
    ap.add_argument("--contenders", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--hold-us", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cdf", default=None, help="write every handoff latency (us), one per line")
    args = ap.parse_args()
    if args.contenders < 1 or args.cycles < 1:
        ap.error("--contenders and --cycles must be >= 1")
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    solo_cycles = max(50, args.cycles)

    threads_peak = thread_count()
    clients = []
    for i in range(args.contenders):
        c = KazooClient(hosts=args.connect, timeout=30.0)
        c.start(timeout=60)
        clients.append(c)
    print("kazoo_bench: %d sessions connected" % len(clients), file=sys.stderr)

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
    start = threading.Event()
    failures = []
    hold_ns = args.hold_us * 1000

    def contender(me):
        try:
            lk = clients[me].Lock(args.path, "contender-%d" % me)
            start.wait()
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
        except BaseException as e:  # noqa: BLE001 - report any failure
            failures.append("contender %d: %r" % (me, e))

    workers = [threading.Thread(target=contender, args=(i,), name="contender-%d" % i)
               for i in range(args.contenders)]
    for w in workers:
        w.start()
    threads_peak = max(threads_peak, thread_count())
    t_start = time.monotonic()
    cpu_start = time.process_time()
    start.set()
    for w in workers:
        while w.is_alive():
            w.join(0.05)
            threads_peak = max(threads_peak, thread_count())
    contended_seconds = time.monotonic() - t_start
    cpu_contended = time.process_time() - cpu_start
    threads_peak = max(threads_peak, thread_count())
    rss = rss_kb("VmHWM:")
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001
            pass
    if failures:
        for f in failures:
            print("kazoo_bench: " + f, file=sys.stderr)
        return 2

    acq = sh.acquisitions
    h = sh.handoffs
    r = [
        ("impl", "kazoo"),
        ("contenders", args.contenders),
        ("cycles", args.cycles),
        ("acquisitions", acq),
        ("throughput", acq / contended_seconds if contended_seconds > 0 else math.nan),
        ("handoff_p50_us", float(percentile(h, 50))),
        ("handoff_p90_us", float(percentile(h, 90))),
        ("handoff_p99_us", float(percentile(h, 99))),
        ("handoff_p999_us", float(percentile(h, 99.9))),
        ("handoff_max_us", float(percentile(h, 100))),
        ("handoffs", len(h)),
        ("solo_cycle_us", float(percentile(solo, 50))),
        ("violations", sh.violations),
        ("threads", threads_peak),
        ("rss_kb", rss),
        ("cpu_us_per_acq", cpu_contended * 1e6 / max(1, acq)),
    ]
    print(" ".join("%s=%s" % (k, fmt(v)) for k, v in r), flush=True)
    if args.json:
        obj = {}
        for k, v in r:
            if isinstance(v, float):
                obj[k] = None if math.isnan(v) or math.isinf(v) else round(v, 1)
            else:
                obj[k] = v
        with open(args.json, "w") as f:
            f.write(json.dumps(obj) + "\n")
    if args.cdf:
        with open(args.cdf, "w") as f:
            f.writelines("%f\n" % x for x in h)
    return 0 if sh.violations == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - exit 1 is reserved for violations
        print("kazoo_bench: %r" % (e,), file=sys.stderr)
        sys.exit(2)

#!/usr/bin/env python3
"""Smoke test of the benchmark programs against a throwaway ZooKeeper server: they run, print
the key=value line and JSON the bench script reads, see no violation, and report the no-herd
figures (a wake-up per release, constant requests per acquisition, one thread). zklock-cfloor's
floors and its --mode mutex (the raw C client's lock recipe) print their keys. The shared
(read/write) and semaphore kinds run briefly too: their keys, no violation, readers inside
together, the semaphore full.

    bench_smoke_test.py --bench BIN --cfloor BIN --scripts DIR

Starts its own server (scripts/zk-server.sh, free loopback port) and always stops it.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from bench_common import run as run_bench, throwaway_server  # noqa: E402  (bench/bench_common.py)


def run(cmd):
    return run_bench(cmd, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--cfloor", required=True)
    ap.add_argument("--scripts", required=True)
    ap.add_argument("--depth", help="zklock-depth-bench (scripts/bench --kinds depth)")
    a = ap.parse_args()
    with throwaway_server(a.scripts, "zklock-bench-test-") as (connect, work):
        js = os.path.join(work, "r.json")
        cdf = os.path.join(work, "cdf.txt")
        n, cycles = 4, 25
        r = run([a.bench, "--connect", connect, "--path", "/smoke/lock", "--contenders", str(n),
                 "--cycles", str(cycles), "--solo-cycles", "10", "--json", js, "--cdf", cdf])
        for k in ("impl", "contenders", "cycles", "throughput", "handoff_p50_us", "handoff_p99_us",
                  "solo_cycle_us", "violations", "requests_per_acq", "wakeups_per_release", "threads",
                  "rss_kb", "cpu_us_per_acq"):
            assert k in r, "missing key " + k
        assert r["impl"] == "zklock"
        assert int(r["acquisitions"]) == n * cycles, r
        assert int(r["violations"]) == 0, r
        assert int(r["threads"]) == 1, "a thread was added: %s" % r["threads"]
        assert float(r["throughput"]) > 0 and float(r["handoff_p50_us"]) > 0, r
        # create + list + the watch on our own node + release, plus a watch on each blocker of
        # the listing (up to mutex_options::watched_blockers, default 2) and a listing when a
        # deeper queue's watched blockers are gone: at most 8 with 4 contenders
        assert 4.0 <= float(r["requests_per_acq"]) <= 8.0, r
        # a release is heard by the waiters that watch the releaser (at most n - 1 here, and at
        # most watched_blockers) and by its own node's watch, and grants one of them with no request
        assert float(r["wakeups_per_release"]) <= min(n - 1, int(r["watched_blockers"])) + 1 + 0.01, r
        # --watched-blockers sets K: with 1, each release wakes its successor and the releaser
        k1 = run([a.bench, "--connect", connect, "--path", "/smoke/k1", "--contenders", str(n), "--cycles", "10",
                  "--solo-cycles", "5", "--watched-blockers", "1"])
        assert int(k1["watched_blockers"]) == 1 and int(k1["violations"]) == 0, k1
        assert float(k1["wakeups_per_release"]) <= 2.01, k1
        j = json.load(open(js))
        assert j["violations"] == 0 and j["contenders"] == n, j
        samples = [float(x) for x in open(cdf) if x.strip()]
        assert len(samples) == int(r["handoffs"]) and len(samples) > 0, (len(samples), r["handoffs"])

        p = run([a.bench, "--connect", connect, "--path", "/smoke/pending", "--contenders", "5", "--pending", "60"])
        assert p.get("mode") == "pending" and int(p["granted"]) == 60 and int(p["errors"]) == 0, p
        assert int(p["threads_pending"]) == int(p["threads_before"]) == 1, p

        # readers hold together (a 2 ms hold: with none, one thread never has two inside), writers alone
        sh = run([a.bench, "--connect", connect, "--path", "/smoke/shared", "--kind", "shared", "--readers", "3",
                  "--writers", "1", "--cycles", "15", "--hold-us", "2000", "--json", js])
        for k in ("kind", "readers", "writers", "read_acquisitions", "write_acquisitions", "throughput",
                  "read_throughput", "write_throughput", "read_handoff_p50_us", "read_handoff_p99_us",
                  "write_handoff_p50_us", "write_handoff_p99_us", "max_readers_inside", "violations", "threads"):
            assert k in sh, "missing key " + k
        assert sh["kind"] == "shared" and int(sh["violations"]) == 0, sh
        assert int(sh["read_acquisitions"]) == 3 * 15 and int(sh["write_acquisitions"]) == 15, sh
        assert int(sh["max_readers_inside"]) >= 2 and int(sh["threads"]) == 1, sh
        assert float(sh["read_throughput"]) > 0 and float(sh["write_throughput"]) > 0, sh
        assert json.load(open(js))["violations"] == 0
        sem = run([a.bench, "--connect", connect, "--path", "/smoke/sem", "--kind", "semaphore", "--contenders", "4",
                   "--leases", "2", "--cycles", "10", "--hold-us", "20000"])
        for k in ("kind", "contenders", "leases", "acquisitions", "throughput", "handoff_p50_us", "handoff_p99_us",
                  "max_inside", "violations", "threads"):
            assert k in sem, "missing key " + k
        assert sem["kind"] == "semaphore" and int(sem["violations"]) == 0, sem
        assert int(sem["acquisitions"]) == 40 and int(sem["max_inside"]) == 2, sem
        # --warmup-cycles (scripts/bench's, as the peers'): those cycles first, not counted
        sem = run([a.bench, "--connect", connect, "--path", "/smoke/sem-warm", "--kind", "semaphore", "--contenders",
                   "4", "--leases", "2", "--cycles", "5", "--hold-us", "20000", "--warmup-cycles", "3"])
        assert int(sem["warmup_cycles"]) == 3 and int(sem["acquisitions"]) == 20, sem
        assert float(sem["throughput"]) > 0 and int(sem["violations"]) == 0, sem

        f = run([a.cfloor, "--connect", connect, "--path", "/smoke/floor", "--contenders", "2", "--cycles", "10"])
        for k in ("floor_a_p50_us", "floor_b_p50_us", "floor_m_p50_us", "floor_c_p50_us"):
            assert float(f[k]) > 0, (k, f)
        # the lock recipe on the raw C client (scripts/bench's raw C mutex): runs, hands off, and
        # sends create, listing, an exists per blocker of the listing (none for one first in line,
        # at most contenders - 1), delete
        m = run([a.cfloor, "--mode", "mutex", "--connect", connect, "--path", "/smoke/cmutex", "--contenders", "4",
                 "--cycles", "10", "--json", js])
        for k in ("impl", "contenders", "cycles", "acquisitions", "throughput", "handoff_p50_us", "handoff_p99_us",
                  "handoffs", "violations", "threads", "cpu_us_per_acq", "requests_per_acq", "wakeups_per_release"):
            assert k in m, "missing key " + k
        assert m["impl"] == "cmutex" and int(m["acquisitions"]) == 40 and int(m["violations"]) == 0, m
        assert int(m["handoffs"]) > 0 and float(m["handoff_p50_us"]) > 0 and float(m["throughput"]) > 0, m
        assert int(m["threads"]) == 1, m
        # no second listing: the blockers' exists only
        assert 3.0 <= float(m["requests_per_acq"]) <= 3.0 + 4 - 1, m
        # a release reaches at most the two waiters watching it (the nearest two blockers each)
        assert float(m["wakeups_per_release"]) <= 2.0, m
        assert json.load(open(js))["impl"] == "cmutex"
        if a.depth:
            # N waiters on one path from one session through a window of 8: queued, drained, and
            # never more than the window outstanding
            d = run([a.depth, "--connect", connect, "--path", "/smoke/depth", "--waiters", "60", "--window", "8"])
            assert int(d["ok"]) == 1 and int(d["waiters"]) == 60, d
            assert int(d["max_outstanding"]) <= 8 and int(d["max_queued"]) > 0, d
            assert float(d["drain_releases_per_s"]) > 0 and float(d["queue_s"]) > 0, d
            s = run([a.depth, "--connect", connect, "--sessions", "20"])
            assert int(s["connected"]) == 20 and float(s["fds_per_session"]) > 0, s
        print("bench smoke test: ok")
        return 0


if __name__ == "__main__":
    sys.exit(main())

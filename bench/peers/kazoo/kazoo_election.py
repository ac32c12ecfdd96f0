#!/usr/bin/python3
"""kazoo 2.8 Election peer of zklock-election-bench (bench/election_bench.cpp): the same two
modes, the same keys and lines; see bench/peers/README.md.

  --mode resign --candidates N --resigns R [--warmup W] [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F]
    N candidates, each its own KazooClient (session, threading handler) and thread, in this
    process, each calling Election.run(leader_function) in a loop. The leader function holds H ms,
    takes time.monotonic_ns() and returns, which resigns (Election.run releases its Lock); the
    next leader's code is its leader function, which takes the time since. The resigner calls
    run() again (it queues last) once the next leader's code ran. The first W resigns are not
    recorded (as zklock-election-bench's --warmup).
  --mode candidate --id NAME [--session-timeout-ms T]
    One candidate of the kill measurement: "connected negotiated_ms=nan" (kazoo keeps no
    negotiated timeout), "queued" once its node is in the election, "leader id=NAME
    t_ns=<time.monotonic_ns()>" from the leader function; then leads until killed.

Run it with Debian's /usr/bin/python3 (python3-kazoo).
"""
import signal
import sys
import threading
import time

import kazoo_peer  # this directory: what the kazoo peers share
from kazoo_peer import emit, percentile, write_cdf


def resign(a):
    clients = kazoo_peer.connect_all(a.connect, a.candidates, a.session_timeout_ms / 1000.0)
    lock = threading.Condition()
    st = {"samples": [], "started": 0, "terms": 0, "resigner": -1, "resigns": 0, "leaders": 0, "violations": 0}
    failures = []
    total = a.warmup + a.resigns  # the first a.warmup resigns are not recorded

    def candidate(me):
        election = clients[me].Election(a.path, "candidate-%d" % me)
        last = [False]
        term = [0]

        def lead():
            now = time.monotonic_ns()  # the new leader's code runs here
            with lock:
                if st["started"] and st["resigner"] != me and st["resigns"] > a.warmup:
                    st["samples"].append((now - st["started"]) / 1e3)
                st["started"] = 0
                st["terms"] += 1
                term[0] = st["terms"]
                lock.notify_all()  # the resigner may run again
                st["leaders"] += 1
                if st["leaders"] != 1:
                    st["violations"] += 1
                last[0] = st["resigns"] >= total
            if not last[0]:
                time.sleep(a.hold_ms / 1000.0)
            with lock:
                st["leaders"] -= 1
                last[0] = st["resigns"] >= total
                if not last[0]:
                    st["resigns"] += 1
                    st["resigner"] = me
                    st["started"] = time.monotonic_ns()
            # returning resigns: Election.run releases the lock (deletes our node)

        try:
            while True:
                with lock:
                    if st["resigns"] >= total:
                        return
                election.run(lead)
                if last[0]:
                    return
                # rejoin once the next leader's code ran (as zklock-election-bench: a create sent
                # at once would queue ahead of the successor's listing in the standalone server)
                with lock:
                    while st["terms"] == term[0]:
                        lock.wait(0.1)
        except Exception as e:  # noqa: BLE001  (reported, exit 2)
            failures.append(e)

    threads = []
    for i in range(a.candidates):
        t = threading.Thread(target=candidate, args=(i,), daemon=True)
        t.start()
        threads.append(t)
        time.sleep(0.02)  # queue in order, so that the first resigns find every other candidate waiting
    for t in threads:
        t.join()
    for c in clients:
        c.stop()
        c.close()
    if failures:
        kazoo_peer.say("%r" % failures[0])
        return 2
    s = st["samples"]
    r = [("impl", "kazoo"), ("kind", "election-resign"), ("candidates", a.candidates),
         ("resigns", st["resigns"] - a.warmup), ("warmup", a.warmup),
         ("hold_ms", a.hold_ms), ("session_timeout_ms", a.session_timeout_ms),
         ("failover_p50_us", percentile(s, 50)), ("failover_p90_us", percentile(s, 90)),
         ("failover_p99_us", percentile(s, 99)), ("failover_max_us", percentile(s, 100)),
         ("failovers", len(s)), ("violations", st["violations"])]
    emit(r, a.json)
    write_cdf(a.cdf, s)
    return 0 if st["violations"] == 0 else 1


def candidate(a):
    out = threading.Lock()

    def say(line):  # whole lines: the leader's thread and this one both write
        with out:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    c = kazoo_peer.connect_all(a.connect, 1, a.session_timeout_ms / 1000.0)[0]
    say("connected negotiated_ms=nan")
    election = c.Election(a.path, a.id)

    def lead():
        say("leader id=%s t_ns=%d" % (a.id, time.monotonic_ns()))
        threading.Event().wait()  # lead until killed

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    t = threading.Thread(target=election.run, args=(lead,), daemon=True)
    t.start()
    while a.id not in election.contenders():
        time.sleep(0.01)
    say("queued")
    while True:
        time.sleep(3600)


def main():
    ap = kazoo_peer.parser("kazoo_election", "kazoo Election failover peer", "/zklock-bench/election")
    ap.add_argument("--mode", choices=("resign", "candidate"), default="resign")
    ap.add_argument("--candidates", type=int, default=3)
    ap.add_argument("--resigns", type=int, default=200)
    ap.add_argument("--hold-ms", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=0, help="resign: resigns first, unrecorded")
    ap.add_argument("--session-timeout-ms", type=int, default=10000)
    ap.add_argument("--id")
    a = ap.parse_args()
    if a.mode == "candidate":
        if not a.id:
            ap.error("--mode candidate needs --id")
        return candidate(a)
    if a.candidates < 2 or a.resigns < 1:
        ap.error("--candidates >= 2, --resigns >= 1")
    return resign(a)


if __name__ == "__main__":
    kazoo_peer.main(main)

#!/usr/bin/env python3
"""Tests of example programs that need a server and check what they print or answer.

    examples_test.py --scripts DIR --examples DIR CASE

The same fixture as zklock_cli_test.py (zk_fixture.py): a chroot on the server ctest's tests
share, or a throwaway ZooKeeper on a free loopback port, always stopped; every process started
is killed.

Cases:
  stock_stats       stock_server's `stats` reply is Prometheus text with zklock's lock metrics
                    (every line well-formed, HELP/TYPE per family, the counts of the buys sent)
  threaded_workers  examples/threaded_workers: 4 threads, session on a strand, use_future from
                    main: exact counter, one holder at a time, main's own acquire
"""
import argparse
import os
import re
import signal
import socket
import sys
import threading
import time

import zk_fixture
from zk_fixture import check, log, program, run

EXAMPLES = None
DEADLINE_S = 100

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? (\S+)$')


def ex(name):
    return program(EXAMPLES, name)


def request(port, line, until=None):
    """Sends one line, returns the reply's lines (up to the line `until`, or one line)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall((line + "\n").encode())
        buf = b""
        while True:
            chunk = s.recv(65536)
            check(chunk, f"connection closed before the reply to {line!r}: {buf[-300:]!r}")
            buf += chunk
            lines = buf.decode().split("\n")
            if until is None and len(lines) > 1:
                return lines[:1]
            if until is not None and until in lines[:-1]:
                return lines[:lines.index(until) + 1]


def parse_exposition(lines):
    """Prometheus text format 0.0.4: {name: type}, {series: value}; fails on a malformed line."""
    types, samples, helps = {}, {}, set()
    for l in lines:
        if l.startswith("# HELP "):
            helps.add(l.split()[2])
        elif l.startswith("# TYPE "):
            _, _, name, typ = l.split(" ", 3)
            check(typ in ("counter", "gauge", "histogram", "summary", "untyped"), f"bad TYPE line {l!r}")
            check(name not in types, f"TYPE twice for {name}")
            types[name] = typ
        elif l.startswith("#"):
            continue
        else:
            m = SAMPLE.match(l)
            check(m, f"malformed sample line {l!r}")
            float(m.group(3))  # a number, +Inf or NaN
            family = re.sub(r"_(bucket|sum|count)$", "", m.group(1)) if m.group(1) not in types else m.group(1)
            check(family in types, f"sample {l!r} before its # TYPE line")
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    check(set(types) <= helps, f"families without # HELP: {set(types) - helps}")
    return types, samples


def case_stock_stats(c):
    p = c.popen([ex("stock_server"), "--connect", c.server.connect, "--init", "1", "100", "--reset"])
    line = p.stdout.readline()
    check(line.startswith("listening on "), f"stock_server: {line!r}")
    port = int(line.split()[2])
    # 3 buys one after another, then 12 at once (their coroutines queue behind one node of the
    # server's: the lock passes between them locally)
    for _ in range(3):
        r = request(port, "buy 1")
        check(r[0].startswith("ok "), f"buy -> {r}")
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(request(port, "buy 1")[0])) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    check(len(replies) == 12 and all(r.startswith("ok ") for r in replies), f"concurrent buys: {replies}")
    lines = request(port, "stats", until="# EOF")
    log("stats reply:\n" + "\n".join(l for l in lines if "_bucket" not in l))
    types, samples = parse_exposition(lines)
    lbl = 'path="/stock/locks/1",kind="exclusive"'
    expect = {
        "stock_buys_total": 15,
        "stock_sold_total": 15,
        f'zklock_lock_acquires_started_total{{{lbl}}}': 15,
        f'zklock_lock_acquires_total{{{lbl},outcome="granted"}}': 15,
        f'zklock_lock_acquires_total{{{lbl},outcome="timeout"}}': 0,
        f'zklock_lock_acquires_total{{{lbl},outcome="error"}}': 0,
        f'zklock_lock_releases_total{{{lbl}}}': 15,
        f'zklock_lock_losses_total{{{lbl}}}': 0,
        f'zklock_lock_waiting{{{lbl}}}': 0,
        f'zklock_lock_held{{{lbl}}}': 0,
        f'zklock_lock_wait_seconds_count{{{lbl}}}': 15,
        f'zklock_lock_wait_seconds_bucket{{{lbl},le="+Inf"}}': 15,
        f'zklock_lock_hold_seconds_count{{{lbl}}}': 15,
    }
    for series, want in expect.items():
        check(samples.get(series) == want, f"{series}: {samples.get(series)}, expected {want}")
    check(types.get("zklock_lock_wait_seconds") == "histogram" and types.get("zklock_lock_acquires_total") == "counter"
          and types.get("zklock_lock_held") == "gauge", f"types: {types}")
    local = samples.get(f'zklock_lock_handoffs_total{{{lbl},via="local"}}')
    check(local is not None and local >= 1, f"12 buyers at once, no local handoff: {local}")
    check(samples[f'zklock_lock_wait_seconds_sum{{{lbl}}}'] > 0, "wait sum")
    buckets = [v for k, v in samples.items() if k.startswith("zklock_lock_wait_seconds_bucket")]
    check(len(buckets) == 26 and buckets == sorted(buckets), f"buckets not cumulative: {buckets}")
    os.kill(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    check(p.returncode == 0 and "buys=15" in err, f"after SIGTERM: {p.returncode} {err!r}")


def case_threaded_workers(c):
    h = run([ex("threaded_workers"), "--help"], 10)
    check(h.returncode == 0 and "usage" in h.stdout, f"--help: {h.returncode} {h.stdout!r}")
    t0 = time.monotonic()
    p = run([ex("threaded_workers"), c.server.connect, "/apps/threaded"], 60)
    log(f"threaded_workers -> {p.returncode} in {time.monotonic() - t0:.2f}s:\n{p.stdout}{p.stderr}")
    check(p.returncode == 0 and not p.stderr, f"exit {p.returncode}, stderr {p.stderr!r}")
    m = re.search(r"^8 coroutines x 5 acquisitions on 4 threads: counter=(\d+), at most (\d+) inside, ran on (\d+) thread",
                  p.stdout, re.M)
    check(m and m.group(1) == "40" and m.group(2) == "1", f"workers line: {p.stdout!r}")
    check(1 <= int(m.group(3)) <= 4, f"threads: {m.group(3)}")
    check(re.search(r"^main: holds /apps/threaded/_c_[0-9a-f-]+-lock-\d{10} \(fencing token \d+, queue of 1\)$", p.stdout, re.M),
          f"main's line: {p.stdout!r}")
    # 8 coroutines x 5 and main's one: 41 grants on the path, all released
    check(re.search(r"^metrics: /apps/threaded: 41 grants, \d+ after a wait, 41 releases$", p.stdout, re.M),
          f"metrics line: {p.stdout!r}")
    # an unreachable server: a message naming it and exit status 1 (after the 10 s connect timeout)
    rc = run([ex("threaded_workers"), "127.0.0.1:1", "/x"], 60)
    check(rc.returncode == 1 and "connect to 127.0.0.1:1" in rc.stderr, f"unreachable: {rc.returncode} {rc.stderr!r}")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global EXAMPLES
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    a = ap.parse_args()
    EXAMPLES = os.path.abspath(a.examples)
    return zk_fixture.run_cases(CASES, a.cases, a.scripts, DEADLINE_S, work_dirs=False)


if __name__ == "__main__":
    sys.exit(main())

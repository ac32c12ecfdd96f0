"""What the kazoo peers share (kazoo_bench.py, kazoo_election.py, each run by /usr/bin/python3 from
this directory): the command line's common options, the exit statuses, the clients, and the result
line with its JSON and percentiles, the same as bench/result_line.hpp and the Curator peers'
PeerSupport.java."""
import argparse
import json
import logging
import math
import sys

from kazoo.client import KazooClient

PROGRAM = "kazoo peer"


def say(msg):
    print("%s: %s" % (PROGRAM, msg), file=sys.stderr)


def parser(program, description, path):
    """An ArgumentParser with the options every peer takes: --connect, --path (default path),
    --json, --cdf. Names the program in the peer's messages."""
    global PROGRAM
    PROGRAM = program
    ap = argparse.ArgumentParser(prog=program, description=description)
    ap.add_argument("--connect", default="127.0.0.1:2181")
    ap.add_argument("--path", default=path)
    ap.add_argument("--json", default=None, help="also write the result as a flat JSON object")
    ap.add_argument("--cdf", default=None, help="write every sample (us), one per line")
    return ap


def main(body):
    """Runs body() and exits with its status; exit status 1 is reserved for violations, so any
    failure exits 2."""
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    try:
        sys.exit(body())
    except Exception as e:  # noqa: BLE001 - reported, exit 2
        say("%r" % (e,))
        sys.exit(2)


def connect_all(connect, n, session_timeout_s=30.0):
    """n KazooClients (n sessions, threading handler), each started (connected) in turn."""
    clients = []
    for _ in range(n):
        c = KazooClient(hosts=connect, timeout=session_timeout_s)
        c.start(timeout=60)
        clients.append(c)
    say("%d sessions connected" % len(clients))
    return clients


def percentile(values, p):
    """Nearest rank (p in 0..100), NaN without samples, as zklock-bench."""
    if not values:
        return math.nan
    s = sorted(values)
    idx = math.ceil(p / 100.0 * len(s))
    return s[min(len(s) - 1, 0 if idx == 0 else idx - 1)]


def fmt(v):
    """One decimal; a figure that is not a finite number is "nan" (JSON null)."""
    if isinstance(v, float):
        return "nan" if math.isnan(v) or math.isinf(v) else "%.1f" % v
    return str(v)


def emit(r, json_file):
    """r: (key, value) pairs. The key=value line on stdout, and the same keys as a flat JSON object
    into json_file (floats as the line has them)."""
    print(" ".join("%s=%s" % (k, fmt(v)) for k, v in r), flush=True)
    if json_file:
        obj = {}
        for k, v in r:
            if isinstance(v, float):
                obj[k] = None if math.isnan(v) or math.isinf(v) else round(v, 1)
            else:
                obj[k] = v
        with open(json_file, "w") as f:
            f.write(json.dumps(obj) + "\n")


def write_cdf(cdf_file, samples):
    """Every sample, one a line (--cdf); nothing without a file."""
    if cdf_file:
        with open(cdf_file, "w") as f:
            f.writelines("%f\n" % x for x in samples)

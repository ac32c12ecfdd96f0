"""scripts/bench's run-time plumbing, shared by its phases: where the programs are, progress on
stderr (a line when a phase starts and ends, and every HEARTBEAT_S seconds while a program runs),
the phases' timings for results.json, one benchmark program to its end, a throwaway server."""
import contextlib
import os
import sys
import time

import bench_common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))

T_START = time.time()
PHASES = []  # {"phase", "seconds"} of every phase, for results.json
HEARTBEAT_S = 30


def log(*a):
    print(*a, file=sys.stderr, flush=True)


@contextlib.contextmanager
def phase(name):
    """Logs when a phase starts and ends (time since the start of the run, and its own length)."""
    t = time.time()
    log("[%4.0fs] %s ..." % (t - T_START, name))
    ok = False
    try:
        yield
        ok = True
    finally:
        took = time.time() - t
        PHASES.append({"phase": name, "seconds": round(took, 1)})
        log("[%4.0fs] %s: %s %.1f s" % (time.time() - T_START, name, "done in" if ok else "FAILED after", took))


def run(cmd, timeout):
    """One benchmark program to its end: progress on stderr, its result line with numbers."""
    return bench_common.run(cmd, timeout, echo=False, log=log, heartbeat_s=HEARTBEAT_S, numbers=True)


def start_server(name, extra):
    """A throwaway server for one phase of the run (stopped, and its directory removed, by stop())."""
    return bench_common.Server(os.path.join(ROOT, "scripts"), "zklock-bench-%s-" % name, extra)


def impl_cmd(impl):
    """The mutex benchmark program of an implementation (the recipes' too: --kind)."""
    return {
        "zklock": [os.path.join(BUILD, "bench/zklock-bench")],
        "cfloor": [os.path.join(BUILD, "bench/zklock-cfloor")],
        "cmutex": [os.path.join(BUILD, "bench/zklock-cfloor"), "--mode", "mutex"],
        "curator": ["sh", os.path.join(ROOT, "bench/peers/curator/run.sh")],
        "kazoo": ["sh", os.path.join(ROOT, "bench/peers/kazoo/run.sh")],
    }[impl]


def counts(text):
    """A command-line list of numbers, "1,2,8" ('' for none)."""
    return [int(x) for x in text.split(",") if x.strip()]


def by_mode(args, given, quick, full):
    """A setting: the one given on the command line, else the --quick or the full run's."""
    return given if given is not None else quick if args.quick else full

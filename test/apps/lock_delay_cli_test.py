#!/usr/bin/env python3
"""`zklock exec --lock-delay` against a throwaway server (zklock_cli_test.py's fixture).

    lock_delay_cli_test.py --zklock BIN --scripts DIR CASE [CASE...]

expired: the holder's zklock is SIGSTOPped until the server expires its session; the waiter's
command starts no earlier than --lock-delay after the holder's node went (and not much later).
release: a holder's command ends (a release): the waiter's command starts at once.
"""
import argparse
import os
import signal
import sys
import time

import zk_fixture
import zklock_cli_test as cli
from zk_fixture import check, log, wait_for

DELAY_S = 3


def holder_node(c, lock):
    """The first contender's node of `lock` (None when nobody holds it), and when it was read."""
    t0 = time.monotonic()
    rows = cli.holders(c, lock)  # position, node, session, ...
    return (rows[0][1] if rows else None), t0


def case_expired(c):
    lock = "/apps/lockdelay/expired"
    p = c.start("exec", "--session-timeout", "2", "--lock-delay", str(DELAY_S), lock, "--",
                *cli.holder_command(c, "holding", 60))
    wait_for(lambda: os.path.exists(c.path("holding")), 20, "the holder's command to start")
    ran = c.path("waiter-ran")
    waiter = c.start("exec", "--lock-delay", str(DELAY_S), lock, "--", "touch", ran)
    wait_for(lambda: len(cli.holders(c, lock)) == 2, 20, "the waiter to queue")
    first, _ = holder_node(c, lock)
    time.sleep(0.3)
    log(f"SIGSTOP zklock {p.pid} (session timeout 2 s)")
    os.kill(p.pid, signal.SIGSTOP)
    try:
        # the holder's node goes with its session: between the last read that saw it and the
        # first that did not
        t_stop = last_seen = time.monotonic()
        while True:
            node, t = holder_node(c, lock)
            if node != first:
                gone_seen = time.monotonic()
                break
            last_seen = t
            check(t - t_stop < 20, "the holder's session did not expire")
        log(f"holder's node gone between +0 and +{gone_seen - last_seen:.2f}s of the last read that saw it")
        wait_for(lambda: os.path.exists(ran), 20, "the waiter's command to run")
        t_ran = time.monotonic()  # (polled every 50 ms: up to 50 ms late)
        rc, *_ = c.wait(waiter, timeout=15)
        check(rc == 0, f"waiter exited {rc}")
        log(f"the waiter ran {t_ran - gone_seen:.2f}s after its holder's node was seen gone "
            f"({t_ran - last_seen:.2f}s after it was last seen there); --lock-delay {DELAY_S}")
        # the node went after last_seen (the start of the last read that saw it)
        check(t_ran >= last_seen + DELAY_S,
              f"ran {t_ran - last_seen:.2f}s after the holder's node was last seen: earlier than --lock-delay {DELAY_S}")
        check(t_ran - last_seen < DELAY_S + 2, f"ran {t_ran - last_seen:.2f}s after: much later than --lock-delay")
    finally:
        os.kill(p.pid, signal.SIGCONT)
    rc, *_ = c.wait(p, timeout=30)
    check(rc == cli.EXIT_LOST, f"the stopped holder exited {rc}, expected {cli.EXIT_LOST} (lost)")


def case_release(c):
    lock = "/apps/lockdelay/release"
    delay = 10
    p = c.start("exec", "--lock-delay", str(delay), lock, "--", *cli.holder_command(c, "holding", 1))
    wait_for(lambda: os.path.exists(c.path("holding")), 20, "the holder's command to start")
    ran = c.path("waiter-ran")
    waiter = c.start("exec", "--lock-delay", str(delay), lock, "--", "touch", ran)
    rc, *_ = c.wait(p, timeout=30)
    t_exit = time.monotonic()
    check(rc == 0, f"holder exited {rc}")
    wait_for(lambda: os.path.exists(ran), 20, "the waiter's command to run")
    t_ran = time.monotonic()
    check(c.wait(waiter, timeout=15)[0] == 0, "waiter failed")
    log(f"the waiter ran {t_ran - t_exit:.2f}s after the holder exited (--lock-delay {delay})")
    # (the holder releases, keeps its session 200 ms for the successor's check, then exits)
    check(t_ran - t_exit < 3, f"a release was delayed: the waiter ran {t_ran - t_exit:.2f}s after the holder exited")


CASES = {"expired": case_expired, "release": case_release}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zklock", required=True)
    ap.add_argument("--scripts", required=True)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES) + ["all"])
    a = ap.parse_args()
    cli.ZKLOCK, cli.SCRIPTS = os.path.abspath(a.zklock), a.scripts
    names = sorted(CASES) if "all" in a.cases else a.cases
    return zk_fixture.run_cases(CASES, names, a.scripts, cli.DEADLINE_S, case_type=cli.Case)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Why the kazoo-rw interop test applies kazoo's ReadLock fix (python-zk/kazoo#650, for #649):
kazoo 2.8.0's ReadLock waits for the highest-numbered writer in the lock dir, even one queued
*after* it, and that writer waits for the reader ahead of it: a deadlock. Deterministic scenario,
with Curator's markers (as kazoo_contender.py rw configures it; kazoo's own names behave the same):
writer W1 holds; reader R queues (waits for W1); writer W2 queues behind R (waits for R);
W1 releases. Stock 2.8.0: R now waits for W2, W2 for R, neither gets in within 3 s. With the
#650 rule (a reader waits for the nearest writer *below* it): R gets in, then W2.
    /usr/bin/python3 kazoo_rw_deadlock.py CONNECT PATH
Exits 0 when stock kazoo deadlocks as described (or, from kazoo 2.9 on, does not) and the fixed
rule does not; prints the lock dir at the deadlock."""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import CancelledError
from kazoo.recipe.lock import Lock

import kazoo_contender

READ_PATTERNS, WRITE_PATTERNS = ["__WRIT__"], ["__WRIT__", "__READ__"]


def acquire_in_background(lock):
    got = threading.Event()

    def run():
        try:
            if lock.acquire():
                got.set()
        except CancelledError:
            pass
    thread = threading.Thread(target=run)
    thread.start()
    return got, thread


def wait_for_children(zk, path, n):
    for _ in range(500):
        if len(zk.get_children(path)) >= n:
            return
        time.sleep(0.01)
    raise RuntimeError("%s never had %d children" % (path, n))


def scenario(zk, path):
    """Returns (reader got in, second writer got in, lock dir when W1 had released)."""
    w1 = zk.WriteLock(path, "w1", extra_lock_patterns=WRITE_PATTERNS)
    reader = zk.ReadLock(path, "r", extra_lock_patterns=READ_PATTERNS)
    w2 = zk.WriteLock(path, "w2", extra_lock_patterns=WRITE_PATTERNS)
    w1.acquire()
    r_got, r_thread = acquire_in_background(reader)
    wait_for_children(zk, path, 2)
    w2_got, w2_thread = acquire_in_background(w2)
    wait_for_children(zk, path, 3)
    w1.release()
    reader_in = r_got.wait(3)
    snapshot = sorted(zk.get_children(path))
    if reader_in:
        reader.release()
    w2_in = w2_got.wait(3)
    if w2_in:
        w2.release()
    for lock in (reader, w2):
        lock.cancel()
    r_thread.join(10)
    w2_thread.join(10)
    return reader_in, w2_in, snapshot


def main():
    connect, path = sys.argv[1], sys.argv[2]
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    stock_predecessor = Lock._get_predecessor
    try:
        stock = scenario(zk, path + "/stock")
        Lock._get_predecessor = kazoo_contender.predecessor_below_self
        fixed = scenario(zk, path + "/fixed")
    finally:
        Lock._get_predecessor = stock_predecessor
        zk.stop()
        zk.close()
    has_fix = kazoo_contender.kazoo_has_fix()
    print("kazoo %s: stock reader in=%s second writer in=%s (lock dir after W1 released: %s); "
          "#650 rule: reader in=%s second writer in=%s"
          % (kazoo_contender.kazoo_version(), stock[0], stock[1], stock[2], fixed[0], fixed[1]))
    stock_ok = stock[:2] == ((True, True) if has_fix else (False, False))
    sys.exit(0 if stock_ok and fixed[:2] == (True, True) else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Interop contender: kazoo Lock with extra_lock_patterns=["-lock-"] (as kazoo users configure it
to share locks with Curator). Writes "enter <who>" / "leave <who>" lines to the exclusion log.
    /usr/bin/python3 kazoo_contender.py CONNECT PATH CYCLES LOGFILE WHO"""
import os
import sys
import time

from kazoo.client import KazooClient


def main():
    connect, path, cycles, log, who = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    lock = zk.Lock(path, who, extra_lock_patterns=["-lock-"])
    for _ in range(cycles):
        lock.acquire()
        os.write(fd, ("enter %s\n" % who).encode())
        time.sleep(0.001)
        os.write(fd, ("leave %s\n" % who).encode())
        lock.release()
    zk.stop()
    zk.close()
    os.close(fd)


if __name__ == "__main__":
    main()

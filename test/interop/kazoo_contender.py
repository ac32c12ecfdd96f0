#!/usr/bin/python3
"""Interop contender, kazoo. Writes one line per enter and leave to the exclusion log (one
O_APPEND write each).
    /usr/bin/python3 kazoo_contender.py CONNECT PATH CYCLES LOGFILE WHO [rw|rw-fixed]
Default: kazoo Lock with extra_lock_patterns=["-lock-"] (as kazoo users configure it to share
locks with Curator), logging "enter <who>" / "leave <who>".
rw: kazoo ReadLock(extra_lock_patterns=["__WRIT__"]) and WriteLock(extra_lock_patterns=
["__WRIT__", "__READ__"]) (Curator's InterProcessReadWriteLock markers, which zklock's
shared_mutex uses): cycle i writes when i % 3 == 0, reads otherwise (a read held 5 ms, a write
1 ms), logging enter-read/leave-read/enter-write/leave-write.
rw-fixed: the same with kazoo's ReadLock predecessor fix (python-zk/kazoo#650, for #649) applied
when the installed kazoo lacks it: kazoo 2.8.0's ReadLock waits for the highest-numbered writer
in the dir, even one queued after it, which waits for the reader: a deadlock."""
import os
import sys
import time

import kazoo.version
from kazoo.client import KazooClient
from kazoo.retry import ForceRetryError
from kazoo.recipe.lock import Lock


def predecessor_below_self(self, node):
    """kazoo #650's rule: the nearest contender (by the lock's patterns) with a lower sequence
    number than our own node, or None."""
    children = self.client.get_children(self.path)
    if node not in children:
        raise ForceRetryError()  # our ephemeral node is gone (session loss): retry from the top
    own_seq = int(node[-10:])
    below = []
    for child in children:
        match = self._contenders_re.search(child)
        if match is not None and int(match.group(1)) < own_seq:
            below.append((int(match.group(1)), child))
    return max(below)[1] if below else None


def kazoo_version():
    return kazoo.version.__version__


def kazoo_has_fix():
    """#650 was merged after 2.8.0 (which Debian ships)."""
    return tuple(int(x) for x in kazoo_version().split(".")[:2]) >= (2, 9)


def main():
    connect, path, cycles, log, who = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    mode = sys.argv[6] if len(sys.argv) > 6 else "mutex"
    if mode == "rw-fixed" and not kazoo_has_fix():
        Lock._get_predecessor = predecessor_below_self
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    if mode == "mutex":
        locks = [(zk.Lock(path, who, extra_lock_patterns=["-lock-"]), "", 0.001)] * 3
    else:
        write = (zk.WriteLock(path, who, extra_lock_patterns=["__WRIT__", "__READ__"]), "-write", 0.001)
        read = (zk.ReadLock(path, who, extra_lock_patterns=["__WRIT__"]), "-read", 0.005)
        locks = [write, read, read]
    for i in range(cycles):
        lock, suffix, hold = locks[i % 3]
        lock.acquire()
        os.write(fd, ("enter%s %s\n" % (suffix, who)).encode())
        time.sleep(hold)
        os.write(fd, ("leave%s %s\n" % (suffix, who)).encode())
        lock.release()
    zk.stop()
    zk.close()
    os.close(fd)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Interop test: zklock processes contend on one lock path with Curator (Java) or kazoo (Python)
processes; the exclusion log must show no overlap, every process must finish its cycles and the
lock dir must be empty at the end.
    run_interop.py MODE ZKLOCK_CONTENDER SCRIPTS_DIR WORK_DIR JAVA_PEERS
JAVA_PEERS: the java argument file of the Java peers the build compiled (test/support/java_peers.py).
MODE: curator, kazoo (mutexes: InterProcessMutex, kazoo Lock), curator-rw (zklock shared_mutex
and Curator InterProcessReadWriteLock), kazoo-rw (zklock shared_mutex and kazoo ReadLock/WriteLock
with Curator's markers; kazoo 2.8.0 needs its ReadLock fix, see kazoo_contender.py). The rw modes
also require that readers held together at least once. kazoo-rw-deadlock runs
kazoo_rw_deadlock.py instead (why kazoo-rw needs the fix). semaphore: zklock::semaphore and
Curator InterProcessSemaphoreV2, both with MAX_LEASES, on one path: never more than MAX_LEASES
inside, MAX_LEASES inside together at least once with both implementations among them, the
leases and locks dirs empty at the end. election: zklock::election and Curator LeaderLatch
candidates in one election: never two leaders at once, every candidate finishes its terms, the
election path empty at the end.
The server: a chroot of our own on the server ctest's tests share (test/support/shared_server.py),
or, run by hand, a throwaway server of our own."""
import os
import subprocess
import sys
import tempfile
import time

from kazoo.client import KazooClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import shared_server  # noqa: E402

mode, contender, scripts, work, java_peers = sys.argv[1:6]
sem = mode == "semaphore"
elect = mode == "election"  # zklock::election and Curator LeaderLatch: at most one leader at a time
peer, rw = "curator" if sem or elect else mode.split("-")[0], mode.endswith("-rw")
here = os.path.dirname(os.path.abspath(__file__))
CYCLES = 30 if sem else 40
MAX_LEASES = 2  # semaphore mode: every contender's max_leases


def check_mutex(lines):
    """Replays enter/leave lines: an enter while someone is inside, or a leave by someone who is
    not inside, is a violation. Returns (entries per who, violations, 0)."""
    entries, violations, inside = {}, 0, None
    for verb, who in lines:
        if verb == "enter":
            entries[who] = entries.get(who, 0) + 1
            violations += inside is not None
            inside = who
        else:
            violations += inside != who
            inside = None
    return entries, violations, [0, 0]


def check_rw(lines):
    """Replays enter-read/leave-read/enter-write/leave-write lines: a writer entering while anyone
    is inside, a reader entering while a writer is inside, or a leave by someone not inside, is a
    violation. Returns (entries per who, violations, reader overlaps: reader entries that found
    another reader inside, and how many of those found one of the other implementation)."""
    entries, violations, overlaps, readers, writer = {}, 0, [0, 0], [], None
    for verb, who in lines:
        if verb.startswith("enter"):
            entries[who] = entries.get(who, 0) + 1
        if verb == "enter-write":
            violations += writer is not None or bool(readers)
            writer = who
        elif verb == "leave-write":
            violations += writer != who
            writer = None
        elif verb == "enter-read":
            violations += writer is not None
            overlaps[0] += bool(readers)
            overlaps[1] += any(r.split("-")[0] != who.split("-")[0] for r in readers)
            readers.append(who)
        elif verb == "leave-read":
            if who in readers:
                readers.remove(who)
            else:
                violations += 1
        else:
            violations += 1  # a line of the other protocol, or a torn line
    return entries, violations, overlaps


def check_semaphore(lines):
    """Replays enter/leave lines of a semaphore: more than MAX_LEASES inside, an enter by someone
    already inside, or a leave by someone not inside, is a violation. Returns (entries per who,
    violations, [the most inside at once, entries that made MAX_LEASES inside, and how many of
    those had both implementations inside])."""
    entries, violations, inside, stats = {}, 0, [], [0, 0, 0]
    for verb, who in lines:
        if verb == "enter":
            entries[who] = entries.get(who, 0) + 1
            violations += who in inside
            inside.append(who)
            violations += len(inside) > MAX_LEASES
            stats[0] = max(stats[0], len(inside))
            if len(inside) == MAX_LEASES:
                stats[1] += 1
                stats[2] += len({w.split("-")[0] for w in inside}) > 1
        elif verb == "leave" and who in inside:
            inside.remove(who)
        else:
            violations += 1  # a leave by someone not inside, a line of another protocol, a torn line
    return entries, violations, stats


def peer_command(connect, path, log):
    mode_arg = {"curator-rw": ["rw"], "kazoo-rw": ["rw-fixed"], "semaphore": ["semaphore=%d" % MAX_LEASES],
                "election": ["latch"]}.get(mode, [])
    if peer == "curator":
        return lambda who: ["java", "@" + java_peers, "CuratorContender", connect, path, str(CYCLES), log,
                            who] + mode_arg
    return lambda who: ["/usr/bin/python3", os.path.join(here, "kazoo_contender.py"), connect, path,
                        str(CYCLES), log, who] + mode_arg


def lock_dir_children(connect, path, wait=False):
    """The lock dir's children; with wait, polls (bounded) until there is one."""
    zk = KazooClient(hosts=connect, timeout=10.0)
    zk.start(timeout=30)
    try:
        deadline = time.monotonic() + 60
        while True:
            children = zk.get_children(path) if zk.exists(path) else []
            if children or not wait or time.monotonic() > deadline:
                return children
            time.sleep(0.02)
    finally:
        zk.stop()
        zk.close()


def main():
    os.makedirs(work, exist_ok=True)
    # a chroot of our own on the server ctest's tests share, or (run by hand) a server of our own
    connect, server_dir = shared_server.chroot_connect(), None
    if not connect:
        server_dir = tempfile.mkdtemp(prefix="zklock-test-interop-")
        connect = subprocess.check_output(["bash", os.path.join(scripts, "zk-server.sh"), "start", server_dir],
                                          text=True).strip()
    print("server: %s" % connect, flush=True)
    procs = []
    try:
        log = os.path.join(work, "exclusion-%s.log" % mode)
        if os.path.exists(log):
            os.remove(log)
        path = "/interop/%s" % mode
        if mode == "kazoo-rw-deadlock":
            sys.exit(subprocess.call(["/usr/bin/python3", os.path.join(here, "kazoo_rw_deadlock.py"), connect, path],
                                     timeout=60))
        peer_cmd = peer_command(connect, path, log)
        zklock_cmd = [contender] + (["--rw"] if rw else ["--semaphore=%d" % MAX_LEASES] if sem
                                    else ["--election"] if elect else [])
        # The peers first (a JVM takes seconds to start); zklock once a peer has queued, so that
        # all four contend for most of the run.
        for i in range(2):
            procs.append(subprocess.Popen(peer_cmd("%s-%d" % (peer, i))))
        lock_dir_children(connect, path, wait=True)
        for i in range(2):
            procs.append(subprocess.Popen(zklock_cmd + [connect, path, str(CYCLES), log, "zklock-%d" % i]))
        failed, deadline = False, time.monotonic() + 60  # a normal run takes 7-15 s
        for p in procs:
            try:
                if p.wait(timeout=max(0.1, deadline - time.monotonic())) != 0:
                    print("contender %s exited %d" % (p.args[:3], p.returncode))
                    failed = True
            except subprocess.TimeoutExpired:
                print("contender %s still running after 60 s (deadlock?); lock dir: %s"
                      % (p.args[:3], sorted(lock_dir_children(connect, path))))
                failed = True
                p.kill()
                p.wait()
        with open(log) as f:
            lines = [tuple(line.split()) for line in f]
        if sem:
            entries, violations, stats = check_semaphore(lines)
            unfinished = sorted(w for w in entries if entries[w] != CYCLES)
            dirs = {d: lock_dir_children(connect, path + "/" + d) for d in ("leases", "locks")}
            print("mode=%s max_leases=%d entries=%d violations=%d max_inside=%d at_max=%d (both implementations "
                  "inside: %d) contenders=%s unfinished=%s leases_dir=%s locks_dir=%s"
                  % (mode, MAX_LEASES, sum(entries.values()), violations, stats[0], stats[1], stats[2],
                     sorted(entries), unfinished, dirs["leases"], dirs["locks"]))
            if (failed or violations or len(entries) != 4 or unfinished or any(dirs.values())
                    or stats[0] < MAX_LEASES or stats[2] == 0):
                sys.exit(1)
            return
        entries, violations, overlaps = (check_rw if rw else check_mutex)(lines)
        children = lock_dir_children(connect, path)
        unfinished = sorted(w for w in entries if entries[w] != CYCLES)
        print("mode=%s entries=%d violations=%d reader_overlaps=%d (with the other implementation: %d) "
              "contenders=%s unfinished=%s lock_dir=%s" % (mode, sum(entries.values()), violations, overlaps[0],
                                                             overlaps[1], sorted(entries), unfinished, children))
        # election: leadership passed between the two implementations (else they did not share it)
        cross = sum(1 for a, b in zip(lines, lines[1:]) if a[0] == "leave" and b[0] == "enter"
                    and a[1].split("-")[0] != b[1].split("-")[0])
        if elect:
            print("election: handoffs between zklock and Curator: %d" % cross)
        if (failed or violations or len(entries) != 4 or unfinished or children
                or (rw and overlaps[0] == 0) or (elect and cross == 0)):
            sys.exit(1)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if server_dir:
            subprocess.call(["bash", os.path.join(scripts, "zk-server.sh"), "stop", server_dir])


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Revocation interop: Curator 5.4's protocol both ways, on one local server (a chroot of our own
on the server ctest's tests share, or, run by hand, a server of our own).
    run_revocation.py ZKLOCK_CONTENDER ZKLOCK_CLI SCRIPTS_DIR WORK_DIR JAVA_PEERS
JAVA_PEERS: the java argument file of the Java peers the build compiled (test/support/java_peers.py).
1. Curator's Revoker.attemptRevoke against a zklock holder (zklock_contender --revocable): its
   lock_guard::async_wait_revoked completes, TRIES times; prints the latency from just before
   attemptRevoke to the handler (both processes read CLOCK_MONOTONIC), p50/min/max.
2. `zklock revoke PATH` against a Curator InterProcessMutex holder that called
   makeRevocable(listener): the command prints the holder's node, the listener fires, the holder
   releases.
Both lock dirs are empty at the end."""
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import shared_server  # noqa: E402

contender, cli, scripts, work, java_peers = sys.argv[1:6]
TRIES = 20


_lines = {}


def readline(p, timeout, what):
    """A line of p's stdout within `timeout` seconds, or the test fails. Lines are read by a
    thread per process: a select() on the pipe misses lines already in Python's buffer (two
    lines written together, e.g. "revoked ..." and the next "node ...", arrive in one read)."""
    if p not in _lines:
        q = _lines[p] = queue.Queue()

        def pump():
            for line in p.stdout:
                q.put(line)
            q.put(None)
        threading.Thread(target=pump, daemon=True).start()
    try:
        line = _lines[p].get(timeout=timeout)
    except queue.Empty:
        raise SystemExit("FAIL: no %s within %s s" % (what, timeout))
    if line is None:
        raise SystemExit("FAIL: %s: the process exited (%s)" % (what, p.poll()))
    return line.strip()


def children(connect, path):
    rc = subprocess.run([cli, "holders", "--connect", connect, path], capture_output=True, text=True, timeout=30)
    return rc.stdout.splitlines()


def main():
    os.makedirs(work, exist_ok=True)
    java = ["java", "@" + java_peers, "CuratorRevocation"]
    connect, server_dir = shared_server.chroot_connect(), None
    if not connect:
        server_dir = tempfile.mkdtemp(prefix="zklock-test-revocation-")
        connect = subprocess.check_output(["bash", os.path.join(scripts, "zk-server.sh"), "start", server_dir],
                                          text=True).strip().splitlines()[-1]
    print("server: %s" % connect, flush=True)
    procs = []
    try:
        # 1. Curator's Revoker -> zklock holder
        revoker = subprocess.Popen(java + ["revoker", connect], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, bufsize=1)
        procs.append(revoker)
        readline(revoker, 60, "Curator revoker ready")
        holder = subprocess.Popen([contender, "--revocable", connect, "/interop/revocation", str(TRIES),
                                   os.path.join(work, "revocation.log"), "zklock-0"],
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        procs.append(holder)
        latencies = []
        for i in range(TRIES):
            node = readline(holder, 30, "zklock holder's node (try %d)" % i)
            assert node.startswith("node "), node
            revoker.stdin.write(node[5:] + "\n")
            revoker.stdin.flush()
            sent = readline(revoker, 30, "attemptRevoke (try %d)" % i)
            got = readline(holder, 10, "async_wait_revoked completion after attemptRevoke (try %d)" % i)
            assert sent.startswith("sent ") and got.startswith("revoked "), (sent, got)
            latencies.append((int(got.split()[1]) - int(sent.split()[1])) / 1e6)
        if holder.wait(timeout=30) != 0:
            raise SystemExit("FAIL: zklock holder exited %d" % holder.returncode)
        revoker.stdin.close()
        revoker.wait(timeout=30)
        print("Revoker.attemptRevoke -> zklock async_wait_revoked handler: p50 %.2f ms, min %.2f ms, max %.2f ms "
              "(%d tries)" % (statistics.median(latencies), min(latencies), max(latencies), TRIES))

        # 2. zklock revoke -> Curator holder with makeRevocable
        curator = subprocess.Popen(java + ["holder", connect, "/interop/revocation-curator", "30"],
                                   stdout=subprocess.PIPE, text=True, bufsize=1)
        procs.append(curator)
        holding = readline(curator, 60, "Curator holder")
        assert holding.startswith("holding "), holding
        node = holding.split()[1]
        if not node.startswith("/"):
            node = "/interop/revocation-curator/" + node
        t0 = time.monotonic()
        out = subprocess.run([cli, "revoke", "--connect", connect, "/interop/revocation-curator"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0 or out.stdout.splitlines() != [node]:
            raise SystemExit("FAIL: zklock revoke -> %d, printed %r (holder %s): %s"
                             % (out.returncode, out.stdout, node, out.stderr))
        line = readline(curator, 10, "Curator's RevocationListener after zklock revoke")
        if line != "revoked" or curator.wait(timeout=30) != 0:
            raise SystemExit("FAIL: Curator holder: %r, exit %s" % (line, curator.returncode))
        print("zklock revoke -> Curator RevocationListener: fired, %.0f ms after the command started "
              "(its connect included)" % ((time.monotonic() - t0) * 1000))
        left = children(connect, "/interop/revocation") + children(connect, "/interop/revocation-curator")
        if left:
            raise SystemExit("FAIL: nodes left: %s" % left)
        print("PASS")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if server_dir:
            subprocess.call(["bash", os.path.join(scripts, "zk-server.sh"), "stop", server_dir])


if __name__ == "__main__":
    main()

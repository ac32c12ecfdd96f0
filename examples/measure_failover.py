#!/usr/bin/python3
"""Measures scheduler_failover's failover on its election: starts a throwaway ZooKeeper
(scripts/zk-server.sh, tickTime 2 s), runs 3 instances per round (session timeout 4 s), then
  1. kill -9 of the leader -> the next instance's "is the leader" line (the server expires the
     dead leader's session: bounded by the session timeout plus one tickTime);
  2. SIGTERM of the new leader, which resigns -> the third instance's "is the leader" line
     (one watch event: milliseconds).
Times are the new leader's own timestamp (its line's wall-clock time, ms) minus the moment the
signal was sent. Also checks that the job numbers the leaders recorded never repeat and that the
SIGTERM'd leader exited 0 with "stopping" as its last line.

    examples/measure_failover.py [ROUNDS]      (BUILD_DIR: build)
"""
import datetime
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = os.path.join(os.environ.get("BUILD_DIR", os.path.join(root, "build")), "examples")
LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d\d\d) instance (\S+) (.*)$")


def line_time(text, near):
    """The wall-clock time (s since the epoch) of an instance's line, on the date of `near`."""
    m = LINE.match(text)
    if not m:
        return None
    h, mi, s, ms = (int(x) for x in m.groups()[:4])
    day = datetime.datetime.fromtimestamp(near)
    t = day.replace(hour=h, minute=mi, second=s, microsecond=ms * 1000).timestamp()
    if t < near - 43200:  # the line is from just after midnight
        t += 86400
    elif t > near + 43200:
        t -= 86400
    return t


class Instances:
    def __init__(self, zk, rnd):
        self.procs, self.lines = {}, []  # lines: (instance, text)
        self.sel = selectors.DefaultSelector()
        for n in "abc":
            p = subprocess.Popen([os.path.join(B, "scheduler_failover"), "--connect", zk, "--name", n,
                                  "--session-timeout", "4", "--interval", "0.2", "--election", "/sched%d/leader" % rnd,
                                  "--job-node", "/last_job%d" % rnd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 bufsize=0)
            self.procs[n] = p
            self.sel.register(p.stdout, selectors.EVENT_READ, n)
        self.partial = {n: b"" for n in self.procs}
        self.ready = []  # lines read but not yet looked at

    def wait(self, pred, timeout):
        """Reads lines until pred(instance, text) holds for a new one; returns it (or None)."""
        t_end = time.time() + timeout
        while time.time() < t_end:
            while self.ready:
                n, text = self.ready.pop(0)
                self.lines.append((n, text))
                if pred(n, text):
                    return n, text
            for key, _ in self.sel.select(timeout=0.05):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    self.sel.unregister(key.fileobj)
                    continue
                *done, self.partial[key.data] = (self.partial[key.data] + chunk).split(b"\n")
                self.ready += [(key.data, l.decode(errors="replace")) for l in done]
        return None

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    d = tempfile.mkdtemp(prefix="zklock-failover-")
    zk = subprocess.check_output(["bash", os.path.join(root, "scripts/zk-server.sh"), "start", d], text=True).strip()
    kills, resigns, ok = [], [], True
    try:
        for rnd in range(rounds):
            inst = Instances(zk, rnd)
            try:
                first = inst.wait(lambda n, t: "is the leader" in t, 30)
                if not first:
                    print("round", rnd, "no leader:", inst.lines[-10:])
                    ok = False
                    break
                leader = first[0]
                inst.wait(lambda n, t: False, 1.5)  # some jobs run (and the others queue)
                t0 = time.time()
                inst.procs[leader].kill()
                new = inst.wait(lambda n, t: "is the leader" in t and n != leader, 20)
                if not new:
                    print("round", rnd, "no takeover after kill -9:", inst.lines[-10:])
                    ok = False
                    break
                kills.append(line_time(new[1], t0) - t0)
                inst.wait(lambda n, t: False, 1.5)
                second = new[0]
                t1 = time.time()
                inst.procs[second].send_signal(signal.SIGTERM)
                third = inst.wait(lambda n, t: "is the leader" in t and n not in (leader, second), 20)
                if not third:
                    print("round", rnd, "no takeover after the resign:", inst.lines[-10:])
                    ok = False
                    break
                resigns.append(line_time(third[1], t1) - t1)
                inst.wait(lambda n, t: False, 0.5)
                rc = inst.procs[second].wait(timeout=10)
                said = [t for n, t in inst.lines if n == second]
                if rc != 0 or not said[-1].endswith("instance %s stopping" % second):
                    print("round", rnd, "the resigned leader exited %s, last lines %s" % (rc, said[-3:]))
                    ok = False
                jobs = [int(m.group(1)) for n, t in inst.lines for m in [re.search(r"ran job (\d+)$", t)] if m]
                if len(jobs) != len(set(jobs)) or jobs != sorted(jobs):
                    print("round", rnd, "job numbers repeat or go back:", jobs)
                    ok = False
                print("round %d: takeover after kill -9 of %s: %.2f s; after %s resigned (SIGTERM): %.0f ms; "
                      "jobs 1..%d, none twice" % (rnd, leader, kills[-1], second, resigns[-1] * 1000,
                                                 max(jobs) if jobs else 0), flush=True)
            finally:
                inst.stop()
    finally:
        subprocess.call(["bash", os.path.join(root, "scripts/zk-server.sh"), "stop", d])
    if kills:
        print("after kill -9:", " ".join("%.2f" % x for x in kills), "s; min %.2f max %.2f" % (min(kills), max(kills)))
    if resigns:
        print("after a resign:", " ".join("%.0f" % (x * 1000) for x in resigns),
              "ms; min %.0f max %.0f" % (min(resigns) * 1000, max(resigns) * 1000))
    return 0 if ok and kills else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Tests of `zklock locks ROOT` against a ZooKeeper server (zk_fixture.py's: a chroot on the
server ctest's tests share, or a throwaway server of the run's own).

    locks_test.py --zklock BIN --helper ZKLOCK_CONTENDER --scripts DIR CASE [CASE...]

Cases: tree (200 lock dirs of every kind, made by kazoo with Curator's and kazoo's node names
and by the zklock command; --depth, --limit, --older-than, the text and --json outputs),
deadlock (two library sessions, two kazoo Lock recipes and three Curator-named sessions that
wait for each other round a cycle), usage. `measure` (not run by ctest) times 1,000 dirs.
kazoo (python3-kazoo) is required: it makes the nodes.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import zk_fixture
import zklock_cli_test
from zk_fixture import check, wait_for

HELPER = None
DEADLINE_S = 120  # below the ctest TIMEOUT, so that the server is always stopped by us

# "PATH KIND holders: ... waiters: N oldest AGE: WAITER, ..." ("campaigning: N: ..." for an election)
LINE = re.compile(r"^(\S+) (mutex|read/write|semaphore|election) holders: (.*?) (waiters|campaigning): (\d+)"
                  r"(?: oldest (\d+\.\d)s)?(?:: (.*))?$")
HOLDER = re.compile(r"^(0x[0-9a-f]+) \((.*)\) (\d+\.\d)s$")


class Case(zklock_cli_test.Case):
    """zklock_cli_test's Case (zklock against the server), with kazoo clients and --json."""

    def locks_json(self, *args):
        rc, out, err, _ = self.run("locks", "--json", *args)
        check(rc == 0, f"locks --json exited {rc}: {err}")
        doc = json.loads(out)
        check(set(doc) >= {"locks", "deadlocks"}, f"keys: {list(doc)}")
        # an election's other candidates campaign: they are its "waiters" in what the cases check
        for lock in doc["locks"]:
            if lock["kind"] == "election":
                check(lock["waiters"] == [] and lock["oldest_wait"] is None, f"election: {lock}")
                lock["waiters"] = lock["campaigning"]
                lock["oldest_wait"] = max((w["age"] for w in lock["waiters"]), default=None)
            else:
                check(lock["campaigning"] == [], f"campaigning outside an election: {lock}")
        return doc

    def kazoo(self):
        from kazoo.client import KazooClient
        zk = KazooClient(hosts=self.server.connect)
        zk.start(timeout=10)
        self.procs.append(_Stopper(zk))
        return zk


class _Stopper:
    """A kazoo client in Case.procs: closed (its session and ephemerals gone) by cleanup()."""
    pid = None

    def __init__(self, zk):
        self.zk = zk

    def poll(self):
        return 0

    def communicate(self, timeout=None):
        self.zk.stop()
        self.zk.close()


def session_hex(zk):
    return hex(zk.client_id[0])


def contender(zk, directory, marker, data=b""):
    """A contender node named as Curator ("_c_<uuid>-lock-", "-__READ__", ...) or kazoo
    ("<uuid>__lock__", "__rlock__") names them: `marker` is what precedes the sequence number."""
    name = ("_c_" + str(uuid.uuid4()) + marker) if marker.startswith("-") else (uuid.uuid4().hex + marker)
    return zk.create(directory + "/" + name, data, ephemeral=True, sequence=True, makepath=True)


def by_path(doc):
    return {l["path"]: l for l in doc["locks"]}


def holder_sessions(entry):
    return [h["session"] for h in entry["holders"]]


def parse_text(out):
    """The text output: {path: (kind, [(session, identity, age)], waiters, oldest)}, deadlock lines."""
    locks, deadlocks = {}, []
    for line in out.splitlines():
        if line.startswith("deadlock:"):
            deadlocks.append(line)
            continue
        m = LINE.match(line)
        check(m, f"unexpected line {line!r}")
        holders = [] if m[3] == "-" else [HOLDER.match(h).groups() for h in m[3].split(", ")]
        check((m[4] == "campaigning") == (m[2] == "election"), f"an election's candidates campaign: {line!r}")
        waiters = [HOLDER.match(w).groups() for w in m[7].split(", ")] if m[7] else []
        check(len(waiters) == int(m[5]), f"each waiter listed: {line!r}")
        locks[m[1]] = (m[2], holders, int(m[5]), m[6] and float(m[6]))
    return locks, deadlocks


def build_tree(c, hz, wz):
    """196 lock dirs under /t made with kazoo (49 of each kind, Curator's and kazoo's names, at
    depths 1 to 4), non-lock nodes beside them; the sessions of `hz` hold, those of `wz` wait
    (none does both: no deadlock). Returns {path: (kind, holder sessions, waiters)}."""
    s = [session_hex(z) for z in hz]
    hz[0].create("/t/config/settings", b"not a lock", makepath=True)
    hz[0].create("/t/mutex/m0/not-a-contender", b"", makepath=True)
    expect = {}
    for i in range(49):
        a, b = i % 4, (i + 1) % 4
        w1, w2 = wz[i % 2], wz[(i + 1) % 2]
        # mutex: Curator's and kazoo's names; a waiter in every other one
        d = f"/t/m{i}" if i >= 40 else f"/t/mutex/m{i}"  # depth 1 or 2
        marker = "-lock-" if i % 2 else "__lock__"
        contender(hz[a], d, marker, b"10.0.0.%d" % i)
        waiters = 0
        if i % 2 == 0:
            contender(w1, d, marker)
            waiters = 1
        expect[d] = ("mutex", [s[a]], waiters)
        # read/write: two readers hold, a writer and a reader behind it wait (Curator), or a
        # kazoo reader holds and a kazoo writer waits
        d = f"/t/rw/r{i}"
        if i % 2:
            contender(hz[a], d, "-__READ__")
            contender(hz[b], d, "-__READ__")
            contender(w1, d, "-__WRIT__")
            contender(w2, d, "-__READ__")
            expect[d] = ("read/write", [s[a], s[b]], 2)
        else:
            contender(hz[a], d, "__rlock__")
            contender(w1, d, "__lock__")
            expect[d] = ("read/write", [s[a]], 1)
        # semaphore (Curator's layout): two leases held; in every other one, the PATH/locks
        # holder's lease is the newest (waiting) and another acquire waits in PATH/locks
        d = f"/t/sem/s{i}"
        contender(hz[a], d + "/leases", "-lease-")
        contender(hz[b], d + "/leases", "-lease-")
        waiters = 0
        if i % 2:
            contender(w1, d + "/locks", "-lock-")
            contender(w2, d + "/locks", "-lock-")
            contender(w1, d + "/leases", "-lease-")
            waiters = 2
        expect[d] = ("semaphore", [s[a], s[b]], waiters)
        # election (Curator LeaderLatch's names, participant ids as data), deep in the tree
        d = f"/t/deep/x/y/e{i}"
        contender(hz[a], d, "-latch-", b"leader-%d" % i)
        contender(w1, d, "-latch-", b"follower-%d" % i)
        expect[d] = ("election", [s[a]], 1)
    return expect


def case_tree(c):
    hz = [c.kazoo() for _ in range(4)]
    expect = build_tree(c, hz, [c.kazoo() for _ in range(2)])
    # four made by the zklock command (the library): a mutex with a waiter, a shared lock held
    # twice, a semaphore of one lease with a waiter, an election
    sleep = ["sleep", "60"]
    hz[0].ensure_path("/t/real")
    c.start("exec", "/t/real/mutex", "--", *sleep)
    c.start("exec", "--shared", "/t/real/rw", "--", *sleep)
    c.start("exec", "--shared", "/t/real/rw", "--", *sleep)
    c.start("elect", "--id", "leader-real", "/t/real/elect", "--", *sleep)
    c.start("exec", "--semaphore", "1", "/t/real/sem", "--", *sleep)
    real = {"/t/real/mutex": ("mutex", 1, 1), "/t/real/rw": ("read/write", 2, 0),
            "/t/real/sem": ("semaphore", 1, 1), "/t/real/elect": ("election", 1, 1)}

    def real_in_place():
        got = by_path(c.locks_json("/t/real"))
        return all(p in got and len(got[p]["holders"]) == 1 for p in ("/t/real/mutex", "/t/real/sem", "/t/real/elect"))
    wait_for(real_in_place, 30, "the first holders of /t/real")
    c.start("exec", "/t/real/mutex", "--", *sleep)
    c.start("elect", "--id", "follower-real", "/t/real/elect", "--", *sleep)
    c.start("exec", "--semaphore", "1", "/t/real/sem", "--", *sleep)

    def all_in_place():
        got = by_path(c.locks_json("/t/real"))
        return all(p in got and (len(got[p]["holders"]), len(got[p]["waiters"])) == (h, w) for p, (_, h, w) in real.items())
    wait_for(all_in_place, 30, "the zklock holders and waiters of /t/real")

    doc = c.locks_json("/t")
    got = by_path(doc)
    check(len(expect) + len(real) == 200, "the tree has 200 lock dirs")
    check(sorted(got) == sorted(list(expect) + list(real)), f"paths: {sorted(set(got) ^ set(expect) ^ set(real))}")
    check(doc["deadlocks"] == [] and doc["truncated"] is False, f"deadlocks/truncated: {doc['deadlocks']}")
    for p, (kind, sessions, waiters) in expect.items():
        e = got[p]
        check((e["kind"], holder_sessions(e), len(e["waiters"])) == (kind, sessions, waiters),
              f"{p}: {e['kind']} {holder_sessions(e)} {len(e['waiters'])} waiters, expected {kind} {sessions} {waiters}")
        for h in e["holders"] + e["waiters"]:
            check(0 <= h["age"] < 120, f"{p}: age {h['age']}")
        check((e["oldest_wait"] is None) == (waiters == 0), f"{p}: oldest_wait {e['oldest_wait']}")
        if waiters:
            check(e["oldest_wait"] == max(w["age"] for w in e["waiters"]), f"{p}: oldest_wait")
    for p, (kind, h, w) in real.items():
        check(got[p]["kind"] == kind, f"{p}: kind {got[p]['kind']}")
    # identities: a Curator node's data, kazoo's, a zklock node's "<hostname>:<pid>", a candidate's id
    check(got["/t/mutex/m1"]["holders"][0]["identity"] == "10.0.0.1", f"identity {got['/t/mutex/m1']['holders']}")
    check(got["/t/deep/x/y/e3"]["holders"][0]["identity"] == "leader-3", "participant id")
    check(got["/t/real/elect"]["holders"][0]["identity"] == "leader-real", "zklock elect's id")
    check(re.fullmatch(r".+:\d+", got["/t/real/mutex"]["holders"][0]["identity"]), "zklock's identity")
    check(got["/t/real/sem"]["waiters"][0]["node"].startswith("_c_"), "the semaphore's waiter is its PATH/locks node")

    # the text output says the same, one line per dir
    rc, out, err, _ = c.run("locks", "/t")
    check(rc == 0 and err == "", f"locks /t -> {rc}: {err}")
    text, deadlocks = parse_text(out)
    check(deadlocks == [] and sorted(text) == sorted(got), "text paths")
    for p, e in got.items():
        kind, holders, waiters, oldest = text[p]
        check(kind == e["kind"] and waiters == len(e["waiters"]), f"{p}: {text[p]}")
        check([h[0] for h in holders] == holder_sessions(e), f"{p}: holders {holders}")
        check([h[1] for h in holders] == [h["identity"] or "-" for h in e["holders"]], f"{p}: identities {holders}")
        check((oldest is None) == (waiters == 0 or kind == "election"), f"{p}: oldest {oldest}")

    # --depth: ROOT's children only (the mutexes /t/m40../t/m48), then down to /t/x/y
    check(sorted(by_path(c.locks_json("--depth", "1", "/t"))) == sorted(f"/t/m{i}" for i in range(40, 49)), "--depth 1")
    d3 = by_path(c.locks_json("--depth", "3", "/t"))
    check(not any(p.startswith("/t/deep/") for p in d3) and len(d3) == 200 - 49, "--depth 3: all but the elections")
    # a semaphore at the last level: its leases and locks are read all the same
    check(d3["/t/sem/s1"]["kind"] == "semaphore" and len(d3["/t/sem/s1"]["waiters"]) == 2, "semaphore at --depth")
    # --limit: stops listing, says so, marks the result
    rc, out, err, _ = c.run("locks", "--json", "--limit", "10", "/t")
    check(rc == 0 and "stopped after --limit 10 directories" in err, f"--limit -> {rc}: {err}")
    check(json.loads(out)["truncated"] is True, "truncated")

    # --older-than: only holders whose node is older
    time.sleep(2.5)
    contender(hz[0], "/t/new/n", "-lock-")
    contender(hz[1], "/t/new/n", "-lock-")
    old = by_path(c.locks_json("--older-than", "2", "/t"))
    check("/t/new/n" not in old and len(old) == 200, f"--older-than 2: {len(old)} dirs")
    check(all(h["age"] > 2 for e in old.values() for h in e["holders"]), "young holders shown")
    check("/t/new/n" in by_path(c.locks_json("--older-than", "0", "/t")), "--older-than 0")
    rc, out, _, _ = c.run("locks", "--older-than", "1000", "/t")
    check(rc == 0 and out == "", f"--older-than 1000: {out!r}")
    # ROOT itself may be the lock dir
    check(list(by_path(c.locks_json("/t/new/n"))) == ["/t/new/n"], "ROOT as a lock dir")

    # A downgraded writer is told by its downgrade mark, owned by the writer's session (as the
    # grant rule does), never by its data: "zklock/2:downgraded" alone, or another session's
    # mark, leaves it the writer, and the reader behind it waits.
    w = contender(hz[2], "/dg/rw", "-__WRIT__", b"zklock/2:downgraded forged")
    contender(hz[3], "/dg/rw", "-__READ__")
    mark = "/dg/rw/zklock-downgraded-" + w[-10:]

    def rw_view():
        e = by_path(c.locks_json("/dg"))["/dg/rw"]
        return len(e["holders"]), len(e["waiters"])
    check(rw_view() == (1, 1), f"a marker in the data alone: {rw_view()}")
    hz[3].create(mark, b"", ephemeral=True)
    check(rw_view() == (1, 1), f"another session's mark: {rw_view()}")
    hz[3].delete(mark)
    hz[2].create(mark, b"", ephemeral=True)
    check(rw_view() == (2, 0), f"the writer's own mark: {rw_view()}")


def case_deadlock(c):
    # the library: two sessions, each holds one mutex and waits for the other
    a = c.popen([HELPER, "--hold-then-wait", c.server.connect, "/dl/lib/a", "/dl/lib/b"], stdin=subprocess.PIPE)
    b = c.popen([HELPER, "--hold-then-wait", c.server.connect, "/dl/lib/b", "/dl/lib/a"], stdin=subprocess.PIPE)
    for p, first in ((a, "/dl/lib/a"), (b, "/dl/lib/b")):
        line = p.stdout.readline().strip()
        check(line == "holding " + first, f"helper: {line!r} (stderr: {p.stderr.read() if p.poll() is not None else ''})")
    for p in (a, b):  # each takes its second lock now
        p.stdin.write("go\n")
        p.stdin.flush()
    # kazoo's Lock recipe: the same, two kazoo sessions (blocking acquires in threads)
    from kazoo.recipe.lock import Lock
    k1, k2 = c.kazoo(), c.kazoo()
    ka, kb = Lock(k1, "/dl/kazoo/a", "kazoo one"), Lock(k2, "/dl/kazoo/b", "kazoo two")
    check(ka.acquire(timeout=10) and kb.acquire(timeout=10), "kazoo locks")
    ka2, kb2 = Lock(k1, "/dl/kazoo/b", "kazoo one"), Lock(k2, "/dl/kazoo/a", "kazoo two")
    from kazoo.exceptions import CancelledError

    def acquire(lock):
        try:
            lock.acquire(timeout=60)
        except CancelledError:  # at the end of the case
            pass
    threads = [threading.Thread(target=acquire, args=(l,), daemon=True) for l in (ka2, kb2)]
    for t in threads:
        t.start()
    # Curator's names: a cycle of three through a read/write lock (a write waits for a read)
    s1, s2, s3 = c.kazoo(), c.kazoo(), c.kazoo()
    contender(s1, "/dl/curator/x", "-__WRIT__")
    contender(s2, "/dl/curator/x", "-__READ__")
    contender(s2, "/dl/curator/y", "-lock-")
    contender(s3, "/dl/curator/y", "-lock-")
    contender(s3, "/dl/curator/z", "-__READ__")
    contender(s1, "/dl/curator/z", "-__WRIT__")
    # not a deadlock: a chain (s4 waits for s1, who waits in the cycle) and a session that waits
    # behind itself
    s4 = c.kazoo()
    contender(s1, "/dl/chain", "-lock-")
    contender(s4, "/dl/chain", "-lock-")
    contender(s4, "/dl/self", "-lock-")
    contender(s4, "/dl/self", "-lock-")

    def four_waiters():
        got = by_path(c.locks_json("/dl"))
        return got if all(len(got.get(p, {"waiters": []})["waiters"]) == 1 for p in ("/dl/lib/a", "/dl/lib/b", "/dl/kazoo/a", "/dl/kazoo/b")) else None
    got = wait_for(four_waiters, 30, "the four waits")
    lib_a, lib_b = (got[p]["holders"][0]["session"] for p in ("/dl/lib/a", "/dl/lib/b"))
    check(got["/dl/lib/a"]["holders"][0]["identity"] == "hold_then_wait /dl/lib/a /dl/lib/b", "helper identity")
    expected = {
        frozenset({(lib_a, "/dl/lib/b"), (lib_b, "/dl/lib/a")}),
        frozenset({(session_hex(k1), "/dl/kazoo/b"), (session_hex(k2), "/dl/kazoo/a")}),
        frozenset({(session_hex(s1), "/dl/curator/z"), (session_hex(s2), "/dl/curator/x"), (session_hex(s3), "/dl/curator/y")}),
    }
    doc = c.locks_json("/dl")
    found = {frozenset((st["session"], st["path"]) for st in d["cycle"]) for d in doc["deadlocks"]}
    check(len(doc["deadlocks"]) == 3 and found == expected, f"deadlocks: {doc['deadlocks']}")
    for d in doc["deadlocks"]:
        check(d["sessions"] == [st["session"] for st in d["cycle"]] and d["paths"] == [st["path"] for st in d["cycle"]],
              f"sessions/paths of {d}")
        for i, st in enumerate(d["cycle"]):
            check(st["waits_for"] == d["cycle"][(i + 1) % len(d["cycle"])]["session"], f"cycle order {d}")
            check(st["holds"] is True, f"every blocker holds: {d}")
    # the text output: one "deadlock:" line each, naming its sessions and paths
    rc, out, err, _ = c.run("locks", "/dl")
    check(rc == 0, f"locks /dl -> {rc}: {err}")
    _, lines = parse_text(out)
    check(len(lines) == 3, f"deadlock lines: {lines}")
    for cycle in expected:
        line = [l for l in lines if all(s in l and p in l for s, p in cycle)]
        check(len(line) == 1, f"no line for {sorted(cycle)}: {lines}")
        check(re.fullmatch(r"deadlock: 0x[0-9a-f]+ waits in \S+ for 0x[0-9a-f]+(, 0x[0-9a-f]+ waits in \S+ for 0x[0-9a-f]+)+", line[0]),
              f"line {line[0]!r}")

    # one side gives up (its session ends): the other gets its second lock, the deadlock is gone
    a.send_signal(signal.SIGTERM)
    a.wait(timeout=10)
    check(b.stdout.readline().strip() == "holding /dl/lib/a", "helper b did not get /dl/lib/a")
    doc = c.locks_json("/dl")
    check(len(doc["deadlocks"]) == 2 and not any(st["path"].startswith("/dl/lib/") for d in doc["deadlocks"] for st in d["cycle"]),
          f"after the release: {doc['deadlocks']}")
    for l in (ka2, kb2):
        l.cancel()
    for t in threads:
        t.join(timeout=10)


@zk_fixture.own_server  # walks the whole tree from the server's root
def case_usage(c):
    for args, what in ((["--depth", "-1"], "--depth: expected a whole number >= 0"),
                       (["--limit", "0"], "--limit: expected a whole number >= 1"),
                       (["--older-than", "soon"], "--older-than: expected a number of seconds >= 0")):
        rc, _, err, _ = c.run("locks", *args, "/t")
        check(rc == 2 and what in err, f"{args} -> {rc}: {err}")
    rc, _, err, _ = c.run("locks", "t")
    check(rc == 2 and "bad path 't'" in err, f"relative ROOT -> {rc}: {err}")
    rc, out, err, _ = c.run("locks", "/nowhere")
    check(rc == 1 and "/nowhere: no such node" in err and out == "", f"missing ROOT -> {rc}: {err}")
    # the whole tree from "/": nothing but ZooKeeper's own nodes, no lock
    rc, out, err, _ = c.run("locks", "/")
    check(rc == 0 and out == "" and err == "", f"locks / -> {rc}: {out} {err}")
    rc, out, _, _ = c.run("locks", "--json", "/")
    check(rc == 0 and json.loads(out) == {"locks": [], "deadlocks": [], "truncated": False}, f"--json / : {out}")

    # a path and an identity that would break the line are escaped; a directory we may not
    # read is said on stderr, the rest is printed, the status is 1
    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl
    zk = c.kazoo()
    contender(zk, "/u/odd dir", "-lock-", b"job (7)\nx")
    contender(zk, "/u/bytes", "-lock-", "caf\u00e9 \u2603 ".encode() + b"\xff\xc3")  # UTF-8, then not
    owner = KazooClient(hosts=c.server.connect, auth_data=[("digest", "owner:secret")])
    owner.start(timeout=10)
    try:
        owner.create("/u/secret", b"", acl=[make_digest_acl("owner", "secret", all=True)])
        contender(owner, "/u/secret", "-lock-")
        rc, out, err, _ = c.run("locks", "--json", "/u")
        check(rc == 1 and [l["holders"][0]["identity"] for l in json.loads(out)["locks"]] == ["caf\u00e9 \u2603 \u00ff\u00c3", "job (7)\nx"],
              f"--json identities: {out}")
        rc, out, err, _ = c.run("locks", "/u/odd dir")
        check(rc == 0, f"locks '/u/odd dir' -> {rc}: {err}")
        check(re.fullmatch(r"/u/odd\\x20dir mutex holders: 0x[0-9a-f]+ \(job \\x287\\x29\\x0ax\) \d+\.\ds waiters: 0\n", out),
              f"escaped line: {out!r}")
        rc, _, err, _ = c.run("locks", "/u")
        check(rc == 1 and re.search(r"^zklock: /u/secret: .*auth", err, re.M | re.I), f"unreadable dir -> {rc}: {err}")
    finally:
        owner.stop()
        owner.close()


def case_measure(c):
    """Not run by ctest: 1,000 lock dirs (a holder and a waiter each, two sessions), listed
    with `zklock locks -v` (its requests and time) and walked by kazoo one request at a time."""
    z1, z2 = c.kazoo(), c.kazoo()
    n = int(os.environ.get("LOCKS_DIRS", "1000"))
    for i in range(n):
        z1.ensure_path(f"/m/d{i}")
    for zk in (z1, z2):  # a holder, then a waiter
        for r in [zk.create_async(f"/m/d{i}/_c_{uuid.uuid4()}-lock-", b"", ephemeral=True, sequence=True) for i in range(n)]:
            r.get(timeout=30)
    for _ in range(3):
        t0 = time.monotonic()
        rc, out, err, _ = c.run("locks", "-v", "/m")
        dt = time.monotonic() - t0
        check(rc == 0 and len(out.splitlines()) == n, f"locks -> {rc}: {len(out.splitlines())} lines")
        said = [l for l in err.splitlines() if "requests in" in l]
        print(f"zklock locks: {n} dirs: {said} (the whole process: {dt:.3f} s)")
    t0 = time.monotonic()
    for d in z1.get_children("/m"):
        for node in z1.get_children("/m/" + d):
            z1.get("/m/" + d + "/" + node)
    print(f"kazoo, one request at a time: {n} dirs in {time.monotonic() - t0:.3f} s")


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global HELPER
    ap = argparse.ArgumentParser()
    ap.add_argument("--zklock", required=True)
    ap.add_argument("--helper", required=True, help="the zklock_contender program (its --hold-then-wait mode)")
    ap.add_argument("--scripts", required=True)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    a = ap.parse_args()
    zklock_cli_test.ZKLOCK, HELPER = os.path.abspath(a.zklock), os.path.abspath(a.helper)
    return zk_fixture.run_cases(CASES, a.cases, a.scripts, DEADLINE_S, case_type=Case, work_dirs=False)


if __name__ == "__main__":
    sys.exit(main())

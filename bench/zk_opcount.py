#!/usr/bin/python3
"""What each implementation sends for a recipe: a loopback proxy in front of a throwaway server
that reads the ZooKeeper framing of every connection and counts requests by type (and watch
events), while one implementation's benchmark program runs through it. Any client counts alike
(zklock, Curator, kazoo): nothing is asked of the program but --connect.

    bench/zk_opcount.py [--impls zklock,curator,kazoo] -- ARGS...

runs `<impl's program> --connect PROXY --path /opcount/<impl> ARGS...` for each implementation
(ARGS, e.g. `--kind semaphore --contenders 8 --leases 2 --cycles 25 --hold-us 5000`), then prints
per implementation the requests by type per acquisition (the program's `acquisitions`, else
contenders x cycles) and the watch events per acquisition. Connects, pings and closes are counted
apart. The proxy adds a hop, so its run's timings are not the benchmark's.

    bench/zk_opcount.py --election R [--impls zklock,celection,curator,kazoo]

counts the election phase's resign runs instead (3 candidates, the leader's 20 ms hold, R resigns,
no warm-up; zklock-election-bench without its mutex reference loop), per term. --trace FILE
also writes every frame as it passes: "t_us conn req|rep|evt xid type path" (a request's and a
reply's xid pair them; a watch event's type is created/deleted/...), to see who sends what after
which event."""
import argparse
import collections
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
import election_phase  # noqa: E402
from bench_run import ROOT, impl_cmd  # noqa: E402

OPS = {1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 8: "getChildren", 9: "sync",
       11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2", 17: "checkWatches",
       18: "removeWatches", 19: "createContainer", 21: "createTTL", 22: "multiRead", 100: "auth",
       101: "setWatches", 103: "getEphemerals", 105: "setWatches2", 106: "addWatch", -11: "closeSession"}
NOT_RECIPE = {"ping", "closeSession", "connect", "setWatches", "setWatches2", "auth"}


class Counter:
    def __init__(self):
        self.mu = threading.Lock()
        self.requests = collections.Counter()
        self.events = collections.Counter()
        self.trace = None  # a file: every frame, as it passes
        self.conns = 0

    def log(self, conn, what, xid, name, path):
        if self.trace:
            with self.mu:
                self.trace.write("%.1f %d %s %d %s %s\n" % (time.monotonic_ns() / 1e3, conn, what, xid, name, path))

    def reset(self):
        with self.mu:
            self.requests.clear()
            self.events.clear()


def frames(sock, on_frame):
    """Reads length-prefixed frames from sock, calls on_frame(index, payload); forwards nothing."""
    buf = b""
    n = 0
    while True:
        while len(buf) >= 4:
            ln = struct.unpack(">i", buf[:4])[0]
            if len(buf) < 4 + ln:
                break
            on_frame(n, buf[4:4 + ln])
            n += 1
            buf = buf[4 + ln:]
        try:
            chunk = sock.recv(65536)
        except OSError:
            return
        if not chunk:
            return
        yield chunk
        buf += chunk


def pipe(src, dst, on_frame):
    try:
        for chunk in frames(src, on_frame):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def zk_string(p, at):
    """A jute string at offset `at` of a frame ('' when there is none)."""
    if len(p) < at + 4:
        return ""
    n = struct.unpack(">i", p[at:at + 4])[0]
    return p[at + 4:at + 4 + n].decode("utf-8", "replace") if n > 0 else ""


def serve(listener, target, counter):
    host, port = target.rsplit(":", 1)
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        server = socket.create_connection((host, int(port)))
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with counter.mu:
            counter.conns += 1
            conn = counter.conns

        def request(i, p, conn=conn):
            if i == 0:
                name = "connect"
            else:
                op = struct.unpack(">i", p[4:8])[0] if len(p) >= 8 else None
                name = OPS.get(op, "op%s" % op)
            with counter.mu:
                counter.requests[name] += 1
            if i > 0 and name != "ping":
                counter.log(conn, "req", struct.unpack(">i", p[:4])[0], name, zk_string(p, 8))

        def reply(i, p, conn=conn):
            if i > 0 and len(p) >= 4 and struct.unpack(">i", p[:4])[0] == -1:  # a watch event
                etype = struct.unpack(">i", p[16:20])[0] if len(p) >= 20 else None
                name = {1: "created", 2: "deleted", 3: "dataChanged", 4: "childrenChanged"}.get(etype, "type%s" % etype)
                with counter.mu:
                    counter.events[name] += 1
                counter.log(conn, "evt", -1, name, zk_string(p, 24))
            elif i > 0 and len(p) >= 16 and struct.unpack(">i", p[:4])[0] not in (-2, -4):  # not a ping's reply
                counter.log(conn, "rep", struct.unpack(">i", p[:4])[0], "err=%d" % struct.unpack(">i", p[12:16])[0], "")

        threading.Thread(target=pipe, args=(client, server, request), daemon=True).start()
        threading.Thread(target=pipe, args=(server, client, reply), daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impls", default="zklock,curator,kazoo")
    ap.add_argument("--json", help="also write the counts here")
    ap.add_argument("--trace", metavar="FILE", help="every frame as it passes (time, connection, request/reply/event)")
    ap.add_argument("--election", type=int, metavar="R", help="the election phase's resign runs, R resigns each")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = [x for x in a.args if x != "--"]
    counter = Counter()
    if a.trace:
        counter.trace = open(a.trace, "w")
    out = {}
    with bench_common.throwaway_server(os.path.join(ROOT, "scripts"), "zklock-opcount-") as (connect, _):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        proxy = "127.0.0.1:%d" % listener.getsockname()[1]
        threading.Thread(target=serve, args=(listener, connect, counter), daemon=True).start()
        for impl in a.impls.split(","):
            counter.reset()
            if counter.trace:
                with counter.mu:
                    counter.trace.write("# %s\n" % impl)
            if a.election:
                cmd = election_phase.election_cmd(impl) + election_phase.resign_args(
                    impl, proxy, "/opcount/" + impl, a.election, 0) + (["--no-mutex"] if impl == "zklock" else [])
                if a.trace and impl in ("zklock", "celection"):  # each sample's instants, beside the trace
                    cmd += ["--timeline", "%s.%s.timeline" % (a.trace, impl)]
            else:
                cmd = impl_cmd(impl) + ["--connect", proxy, "--path", "/opcount/" + impl] + args
            r = bench_common.run(cmd, 600, echo=False, numbers=True)
            acq = r.get("acquisitions") or r.get("terms") or 0
            if a.election and not acq:  # every resign ends a term, then each candidate but the last resigner leads once
                acq = a.election + election_phase.ELECTION["candidates"] - 1
            if not acq:
                n = int(args[args.index("--contenders") + 1]) if "--contenders" in args else 8
                acq = n * int(args[args.index("--cycles") + 1])
            with counter.mu:
                req, ev = dict(counter.requests), dict(counter.events)
            recipe = {k: v for k, v in req.items() if k not in NOT_RECIPE}
            out[impl] = {"acquisitions": acq, "requests": req, "events": ev,
                         "requests_per_acq": round(sum(recipe.values()) / acq, 2),
                         "by_type_per_acq": {k: round(v / acq, 2) for k, v in sorted(recipe.items())},
                         "events_per_acq": {k: round(v / acq, 2) for k, v in sorted(ev.items())},
                         "program": {k: r.get(k) for k in ("throughput", "handoff_p50_us", "requests_per_acq",
                                                           "violations") if k in r}}
            print("%-8s %5.2f requests/acq  %s  events/acq %s  (%d acquisitions; outside the recipe: %s)" % (
                impl, out[impl]["requests_per_acq"],
                " ".join("%s=%.2f" % kv for kv in out[impl]["by_type_per_acq"].items()),
                " ".join("%s=%.2f" % kv for kv in out[impl]["events_per_acq"].items()), acq,
                " ".join("%s=%d" % (k, v) for k, v in sorted(req.items()) if k in NOT_RECIPE)), flush=True)
        listener.close()
    if counter.trace:
        counter.trace.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

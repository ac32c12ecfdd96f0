"""scripts/bench's depth phase (--kinds depth): N waiters on one lock path from ONE session.

For each N of --depth-sweep (1000,5000,10000,20000) and each implementation (zklock:
build/bench/zklock-depth-bench; Curator: CuratorBench --kind depth, a thread per waiter on one
CuratorFramework), on a fresh server of its own (scripts/zk-server.sh, its JVM heap capped at
--depth-heap, 512m by default: a burst that kills a server must not poison the next run): a
holder, N acquires started at once behind it, then the drain (each grant released at once).
Figures: queue time (burst start -> every node made and every waiter waiting), drain
releases/s, requests, events and client CPU per release, resident memory per waiter, the
session's window (zklock), and whether the server still answers afterwards (`ruok`). A run
that fails (the server died, Curator's client refused a listing over 1 MB, a timeout) is kept
with ok=0 and its error; the programs' stderr is passed through, so a failure is shown as it
happens. run() returns the records; summary() the table; plot() depth_throughput.png and
depth_cpu.png (gnuplot)."""
import json
import os
import subprocess
import sys
import tempfile
import time

import bench_common

KINDS = ["depth"]
IMPLS = ["zklock", "curator"]


def add_args(ap):
    g = ap.add_argument_group("depth (--kinds depth; bench/depth_phase.py)")
    g.add_argument("--depth-sweep", default="1000,5000,10000,20000", metavar="N,N,...",
                   help="waiters on one path from one session (1000,5000,10000,20000)")
    g.add_argument("--depth-impls", default="zklock,curator", metavar="I,I", help="zklock,curator")
    g.add_argument("--depth-heap", default="512m", help="the servers' JVM heap (-Xmx; 512m)")
    g.add_argument("--depth-sessions", default="20000=4", metavar="N=S,...",
                   help="zklock: the waiters of a run of N spread over S sessions of one process (20000=4); "
                        "one session otherwise (Curator: always one client)")
    g.add_argument("--depth-window", type=int, help="zklock's session_options::max_outstanding_requests (its default)")
    g.add_argument("--depth-timeout-s", type=int, default=300, help="give up on one run after this long (300)")
    g.add_argument("--depth-drain", type=int, default=0, metavar="M",
                   help="measure each drain over its first M releases only (0: all N; the drain is the long part)")


def server_alive(connect):
    try:
        return bench_common.four_letter(connect, "ruok").strip() == "imok"
    except OSError:
        return False


def server_error(zk_dir):
    """Why a server died: the last line of its log that names an error (scripts/zk-server.sh's server.log)."""
    try:
        lines = [l.strip() for l in open(os.path.join(zk_dir, "server.log"), errors="replace")
                 if "Error" in l or "Exception" in l or "Killed" in l]
    except OSError:
        return None
    return lines[-1][:200] if lines else None


def run_one(cmd, json_file, timeout_s, log, env=None):
    """One program to its end (its stderr passed through); its JSON result, or a failure record."""
    log("  $ " + " ".join(cmd))
    t = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=sys.stderr, text=True, timeout=timeout_s + 60,
                           env=env)
        out = p.stdout
    except subprocess.TimeoutExpired:
        return {"ok": 0, "error": "no result after %d s" % (timeout_s + 60)}
    try:
        with open(json_file) as f:
            r = json.load(f)
    except (OSError, ValueError):
        r = {"ok": 0, "error": "no result (exit %d): %s" % (p.returncode, out.strip()[-300:])}
    r["wall_s"] = round(time.time() - t, 1)
    return r


def run(args, root, build, log, phase):
    if "depth" not in args.kinds:
        return []
    sweep = [int(x) for x in args.depth_sweep.split(",") if x.strip()]
    impls = [x for x in args.depth_impls.split(",") if x.strip()]
    spread = dict((int(a), int(b)) for a, b in (x.split("=") for x in args.depth_sessions.split(",") if "=" in x))
    results = []
    env_opts = os.environ.get("ZK_SERVER_JAVA_OPTS", "")
    os.environ["ZK_SERVER_JAVA_OPTS"] = (env_opts + " -Xmx%s" % args.depth_heap).strip()
    try:
        for n in sweep:
            for impl in impls:
                with phase("depth %s N=%d: server (-Xmx%s)" % (impl, n, args.depth_heap)):
                    srv = bench_common.Server(os.path.join(root, "scripts"), "zklock-bench-depth-")
                try:
                    jf = os.path.join(srv.work, "result.json")
                    if impl == "zklock":
                        cmd = [os.path.join(build, "bench/zklock-depth-bench"), "--connect", srv.connect,
                               "--path", "/depth", "--waiters", str(n), "--json", jf,
                               "--timeout-s", str(args.depth_timeout_s), "--drain-releases", str(args.depth_drain)]
                        if spread.get(n, 1) > 1:
                            cmd += ["--waiter-sessions", str(spread[n])]
                        if args.depth_window:
                            cmd += ["--window", str(args.depth_window)]
                    else:
                        cmd = ["sh", os.path.join(root, "bench/peers/curator/run.sh"), "--kind", "depth",
                               "--connect", srv.connect, "--path", "/depth", "--contenders", str(n),
                               "--json", jf, "--timeout-s", str(args.depth_timeout_s),
                               "--drain-releases", str(args.depth_drain)]
                    # Curator's client logs through java.util.logging, where CuratorBench hears the
                    # ZooKeeper client refuse a listing over its 1 MB jute.maxbuffer (its waiters only
                    # see ConnectionLoss and retry): that is the run's failure, shown as it happens
                    env = dict(os.environ, ZKLOCK_PEER_SLF4J="jdk14") if impl == "curator" else None
                    with phase("depth %s N=%d" % (impl, n)):
                        r = run_one(cmd, jf, args.depth_timeout_s, log, env)
                    if isinstance(r.get("error"), str) and impl == "curator":
                        r["error"] = r["error"].replace("_", " ")  # CuratorBench's key=value line has no spaces
                    r.update({"phase": "depth", "impl": impl, "waiters": n, "server_heap": args.depth_heap,
                              "server_alive": server_alive(srv.connect)})
                    if not r["server_alive"]:
                        r["server_error"] = server_error(srv.dir)
                    results.append(r)
                    log("    -> " + describe(r))
                finally:
                    srv.stop()
    finally:
        os.environ["ZK_SERVER_JAVA_OPTS"] = env_opts
    return results


def failure(r):
    """Why a run failed, with how deep its queue was then when the program could tell."""
    return "%s%s" % (r.get("error"), " (the dir had %s nodes at the last look before it)"
                     % r["children_at_failure"]
                     if r.get("children_at_failure") is not None else "")


def server_state(r):
    return "alive" if r.get("server_alive") else "DEAD" + (": " + r["server_error"] if r.get("server_error") else "")


def describe(r):
    if not r.get("ok") or "queue_s" not in r:
        return "%s N=%d FAILED: %s (server %s)" % (r["impl"], r["waiters"], failure(r), server_state(r))
    return ("%s N=%d%s queue %.2f s, drain %.0f releases/s, %s req/release, %s events/release, %.0f us CPU/release, "
            "%.1f KB/waiter (server %s)") % (
        r["impl"], r["waiters"], " (%d sessions)" % r["sessions"] if r.get("sessions", 1) > 1 else "", r["queue_s"],
        r["drain_releases_per_s"], fmt(r.get("requests_per_release")),
        fmt(r.get("events_per_release")), r.get("cpu_us_per_release") or 0, r.get("kb_per_waiter") or 0,
        "alive" if r.get("server_alive") else "DEAD")


def fmt(v, spec="%.2f"):
    return "-" if v is None else spec % v


def summary(results):
    rows = [r for r in results if r.get("phase") == "depth"]
    if not rows:
        return []
    lines = ["", "Depth: N waiters on one path from one session (a burst, then the drain); server -Xmx%s"
             % rows[0].get("server_heap"),
             "%-8s %6s %4s %8s %10s %9s %9s %9s %8s %7s  %s" % ("impl", "N", "sess", "queue s", "releases/s", "req/rel",
                                                            "events/r", "CPU us/r", "KB/waiter", "server",
                                                            "window max/queued/coalesced")]
    for r in rows:
        if not r.get("ok") or "queue_s" not in r:
            lines.append("%-8s %6d FAILED: %s; server %s" % (r["impl"], r["waiters"], failure(r), server_state(r)))
            continue
        win = "%s/%s/%s" % (r.get("max_outstanding", "-"), r.get("max_queued", "-"), r.get("listings_coalesced", "-")) \
            if r["impl"] == "zklock" else "-"
        lines.append("%-8s %6d %4d %8.2f %10.0f %9s %9s %9.0f %8.1f %7s  %s" % (
            r["impl"], r["waiters"], r.get("sessions", 1), r["queue_s"], r["drain_releases_per_s"],
            fmt(r.get("requests_per_release")),
            fmt(r.get("events_per_release")), r.get("cpu_us_per_release") or 0, r.get("kb_per_waiter") or 0,
            "alive" if r.get("server_alive") else "DEAD", win))
    z = {r["waiters"]: r for r in rows if r["impl"] == "zklock" and r.get("ok")}
    if 1000 in z and 10000 in z:
        lines.append("zklock at 10,000 over 1,000: CPU per release %.2fx (target <= 1.5x), queue time %.2f s "
                     "(target <= 10 x %.2f + 2 = %.2f s)" % (
                         z[10000]["cpu_us_per_release"] / z[1000]["cpu_us_per_release"], z[10000]["queue_s"],
                         z[1000]["queue_s"], 10 * z[1000]["queue_s"] + 2))
    if 20000 in z:
        lines.append("zklock at 20,000 (%d sessions): drain %.0f releases/s (target >= 500)"
                     % (z[20000].get("sessions", 1), z[20000]["drain_releases_per_s"]))
    return lines


def plot(results, out):
    """depth_throughput.png and depth_cpu.png: drain releases/s and client CPU per release against N."""
    import shutil
    rows = [r for r in results if r.get("phase") == "depth" and r.get("ok")]
    if not rows:
        return
    if not shutil.which("gnuplot"):  # (matplotlib is not installed here either)
        print("depth: no gnuplot on PATH: no depth_throughput.png, depth_cpu.png", file=sys.stderr)
        return
    spread = ", ".join("%s's %d: %d sessions" % (r["impl"], r["waiters"], r["sessions"]) for r in rows
                       if r.get("sessions", 1) > 1)
    data = os.path.join(out, "plotdata")
    os.makedirs(data, exist_ok=True)
    script = ["set terminal png size 900,600", "set grid", "set logscale x 10", "set key below",
              'set xlabel "waiters on one path, one session%s"' % (" (%s)" % spread if spread else "")]
    for key, fname, ylabel in (("drain_releases_per_s", "depth_throughput.png", "drain releases/s (log)"),
                               ("cpu_us_per_release", "depth_cpu.png", "client CPU us per release (log)")):
        plots = []
        for impl in IMPLS:
            pts = sorted((r["waiters"], r[key]) for r in rows if r["impl"] == impl and r.get(key) is not None)
            if not pts:
                continue
            fn = os.path.join(data, "depth-%s-%s.dat" % (key, impl))
            with open(fn, "w") as f:
                f.writelines("%d %f\n" % p for p in pts)
            plots.append('"%s" using 1:2 with linespoints lw 2 title "%s"' % (fn, impl))
        if plots:
            script += ['set output "%s"' % os.path.join(out, fname), "set logscale y",
                       'set title "Depth: %s against waiters (the failed runs have no point)"' % ylabel,
                       'set ylabel "%s"' % ylabel, "plot " + ", ".join(plots)]
    with tempfile.NamedTemporaryFile("w", suffix=".gp", delete=False) as f:
        f.write("\n".join(script) + "\n")
    subprocess.call(["gnuplot", f.name])
    os.unlink(f.name)

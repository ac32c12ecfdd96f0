"""scripts/bench's election phase (--kinds election): failover of zklock::election against
Curator's LeaderLatch and kazoo's Election, on its own servers (tickTime 1 s, so that a 2 s
session timeout is allowed). run_phase() returns the records for results.json; figures() the pooled
percentiles, summary() the table lines, plot() the PNGs."""
import os
import shutil
import statistics
import subprocess
import tempfile

import bench_common
from bench_report import per_round, ratio, targets_line
from bench_run import BUILD, ROOT, by_mode, counts, impl_cmd, log, phase, run, start_server

# celection: the same election recipe on the raw C client (zklock-cfloor --mode election: create,
# list, exists-watch the nearest two blockers, grant once the listing's last blocker is gone), with
# the same protocol (3 candidates, the leader's 20 ms hold, rejoin after the next leader ran): the
# floor of zklock's failover after the same idle, measured in the same rounds
ELECTION_IMPLS = ["zklock", "curator", "kazoo", "celection"]
PEERS = ["curator", "kazoo"]
# warmup: resigns each resign run makes first, unrecorded, in its own process (the JVM's JIT compiles
# Curator's paths there; the separate warm-up run before the rounds warms the server only)
ELECTION = {"candidates": 3, "hold_ms": 20, "session_timeout_ms": 4000, "tick_ms": 1000, "warmup": 20}


def election_cmd(impl):
    return {"zklock": [os.path.join(BUILD, "bench/zklock-election-bench")],
            "curator": ["sh", os.path.join(ROOT, "bench/peers/curator/election.sh")],
            "kazoo": ["/usr/bin/python3", os.path.join(ROOT, "bench/peers/kazoo/kazoo_election.py")],
            "celection": [os.path.join(BUILD, "bench/zklock-cfloor"), "--mode", "election"]}[impl]


def resign_args(impl, connect, path, n, warmup):
    """The resign run's options (zklock-cfloor names them as its other modes do)."""
    if impl == "celection":
        return ["--connect", connect, "--path", path, "--contenders", str(ELECTION["candidates"]), "--cycles", str(n),
                "--hold-us", str(ELECTION["hold_ms"] * 1000), "--warmup", str(warmup),
                "--session-timeout-ms", str(ELECTION["session_timeout_ms"])]
    return ["--mode", "resign", "--connect", connect, "--path", path, "--candidates", str(ELECTION["candidates"]),
            "--resigns", str(n), "--hold-ms", str(ELECTION["hold_ms"]), "--warmup", str(warmup),
            "--session-timeout-ms", str(ELECTION["session_timeout_ms"])]


def add_args(ap):
    g = ap.add_argument_group("the election phase (--kinds election)")
    g.add_argument("--election-rounds", type=int, help="resign rounds on each server, every implementation once a "
                                                       "round in a rotating order (3; 2 with --quick)")
    g.add_argument("--election-resigns", type=int, help="resigns measured per run (200; 60 with --quick)")
    g.add_argument("--kill-rounds", type=int, help="kill -9 failovers per implementation and session timeout "
                                                   "(3; 1 with --quick)")
    g.add_argument("--kill-timeouts", type=counts, metavar="MS,MS",
                   help="session timeouts of the kill measurement, ms (2000,4000)")
    g.add_argument("--election-candidates", type=int, help="candidates in the resign runs (%d)" % ELECTION["candidates"])
    g.add_argument("--election-impls", default=",".join(ELECTION_IMPLS), metavar="I,I,...",
                   help="the resign runs' implementations (%s; zklock always); the kill runs' are those of them "
                        "but celection" % ",".join(ELECTION_IMPLS))


def run_phase(args, cdf_dir):
    """Resign -> the next leader's code (3 candidates in one process per implementation, pooled over
    rotating rounds, on a default and a forceSync=no server, with zklock's mutex handoff and the
    C client's delete->event floor measured in the same rounds), then kill -9 of the leader's
    process -> the next leader's code, per session timeout. Returns the runs' records."""
    rounds = by_mode(args, args.election_rounds, 2, 3)
    resigns = by_mode(args, args.election_resigns, 60, 200)
    kill_rounds = by_mode(args, args.kill_rounds, 1, 3)
    kill_timeouts = by_mode(args, args.kill_timeouts, [2000, 4000], [2000, 4000])
    if args.election_candidates:
        ELECTION["candidates"] = args.election_candidates
    impls = [i for i in ELECTION_IMPLS if i == "zklock" or i in args.election_impls.split(",")]
    unknown = set(args.election_impls.split(",")) - set(ELECTION_IMPLS) - {""}
    if unknown:
        raise SystemExit("--election-impls: unknown %s" % ",".join(sorted(unknown)))
    ELECTION.update(rounds=rounds, resigns=resigns, kill_rounds=kill_rounds, kill_timeouts=kill_timeouts)
    log("election: %s" % " ".join("%s=%s" % kv for kv in ELECTION.items()))
    results = []
    run_id = [0]
    for sname, extra in (("default", []), ("nosync", ["forceSync=no"])):
        with phase("election server %s: start" % sname):
            srv = start_server("election-" + sname, ["tickTime=%d" % ELECTION["tick_ms"]] + extra)
        try:
            def resign_run(impl, n, rnd, record=True):
                run_id[0] += 1
                path = "/bench/election-%s-%d" % (impl, run_id[0])
                cdf = os.path.join(cdf_dir, "election-%s-%s-r%d.txt" % (sname, impl, rnd))
                cmd = election_cmd(impl) + resign_args(impl, srv.connect, path, n,
                                                       ELECTION["warmup"] if record else 0)
                if record:
                    cmd += ["--cdf", cdf]
                with phase("election %s %s %s, %d resigns" % (
                        sname, "warm-up" if not record else "round %d/%d" % (rnd + 1, rounds), impl, n)):
                    r = run(cmd, 300)
                if not record:
                    return
                r.update(server=sname, phase="election-resign", round=rnd, cdf_file=os.path.relpath(cdf, args.out))
                results.append(r)
                log("    -> " + " ".join("%s=%s" % (k, r.get(k)) for k in (
                    "impl", "failover_p50_us", "failover_p99_us", "mutex_handoff_p50_us", "violations")))

            log("  election warm-up on %s (not recorded)" % sname)
            for impl in impls:
                resign_run(impl, 30, 0, record=False)
            for rnd in range(rounds):
                order = impls[rnd % len(impls):] + impls[:rnd % len(impls)]
                for impl in order:
                    resign_run(impl, resigns, rnd)
                # the C client's floor, a watched node's delete -> its event, on the same server: back to
                # back (a), and (i) after the leader's hold of idle, as every resign here comes
                run_id[0] += 1
                with phase("election %s round %d/%d cfloor" % (sname, rnd + 1, rounds)):
                    f = run(impl_cmd("cfloor") + ["--connect", srv.connect, "--path", "/bench/election-floor-%d" % run_id[0],
                                                  "--contenders", "2", "--cycles", "200",
                                                  "--idle-us", str(ELECTION["hold_ms"] * 1000)], 300)
                f.update(server=sname, phase="election-floor", round=rnd)
                results.append(f)
            if sname == "default":
                work = tempfile.mkdtemp(prefix="zklock-bench-election-")
                try:
                    for t in kill_timeouts:
                        for rnd in range(kill_rounds):
                            kill_impls = [i for i in impls if i != "celection"]
                            order = kill_impls[rnd % len(kill_impls):] + kill_impls[:rnd % len(kill_impls)]
                            for impl in order:
                                run_id[0] += 1
                                path = "/bench/election-kill-%s-%d" % (impl, run_id[0])
                                cmd = election_cmd(impl) + ["--mode", "candidate", "--connect", srv.connect, "--path",
                                                            path, "--session-timeout-ms", str(t)]
                                with phase("election %s kill -9, session timeout %d ms, round %d/%d, %s" % (
                                        sname, t, rnd + 1, kill_rounds, impl)):
                                    k = bench_common.kill_failover(cmd, path, work)
                                k.update(impl=impl, server=sname, phase="election-kill", round=rnd,
                                         session_timeout_ms=t, tick_ms=ELECTION["tick_ms"],
                                         bound_ms=t + ELECTION["tick_ms"])
                                results.append(k)
                                log("    -> %s failover %.0f ms (bound %d ms, negotiated %s)" % (
                                    impl, k["failover_ms"], k["bound_ms"], k["negotiated_ms"]))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
        finally:
            with phase("election server %s: stop" % sname):
                srv.stop()
    return results


def pooled(results, server, impl, key_file="cdf_file", src=None):
    """Every resign sample of one implementation on one server (all its rounds)."""
    out = []
    for r in results:
        if r.get("phase") == "election-resign" and r.get("server") == server and r.get("impl") == impl and r.get(key_file):
            fn = os.path.join(src, r[key_file]) if src else r[key_file]
            if os.path.exists(fn):
                out += [float(x) for x in open(fn) if x.strip()]
    return sorted(out)


def pct(v, p):
    """Nearest rank, as the benchmark programs."""
    if not v:
        return None
    idx = int(-(-p * len(v) // 100))
    return v[min(len(v) - 1, max(0, idx - 1))]


def figures(results, src):
    """Pooled p50/p90/p99 of the resign failover per server and implementation, medians of the
    per-run references (zklock's mutex handoff, cfloor's delete->event), and the kill samples."""
    fig = {}
    for server in ("default", "nosync"):
        f = {}
        for impl in ELECTION_IMPLS:
            v = pooled(results, server, impl, src=src)
            if v:
                f[impl] = {"p50_us": pct(v, 50), "p90_us": pct(v, 90), "p99_us": pct(v, 99), "samples": len(v)}
        runs = [r for r in results if r.get("phase") == "election-resign" and r.get("server") == server]
        mx = [r["mutex_handoff_p50_us"] for r in runs if r.get("impl") == "zklock" and r.get("mutex_handoff_p50_us")]
        if mx:
            f["zklock_mutex_handoff_p50_us"] = statistics.median(mx)
        for impl in ("zklock", "celection"):
            req = [r["requests_per_term"] for r in runs if r.get("impl") == impl and r.get("requests_per_term")]
            if req:
                f["%s_requests_per_term" % impl] = statistics.median(req)
        fl = [r["floor_a_p50_us"] for r in results if r.get("phase") == "election-floor" and r.get("server") == server
              and r.get("floor_a_p50_us")]
        if fl:
            f["floor_a_p50_us"] = statistics.median(fl)
        fi = [r["floor_i_p50_us"] for r in results if r.get("phase") == "election-floor" and r.get("server") == server
              and r.get("floor_i_p50_us")]
        if fi:
            f["floor_i_p50_us"] = statistics.median(fi)
        if f:
            fig[server] = f
    kills = {}
    for r in results:
        if r.get("phase") == "election-kill":
            kills.setdefault(str(r["session_timeout_ms"]), {}).setdefault(r["impl"], []).append(round(r["failover_ms"], 1))
    if kills:
        fig["kill_ms"] = kills
    return fig


def targets(fig):
    """zklock's resign p50 at most half each peer's and at most 1.3x the C client's floor after the
    same idle, on each server."""
    out = []
    for server in ("default", "nosync"):
        f = fig.get(server, {})
        z = f.get("zklock")
        if z and f.get("celection"):
            value = z["p50_us"] / f["celection"]["p50_us"]
            out.append({"target": "election resign p50 / the C client's election recipe after the same idle (%s)"
                                  % server, "value": round(value, 3), "limit": 1.3, "at_most": True,
                        "met": value <= 1.3})
        for peer, name in (("curator", "Curator's"), ("kazoo", "kazoo's")):
            if z and f.get(peer):
                value = z["p50_us"] / f[peer]["p50_us"]
                out.append({"target": "election resign p50 / %s (%s)" % (name, server), "value": round(value, 3),
                            "limit": 0.5, "at_most": True, "met": value <= 0.5})
        if z and f.get("floor_i_p50_us") and not f.get("celection"):  # the older target, without the recipe
            value = z["p50_us"] / f["floor_i_p50_us"]
            out.append({"target": "election resign p50 / C floor after the same idle (%s)" % server,
                        "value": round(value, 3), "limit": 1.3, "at_most": True, "met": value <= 1.3})
    return out


def summary(results, src=None):
    if not any(r.get("phase", "").startswith("election") for r in results):
        return []
    fig = figures(results, src)
    lines = ["election: %d candidates in one process per implementation, each leader holds %d ms then resigns "
             "and campaigns again; resign -> the next leader's code, all rounds pooled (server tickTime %d ms, "
             "session timeout %d ms)" % (ELECTION["candidates"], ELECTION["hold_ms"], ELECTION["tick_ms"],
                                          ELECTION["session_timeout_ms"])]
    for server in ("default", "nosync"):
        f = fig.get(server)
        if not f or "zklock" not in f:
            continue
        z = f["zklock"]
        lines.append("server=%s%s" % (server, "" if server == "default" else " (forceSync=no)"))
        lines.append("%-9s %10s %10s %10s %8s | %8s %8s" % ("impl", "p50", "p90", "p99", "samples", "zk/p50", "zk/p99"))
        for impl in ELECTION_IMPLS:
            r = f.get(impl)
            if r:
                lines.append("%-9s %8.0fus %8.0fus %8.0fus %8d | %8s %8s" % (
                    impl, r["p50_us"], r["p90_us"], r["p99_us"], r["samples"], ratio(z["p50_us"], r["p50_us"]),
                    ratio(z["p99_us"], r["p99_us"])))
        if f.get("zklock_mutex_handoff_p50_us"):
            lines.append("  zklock mutex handoff p50 (same runs, same protocol): %.0f us; election / mutex: %s" % (
                f["zklock_mutex_handoff_p50_us"], ratio(z["p50_us"], f["zklock_mutex_handoff_p50_us"]).strip()))
        if f.get("floor_a_p50_us"):
            lines.append("  C client floor, a watched node's delete -> its event, p50: %.0f us; zklock / floor: %s" % (
                f["floor_a_p50_us"], ratio(z["p50_us"], f["floor_a_p50_us"]).strip()))
        if f.get("floor_i_p50_us"):
            lines.append("  C client floor after %d ms idle (as each resign here), delete -> event, p50: %.0f us; "
                         "zklock / floor: %s" % (ELECTION["hold_ms"], f["floor_i_p50_us"],
                                                 ratio(z["p50_us"], f["floor_i_p50_us"]).strip()))
        if f.get("zklock_requests_per_term"):
            lines.append("  requests per term: zklock %.2f%s" % (
                f["zklock_requests_per_term"], ", the C client's election recipe %.2f" % f["celection_requests_per_term"]
                if f.get("celection_requests_per_term") else ""))
        for peer in ("curator", "kazoo", "celection"):
            rr = per_round(results, server, peer, "failover_p50_us", "failover_p50_us", "election-resign")
            if rr:
                lines.append("  per round, zklock p50 / %-9s %s" % (peer + "'s:", " ".join("%.2f" % x for x in rr)))
    t = targets(fig)
    if t:
        lines.append(targets_line("election targets: ", t))
    kills = fig.get("kill_ms")
    if kills:
        lines.append("kill -9 of the leader's process -> the next leader's code, ms (bound: session timeout + tickTime "
                     "%d ms; each sample its own pair of processes)" % ELECTION["tick_ms"])
        for t in sorted(kills, key=int):
            for impl in ELECTION_IMPLS:
                v = kills[t].get(impl)
                if v:
                    lines.append("  timeout %5s ms %-8s %s  (median %.0f, max %.0f; bound %d)" % (
                        t, impl, " ".join("%.0f" % x for x in v), statistics.median(v), max(v),
                        int(t) + ELECTION["tick_ms"]))
    lines.append("")
    return lines


def plot(results, out, src=None):
    """election_resign_cdf.png (every resign sample, per implementation and server) and
    election_kill.png (every kill -9 sample against the session timeout, with the bound)."""
    if not shutil.which("gnuplot") or not any(r.get("phase", "").startswith("election") for r in results):
        return
    src = src or out
    data = os.path.join(out, "plotdata")
    os.makedirs(data, exist_ok=True)
    panels = []  # one CDF panel per server
    for server in ("default", "nosync"):
        plots = []
        for i, impl in enumerate(ELECTION_IMPLS):
            v = pooled(results, server, impl, src=src)
            if not v:
                continue
            fn = os.path.join(data, "election-resign-%s-%s.dat" % (server, impl))
            with open(fn, "w") as f:
                f.writelines("%f %f\n" % (x, (k + 1) / len(v)) for k, x in enumerate(v))
            plots.append('"%s" using 1:2 with lines lw 2 lc %d title "%s"' % (fn, i + 1, impl))
        if plots:
            panels += ['set title "%s server"' % ("default" if server == "default" else "forceSync=no"),
                       "plot " + ", ".join(plots)]
    script = ['set terminal png size 900,600', 'set grid']
    if panels:
        script += ['set terminal png size 1400,600', 'set output "%s"' % os.path.join(out, "election_resign_cdf.png"),
                   'set multiplot layout 1,%d title "Election failover on resign: resign -> the next leader\'s code '
                   '(%d candidates, all rounds)"' % (len(panels) // 2, ELECTION["candidates"]),
                   'set logscale x', 'set xlabel "failover (us)"', 'set ylabel "fraction"', 'set key bottom right'] + panels + [
                   'unset multiplot', 'set terminal png size 900,600']
    kills = [r for r in results if r.get("phase") == "election-kill"]
    if kills:
        plots = []
        for i, impl in enumerate(ELECTION_IMPLS):
            rows = [r for r in kills if r["impl"] == impl]
            if not rows:
                continue
            fn = os.path.join(data, "election-kill-%s.dat" % impl)
            with open(fn, "w") as f:  # a small offset per implementation keeps the points apart
                f.writelines("%f %f\n" % (r["session_timeout_ms"] / 1000 + (i - 1) * 0.12, r["failover_ms"] / 1000)
                             for r in rows)
            plots.append('"%s" using 1:2 with points pt 7 ps 1.5 lc %d title "%s"' % (fn, i + 1, impl))
        fn = os.path.join(data, "election-kill-bound.dat")
        with open(fn, "w") as f:
            f.writelines("%f %f\n" % (t / 1000, (t + ELECTION["tick_ms"]) / 1000)
                         for t in sorted({r["session_timeout_ms"] for r in kills}))
        plots.append('"%s" using 1:2 with linespoints dt 2 lc rgb "black" title "bound: session timeout + tickTime"' % fn)
        script += ['set output "%s"' % os.path.join(out, "election_kill.png"),
                   'set title "Election failover after kill -9 of the leader\'s process"', 'unset logscale x',
                   'set xrange [%f:%f]' % (min(r["session_timeout_ms"] for r in kills) / 1000 - 1,
                                           max(r["session_timeout_ms"] for r in kills) / 1000 + 1),
                   'set yrange [0:*]', 'set xlabel "session timeout (s)"',
                   'set ylabel "kill -> the next leader\'s code (s)"', 'set key below', "plot " + ", ".join(plots)]
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=False)

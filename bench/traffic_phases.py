"""scripts/bench's server-traffic phases: --kinds busy-process, distinct-keys, requeue.

  busy-process   zklock-bench --kind busy-process (bench/busy_process.cpp): 1,000 coroutines of
                 one busy process plus 8 other processes on one path; plain mutex, local queue
                 fair (max_local_handoffs=1), local queue max 8, Curator (1,000 threads, one
                 client); once with the other processes contending back to back, once with each
                 pausing --busy-think-us between its acquisitions.
  distinct-keys  C = 1, 16, 64, 256, 1024 coroutines/threads of ONE session, each its own
                 uncontended lock path: zklock, Curator, kazoo (C <= --kazoo-max) and the raw C
                 client pipelined (zklock-cdistinct); throughput, CPU per acquisition, and the
                 server's writes/s (srvr's zxid, sampled every 0.25 s while each program runs).
  requeue        the fairness re-queue: delete + create as two round trips vs one multi
                 (zklock-cdistinct --mode requeue).

Each phase starts its own throwaway server (default settings). run() returns the records for
results.json; summary() the table lines; plot() the PNGs."""
import os
import statistics
import subprocess
import threading
import time

import bench_common

KINDS = ["busy-process", "distinct-keys", "requeue"]
DK_IMPLS = ["cfloor", "zklock", "curator", "kazoo"]
VARIANTS = ["plain", "fair", "max8", "curator"]


def zxid(connect):
    for line in bench_common.four_letter(connect, "srvr").splitlines():
        if line.startswith("Zxid:"):
            return int(line.split()[1], 16) & 0xffffffff
    return None


class WriteRate:
    """Samples the server's zxid while a program runs: the peak writes/s over 1 s windows and
    the writes in all."""

    def __init__(self, connect):
        self.connect, self.samples, self.stop = connect, [], threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), zxid(self.connect)))
            except OSError:
                pass
            self.stop.wait(0.25)

    def __enter__(self):
        self.samples.append((time.monotonic(), zxid(self.connect)))
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.samples.append((time.monotonic(), zxid(self.connect)))

    def peak(self):
        """The most writes/s over 1 s (over the whole run when shorter)."""
        (ta, za), (tb, zb) = self.samples[0], self.samples[-1]
        best = (zb - za) / (tb - ta) if tb > ta else 0.0
        for i, (t0, z0) in enumerate(self.samples):
            for t1, z1 in self.samples[i + 1:]:
                if t1 - t0 >= 1.0:
                    best = max(best, (z1 - z0) / (t1 - t0))
                    break
        return best

    def total(self):
        return self.samples[-1][1] - self.samples[0][1]


def cycles_for(c, quick):
    target = 600 if quick else 3000
    return max(2, min(100 if quick else 300, target // c))


def run(kinds, root, build, out, quick, log, phase, run_cmd, settings):
    """Runs the phases in kinds; returns their records."""
    results = []
    bench = os.path.join(build, "bench/zklock-bench")
    cdist = os.path.join(build, "bench/zklock-cdistinct")
    curator = os.path.join(root, "bench/peers/curator/run.sh")
    kazoo = os.path.join(root, "bench/peers/kazoo/run.sh")
    cmd = {"zklock": [bench, "--kind", "distinct-keys"], "cfloor": [cdist],
           "curator": ["sh", curator, "--kind", "distinct-keys"], "kazoo": ["sh", kazoo, "--kind", "distinct-keys"]}
    n = [0]

    def server(name):
        with phase("server %s: start" % name):
            return bench_common.Server(os.path.join(root, "scripts"), "zklock-bench-%s-" % name)

    if "distinct-keys" in kinds:
        srv = server("distinct-keys")
        try:
            log("  warm-up (not recorded)")
            for impl in DK_IMPLS:
                n[0] += 1
                with phase("distinct-keys warm-up %s" % impl):
                    run_cmd(cmd[impl] + ["--connect", srv.connect, "--path", "/dk/w%d" % n[0], "--contenders", "16",
                                         "--cycles", "20" if quick else "60"], 300)
            for rnd in range(settings["dk_rounds"]):
                for c in settings["dk_sweep"]:
                    order = DK_IMPLS[rnd % 4:] + DK_IMPLS[:rnd % 4]
                    for impl in order:
                        if impl == "kazoo" and c > settings["kazoo_max"]:
                            continue
                        n[0] += 1
                        cyc = cycles_for(c, quick)
                        with phase("distinct-keys round %d %s C=%d x %d cycles" % (rnd + 1, impl, c, cyc)):
                            with WriteRate(srv.connect) as w:
                                r = run_cmd(cmd[impl] + ["--connect", srv.connect, "--path", "/dk/r%d" % n[0],
                                                         "--contenders", str(c), "--cycles", str(cyc)],
                                            900 if c >= 256 else 300)
                        # every key's warm-up cycle and the session's create/close are in the window too
                        acq = r["acquisitions"] + c
                        r.update({"phase": "distinct-keys", "round": rnd, "server_peak_writes_per_s": round(w.peak(), 1),
                                  "server_writes_per_acq": round(w.total() / acq, 3)})
                        results.append(r)
                        log("    -> %s C=%d %.0f acq/s, cpu %.1f us/acq, server peak %.0f writes/s" % (
                            impl, c, r["throughput"], r["cpu_us_per_acq"], w.peak()))
        finally:
            with phase("server distinct-keys: stop"):
                srv.stop()

    if "requeue" in kinds:
        srv = server("requeue")
        try:
            with phase("requeue: delete + create vs multi(delete, create)"):
                r = run_cmd([cdist, "--mode", "requeue", "--connect", srv.connect, "--path", "/rq",
                             "--cycles", "200" if quick else "1000"], 300)
            r["phase"] = "requeue"
            results.append(r)
        finally:
            with phase("server requeue: stop"):
                srv.stop()

    if "busy-process" in kinds:
        srv = server("busy-process")
        try:
            for think in settings["busy_think_us"]:
                n[0] += 1
                label = "busy-process %d coroutines x %d, %d others, think %d us" % (
                    settings["busy_coroutines"], settings["busy_cycles"], settings["busy_others"], think)
                with phase(label):
                    r = run_cmd([bench, "--kind", "busy-process", "--connect", srv.connect, "--path", "/busy/r%d" % n[0],
                                 "--coroutines", str(settings["busy_coroutines"]), "--cycles", str(settings["busy_cycles"]),
                                 "--others", str(settings["busy_others"]), "--other-think-us", str(think),
                                 "--variants", ",".join(VARIANTS), "--curator-cmd", "sh " + curator], 1800)
                r["phase"] = "busy-process"
                results.append(r)
        finally:
            with phase("server busy-process: stop"):
                srv.stop()
    return results


def us(v):
    return "-" if v is None else "%.0f" % v


def dk_median(results, impl, c, key):
    vals = [r[key] for r in results if r.get("phase") == "distinct-keys" and r.get("impl") == impl
            and r.get("concurrency") == c and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def targets(results):
    out = []
    for c in sorted({r["concurrency"] for r in results if r.get("phase") == "distinct-keys"}):
        z = dk_median(results, "zklock", c, "throughput")
        zc = dk_median(results, "zklock", c, "cpu_us_per_acq")
        raw = dk_median(results, "cfloor", c, "throughput")
        if z and raw:
            out.append({"target": "distinct-keys C=%d throughput / the raw C client's" % c, "value": round(z / raw, 2),
                        "limit": 1.0, "at_most": False, "met": z / raw >= 1.0})
        for peer in ("curator", "kazoo"):
            p, pc = dk_median(results, peer, c, "throughput"), dk_median(results, peer, c, "cpu_us_per_acq")
            if z and p:
                out.append({"target": "distinct-keys C=%d throughput / %s's" % (c, peer), "value": round(z / p, 2),
                            "limit": 2.0, "at_most": False, "met": z / p >= 2.0})
            if zc and pc:
                out.append({"target": "distinct-keys C=%d CPU/acq / %s's" % (c, peer), "value": round(zc / pc, 3),
                            "limit": 0.2, "at_most": True, "met": zc / pc <= 0.2})
    for r in results:
        if r.get("phase") != "busy-process":
            continue
        t = int(r.get("other_think_us") or 0)
        for v in ("fair", "max8"):
            p50 = r.get(v + "_local_handoff_p50_us")
            if p50 is not None:
                out.append({"target": "busy-process think %d us: %s local handoff p50 (us)" % (t, v), "value": p50,
                            "limit": 50, "at_most": True, "met": p50 <= 50})
            ratio = r.get(v + "_throughput_over_plain")
            if ratio is not None:
                out.append({"target": "busy-process think %d us: %s busy throughput / plain's" % (t, v), "value": ratio,
                            "limit": 10, "at_most": False, "met": ratio >= 10})
            # from the poller's first sight of the other's node when the run has it (the bound
            # holds from when the node is on the server), else from the other's request
            g, bound = r.get(v + "_max_busy_grants_after_seen"), r.get(v + "_max_local_handoffs")
            seen = g is not None and g >= 0
            if not seen:
                g = r.get(v + "_max_busy_grants_in_wait")
            if g is not None and bound:
                out.append({"target": "busy-process think %d us: %s busy grants during an other's wait%s" % (
                    t, v, " (its node seen)" if seen else ""),
                            "value": g, "limit": bound, "at_most": True, "met": g <= bound})
    return out


def summary(results):
    lines = []
    dk = [r for r in results if r.get("phase") == "distinct-keys"]
    if dk:
        rounds = len({r["round"] for r in dk})
        lines.append("distinct keys, one session (default server): C coroutines/threads, each its own uncontended "
                     "lock path; median of %d round(s)" % rounds)
        lines.append("%6s %-8s %10s %10s %9s %10s %10s %12s | %8s %8s %9s %9s" % (
            "C", "impl", "acq/s", "cpu_us/acq", "req/acq", "cycle_p50", "cycle_p99", "srv_writes/s",
            "zk/cur", "zk/kaz", "zk/floor", "cpu/cur"))
        for c in sorted({r["concurrency"] for r in dk}):
            z = dk_median(results, "zklock", c, "throughput")
            for impl in DK_IMPLS:
                t = dk_median(results, impl, c, "throughput")
                if t is None:
                    continue
                rq = dk_median(results, impl, c, "requests_per_acq")
                zc, cc, kc, fc = (dk_median(results, i, c, "throughput") for i in ("zklock", "curator", "kazoo", "cfloor"))
                zcpu, ccpu = dk_median(results, "zklock", c, "cpu_us_per_acq"), dk_median(results, "curator", c, "cpu_us_per_acq")
                rat = lambda a, b: "%8.2f" % (a / b) if a and b else "       -"
                lines.append("%6d %-8s %10.0f %10.1f %9s %10s %10s %12.0f | %s %s %9s %9s" % (
                    c, impl, t, dk_median(results, impl, c, "cpu_us_per_acq"), "-" if rq is None else "%.2f" % rq,
                    us(dk_median(results, impl, c, "cycle_p50_us")), us(dk_median(results, impl, c, "cycle_p99_us")),
                    dk_median(results, impl, c, "server_peak_writes_per_s") or 0,
                    rat(zc, cc) if impl == "zklock" else "        ", rat(zc, kc) if impl == "zklock" else "        ",
                    rat(zc, fc).strip() if impl == "zklock" else "", rat(zcpu, ccpu).strip() if impl == "zklock" else ""))
        lines.append("  (req/acq: the session's requests per acquisition where the program counts them; srv_writes/s: "
                     "the server's peak over 1 s (the run's mean when shorter), from srvr's zxid sampled every 0.25 s; it includes the program's connect and warm-up)")
        lines.append("")
    for r in results:
        if r.get("phase") == "requeue":
            lines.append("fairness re-queue (raw C client, %d each): delete, reply, create + list p50 %.0f us (p99 %.0f); "
                         "multi(delete, create) + list p50 %.0f us (p99 %.0f); multi/seq %.2f" % (
                             r["cycles"], r["seq_p50_us"], r["seq_p99_us"], r["multi_p50_us"], r["multi_p99_us"],
                             r["multi_over_seq_p50"]))
            lines.append("")
    for r in results:
        if r.get("phase") != "busy-process":
            continue
        lines.append("same key, one busy process: %d coroutines x %d cycles + %d other processes (plain mutex, "
                     "a session each), others pause %d us between acquisitions" % (
                         r["coroutines"], r["cycles"], r["others"], r.get("other_think_us") or 0))
        lines.append("%-8s %9s %9s %9s %10s %9s %8s %8s %9s %6s %10s %10s %6s %5s" % (
            "variant", "local_p50", "local_p99", "cross_p50", "busy_acq/s", "x_plain", "req/acq", "wr/acq", "busy_cpu",
            "nodes", "other_max", "other_p99", "grants", "bound"))
        for v in VARIANTS:
            if r.get(v + "_busy_throughput") is None:
                continue
            g = lambda k: r.get("%s_%s" % (v, k))
            lines.append("%-8s %9s %9s %9s %10.0f %9s %8.2f %8.2f %9.1f %6d %9.1fms %9.1fms %6d %5s" % (
                v, us(g("local_handoff_p50_us")), us(g("local_handoff_p99_us")), us(g("cross_handoff_p50_us")),
                g("busy_throughput"), "-" if g("throughput_over_plain") is None else "%.2f" % g("throughput_over_plain"),
                g("busy_requests_per_acq") or 0, g("busy_writes_per_acq") or 0, g("busy_cpu_us_per_acq") or 0,
                g("most_nodes") or 0, g("other_wait_max_ms") or 0, g("other_wait_p99_ms") or 0,
                g("max_busy_grants_in_wait") or 0, str(int(g("max_local_handoffs"))) if g("max_local_handoffs") else "-"))
        lines.append("  (local: handoff between two coroutines/threads of the busy process; cross: between processes; "
                     "req/acq, wr/acq: the busy process's requests and server writes per acquisition; grants: most "
                     "busy-process grants during one wait of another process; bound: max_local_handoffs)")
        lines.append("")
    t = targets(results)
    if t:
        lines.append("server-traffic targets: " + "; ".join("%s %s (%s %s: %s)" % (
            x["target"], x["value"], "<=" if x["at_most"] else ">=", x["limit"], "met" if x["met"] else "NOT met") for x in t))
        lines.append("")
    return lines


def plot(results, out):
    """distinct_keys_throughput.png, distinct_keys_cpu.png, busy_process.png (gnuplot)."""
    import shutil
    if not shutil.which("gnuplot"):
        return
    data = os.path.join(out, "plotdata")
    os.makedirs(data, exist_ok=True)
    script = ['set terminal png size 900,600', 'set grid']
    cs = sorted({r["concurrency"] for r in results if r.get("phase") == "distinct-keys"})
    for key, fname, ylabel, extra in (("throughput", "distinct_keys_throughput.png", "acquisitions/s", "unset logscale y"),
                                      ("cpu_us_per_acq", "distinct_keys_cpu.png", "CPU us per acquisition (log)",
                                       "set logscale y")):
        plots = []
        for impl in DK_IMPLS:
            rows = [(c, dk_median(results, impl, c, key)) for c in cs]
            rows = [x for x in rows if x[1] is not None]
            if not rows:
                continue
            fn = os.path.join(data, "dk-%s-%s.dat" % (key, impl))
            with open(fn, "w") as f:
                f.writelines("%d %f\n" % x for x in rows)
            plots.append('"%s" using 1:2 with linespoints lw 2 title "%s"' % (fn, "raw C client (pipelined)" if impl == "cfloor" else impl))
        if plots:
            script += ['set output "%s"' % os.path.join(out, fname),
                       'set title "Distinct keys, one session: %s against concurrency (default server)"' % ylabel,
                       'set logscale x 2', extra, 'set xlabel "concurrent acquirers (coroutines / threads)"',
                       'set ylabel "%s"' % ylabel, 'set key below', "plot " + ", ".join(plots)]
    busy = [r for r in results if r.get("phase") == "busy-process"]
    if busy:
        fn = os.path.join(data, "busy.dat")
        with open(fn, "w") as f:
            f.write("variant " + " ".join('"think %dus"' % int(r.get("other_think_us") or 0) for r in busy) + "\n")
            for v in VARIANTS:
                f.write("%s %s\n" % (v, " ".join("%f" % (r.get(v + "_busy_throughput") or 0) for r in busy)))
        fn2 = os.path.join(data, "busy-wait.dat")
        with open(fn2, "w") as f:
            f.write("variant " + " ".join('"think %dus"' % int(r.get("other_think_us") or 0) for r in busy) + "\n")
            for v in VARIANTS:
                f.write("%s %s\n" % (v, " ".join("%f" % (r.get(v + "_other_wait_max_ms") or 0) for r in busy)))
        script += ['set output "%s"' % os.path.join(out, "busy_process.png"), 'set terminal png size 1200,500',
                   'set multiplot layout 1,2', 'unset logscale', 'set logscale y', 'set style data histograms',
                   'set style fill solid 0.8 border -1', 'set key top left', 'set xlabel ""',
                   'set title "busy process throughput (acq/s, log)"', 'set ylabel "acq/s"',
                   'plot ' + ", ".join('"%s" using %d:xtic(1) title columnheader(%d)' % (fn, i + 2, i + 2) for i in range(len(busy))),
                   'set title "other processes: longest wait (ms, log)"', 'set ylabel "ms"',
                   'plot ' + ", ".join('"%s" using %d:xtic(1) title columnheader(%d)' % (fn2, i + 2, i + 2) for i in range(len(busy))),
                   'unset multiplot']
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=False)

"""scripts/bench's tables and plots of the mutex and the recipes: the head-to-head medians, the
ratios to each peer and the floor, the targets, the sweeps (summary() and recipe_summary() give
the table's lines, plot() the PNGs), and the helpers the election's table shares (ratio,
per_round, targets_line)."""
import os
import shutil
import statistics
import subprocess

from bench_run import log
from contention_phases import READ_SWEEP_HOLD_US, RECIPE_IMPLS


def machine_line(doc):
    m = doc["machine"]
    return "%s, %s; %s cores, kernel %s, %s; ZooKeeper %s%s\n\n" % (
        doc["date"], "quick" if doc["quick"] else "full", m["cores"], m["kernel"], m["os"], m["zookeeper"],
        "; cpu " + m["cpu"] if m["cpu"] != "?" else "")


METRICS = ["handoff_p50_us", "handoff_p90_us", "handoff_p99_us", "handoff_p999_us", "handoff_max_us", "throughput",
           "solo_cycle_us", "floor_a_p50_us", "floor_a_p99_us", "floor_b_p50_us", "floor_m_p50_us", "floor_c_p50_us",
           "requests_per_acq", "wakeups_per_release", "threads", "rss_kb", "cpu_us_per_acq"]


RECIPE_METRICS = ["read_handoff_p50_us", "read_handoff_p99_us", "write_handoff_p50_us", "write_handoff_p99_us",
                  "read_throughput", "write_throughput", "max_readers_inside", "max_inside"]


def h2h(results, server, impl, phase="h2h"):
    """Medians over the head-to-head rounds (of the mutex, or phase) of one implementation on one server."""
    rows = [r for r in results if r.get("server") == server and r.get("impl") == impl and r.get("phase") == phase]
    if not rows:
        return None
    m = {"rounds": len(rows), "rows": rows}
    for k in METRICS + RECIPE_METRICS:
        vals = [r[k] for r in rows if r.get(k) is not None]
        if vals:
            m[k] = statistics.median(vals)
    return m


def per_round(results, server, impl, key, peer_key, phase="h2h", of="zklock"):
    """zklock's (or the implementation of's) figure over a peer's, each ratio taken within one round."""
    out = []
    z = {r["round"]: r for r in results if r.get("server") == server and r.get("impl") == of and r.get("phase") == phase}
    for r in results:
        if r.get("server") == server and r.get("impl") == impl and r.get("phase") == phase and r["round"] in z:
            a, b = z[r["round"]].get(key), r.get(peer_key)
            if a is not None and b:
                out.append(a / b)
    return out


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "   n/a"
    return "%6.2f" % (a / b)


def targets(results):
    """The issue's targets on the default server, from the medians of the head-to-head rounds."""
    z, c, k, f = (h2h(results, "default", i) for i in ("zklock", "curator", "kazoo", "cfloor"))
    if not z:
        return []
    out = []

    def add(name, a, b, limit, at_most):
        if a is None or not b:
            return
        value = a / b
        out.append({"target": name, "value": round(value, 3), "limit": limit,
                    "met": value <= limit if at_most else value >= limit})
    if f:
        add("handoff p50 / floor (a)", z.get("handoff_p50_us"), f.get("floor_a_p50_us"), 1.2, True)
        add("solo cycle / floor (c)", z.get("solo_cycle_us"), f.get("floor_c_p50_us"), 1.05, True)
    # the handoff p50 at most 0.45x Curator's and 0.4x kazoo's, the throughput at least 2.5x both
    for name, peer, p50_limit in (("Curator", c, 0.45), ("kazoo", k, 0.4)):
        if peer:
            add("handoff p50 / %s's" % name, z.get("handoff_p50_us"), peer.get("handoff_p50_us"), p50_limit, True)
            add("throughput / %s's" % name, z.get("throughput"), peer.get("throughput"), 2.5, False)
    return out


def mutex_floor_ratios(results):
    """Per server, from the head-to-head medians (and per round): zklock's handoff p50 over the raw
    C mutex's (the lock recipe on the C client under the same 8 contenders), the raw C mutex's over
    the floor (a) (one delete -> event on an idle server), zklock's over (a), and the requests per
    acquisition of both: how much of zklock's distance to (a) the contention itself costs."""
    out = []
    for server in ("default", "nosync"):
        z, m, f = (h2h(results, server, i) for i in ("zklock", "cmutex", "cfloor"))
        if not z or not m:
            continue

        def over(a, b):
            return round(a / b, 3) if a is not None and b else None
        fa = f.get("floor_a_p50_us") if f else None
        out.append({"server": server, "zklock_handoff_p50_us": z.get("handoff_p50_us"),
                    "cmutex_handoff_p50_us": m.get("handoff_p50_us"), "floor_a_p50_us": fa,
                    "zklock_p50_over_cmutex_p50": over(z.get("handoff_p50_us"), m.get("handoff_p50_us")),
                    "cmutex_p50_over_floor_a": over(m.get("handoff_p50_us"), fa),
                    "zklock_p50_over_floor_a": over(z.get("handoff_p50_us"), fa),
                    "zklock_throughput_over_cmutex": over(z.get("throughput"), m.get("throughput")),
                    "zklock_requests_per_acq": z.get("requests_per_acq"),
                    "cmutex_requests_per_acq": m.get("requests_per_acq"),
                    "per_round_zklock_p50_over_cmutex_p50": [
                        round(x, 3) for x in per_round(results, server, "cmutex", "handoff_p50_us", "handoff_p50_us")],
                    "per_round_cmutex_p50_over_floor_a": [
                        round(x, 3) for x in per_round(results, server, "cfloor", "handoff_p50_us", "floor_a_p50_us",
                                                       of="cmutex")]})
    return out


# The recipes' targets, as the mutex's: zklock's p50 at most half a peer's, its throughput at least twice.
RECIPE_TARGETS = {"shared-h2h": [("read handoff p50", "read_handoff_p50_us", 0.5, True),
                                 ("write handoff p50", "write_handoff_p50_us", 0.5, True),
                                 ("read throughput", "read_throughput", 2.0, False),
                                 ("write throughput", "write_throughput", 2.0, False)],
                  "semaphore-h2h": [("handoff p50", "handoff_p50_us", 0.5, True),
                                    ("throughput", "throughput", 2.0, False)]}


def recipe_targets(results):
    """The recipes' targets on the default server, from the medians of their head-to-head rounds."""
    out = []
    for phase, goals in RECIPE_TARGETS.items():
        z = h2h(results, "default", "zklock", phase)
        for peer, name in (("curator", "Curator's"), ("kazoo", "kazoo's")):
            p = h2h(results, "default", peer, phase)
            for label, key, limit, at_most in goals:
                if z and p and z.get(key) is not None and p.get(key):
                    value = z[key] / p[key]
                    out.append({"target": "%s %s / %s" % (phase[:-4], label, name), "value": round(value, 3),
                                "limit": limit, "at_most": at_most, "met": value <= limit if at_most else value >= limit})
    return out


def targets_line(title, t):
    return title + "; ".join("%s %.2f (%s %s: %s)" % (
        x["target"], x["value"], "<=" if x.get("at_most", "p50" in x["target"] or "solo" in x["target"]) else ">=",
        x["limit"], "met" if x["met"] else "NOT met") for x in t)


def recipe_summary(results):
    """The shared lock's and the semaphore's head-to-head tables, the read sweep and the targets."""
    lines = []
    sh = next((r for r in results if r.get("phase") == "shared-h2h"), None)
    if sh and h2h(results, "default", "zklock", "shared-h2h"):
        z = h2h(results, "default", "zklock", "shared-h2h")
        lines.append("shared lock (default server), %d readers + %d writers, each holding %s us by a timer or sleep: "
                     "median of %d rounds" % (sh["readers"], sh["writers"], sh.get("hold_us", "?"), z["rounds"]))
        lines.append("%-8s %9s %9s %9s %9s %9s %9s %6s | %8s %8s %8s %8s" % (
            "impl", "read_p50", "read_p99", "write_p50", "write_p99", "reads/s", "writes/s", "max_in",
            "zk/rp50", "zk/wp50", "zk/rtput", "zk/wtput"))
        for impl in RECIPE_IMPLS:
            r = h2h(results, "default", impl, "shared-h2h")
            if r:
                lines.append("%-8s %9s %9s %9s %9s %9.1f %9.1f %6d | %8s %8s %8s %8s" % (
                    impl, us(r.get("read_handoff_p50_us"), "us"), us(r.get("read_handoff_p99_us"), "us"),
                    us(r.get("write_handoff_p50_us"), "us"), us(r.get("write_handoff_p99_us"), "us"), r.get("read_throughput", 0),
                    r.get("write_throughput", 0), r.get("max_readers_inside", 0),
                    ratio(z.get("read_handoff_p50_us"), r.get("read_handoff_p50_us")),
                    ratio(z.get("write_handoff_p50_us"), r.get("write_handoff_p50_us")),
                    ratio(z.get("read_throughput"), r.get("read_throughput")),
                    ratio(z.get("write_throughput"), r.get("write_throughput"))))
        for impl in ("curator", "kazoo"):
            for key, label in (("read_throughput", "reads/s"), ("write_throughput", "writes/s")):
                rr = per_round(results, "default", impl, key, key, "shared-h2h")
                if rr:
                    lines.append("  per round, %-26s %s" % ("zklock %s / %s's:" % (label, impl), " ".join("%.2f" % x for x in rr)))
        lines.append("")
    sem = next((r for r in results if r.get("phase") == "semaphore-h2h"), None)
    if sem and h2h(results, "default", "zklock", "semaphore-h2h"):
        z = h2h(results, "default", "zklock", "semaphore-h2h")
        lines.append("semaphore (default server), %d contenders on %d leases, each holding %s us: median of %d rounds" % (
            sem["contenders"], sem["leases"], sem.get("hold_us", "?"), z["rounds"]))
        lines.append("%-8s %12s %12s %12s %6s | %9s %9s" % ("impl", "handoff_p50", "handoff_p99", "acq/s", "max_in",
                                                            "zk/p50", "zk/tput"))
        for impl in RECIPE_IMPLS:
            r = h2h(results, "default", impl, "semaphore-h2h")
            if r:
                lines.append("%-8s %12s %12s %12.1f %6d | %9s %9s" % (
                    impl, us(r.get("handoff_p50_us"), "us"), us(r.get("handoff_p99_us"), "us"), r.get("throughput", 0),
                    r.get("max_inside", 0), ratio(z.get("handoff_p50_us"), r.get("handoff_p50_us")),
                    ratio(z.get("throughput"), r.get("throughput"))))
        for impl in ("curator", "kazoo"):
            rr = per_round(results, "default", impl, "throughput", "throughput", "semaphore-h2h")
            if rr:
                lines.append("  per round, %-26s %s" % ("zklock acq/s / %s's:" % impl, " ".join("%.2f" % x for x in rr)))
        lines.append("")
    t = recipe_targets(results)
    if t:
        lines.append(targets_line("recipe targets (default server; ratios of the medians): ", t))
        lines.append("")
    sweep = [r for r in results if r.get("phase") == "read-sweep"]
    if sweep:
        lines.append("read sweep (default server, no writer, each read held %s us): readers, reads/s (max readers "
                     "inside together) per implementation" % sweep[0].get("hold_us", "?"))
        lines.append("  %7s" % "readers" + "".join("%20s" % i for i in RECIPE_IMPLS))
        for n in sorted({r["readers"] for r in sweep}):
            cells = []
            for impl in RECIPE_IMPLS:
                r = next((r for r in sweep if r["impl"] == impl and r["readers"] == n), None)
                cells.append("%20s" % ("%.1f (%d)" % (r["read_throughput"], r["max_readers_inside"]) if r else "-"))
            lines.append("  %7d" % n + "".join(cells))
        lines.append("")
    return lines


def summary(results):
    lines = []
    for server in ("default", "nosync"):
        z = h2h(results, server, "zklock")
        if not z:
            continue
        lines.append("server=%s, 8 contenders: median of %d rounds (each round runs every implementation once)" % (
            server, z["rounds"]))
        lines.append("%-8s %12s %12s %12s %12s | %9s %9s %9s" % (
            "impl", "handoff_p50", "handoff_p99", "acq/s", "solo_cycle", "zk/p50", "zk/tput", "zk/solo"))
        for impl in ("zklock", "curator", "kazoo"):
            r = h2h(results, server, impl)
            if not r:
                continue
            lines.append("%-8s %10.0fus %10.0fus %12.1f %10.0fus | %9s %9s %9s" % (
                impl, r.get("handoff_p50_us", 0), r.get("handoff_p99_us", 0), r.get("throughput", 0),
                r.get("solo_cycle_us", 0), ratio(z["handoff_p50_us"], r.get("handoff_p50_us")),
                ratio(z["throughput"], r.get("throughput")), ratio(z["solo_cycle_us"], r.get("solo_cycle_us"))))
        floor = h2h(results, server, "cfloor")
        if floor and floor.get("floor_a_p50_us") and floor.get("floor_c_p50_us"):
            lines.append("%-8s %10.0fus %10.0fus %12s %10.0fus | %9s %9s %9s   (a: delete->event; c: create+list, delete)" % (
                "cfloor", floor["floor_a_p50_us"], floor.get("floor_a_p99_us") or 0, "-", floor["floor_c_p50_us"],
                ratio(z["handoff_p50_us"], floor["floor_a_p50_us"]), "", ratio(z["solo_cycle_us"], floor["floor_c_p50_us"])))
            lines.append("%-8s %10.0fus   (b: delete->event->get_children)" % ("", floor.get("floor_b_p50_us", 0)))
            if floor.get("floor_m_p50_us"):
                lines.append("%-8s %10.0fus   (m: zklock's release, multi(setData, delete)->changed event)" % (
                    "", floor["floor_m_p50_us"]))
        m = h2h(results, server, "cmutex")
        if m and m.get("handoff_p50_us") is not None:
            lines.append("%-8s %10.0fus %10.0fus %12.1f %12s | %9s %9s %9s   (raw C mutex, 8 contenders: create, list, "
                         "exists on the nearest two blockers, the grant once the listing's last is gone, delete)" % (
                             "cmutex", m["handoff_p50_us"], m.get("handoff_p99_us") or 0, m.get("throughput") or 0, "-",
                             ratio(z["handoff_p50_us"], m["handoff_p50_us"]), ratio(z["throughput"], m.get("throughput")),
                             ""))
        for x in mutex_floor_ratios(results):
            if x["server"] != server:
                continue
            lines.append("  handoff p50: zklock / raw C mutex %s, raw C mutex / floor (a) %s, zklock / floor (a) %s; "
                         "requests/acq: zklock %s, raw C mutex %s" % tuple(
                             "%.2f" % v if v is not None else "n/a" for v in (
                                 x["zklock_p50_over_cmutex_p50"], x["cmutex_p50_over_floor_a"], x["zklock_p50_over_floor_a"],
                                 x["zklock_requests_per_acq"], x["cmutex_requests_per_acq"])))
        for impl, key, peer_key, label in (("cfloor", "handoff_p50_us", "floor_a_p50_us", "zklock p50 / floor (a)"),
                                           ("curator", "handoff_p50_us", "handoff_p50_us", "zklock p50 / Curator's"),
                                           ("kazoo", "handoff_p50_us", "handoff_p50_us", "zklock p50 / kazoo's"),
                                           ("curator", "throughput", "throughput", "zklock acq/s / Curator's"),
                                           ("kazoo", "throughput", "throughput", "zklock acq/s / kazoo's")):
            rr = per_round(results, server, impl, key, peer_key)
            if rr:
                lines.append("  per round, %-26s %s" % (label + ":", " ".join("%.2f" % x for x in rr)))
        for of, impl, key, peer_key, label in (
                ("zklock", "cmutex", "handoff_p50_us", "handoff_p50_us", "zklock p50 / raw C mutex's"),
                ("cmutex", "cfloor", "handoff_p50_us", "floor_a_p50_us", "raw C mutex p50 / floor (a)")):
            rr = per_round(results, server, impl, key, peer_key, of=of)
            if rr:
                lines.append("  per round, %-26s %s" % (label + ":", " ".join("%.2f" % x for x in rr)))
        lines.append("")
    t = targets(results)
    if t:
        lines.append(targets_line("targets (default server; each a ratio of the implementations' medians): ", t))
        lines.append("")
    lines += recipe_summary(results)
    if any(r.get("impl") == "zklock" and r.get("phase") == "sweep" for r in results):
        lines.append("zklock sweep (default server): contenders, acq/s, handoff p50/p99 us, requests/acq, wake-ups/release, threads")
    for r in sorted((r for r in results if r.get("impl") == "zklock" and r.get("server") == "default"
                     and r.get("phase") == "sweep"), key=lambda r: r["contenders"]):
        lines.append("  %5d %10.1f %10s %10s %8.2f %8.2f %4d" % (
            r["contenders"], r["throughput"], us(r["handoff_p50_us"]), us(r["handoff_p99_us"]),
            r["requests_per_acq"], r["wakeups_per_release"], r["threads"]))
    if any(r.get("phase") == "sweep" and r.get("contenders") == 8 for r in results):
        lines.append("  (the sweep's row at 8 is a run of its own; the head-to-head table and the plots at 8 "
                     "show the rounds' medians)")
    for r in results:
        if r.get("phase") == "pending":
            lines.append("pending waiters: %d on one thread, %d sessions: %.0f bytes each, threads %d -> %d" % (
                r["pending"], r["sessions"], r["bytes_per_waiter"], r["threads_before"], r["threads_pending"]))
    for r in sorted((r for r in results if r.get("impl") in ("curator", "kazoo") and r.get("server") == "default"
                     and (r.get("phase") == "sweep" or (r.get("phase") == "h2h" and r.get("round") == 0))), key=lambda r: (r["contenders"], r["impl"])):
        lines.append("%s at %d contenders: threads %d, rss %d kB" % (r["impl"], r["contenders"], r["threads"], r["rss_kb"]))
    return "\n".join(lines) + "\n"


def us(v, unit=""):
    """A latency in the table, or '-' where there is none (1 contender: no handoffs)."""
    return "-" if v is None else "%.0f%s" % (v, unit)


def plot(results, out, src=None):
    """PNGs into out; the CDF samples are read from the run's directory src (default out)."""
    src = src or out
    if not shutil.which("gnuplot"):
        log("bench: gnuplot missing, no plots")
        return
    data = os.path.join(out, "plotdata")
    os.makedirs(data, exist_ok=True)
    # CDF from every handoff sample of the head-to-head rounds (pooled)
    series = []
    for impl in ("zklock", "curator", "kazoo"):
        rows = [r for r in results if r.get("server") == "default" and r.get("impl") == impl and r.get("phase") == "h2h"]
        vals = sorted(float(x) for r in rows if r.get("cdf_file")
                      for x in open(os.path.join(src, r["cdf_file"])) if x.strip())
        if not vals:
            continue
        fn = os.path.join(data, "cdf-%s.dat" % impl)
        with open(fn, "w") as f:
            for i, v in enumerate(vals):
                f.write("%f %f\n" % (v, (i + 1) / len(vals)))
        series.append((impl, fn))
    script = ['set terminal png size 900,600', 'set grid']
    if series:  # none when only the recipes ran
        script += ['set output "%s"' % os.path.join(out, "handoff_cdf.png"),
                   'set title "Handoff latency CDF, 8 contenders, default server (all head-to-head rounds)"',
                   'set logscale x', 'set xlabel "handoff latency (us)"', 'set ylabel "fraction"', 'set key bottom right']
        script.append("plot " + ", ".join('"%s" using 1:2 with lines lw 2 title "%s"' % (fn, impl) for impl, fn in series))
    for metric, fname, ylabel, yrange in (("throughput", "throughput.png", "acquisitions/s", "set yrange [0:*]"),
                                          ("handoff_p99_us", "p99.png", "handoff p99 (us)", "set autoscale y")):
        plots, medians = [], []
        for impl in ("zklock", "curator", "kazoo"):
            # the sweep, and at 8 contenders the head-to-head median for every implementation alike;
            # no point where there is no figure (1 contender has no handoff, so no p99)
            rows = [r for r in results if r.get("impl") == impl and r.get("server") == "default"
                    and r.get("phase") == "sweep" and r["contenders"] != 8 and r.get(metric) is not None]
            m = h2h(results, "default", impl)
            if m and m.get(metric) is not None:
                rows.append(dict(m, contenders=8))
                medians.append(m[metric])
            rows.sort(key=lambda r: r["contenders"])
            if not rows:
                continue
            fn = os.path.join(data, "%s-%s.dat" % (metric, impl))
            with open(fn, "w") as f:
                for r in rows:
                    f.write("%d %f\n" % (r["contenders"], r[metric]))
            plots.append('"%s" using 1:2 with linespoints lw 2 title "%s"' % (fn, impl))
        # Say which figure at 8 is which: the lines go through the head-to-head medians (the
        # table's), while zklock's sweep also ran 8 contenders once and got its own figure.
        if medians:
            fn = os.path.join(data, "%s-h2h-median.dat" % metric)
            with open(fn, "w") as f:
                f.write("".join("8 %f\n" % v for v in medians))
            plots.append('"%s" using 1:2 with points pt 6 ps 2.5 lc rgb "black" '
                         'title "at 8: median of the head-to-head rounds (as in the table)"' % fn)
        sweep8 = [r for r in results if r.get("impl") == "zklock" and r.get("server") == "default"
                  and r.get("phase") == "sweep" and r["contenders"] == 8 and r.get(metric) is not None]
        if sweep8:
            fn = os.path.join(data, "%s-zklock-sweep-8.dat" % metric)
            with open(fn, "w") as f:
                f.write("8 %f\n" % sweep8[0][metric])
            plots.append('"%s" using 1:2 with points pt 2 ps 2 lc rgb "black" '
                         'title "zklock: the sweep\'s own run at 8 (sweep table; not on the line)"' % fn)
        if not plots:
            continue
        script += ['set output "%s"' % os.path.join(out, fname), 'set title "%s against contenders (default server)"' % ylabel,
                   'set logscale x 2', 'set xrange [1:*]', 'unset logscale y', yrange, 'set xlabel "contenders"', 'set ylabel "%s"' % ylabel,
                   'set key below', "plot " + ", ".join(plots)]
    # the read sweep: readers hold together, so reads/s grows with readers
    plots = []
    for impl in RECIPE_IMPLS:
        rows = sorted((r for r in results if r.get("phase") == "read-sweep" and r.get("impl") == impl
                       and r.get("read_throughput") is not None), key=lambda r: r["readers"])
        if not rows:
            continue
        fn = os.path.join(data, "read-sweep-%s.dat" % impl)
        with open(fn, "w") as f:
            f.writelines("%d %f %d\n" % (r["readers"], r["read_throughput"], r["max_readers_inside"]) for r in rows)
        plots.append('"%s" using 1:2 with linespoints lw 2 title "%s"' % (fn, impl))
    if plots:
        script += ['set output "%s"' % os.path.join(out, "read_throughput.png"),
                   'set title "Shared lock: reads/s against readers (no writer, each read held %d us; default server)"'
                   % READ_SWEEP_HOLD_US, 'set logscale x 2', 'set xrange [*:*]', 'unset logscale y', 'set yrange [0:*]',
                   'set xlabel "readers"', 'set ylabel "read acquisitions/s"', 'set key below', "plot " + ", ".join(plots)]
    subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=False)

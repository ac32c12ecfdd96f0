#!/usr/bin/python3
"""The mutex's K (mutex_options::watched_blockers: how many contenders ahead each waiter watches)
against the handoff, in alternating rounds of one run on one throwaway server (as shipped:
forceSync on), with the C client's delete -> event floor measured in every round.

    python3 bench/watched_blockers_bench.py [--k 1,2,3,4,8] [--rounds 2] [--contenders 8]
                                            [--cycles 60] [--bench build/bench/zklock-bench]
                                            [--cfloor build/bench/zklock-cfloor] [--json FILE]

Per K: the handoff p50/p99 (all rounds' samples pooled) and its ratio to the floor (the median
of the rounds' floor p50), and the medians over the rounds of requests per acquisition, watch
events and wake-ups per release, throughput, and the process's CPU per acquisition. Each round
runs every K once, in a rotating order, so that a drift of the machine's load hits them alike;
progress on stderr. The CPU may be shared: compare the rows of one run, not runs of different
days."""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402
from bench_common import percentile as pct  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(HERE)
    ap.add_argument("--bench", default=os.path.join(root, "build", "bench", "zklock-bench"))
    ap.add_argument("--cfloor", default=os.path.join(root, "build", "bench", "zklock-cfloor"))
    ap.add_argument("--k", default="1,2,3,4,8", help="the values of K, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--contenders", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=60)
    ap.add_argument("--json")
    args = ap.parse_args()
    ks = [int(k) for k in args.k.split(",") if k.strip()]
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    samples = {k: [] for k in ks}
    runs, floors = [], []
    with bench_common.throwaway_server(os.path.join(root, "scripts"), "zklock-watched-") as (connect, work):
        log("server " + connect)
        # the server's JIT: one unrecorded run first
        bench_common.run([args.bench, "--connect", connect, "--path", "/bench/watched/warm", "--contenders",
                          str(args.contenders), "--cycles", str(args.cycles), "--solo-cycles", "10"],
                         echo=False, log=log, numbers=True)
        for r in range(args.rounds):
            order = ks[r % len(ks):] + ks[:r % len(ks)]
            for k in order:
                cdf = os.path.join(work, "cdf-%d-%d.txt" % (k, r))
                kv, got = bench_common.mutex_run(args.bench, connect, "/bench/watched/k%d-%d" % (k, r), args.contenders,
                                                 args.cycles, ["--watched-blockers", str(k)], cdf, log)
                samples[k] += got
                runs.append({"round": r, "k": k, **kv})
                log("  round %d K=%d: handoff p50 %.0f us, %.2f requests/acq, %.2f wake-ups/release" % (
                    r, k, kv.get("handoff_p50_us") or float("nan"), kv.get("requests_per_acq") or float("nan"),
                    kv.get("wakeups_per_release") or float("nan")))
            f = bench_common.run([args.cfloor, "--connect", connect, "--path", "/bench/watched/floor%d" % r,
                                  "--contenders", "2", "--cycles", "200"], echo=False, log=log, numbers=True)
            floors.append(f["floor_a_p50_us"])
            log("  round %d floor (a) p50 %.0f us" % (r, f["floor_a_p50_us"]))
    floor = statistics.median(floors)
    res = {}
    for k in ks:
        rows = [x for x in runs if x["k"] == k]
        med = lambda key: statistics.median(x[key] for x in rows)  # noqa: E731
        res[k] = {"handoffs": len(samples[k]), "p50_us": pct(samples[k], 50), "p99_us": pct(samples[k], 99),
                  "p50_per_floor": pct(samples[k], 50) / floor, "requests_per_acq": med("requests_per_acq"),
                  "watch_events_per_release": med("watch_events_per_release"),
                  "wakeups_per_release": med("wakeups_per_release"), "throughput": med("throughput"),
                  "cpu_us_per_acq": med("cpu_us_per_acq")}
    print("mutex, %d contenders in one process, %d rounds x %d cycles; C client floor (a) p50 %.0f us "
          "(rounds: %s)" % (args.contenders, args.rounds, args.cycles, floor, " ".join("%.0f" % x for x in floors)))
    print("%3s %8s %8s %8s %7s %9s %9s %9s %8s %8s" % ("K", "handoffs", "p50 us", "p99 us", "/floor", "req/acq",
                                                       "events/r", "wakeups/r", "acq/s", "cpu/acq"))
    for k in ks:
        r = res[k]
        print("%3d %8d %8.0f %8.0f %7.2f %9.2f %9.2f %9.2f %8.0f %6.0fus" % (
            k, r["handoffs"], r["p50_us"], r["p99_us"], r["p50_per_floor"], r["requests_per_acq"],
            r["watch_events_per_release"], r["wakeups_per_release"], r["throughput"], r["cpu_us_per_acq"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"contenders": args.contenders, "cycles": args.cycles, "floor_a_p50_us": floor,
                       "floors": floors, "results": res, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

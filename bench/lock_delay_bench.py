#!/usr/bin/python3
"""Lock-delay's cost on a clean release: the mutex handoff (release started -> next holder's
code) with mutex_options::lock_delay off and on, in alternating rounds of one run on one
throwaway server (default settings and forceSync=no is not used: the server as shipped).

    python3 bench/lock_delay_bench.py [--bench build/bench/zklock-bench] [--rounds 4]
                                      [--contenders 8] [--cycles 100] [--lock-delay-ms 1000]
                                      [--json FILE]

With the option on, every handoff reads the releaser's beacon (one exists) before the grant:
one round trip more; a clean release is never delayed by lock_delay itself (the on rounds would
show it: a 1 s delay per handoff). Prints p50/p90/p99 per variant (all rounds' samples pooled)
and the ratio on/off; progress on stderr. The CPU may be shared: compare the two columns of
one run, not runs of different days."""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_common  # noqa: E402


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(HERE)
    ap.add_argument("--bench", default=os.path.join(root, "build", "bench", "zklock-bench"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--contenders", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--lock-delay-ms", type=int, default=1000)
    ap.add_argument("--json")
    args = ap.parse_args()
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    samples = {"off": [], "on": []}
    runs = []
    with bench_common.throwaway_server(os.path.join(root, "scripts"), "zklock-lockdelay-") as (connect, work):
        log("server " + connect)
        for r in range(args.rounds):
            # alternate which goes first, so a drift of the machine's load hits both alike
            order = ["off", "on"] if r % 2 == 0 else ["on", "off"]
            for variant in order:
                cdf = os.path.join(work, "cdf-%s-%d.txt" % (variant, r))
                delay = args.lock_delay_ms if variant == "on" else 0
                kv, got = bench_common.mutex_run(args.bench, connect, "/bench/lockdelay/%s%d" % (variant, r),
                                                 args.contenders, args.cycles, ["--lock-delay-ms", str(delay)], cdf, log)
                samples[variant] += got
                runs.append({"round": r, "variant": variant, **kv})
                log("  round %d %s: handoff p50 %.0f us" % (r, variant, kv.get("handoff_p50_us") or float("nan")))
    res = {}
    for v in ("off", "on"):
        s = samples[v]
        res[v] = {"handoffs": len(s), "p50_us": pct(s, 50), "p90_us": pct(s, 90), "p99_us": pct(s, 99)}
    print("lock-delay (%d ms) on a clean release: mutex handoff, %d contenders, %d rounds x %d cycles"
          % (args.lock_delay_ms, args.contenders, args.rounds, args.cycles))
    print("%-4s %9s %9s %9s %9s" % ("", "handoffs", "p50 us", "p90 us", "p99 us"))
    for v in ("off", "on"):
        r = res[v]
        print("%-4s %9d %9.0f %9.0f %9.0f" % (v, r["handoffs"], r["p50_us"], r["p90_us"], r["p99_us"]))
    print("on/off: p50 x%.2f, p99 x%.2f" % (res["on"]["p50_us"] / res["off"]["p50_us"],
                                            res["on"]["p99_us"] / res["off"]["p99_us"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"lock_delay_ms": args.lock_delay_ms, "contenders": args.contenders, "results": res,
                       "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

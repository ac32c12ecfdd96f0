"""scripts/bench's contention phases (--kinds mutex, shared, semaphore): on a default server and,
for the mutex, a forceSync=no one, every implementation warmed up once, then head to head in
rotating rounds; on the default server zklock's (and the peers') contender sweep, the pending
waiters, the recipes' head-to-head rounds and the read sweep. settings() reads the command line,
run_phases() returns the records for results.json."""
import os

from bench_run import by_mode, impl_cmd, log, phase, run, start_server

# cmutex: the lock recipe on the raw C client (zklock-cfloor --mode mutex), the floor of a handoff
# under the same 8-contender load, where cfloor's (a) is one delete on an idle server
IMPLS = ["cfloor", "cmutex", "zklock", "curator", "kazoo"]
# A fresh server answered the same load up to twice as slowly until its JIT had compiled the
# request paths (some ten thousand requests: all four warm-ups together). Fixed and small, so a
# loaded machine stretches them by seconds, not minutes; cfloor measures at least 200 cycles.
WARMUP_CYCLES = {"cfloor": 200, "cmutex": 40, "zklock": 300, "curator": 100, "kazoo": 100}


# The recipes' head-to-head workloads; every implementation holds by sleeping (zklock by a timer).
SHARED = {"readers": 6, "writers": 2, "hold_us": 1000}
# The semaphore's rounds start with warmup_cycles per contender in the same process, unrecorded, in
# every implementation (the JVM's JIT compiles Curator's paths there; the separate warm-up run
# before the rounds warms the server only): the measured cycles start together after them.
SEMAPHORE = {"contenders": 8, "leases": 2, "hold_us": 5000, "warmup_cycles": 10}
READ_SWEEP_HOLD_US = 1000
RECIPE_IMPLS = ["zklock", "curator", "kazoo"]
PROGRESS_KEYS = {  # what the progress line shows of a run, per kind
    "mutex": ("impl", "contenders", "throughput", "handoff_p50_us", "handoff_p99_us", "solo_cycle_us", "violations"),
    "shared": ("impl", "readers", "writers", "read_throughput", "write_throughput", "read_handoff_p50_us",
               "write_handoff_p50_us", "max_readers_inside", "violations"),
    "semaphore": ("impl", "contenders", "leases", "throughput", "handoff_p50_us", "handoff_p99_us", "max_inside",
                  "violations")}


def recipe_args(kind, **over):
    """zklock-bench's (and the peers') arguments of a recipe kind, with overrides (--contenders is
    the bench's own argument)."""
    w = dict(SHARED if kind == "shared" else SEMAPHORE, **over)
    return ["--kind", kind] + [a for k, v in w.items() if k != "contenders" for a in ("--" + k.replace("_", "-"), str(v))]


def cycles_for(n, quick, cap=None):
    target = 300 if quick else 1500
    c = max(1, min(200 if quick else 500, target // n))
    return c if cap is None else max(1, min(cap, c))


KINDS = ["mutex", "shared", "semaphore"]


def settings(args):
    """The phases' settings: the command line's, else the mode's (--quick or full)."""
    zk_sweep = by_mode(args, args.sweep, [1, 2, 8, 64], [1, 2, 8, 64, 512, 4096])
    peer_sweep = by_mode(args, args.peer_sweep, [], [1, 2, 64])
    rounds = by_mode(args, args.rounds, 2, 3)
    h2h_cycles = by_mode(args, args.cycles, 60, 200)
    pend = by_mode(args, args.pending, 2000, 10000)
    warmup = {impl: min(c, args.cycles or c) for impl, c in WARMUP_CYCLES.items()}
    recipe_rounds = by_mode(args, args.recipe_rounds, 2, 3)
    cap = args.cycles or 10 ** 9
    recipe_cycles = {"shared": min(cap, by_mode(args, None, 40, 150)),
                     "semaphore": min(cap, by_mode(args, None, 25, 80)),
                     "read-sweep": min(cap, by_mode(args, None, 60, 200))}
    read_sweep = by_mode(args, args.read_sweep, [1, 2, 4, 8], [1, 2, 4, 8]) if "shared" in args.kinds else []
    if "mutex" not in args.kinds:
        rounds, zk_sweep, peer_sweep, pend = 0, [], [], 0
    for workload, hold in ((SHARED, args.shared_hold_us), (SEMAPHORE, args.semaphore_hold_us)):
        if hold is not None:
            workload["hold_us"] = hold
    return {"kinds": args.kinds, "rounds": rounds, "h2h_cycles": h2h_cycles, "warmup_cycles": warmup,
            "sweep": zk_sweep, "peer_sweep": peer_sweep, "pending": pend, "recipe_rounds": recipe_rounds,
            "recipe_cycles": recipe_cycles, "shared": SHARED, "semaphore": SEMAPHORE, "read_sweep": read_sweep,
            "read_sweep_hold_us": READ_SWEEP_HOLD_US}


def servers(kinds):
    """The servers the phases run on: the mutex's both, the recipes' the default one."""
    both = [("default", []), ("nosync", ["forceSync=no"])]
    return both[:2 if "mutex" in kinds else 1 if {"shared", "semaphore"} & set(kinds) else 0]


def run_phases(args, settings, servers, cdf_dir):
    """Runs the phases on each server in turn; returns their records."""
    rounds, pend = settings["rounds"], settings["pending"]
    recipe_rounds, recipe_cycles = settings["recipe_rounds"], settings["recipe_cycles"]
    results = []
    run_id = 0
    for sname, extra in servers:
        log("== server %s %s" % (sname, " ".join(extra)))
        with phase("server %s: start" % sname):
            srv = start_server(sname, extra)
        try:
            def bench(impl, n, cycles, what, rnd=None, record=True, extra=(), nrounds=rounds):
                """One run; extra: a recipe kind's arguments (then n is not used and there is no CDF)."""
                nonlocal run_id
                run_id += 1
                cdf = os.path.join(cdf_dir, "%s-%s-%d%s.txt" % (sname, impl, n, "" if rnd is None else "-r%d" % rnd))
                cmd = impl_cmd(impl) + ["--connect", srv.connect, "--path", "/bench/%s-%d-%d" % (impl, n, run_id),
                                        "--contenders", str(n), "--cycles", str(cycles)] + list(extra)
                if record and impl in ("zklock", "curator", "kazoo") and not extra:
                    cmd += ["--cdf", cdf]
                timeout = 900 if n >= 512 else 300
                label = "%s %s %s, %s x %d cycles" % (
                    sname, what if rnd is None else "%sround %d/%d" % ("" if what == "h2h" else what + " ", rnd + 1,
                                                                      nrounds),
                    impl, " ".join(extra) if extra else "%d contenders" % n, cycles)
                with phase(label):
                    r = run(cmd, timeout)
                if not record:
                    return r
                r["server"] = sname
                r["phase"] = what
                if "--hold-us" in extra:
                    r["hold_us"] = int(extra[extra.index("--hold-us") + 1])
                if rnd is not None:
                    r["round"] = rnd
                if os.path.exists(cdf):
                    r["cdf_file"] = os.path.relpath(cdf, args.out)
                results.append(r)
                log("    -> " + " ".join("%s=%s" % (k, r.get(k)) for k in PROGRESS_KEYS[r.get("kind", "mutex")]))
                return r

            # The server's JIT and the peers' first runs are slow: warm every implementation up
            # once, unrecorded, before anything is measured.
            log("  warm-up (not recorded)")
            for impl in IMPLS:
                bench(impl, 2 if impl == "cfloor" else 8, settings["warmup_cycles"][impl], "warm-up", record=False)
            # Head to head at 8 contenders: every implementation once per round, in a rotating
            # order, so drift of this shared machine hits them alike; the table takes medians.
            for rnd in range(rounds):
                log("  round %d of %d" % (rnd + 1, rounds))
                order = IMPLS[rnd % len(IMPLS):] + IMPLS[:rnd % len(IMPLS)]
                for impl in order:
                    bench(impl, 2 if impl == "cfloor" else 8, settings["h2h_cycles"], "h2h", rnd)
            if sname == "default":
                for n in settings["sweep"]:
                    bench("zklock", n, cycles_for(n, args.quick, args.cycles), "sweep")
                for n in settings["peer_sweep"]:
                    for peer in ("curator", "kazoo"):
                        bench(peer, n, cycles_for(n, args.quick, args.cycles), "sweep")
            if sname == "default" and pend > 0:
                run_id += 1
                with phase("%s pending zklock, %d waiters over 50 sessions" % (sname, pend)):
                    r = run(impl_cmd("zklock") + ["--connect", srv.connect, "--path", "/bench/pending-%d" % run_id,
                                                  "--contenders", "50", "--pending", str(pend)], 900)
                r["server"] = sname
                r["phase"] = "pending"
                results.append(r)
                log("    -> pending=%s bytes_per_waiter=%s threads=%s" % (pend, r.get("bytes_per_waiter"),
                                                                          r.get("threads_pending")))
            if sname == "default":
                # The recipes, head to head in rotating rounds as the mutex, then the read sweep
                for kind in ("shared", "semaphore"):
                    if kind not in args.kinds:
                        continue
                    for rnd in range(recipe_rounds):
                        log("  %s round %d of %d" % (kind, rnd + 1, recipe_rounds))
                        order = RECIPE_IMPLS[rnd % 3:] + RECIPE_IMPLS[:rnd % 3]
                        for impl in order:
                            bench(impl, SEMAPHORE["contenders"], recipe_cycles[kind], kind + "-h2h", rnd,
                                  extra=recipe_args(kind), nrounds=recipe_rounds)
                for readers in settings["read_sweep"]:
                    for impl in RECIPE_IMPLS:
                        bench(impl, readers, recipe_cycles["read-sweep"], "read-sweep",
                              extra=recipe_args("shared", readers=readers, writers=0, hold_us=READ_SWEEP_HOLD_US))
        finally:
            with phase("server %s: stop" % sname):
                srv.stop()
    return results

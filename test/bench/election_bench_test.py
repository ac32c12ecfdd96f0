#!/usr/bin/env python3
"""Smoke test of the election benchmark (zklock-election-bench, scripts/bench's election phase)
against a throwaway ZooKeeper server (tickTime 1 s, as the phase's): behaviour only, no timing.

- resign mode: every resign measured, no two leaders at once in the process, its keys, JSON and
  CDF; the mutex reference loop too; requests per term those of one campaign (create, list, the
  watches, delete; nothing at the grant), never a herd.
- candidate mode, through bench_common.kill_failover (the phase's driver): candidate B queues
  behind A and does not lead while A lives; after A's kill -9 B leads, and its "leader" line
  comes after the kill (a positive failover) and within the bound's order of magnitude
  (session timeout + tick, x4: the test never judges speed, it catches a B that led by itself
  or never); SIGTERM makes a leading candidate resign and exit 0, and the next one leads before
  the resigner's session could have expired.

    election_bench_test.py --bench BIN --scripts DIR
"""
import argparse
import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import bench_common  # noqa: E402  (bench/bench_common.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--scripts", required=True)
    a = ap.parse_args()
    with bench_common.throwaway_server(a.scripts, "zklock-election-test-", ["tickTime=1000"]) as (connect, work):
        js, cdf = os.path.join(work, "r.json"), os.path.join(work, "cdf.txt")
        r = bench_common.run([a.bench, "--mode", "resign", "--connect", connect, "--path", "/smoke/election",
                              "--candidates", "3", "--resigns", "20", "--hold-ms", "5", "--json", js, "--cdf", cdf],
                             timeout=120)
        for k in ("impl", "kind", "candidates", "resigns", "failover_p50_us", "failover_p99_us", "failovers",
                  "requests_per_term", "mutex_handoff_p50_us", "mutex_handoffs", "violations"):
            assert k in r, "missing key " + k
        assert r["impl"] == "zklock" and r["kind"] == "election-resign", r
        assert int(r["violations"]) == 0, r
        assert int(r["resigns"]) == 20 and int(r["failovers"]) == 20 and int(r["mutex_handoffs"]) == 20, r
        # create, listing, the own-node watch, the blockers' watches (2 at most with 3
        # candidates), the resign's delete; nothing at the grant (the leader's revocation read is
        # answered by its node's watch), and a listing only when a predecessor gave up
        # (the parents' creation on a new server adds some: a bound, not the count)
        assert 3.5 <= float(r["requests_per_term"]) <= 7.5, r
        assert float(r["failover_p50_us"]) > 0, r
        # --warmup (scripts/bench's, as the peers'): those resigns first, not recorded
        w = bench_common.run([a.bench, "--mode", "resign", "--connect", connect, "--path", "/smoke/election-warm",
                              "--candidates", "3", "--resigns", "10", "--warmup", "5", "--hold-ms", "5", "--no-mutex"],
                             timeout=120)
        assert int(w["warmup"]) == 5 and int(w["resigns"]) == 10 and int(w["failovers"]) == 10, w
        assert int(w["violations"]) == 0, w
        j = json.load(open(js))
        assert j["violations"] == 0 and j["failovers"] == 20, j
        samples = [float(x) for x in open(cdf) if x.strip()]
        assert len(samples) == 20 and min(samples) > 0, samples

        cmd = [a.bench, "--mode", "candidate", "--connect", connect, "--path", "/smoke/kill", "--session-timeout-ms",
               "2000"]
        k = bench_common.kill_failover(cmd, "/smoke/kill", work)
        print("kill -9 failover: %s" % k, flush=True)
        assert k["negotiated_ms"] == 2000, k
        assert 0 < k["failover_ms"] < 4 * (2000 + 1000), k

        # SIGTERM: the leader resigns and exits 0; the candidate behind it leads at once, not when
        # the session would have expired (a session timeout of 10 s: 6.7 s at the earliest)
        cmd[cmd.index("/smoke/kill")] = "/smoke/term"
        cmd[cmd.index("2000")] = "10000"
        lead = bench_common.Candidate(cmd, "term-a", work)
        nxt = None
        try:
            lead.wait_for(lead.leading, 60, "leadership")
            nxt = bench_common.Candidate(cmd, "term-b", work)
            nxt.wait_for(nxt.queued, 60, "queued line")
            assert not nxt.leading.is_set(), nxt.lines
            lead.proc.send_signal(signal.SIGTERM)
            assert lead.proc.wait(timeout=30) == 0, lead.stderr_tail()
            nxt.wait_for(nxt.leading, 5, "leadership after the resign (before the session could expire)")
        finally:
            lead.kill()
            if nxt:
                nxt.stop()
        assert nxt.proc.returncode == 0, (nxt.proc.returncode, nxt.stderr_tail())
        print("election bench smoke test: ok")
        return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The README's first program prints what the README says it prints.

    run_first_program.py --root DIR --program BINARY [--completes]

Starts a throwaway ZooKeeper (scripts/zk-server.sh, a free loopback port), runs BINARY (the
README's first program, compiled from test/snippets/readme_first_program.cpp) with its address,
and compares what it prints with the ```text block that follows the first ```cpp block of
README.md, line by line; the parts that differ from run to run (the node's protected id, the
sequence number, the fencing token: runs of digits and hex) match any value of their form.
With --completes (a program of a README block that waits for something, such as the Guards
section's readme_guards_program.cpp): only that it exits 0 within 60 s on a healthy server.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def readme_output(readme):
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    seen_cpp, i = False, 0
    while i < len(lines):
        fence = lines[i].strip()
        if fence.startswith("```"):
            lang = fence[3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
            if lang in ("cpp", "c++") and not seen_cpp:
                seen_cpp = True
            elif seen_cpp and lang == "text":
                return lines[i + 1:end]
            elif seen_cpp and lang in ("cpp", "c++"):
                break
            i = end
        i += 1
    raise SystemExit("README.md: no ```text block of the first program's output after its ```cpp block")


def pattern(line):
    out = re.sub(r"_c_[0-9a-f-]{36}", "_c_UUIDTOKEN", line)
    out = re.sub(r"[0-9]+", "NUMTOKEN", out)
    out = re.escape(out).replace("UUIDTOKEN", "[0-9a-f-]{36}").replace("NUMTOKEN", "[0-9]+")
    return re.compile("^" + out + "$")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--completes", action="store_true", help="only check that it exits 0 in time")
    a = ap.parse_args()
    expected = None if a.completes else readme_output(os.path.join(a.root, "README.md"))
    server = os.path.join(a.root, "scripts/zk-server.sh")
    tmp = tempfile.mkdtemp(prefix="zklock-first-program-")
    connect = subprocess.check_output(["bash", server, "start", tmp], text=True).strip()
    try:
        try:
            run = subprocess.run([a.program, connect], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            print("FAILED: %s did not finish within 60 s (a README block that never completes)" % a.program)
            return 1
    finally:
        subprocess.run(["bash", server, "stop", tmp], check=False)
    got = run.stdout.splitlines()
    if a.completes:
        print("the program printed (exit %d):\n  %s" % (run.returncode, "\n  ".join(got)))
        if run.stderr:
            print("stderr:\n" + run.stderr)
        print("ok" if run.returncode == 0 else "FAILED: it exited %d" % run.returncode)
        return 0 if run.returncode == 0 else 1
    print("README.md says:\n  " + "\n  ".join(expected))
    print("the program printed (exit %d):\n  %s" % (run.returncode, "\n  ".join(got)))
    if run.stderr:
        print("stderr:\n" + run.stderr)
    bad = run.returncode != 0 or len(got) != len(expected) or any(
        not pattern(e).match(g) for e, g in zip(expected, got))
    if bad:
        print("FAILED: the output differs from README.md's")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

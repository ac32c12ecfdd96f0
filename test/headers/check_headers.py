#!/usr/bin/env python3
"""Public headers compile clean under a user's strict warning flags.

    check_headers.py --compiler CXX [--root DIR] [--isystem DIR ...]

Compiles test/headers/public_headers.cpp (every public header, the main templates instantiated
with callbacks, use_awaitable, deferred and use_future; before them, a name of every header
through <zklock/zklock.hpp> alone, its first include) with -std=c++20 -fsyntax-only and FLAGS
below plus -Werror: one compile, which parses Asio once. Fails, saying so, when the compiler is
missing (scripts/deps.sh installs g++ and clang-14), when a header of include/zklock/ is not
included by public_headers.cpp or by the umbrella header, when the umbrella header is not
public_headers.cpp's first include, or on any diagnostic; prints each warning location once with
how often it came.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

FLAGS = ["-Wall", "-Wextra", "-Wshadow", "-Wconversion", "-pedantic"]
SOURCE = "test/headers/public_headers.cpp"
UMBRELLA = "include/zklock/zklock.hpp"  # includes every other header of include/zklock/


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--isystem", action="append", default=[], help="a dependency's include dir (Boost's)")
    a = ap.parse_args()

    cxx = shutil.which(a.compiler)
    if not cxx:
        print("check_headers: FAILED: compiler %r not found (bash scripts/deps.sh installs g++ and clang-14)"
              % a.compiler)
        return 1
    headers = sorted("zklock/" + f for f in os.listdir(os.path.join(a.root, "include/zklock")) if f.endswith(".hpp"))
    for including, expected in ((SOURCE, headers), (UMBRELLA, [h for h in headers if "include/" + h != UMBRELLA])):
        text = open(os.path.join(a.root, including), encoding="utf-8").read()
        included = set(re.findall(r"^#include <(zklock/[^>]+)>", text, re.M))
        missing = [h for h in expected if h not in included]
        if missing:
            print("check_headers: FAILED: %s does not include %s" % (including, ", ".join(missing)))
            return 1
    # SOURCE names something of every header right after the umbrella: only so does it show that
    # the umbrella alone is enough
    first = re.search(r"^#include <([^>]+)>", open(os.path.join(a.root, SOURCE), encoding="utf-8").read(), re.M)
    if not first or "include/" + first.group(1) != UMBRELLA:
        print("check_headers: FAILED: the first include of %s is not <%s>" % (SOURCE, UMBRELLA[len("include/"):]))
        return 1

    cmd = [cxx, "-std=c++20", "-fsyntax-only"] + FLAGS + ["-Werror", "-I", os.path.join(a.root, "include")]
    for d in a.isystem:
        if os.path.normpath(d) not in ("/usr/include", "/usr/local/include"):  # -isystem there breaks include_next
            cmd += ["-isystem", d]
    if not compiles_clean(cmd + [os.path.join(a.root, SOURCE)], os.path.basename(cxx), a.root):
        return 1
    print("check_headers: ok: %d public headers, clean under %s (%s)" % (len(headers), " ".join(FLAGS + ["-Werror"]),
                                                                          os.path.basename(cxx)))
    return 0


def compiles_clean(cmd, compiler, root):
    """Runs the compiler; prints its output and each diagnostic once (with how often it came)
    when it fails or warns."""
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    diagnostics = collections.Counter(
        m.group(1) for m in re.finditer(r"^(\S+:\d+:\d+: (?:warning|error): .*)$", out, re.M))
    if p.returncode != 0 or diagnostics:
        sys.stdout.write(out[-20000:])
        print("\ncheck_headers: FAILED with %s: %d distinct diagnostics:" % (compiler, len(diagnostics)))
        for d, n in sorted(diagnostics.items()):
            print("  %3dx %s" % (n, d.replace(root.rstrip("/") + "/", "", 1)))
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Each library source includes the project headers it uses.

    check_includes.py --build DIR --root DIR [--jobs N] SOURCE...

The test command builds the library as a unity build (batches of 10 sources in one translation
unit), where a source that uses a project header (src/ or include/) without including it still
compiles, thanks to the sources before it in its batch. This compiles each SOURCE (the
library's, relative to --root) on its own with -fsyntax-only and the library's flags (from DIR's
compile_commands.json), with every system, Boost and ZooKeeper header that src/ and include/
include precompiled and included first (g++ -include of a .gch, made once here): the parsing of
Asio is done once, not once a source, and what is left is the project's own headers and code.

What it no longer catches (against compiling each source alone with nothing pre-included): a
source or a project header that uses a system or Boost header (<vector>, <boost/asio/post.hpp>)
without including it, since all of them come first here; the unity build hides those too, and a
user's build of the installed headers (test/headers) includes only what the headers include.
With --compiler (clang++), that compiler takes the library's flags but g++'s own
(--param=...): clang's precompiled header is read lazily, where g++ reads all of its 190 MB
in every compile (docs/TESTING.md: 119 s of CPU with g++, the precompiled header 23 s of it).
A missing declaration is one for either compiler, with the same libstdc++ and Boost headers.
A source the build itself compiles with nothing before it is not compiled again: one that is
its own translation unit in compile_commands.json (a build without the unity build), or the first
of a unity batch (its first #include): the build's compile of it is this check's, with the
library's flags and without the precompiled header (4 of the 41 in the test command's build).
Fails naming each source that does not compile so, with the compiler's output.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import time

TARGET_DIR = "/CMakeFiles/zklock.dir/"  # the library's objects in compile_commands.json
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
# a unity batch's first line of code (CMake's generated file: a comment, then its sources' includes)
UNITY_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def library_flags(build):
    """The compiler and flags of the library's compile (any of its entries: all share them),
    without the output, the input and the dependency-file options."""
    for entry in json.load(open(os.path.join(build, "compile_commands.json"), encoding="utf-8")):
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        if TARGET_DIR not in entry.get("output", "") + " ".join(args):
            continue
        flags, skip = [], False
        for arg in args:
            if skip:
                skip = False
            elif arg in ("-o", "-MF", "-MT", "-MQ"):
                skip = True
            elif arg in ("-c", "-MD", "-MMD", entry["file"]):
                pass
            else:
                flags.append(arg)
        return flags, entry["directory"]
    raise SystemExit("check_includes: FAILED: no compile of the zklock library in %s/compile_commands.json" % build)


def compiled_alone_by_build(build):
    """The library's sources that the build compiles with nothing before them: each one that is a
    translation unit of its own, and the first source of each unity batch."""
    alone = set()
    for entry in json.load(open(os.path.join(build, "compile_commands.json"), encoding="utf-8")):
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        if TARGET_DIR not in entry.get("output", "") + " ".join(args):
            continue
        source = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        if "/Unity/unity_" not in source:
            alone.add(source)
            continue
        with open(source, encoding="utf-8") as batch:
            m = UNITY_INCLUDE.search(batch.read())
        if m:
            alone.add(os.path.realpath(m.group(1)))
    return alone


def system_headers(root):
    """Every <...> header that src/ and include/ include, other than the project's own."""
    found = set()
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".hpp", ".cpp", ".h", ".ipp")):
                    text = open(os.path.join(d, f), encoding="utf-8").read()
                    found.update(h for h in SYSTEM_INCLUDE.findall(text) if not h.startswith("zklock/"))
    return sorted(found)


def compile_alone(cmd, source, cwd):
    start = time.monotonic()
    p = subprocess.run(cmd + [source], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build dir (its compile_commands.json)")
    ap.add_argument("--root", required=True, help="the source dir")
    ap.add_argument("--work", required=True, help="a scratch dir for the precompiled header")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compiler", help="compile with this compiler (clang++) instead of the library's")
    ap.add_argument("sources", nargs="+")
    a = ap.parse_args()

    flags, cwd = library_flags(a.build)
    alone = compiled_alone_by_build(a.build)
    sources = []
    for s in a.sources:
        if os.path.realpath(os.path.join(a.root, s)) in alone:
            print("check_includes: ok %s (compiled with nothing before it by the build)" % s)
        else:
            sources.append(s)
    if not sources:
        print("check_includes: ok: the build compiles each of the %d library sources alone" % len(a.sources))
        return 0
    clang = False
    if a.compiler:
        flags = [a.compiler] + [f for f in flags[1:] if not f.startswith("--param")]
        clang = "clang" in os.path.basename(a.compiler)
    os.makedirs(a.work, exist_ok=True)
    header = os.path.join(os.path.abspath(a.work), "zklock_system_headers.hpp")
    with open(header, "w", encoding="utf-8") as out:
        out.write("// generated by check_includes.py: the headers src/ and include/ include, but the project's\n")
        out.writelines("#include <%s>\n" % h for h in system_headers(a.root))
    start = time.monotonic()
    pch = header + (".pch" if clang else ".gch")
    # clang: the templates the headers use among themselves instantiated once, in the precompiled
    # header, not again in every source (73 s of CPU for the check against 92 without)
    instantiate = ["-fpch-instantiate-templates"] if clang else []
    p = subprocess.run(flags + instantiate + ["-x", "c++-header", header, "-o", pch],
                       capture_output=True, text=True, cwd=cwd)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        print("check_includes: FAILED: the system and Boost headers do not compile as a precompiled header")
        return 1
    print("check_includes: precompiled %s in %.1f s" % (header, time.monotonic() - start), flush=True)

    # -Winvalid-pch: say so when the .gch is not used (the check stays right, only slower)
    cmd = flags + (["-include-pch", pch] if clang else ["-Winvalid-pch", "-include", header]) + ["-fsyntax-only"]
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = pool.map(lambda s: (s,) + compile_alone(cmd, os.path.join(os.path.abspath(a.root), s), cwd), sources)
        for source, rc, out, seconds in results:
            print("check_includes: %s %s (%.1f s)" % ("ok" if rc == 0 else "FAILED", source, seconds), flush=True)
            if rc != 0:
                failed.append(source)
                sys.stdout.write(out[-20000:])
            elif out.strip():
                sys.stdout.write(out[-5000:])
    if failed:
        print("\ncheck_includes: FAILED: %d of %d library sources do not compile on their own, with only the "
              "system and Boost headers before them (a missing #include of a project header?): %s"
              % (len(failed), len(a.sources), ", ".join(failed)))
        return 1
    print("check_includes: ok: %d library sources compile on their own (the project headers they use "
          "included; %d of them compiled so by the build)" % (len(a.sources), len(a.sources) - len(sources)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

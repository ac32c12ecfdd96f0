#!/usr/bin/env python3
"""The layers of src/ point one way: the state machines are pure, the engine sees no recipe.

    check_layers.py --compiler CXX [--root DIR] [--isystem DIR ...]

src/sansio: every header and source compiles (-fsyntax-only) on its own, and what it includes,
directly or not (the compiler's -H list), has no Boost.Asio header, no public header but the plain
ones (PLAIN below: error codes, value types, paths, the acquire's parameters) and nothing of
src/engine, src/lock or src/recipes.
src/engine: what each file includes, directly or not (-MM: the project's headers), has nothing of
src/lock or src/recipes.
A header that a source of src/sansio includes first (its first preprocessing line) compiles on
its own in that source's compile, with nothing before it: it is not compiled again (9 of the 13
headers).
The standard library and Boost headers that src/sansio and the plain headers include (never an
Asio one) are precompiled once and included first in every compile here (a compile of a state
machine was about 1.8 s, most of it those headers): what a file includes is still the compiler's
-H list, of which the precompiled ones are left out (none of them is the project's or Asio's,
which the precompiled header's own -H list shows). "On its own" here is: with the standard
library and those Boost headers before it; a file that uses <vector> without including it is
not caught (nor by the unity build; test/headers checks the public headers with nothing before).
With clang++, the precompiled header is read lazily (only what a file uses), with g++ all of it.
Fails, naming each file and the header that breaks the rule, or when the compiler is missing.
"""
import argparse
import atexit
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The public headers a state machine may see: none of them includes Asio or a session.
PLAIN = {"zklock/error.hpp", "zklock/export.hpp", "zklock/types.hpp", "zklock/path.hpp",
         "zklock/detail/acquire_params.hpp"}
ABOVE_ENGINE = ("src/lock/", "src/recipes/")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--isystem", action="append", default=[], help="a dependency's include dir (Boost's)")
    a = ap.parse_args()
    cxx = shutil.which(a.compiler)
    if not cxx:
        print("check_layers: FAILED: compiler %r not found" % a.compiler)
        return 1
    root = os.path.realpath(a.root)
    base = [cxx, "-std=c++20", "-I", os.path.join(root, "include"), "-I", os.path.join(root, "src")]
    for d in a.isystem:
        if os.path.normpath(d) not in ("/usr/include", "/usr/local/include"):  # -isystem there breaks include_next
            base += ["-isystem", d]

    precompiled, problems = precompile(base, root, files_of(root, "sansio") + [os.path.join(root, "include", h) for h in PLAIN])
    if problems:
        for why in problems:
            print("check_layers: the precompiled standard and Boost headers: %s" % why)
        print("check_layers: FAILED: the precompiled header breaks the rules of src/sansio")
        return 1
    sansio_base = base + precompiled  # the engine's files are only preprocessed (-MM)

    def sansio(path):
        lang = ["-x", "c++-header"] if path.endswith(".hpp") else []
        p = subprocess.run(sansio_base + ["-fsyntax-only", "-H"] + lang + [path], capture_output=True, text=True)
        if p.returncode != 0:
            return ["does not compile on its own:\n" + p.stderr[-4000:]]
        seen = [m.group(1) for m in re.finditer(r"^\.+ (\S+)$", p.stderr, re.M)]
        return [why for h in seen for why in [sansio_rule(os.path.realpath(h), root)] if why]

    def engine(path):
        p = subprocess.run(base + ["-MM", path], capture_output=True, text=True)
        if p.returncode != 0:
            return ["cannot be preprocessed:\n" + p.stderr[-4000:]]
        deps = [os.path.realpath(d) for d in p.stdout.replace("\\\n", " ").split()[1:]]
        return ["includes %s (above the engine)" % rel(d, root) for d in deps
                if rel(d, root).startswith(ABOVE_ENGINE)]

    def first_include(path):
        with open(path, encoding="utf-8") as src:
            for line in src:
                if line.strip().startswith("#"):
                    m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
                    return os.path.join(root, "src", m.group(1)) if m else None
        return None

    sources = [f for f in files_of(root, "sansio") if f.endswith(".cpp")]
    first = {first_include(f): f for f in sources}
    jobs = [(f, sansio) for f in files_of(root, "sansio") if f not in first] + [(f, engine) for f in files_of(root, "engine")]
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for (f, _), problems in zip(jobs, pool.map(lambda j: j[1](j[0]), jobs)):
            for why in sorted(set(problems)):
                print("check_layers: %s: %s" % (rel(f, root), why))
            failed += bool(problems)
    if failed:
        print("check_layers: FAILED: %d of %d files break the layering" % (failed, len(jobs)))
        return 1
    for h, f in sorted(first.items()):
        if h:
            print("check_layers: %s compiled on its own first in %s" % (rel(h, root), rel(f, root)))
    print("check_layers: ok: %d files of src/sansio (no Asio, no session, no recipe) and src/engine "
          "(nothing of src/lock or src/recipes)" % (len(jobs) + sum(1 for h in first if h)))
    return 0


def files_of(root, layer):
    d = os.path.join(root, "src", layer)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".hpp", ".cpp")))


def precompile(base, root, paths):
    """Precompiles every <...> header that `paths` include but Asio's and the project's (in a
    temporary dir that lives as long as this process); returns the flags that include it first,
    and what breaks the rules of src/sansio in it (nothing, unless such a header includes one)."""
    headers = set()
    for path in paths:
        with open(path, encoding="utf-8") as src:
            headers.update(re.findall(r'^\s*#\s*include\s*<([^>]+)>', src.read(), re.M))
    headers = sorted(h for h in headers if not h.startswith(("zklock/", "boost/asio")) and h != "boost/asio.hpp")
    work = tempfile.mkdtemp(prefix="zklock-layers-")
    atexit.register(shutil.rmtree, work, True)
    header = os.path.join(work, "system.hpp")
    with open(header, "w", encoding="utf-8") as out:
        out.write("".join("#include <%s>\n" % h for h in headers))
    clang = "clang" in os.path.basename(base[0])
    output = header + (".pch" if clang else ".gch")
    p = subprocess.run(base + ["-x", "c++-header", "-H", header, "-o", output], capture_output=True, text=True)
    if p.returncode != 0:
        return [], ["does not compile:\n" + p.stderr[-4000:]]
    seen = [m.group(1) for m in re.finditer(r"^\.+ (\S+)$", p.stderr, re.M)]
    problems = sorted({why for h in seen for why in [sansio_rule(os.path.realpath(h), root)] if why})
    return (["-include-pch", output] if clang else ["-include", header]), problems


def rel(path, root):
    return os.path.relpath(path, root) if path.startswith(root + "/") else path


def sansio_rule(header, root):
    if "/boost/asio" in header:
        return "includes Boost.Asio (%s)" % header
    r = rel(header, root)
    if r.startswith("include/") and r[len("include/"):] not in PLAIN:
        return "includes %s (not a plain header)" % r
    if r.startswith(("src/engine/", "src/lock/", "src/recipes/")):
        return "includes %s (above the state machines)" % r
    return None


if __name__ == "__main__":
    sys.exit(main())

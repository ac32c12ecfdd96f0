#!/usr/bin/env python3
"""The files the documents name exist, and the functions they point at are in those files.

Every `path` in backquotes in README.md and docs/*.md that starts with one of the repository's
top-level directories must exist (a file or a directory; a trailing "/" or a ":N" line suffix is
allowed). A path followed by a parenthesis that names a function in backquotes, as in
"`src/sansio/hold_fsm.cpp` (`hold_fsm::release`, ...)", must contain that function's name
(the last part after "::"). Exit 0 when all hold; otherwise each missing one is printed.

--self-test first checks that a made-up path and a made-up function are reported.
"""
import argparse
import os
import re
import sys

TOP = ("src/", "include/", "test/", "docs/", "scripts/", "bench/", "apps/", "examples/", ".ci/")
PATH = re.compile(r"`((?:%s)[A-Za-z0-9_./+-]*)`" % "|".join(re.escape(t) for t in TOP))
# A path, then "(", then (up to the closing parenthesis) the first `name::member` in backquotes.
POINTER = re.compile(r"`((?:%s)[A-Za-z0-9_./+-]*)`\s*\(`([A-Za-z_][A-Za-z0-9_:]*::([A-Za-z_][A-Za-z0-9_]*))`"
                     % "|".join(re.escape(t) for t in TOP))


def problems(root, name, text):
    out = []
    for m in PATH.finditer(text):
        rel = re.sub(r":\d+$", "", m.group(1)).rstrip("/")
        if any(ch in rel for ch in "*<>") or rel.endswith("."):
            continue
        if not os.path.exists(os.path.join(root, rel)):
            out.append(f"{name}: `{m.group(1)}` does not exist")
    # a pointer spans a line break in the Markdown source: join lines first
    flat = re.sub(r"\s*\n\s*", " ", text)
    for m in POINTER.finditer(flat):
        path = os.path.join(root, m.group(1))
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                if not re.search(r"\b%s\b" % re.escape(m.group(3)), f.read()):
                    out.append(f"{name}: `{m.group(1)}` has no `{m.group(2)}`")
    return out


def documents(root):
    names = ["README.md"]
    docs = os.path.join(root, "docs")
    names += sorted("docs/" + n for n in os.listdir(docs) if n.endswith(".md"))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        fake = ("`src/no_such_file.cpp` and `src/sansio/hold_fsm.cpp` (`hold_fsm::no_such_member`)\n"
                "`src/sansio/hold_fsm.cpp`\n  (`hold_fsm::release`)")
        got = problems(a.root, "self-test", fake)
        want = ["self-test: `src/no_such_file.cpp` does not exist",
                "self-test: `src/sansio/hold_fsm.cpp` has no `hold_fsm::no_such_member`"]
        if got != want:
            print("check_paths self-test failed:", got, file=sys.stderr)
            return 1
    found = []
    for name in documents(a.root):
        with open(os.path.join(a.root, name), encoding="utf-8") as f:
            found += problems(a.root, name, f.read())
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

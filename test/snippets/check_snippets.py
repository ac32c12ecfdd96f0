#!/usr/bin/env python3
"""The documentation's C++ is compiled code: fails when it drifted from the files that compile it.

    check_snippets.py [--root DIR] [--self-test]

- Every ```cpp block of the Markdown files (README.md, docs/, examples/, apps/, ...) is a region
  of test/snippets/readme_snippets.cpp (or of a whole program the documents show:
  readme_first_program.cpp, compiled and linked on its own), character for character once both are de-indented and
  trailing spaces dropped. A region is what lies between two lines `// [name]`. A region that no
  block uses fails too (the block was removed or changed: remove or fix the region).
- Every code example in a public header's comments (include/zklock/**.hpp) is in the region of
  test/snippets/header_snippets.cpp named after the header (`// [zklock/mutex.hpp]`), spaces
  collapsed; `...` in the comment stands for any text. A code example is a backticked span with
  a call that has arguments (`make_error_code(static_cast<zk_errc>(rc))`, `if (ec == x)`); a
  name (`lock_guard::check_op()`, `async_acquire`) is a reference, not an example. So: write code
  in header comments between backticks, and put it in that region, where it compiles.

Both snippet files are compiled by the zklock_snippets target of the test build. Exits 0 when
everything matches, 1 with a diff or a list of what is missing otherwise. --self-test first
checks that the checker finds a changed block, a stale region and an uncompiled header example
in a scratch tree (so that this test can fail).
"""
import argparse
import difflib
import os
import re
import shutil
import sys
import tempfile
import textwrap

README_SNIPPETS = "test/snippets/readme_snippets.cpp"
# Whole programs the documents show, each compiled and linked on its own (a region spans the file).
README_PROGRAMS = ["test/snippets/readme_first_program.cpp", "test/snippets/readme_guards_program.cpp"]
HEADER_SNIPPETS = "test/snippets/header_snippets.cpp"
HEADERS = "include"
CPP_LANGS = {"cpp", "c++", "cxx", "cc"}
MARKER = re.compile(r"^\s*// \[([^\]\s]+)\]\s*$")
FENCE = re.compile(r"^( *)(`{3,}|~{3,})\s*([^\s`]*)")
# A backticked span is an example when it calls something with arguments (or is an if/while).
EXAMPLE = re.compile(r"\w\s*\(\s*[^)\s]")


def normalize(text):
    """De-indented, trailing spaces dropped, no blank lines at either end."""
    lines = [l.rstrip() for l in textwrap.dedent(text.expandtabs()).splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def regions(path):
    """{name: (text, first line)} of a snippet file; markers come in pairs."""
    out, open_name, start, body = {}, None, 0, []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = MARKER.match(line)
            if not m:
                if open_name:
                    body.append(line)
                continue
            name = m.group(1)
            if open_name is None:
                if name in out:
                    raise SystemExit("%s:%d: region [%s] twice" % (path, no, name))
                open_name, start, body = name, no, []
            elif name == open_name:
                out[name] = ("".join(body), start)
                open_name = None
            else:
                raise SystemExit("%s:%d: [%s] inside region [%s] (opened at line %d)" % (path, no, name, open_name,
                                                                                        start))
    if open_name:
        raise SystemExit("%s:%d: region [%s] never closed" % (path, start, open_name))
    return out


def markdown_files(root):
    for d, dirs, files in os.walk(root):
        # skip hidden dirs and build trees (in the source tree or not)
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and not x.startswith("build")
                         and not os.path.exists(os.path.join(d, x, "CMakeCache.txt")))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(d, f)


def cpp_blocks(path):
    """(first line of the code, text) of each fenced C++ block of a Markdown file."""
    blocks, fence = [], None
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence = (len(m.group(1)), m.group(2), m.group(3).lower() in CPP_LANGS, no + 1, [])
        else:
            indent, marks, is_cpp, start, body = fence
            s = line.strip()
            if s.startswith(marks[0] * len(marks)) and not s.strip(marks[0]):
                if is_cpp:
                    blocks.append((start, "\n".join(body) + "\n"))
                fence = None
            else:
                body.append(line[min(indent, len(line) - len(line.lstrip(" "))):])
    return blocks


def check_markdown(root, problems):
    regs = {}
    for rel_file in [README_SNIPPETS] + README_PROGRAMS:
        path = os.path.join(root, rel_file)
        if os.path.exists(path) or rel_file == README_SNIPPETS:
            for name, (text, line) in regions(path).items():
                if name in regs:
                    raise SystemExit("%s:%d: region [%s] is also in another snippet file" % (rel_file, line, name))
                regs[name] = (normalize(text), line)
    used = set()
    count = 0
    for md in markdown_files(root):
        rel = os.path.relpath(md, root)
        for line, text in cpp_blocks(md):
            count += 1
            block = normalize(text)
            match = [name for name, (r, _) in regs.items() if r == block]
            if match:
                used.update(match)
                continue
            msg = "%s:%d: this C++ block is no region of %s" % (rel, line, README_SNIPPETS)
            if regs:
                name = max(regs, key=lambda n: difflib.SequenceMatcher(None, regs[n][0], block).ratio())
                used.add(name)  # reported here, not again as unused
                msg += "; the nearest is [%s] (line %d), and differs:\n" % (name, regs[name][1])
                msg += "".join(difflib.unified_diff(regs[name][0].splitlines(True), block.splitlines(True),
                                                    "%s [%s]" % (README_SNIPPETS, name), "%s:%d" % (rel, line)))
            else:
                msg += " (it has none): put the block there, between two `// [name]` lines, where it compiles"
            problems.append(msg)
    for name in sorted(set(regs) - used):
        problems.append("%s:%d: region [%s] is no C++ block of the documentation: remove it (or put the block "
                        "back)" % (README_SNIPPETS, regs[name][1], name))
    return count


def comment_paragraphs(path):
    """(line, text) of each run of whole-line comments, and of each trailing ///< comment."""
    out, start, run = [], None, []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("//"):
            if start is None:
                start = no
            run.append(s.lstrip("/").lstrip("<").strip())
            continue
        if run:
            out.append((start, " ".join(run)))
            start, run = None, []
        if "///<" in line:
            out.append((no, line.split("///<", 1)[1].strip()))
    if run:
        out.append((start, " ".join(run)))
    return out


def squash(text):
    return " ".join(text.split())


def check_headers(root, problems):
    snippets = os.path.join(root, HEADER_SNIPPETS)
    regs = {name: squash(text) for name, (text, _) in regions(snippets).items()}
    lines = {name: line for name, (_, line) in regions(snippets).items()}
    used = set()
    count = 0
    base = os.path.join(root, HEADERS)
    for d, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(".hpp"):
                continue
            path = os.path.join(d, f)
            name = os.path.relpath(path, base).replace(os.sep, "/")
            for line, para in comment_paragraphs(path):
                for span in re.findall(r"`([^`]+)`", para):
                    if not EXAMPLE.search(span):
                        continue
                    count += 1
                    used.add(name)
                    pattern = ".*?".join(re.escape(part) for part in squash(span).split("..."))
                    if name in regs and re.search(pattern, regs[name]):
                        continue
                    problems.append("%s:%d: the example `%s` is not in region [%s] of %s%s: put it there, where it "
                                    "compiles (`...` in the comment matches any text)" % (
                                        os.path.relpath(path, root), line, span, name, HEADER_SNIPPETS,
                                        "" if name in regs else " (no such region)"))
    for name in sorted(set(regs) - used):
        problems.append("%s:%d: region [%s] holds no example of a header comment (no such header, or its comments "
                        "have no backticked example any more): remove it" % (HEADER_SNIPPETS, lines[name], name))
    return count


def check(root):
    problems = []
    blocks = check_markdown(root, problems)
    examples = check_headers(root, problems)
    return problems, blocks, examples


def self_test(root):
    """The checker fails on a changed block, a stale region and a header example nowhere compiled."""
    tmp = tempfile.mkdtemp(prefix="zklock-snippets-selftest-")
    try:
        os.makedirs(os.path.join(tmp, "test/snippets"))
        os.makedirs(os.path.join(tmp, "include/zklock"))
        with open(os.path.join(tmp, README_SNIPPETS), "w") as f:
            f.write("void f() {\n  // [a]\n  int x = 1;\n  // [a]\n  // [stale]\n  int y = 2;\n  // [stale]\n}\n")
        with open(os.path.join(tmp, HEADER_SNIPPETS), "w") as f:
            f.write("// [zklock/h.hpp]\nauto e = make(1, 2);\n// [zklock/h.hpp]\n")
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("text\n\n```cpp\nint x = 2;\n```\n\n```sh\nnot c++\n```\n")
        with open(os.path.join(tmp, "include/zklock/h.hpp"), "w") as f:
            f.write("/// Like `make(1, ...)`, unlike\n/// `other(3)`; a name: `h::f()`.\nint f();  ///< `g(4)`\n")
        problems, blocks, examples = check(tmp)
        text = "\n".join(problems)
        expect = ["README.md:4: this C++ block is no region", "-int x = 1;", "+int x = 2;",
                  "include/zklock/h.hpp:1: the example `other(3)`", "include/zklock/h.hpp:3: the example `g(4)`",
                  "region [stale] is no C++ block"]
        missing = [e for e in expect if e not in text]
        unexpected = [p for p in problems if "make(1, ...)" in p or "h::f()" in p]
        if missing or unexpected or blocks != 1 or examples != 3 or len(problems) != 4:
            print("check_snippets self-test FAILED: missing %r, unexpected %r, %d blocks, %d examples; got:\n%s"
                  % (missing, unexpected, blocks, examples, text))
            return False
        print("check_snippets self-test: ok (a changed block, a stale region and two uncompiled header examples "
              "found)")
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    help="the source tree (default: this file's)")
    ap.add_argument("--self-test", action="store_true", help="first check that the checker fails when it should")
    a = ap.parse_args()
    if a.self_test and not self_test(a.root):
        return 1
    problems, blocks, examples = check(a.root)
    for p in problems:
        print(p)
    if problems:
        print("check_snippets: %d problem(s); %d C++ blocks in the Markdown files, %d code examples in the headers' "
              "comments" % (len(problems), blocks, examples))
        return 1
    print("check_snippets: ok: %d C++ blocks in the Markdown files are regions of %s, %d code examples of the "
          "headers' comments are in %s" % (blocks, README_SNIPPETS, examples, HEADER_SNIPPETS))
    return 0


if __name__ == "__main__":
    sys.exit(main())

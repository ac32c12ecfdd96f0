#!/usr/bin/env python3
"""The docs test: the API reference builds, and its main page is the guide.

    docs_test.py --source DIR --output DIR [--doxygen doxygen]

Converts README.md and docs/REFERENCE.md for Doxygen (guide_page.py), runs Doxygen (an
undocumented public member, or any other warning, fails it: WARN_AS_ERROR), then checks the main
page (html/index.html): it is the guide, not a pointer to it; it opens with the first program
(the README's, whole); its headings in the README's order; its in-page links resolve; API names
link to their class pages; the reference page exists and links back; and no page shows the
internal default token type (detail::default_token_t).
"""
import argparse
import glob
import html
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def text_of(page):
    t = re.sub(r"<[^>]+>", "", page)
    return html.unescape(t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--doxygen", default="doxygen")
    a = ap.parse_args()
    subprocess.check_call([sys.executable, os.path.join(HERE, "guide_page.py"), a.source, a.output])
    rc = subprocess.call([a.doxygen, os.path.join(a.output, "Doxyfile")], cwd=a.output)
    if rc:
        print("FAILED: doxygen exited with %d (warnings above)" % rc)
        return 1
    problems = []
    index = open(os.path.join(a.output, "html/index.html"), encoding="utf-8").read()
    text = text_of(index)
    readme = open(os.path.join(a.source, "README.md"), encoding="utf-8").read()

    # the guide's sections, in order
    headings = [h for h in re.findall(r"^##+ (.*)$", readme, re.M)]
    pos = 0
    for h in headings:
        at = text.find(h, pos)
        if at < 0:
            problems.append("the main page has no heading %r (after position %d)" % (h, pos))
        else:
            pos = at
    # the first program, whole (its code lines, spaces collapsed)
    prog = open(os.path.join(a.source, "test/snippets/readme_first_program.cpp"), encoding="utf-8").read()
    flat = " ".join(text.split())
    for line in prog.splitlines():
        line = line.strip()
        if not line or line.startswith("// ["):
            continue
        if " ".join(line.split()) not in flat:
            problems.append("the main page lacks the first program's line %r" % line)
    first_program_at = text.find("A first program")
    getting_started_at = text.find("Getting started")
    if not (0 <= first_program_at < getting_started_at):
        problems.append("the first program does not come before Getting started")
    # in-page and cross-page links resolve to anchors that exist
    anchors = set(re.findall(r'(?:id|name)="([^"]+)"', index))
    for target in re.findall(r'href="index\.html#([^"]+)"', index) + re.findall(r'href="#([^"]+)"', index):
        if target not in anchors:
            problems.append("the main page links to #%s, which it does not have" % target)
    # API names link to their class pages
    for cls in ("classzklock_1_1basic__session", "classzklock_1_1basic__mutex", "classzklock_1_1lock__guard",
                "classzklock_1_1basic__election", "classzklock_1_1basic__semaphore"):
        if 'href="%s.html' % cls not in index:
            problems.append("the main page has no link to %s.html" % cls)
    ref = os.path.join(a.output, "html/reference.html")
    if not os.path.exists(ref):
        problems.append("no reference page (html/reference.html)")
    else:
        rpage = open(ref, encoding="utf-8").read()
        if 'href="index.html' not in rpage:
            problems.append("the reference page does not link back to the guide")
        if 'href="reference.html' not in index:
            problems.append("the main page does not link to the reference page")
    for page in glob.glob(os.path.join(a.output, "html/*.html")):
        if page.endswith("_source.html"):  # the headers' text, as it is
            continue
        if "default_token_t" in open(page, encoding="utf-8").read():
            problems.append("%s shows detail::default_token_t" % os.path.basename(page))
    for p in problems:
        print(p)
    if problems:
        print("FAILED: %d problem(s) with the API reference's main page" % len(problems))
        return 1
    print("ok: the API reference built without warnings; its main page is the guide (%d headings in order, the "
          "first program whole, links resolve, class pages linked)" % len(headings))
    return 0


if __name__ == "__main__":
    sys.exit(main())

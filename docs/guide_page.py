#!/usr/bin/env python3
"""The README and docs/REFERENCE.md as pages of the API reference (Doxygen's Markdown).

    guide_page.py SOURCE_DIR OUTPUT_DIR

Writes OUTPUT_DIR/guide.md (the README: the main page) and OUTPUT_DIR/reference.md (the
reference tables), with what Doxygen needs that GitHub does not:
- every heading gets GitHub's anchor as its label, prefixed with the page's name
  (`## The mutex {#guide-the-mutex}`), and the links follow: the README's `(#the-mutex)` becomes
  `(@ref guide-the-mutex)`, `(docs/REFERENCE.md#the-mutex)` `(@ref reference-the-mutex)`;
- a link to another file of the repository becomes its text and the path (no dead link);
- a name of the API in a code span (`zklock::mutex`, `lock_guard::status()`) links to its
  class page (an alias's to its template's: `session` to basic_session).
"""
import os
import re
import sys

# the public names Doxygen documents (classes and aliases of include/zklock); a code span that
# is one of them, optionally qualified with zklock:: and followed by ::member or (), is linked
CLASSES = ["session", "basic_session", "mutex", "basic_mutex", "shared_mutex", "basic_shared_mutex", "semaphore",
           "basic_semaphore", "multi_lock", "basic_multi_lock", "election", "basic_election", "leadership",
           "lock_guard", "multi_guard", "session_options", "mutex_options", "shared_mutex_options",
           "semaphore_options", "lock_metrics_options", "lock_metrics_snapshot", "lock_path_metrics",
           "latency_histogram", "contender", "leader_info", "watch", "owner_id", "lock_status", "lock_kind",
           "session_state", "errc", "zk_errc", "condition", "to_prometheus", "lock_lost_cause", "validate_lock_path",
           "async_revoke_holders", "async_request_revoke"]
SPAN = re.compile(r"`((?:zklock::)?(" + "|".join(CLASSES) + r")(?:::[a-z_]+)?(?:\(\))?)`")
# the aliases' pages are their templates'
TARGET = {"session": "basic_session", "mutex": "basic_mutex", "shared_mutex": "basic_shared_mutex",
          "semaphore": "basic_semaphore", "multi_lock": "basic_multi_lock", "election": "basic_election"}


def slug(title):
    """GitHub's anchor of a heading."""
    t = title.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def convert(text, prefix, own_page_links):
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append(line)
            continue
        if fence:
            out.append(line)
            continue
        m = re.match(r"^(#{1,4}) (.*)$", line)
        if m:
            level, title = m.groups()
            if level == "#":  # the page's title (the main page's is Doxygen's own label)
                out.append(line)
                continue
            out.append("%s %s {#%s%s}" % (level, title, prefix, slug(title)))
            continue
        # links: in-page anchors, the other page, other files
        def link(m):
            label, target = m.group(1), m.group(2)
            if target.startswith("http://") or target.startswith("https://"):
                return m.group(0)
            path, _, anchor = target.partition("#")
            if path == "":
                return "[%s](@ref %s%s)" % (label, prefix, anchor)
            if path in own_page_links:
                page_prefix, page_label = own_page_links[path]
                return "[%s](@ref %s)" % (label, page_prefix + anchor if anchor else page_label)
            return "%s (`%s`)" % (label, path) if label != "`%s`" % path and label != path else "`%s`" % path
        line = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", link, line)
        line = SPAN.sub(lambda m: "<code>[%s](@ref zklock::%s)</code>" % (m.group(1), TARGET.get(m.group(2), m.group(2))), line)
        out.append(line)
    return "\n".join(out) + "\n"


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(src, "docs/REFERENCE.md"), encoding="utf-8") as f:
        reference = f.read()
    guide = convert(readme, "guide-", {"docs/REFERENCE.md": ("reference-", "reference")})
    ref = convert(reference, "reference-", {"../README.md": ("guide-", "index")})
    ref = re.sub(r"^# (.*)$", r"# \1 {#reference}", ref, count=1, flags=re.M)
    with open(os.path.join(out, "guide.md"), "w", encoding="utf-8") as f:
        f.write(guide)
    with open(os.path.join(out, "reference.md"), "w", encoding="utf-8") as f:
        f.write(ref)


if __name__ == "__main__":
    main()

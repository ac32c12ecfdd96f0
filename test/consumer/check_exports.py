#!/usr/bin/env python3
"""Fails when libzklock.so exports a zklock symbol the public headers do not mark ZKLOCK_API.

Usage: check_exports.py <libzklock.so> <include dir>

The library is compiled with hidden visibility, so its dynamic symbol table should hold only
the functions the public headers declare ZKLOCK_API and the members of the classes they mark
ZKLOCK_API; the engine (detail::session_impl, ...), the state machines (acquire_fsm, hold_fsm,
queue parsing) and the lock runner stay internal. Instantiations of std and Boost templates
(Asio's service ids must stay unique across the process) are not zklock's code and pass.
"""
import pathlib
import re
import subprocess
import sys

lib, include = sys.argv[1], pathlib.Path(sys.argv[2])
functions, classes = set(), set()
for header in include.rglob("*.hpp"):
    text = header.read_text()
    classes.update(re.findall(r"\b(?:class|struct)\s+ZKLOCK_API\s+(\w+)", text))
    for decl in re.findall(r"ZKLOCK_API\s+([^;{]*?)\(", text):
        if not decl.startswith(("class", "struct")):
            functions.add(re.findall(r"(\w+)\s*$", decl)[0])
if not functions or not classes:
    sys.exit(f"no ZKLOCK_API declarations found under {include}")

out = subprocess.run(["nm", "-D", "--defined-only", "-C", lib], check=True, capture_output=True,
                     text=True).stdout
exported, bad = 0, []
for line in out.splitlines():
    parts = line.split(" ", 2)
    if len(parts) < 3:
        continue
    name = parts[2]
    for prefix in ("typeinfo name for ", "typeinfo for ", "vtable for ", "guard variable for "):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if not name.startswith("zklock::"):
        continue  # std/Boost instantiations, possibly over zklock types
    exported += 1
    qualified = name.split("(", 1)[0].replace("[abi:cxx11]", "")
    components = qualified.split("::")
    last = components[-1]
    if last.startswith("~"):
        last = last[1:]
    ok = last in functions or any(c in classes for c in components[:-1]) or last in classes
    if not ok:
        bad.append(name)
if bad:
    print(f"{lib} exports {len(bad)} internal symbol(s) (not declared ZKLOCK_API):")
    for name in bad:
        print("  " + name[:200])
    sys.exit(1)
if exported == 0:
    sys.exit(f"{lib} exports no zklock symbol at all")
print(f"{lib}: {exported} zklock symbols exported, all declared ZKLOCK_API "
      f"({len(functions)} functions, {len(classes)} classes)")

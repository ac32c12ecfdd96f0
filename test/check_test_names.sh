#!/bin/sh
# Fails when a test case name of the Catch2 binaries given contains a semicolon: ctest splits a
# discovered test's name there into two broken tests. (Catch2 v2's --list-test-names-only exits
# with the number of tests listed, so its status says nothing.)
names=""
for bin in "$@"; do
  names="$names$("$bin" --list-test-names-only)
"
done
if [ -z "$(printf '%s' "$names" | tr -d '[:space:]')" ]; then
  echo "no test names listed by: $*" >&2
  exit 1
fi
if printf '%s' "$names" | grep ';'; then
  echo "^ test names with a semicolon: ctest would split them" >&2
  exit 1
fi
exit 0

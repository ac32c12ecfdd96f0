#!/bin/sh
# Runs the kazoo peer with Debian's python3 (python3-kazoo), whatever python is first on PATH.
# Arguments: --connect HOSTS --path PATH --contenders N --cycles M [--hold-us U] [--json FILE]
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/kazoo_bench.py" "$@"

#!/bin/sh
# The Curator peer of zklock-bench (CuratorBench.java), compiled if needed (peer.sh), with the
# given arguments: --connect HOSTS --path PATH --contenders N --cycles M [--hold-us U] [--json FILE]
exec sh "$(cd "$(dirname "$0")" && pwd)/peer.sh" CuratorBench "$@"

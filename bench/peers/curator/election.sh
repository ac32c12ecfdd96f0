#!/bin/sh
# The Curator peer of zklock-election-bench (CuratorElection.java), compiled if needed (peer.sh),
# with the given arguments (the election modes of zklock-election-bench):
#   --connect HOSTS --path PATH --mode resign --candidates N --resigns R [--hold-ms H] [--session-timeout-ms T] [--json F] [--cdf F]
#   --connect HOSTS --path PATH --mode candidate --id NAME [--session-timeout-ms T]
exec sh "$(cd "$(dirname "$0")" && pwd)/peer.sh" CuratorElection "$@"

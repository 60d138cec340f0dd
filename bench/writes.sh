#!/bin/sh
# writes.sh measures write throughput with group commit: wrk (in its own process) POSTs
# new users with 1 and with 64 connections, against the service in memory and with
# -data on a fresh directory, and prints each rate and the 64-to-1 ratio.
#
#   bench/writes.sh [seconds]       (needs wrk: apt-get install wrk)
set -eu
secs=${1:-5}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
command -v wrk >/dev/null || { echo "writes.sh needs wrk (apt-get install wrk)" >&2; exit 1; }
(cd "$here/.." && go build -o "$work/quartet" .)
addr=127.0.0.1:18480
rate() { wrk -t1 -c"$1" -d"${secs}s" -s "$here/post.lua" "http://$addr" | awk '/Requests\/sec/ {printf "%d", $2}'; }
for store in memory data; do
  set -- -http "$addr" -grpc 127.0.0.1:18481
  [ "$store" = data ] && set -- "$@" -data "$work/data"
  "$work/quartet" "$@" 2>/dev/null &
  pid=$!
  until curl -sf "http://$addr/healthz" >/dev/null; do sleep 0.1; done
  one=$(rate 1)
  many=$(rate 64)
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  echo "$store: 1 writer $one/s, 64 writers $many/s, ratio $(awk "BEGIN {printf \"%.1f\", $many/$one}")x"
done

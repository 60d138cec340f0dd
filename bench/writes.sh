#!/bin/sh
# writes.sh measures write throughput with group commit: wrk (in its own process) POSTs
# new users with 1 and with 64 connections, against the service in memory and with
# -data on a fresh directory, and prints each rate and the 64-to-1 ratio.
#
# The two rates alternate for several rounds on the same server and the medians are
# compared: on a shared machine the speed available drifts over minutes, and a ratio of
# two runs taken far apart measures the drift as much as the service.
#
#   bench/writes.sh [seconds per run] [rounds]       (needs wrk: apt-get install wrk)
set -eu
secs=${1:-5}
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd) name=writes.sh
. "$here/lib.sh"
(cd "$here/.." && go build -o "$work/quartet" .)
addr=127.0.0.1:18480
rate() { wrk -t1 -c"$1" -d"${secs}s" -s "$here/post.lua" "http://$addr" | awk '/Requests\/sec/ {printf "%d", $2}'; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
for store in memory data; do
  set -- -http "$addr" -grpc 127.0.0.1:18481
  [ "$store" = data ] && set -- "$@" -data "$work/data"
  "$work/quartet" "$@" 2>/dev/null &
  pid=$!
  healthy "$addr"
  ones= manys= ratios=
  for _ in $(seq "$rounds"); do
    one=$(rate 1)
    many=$(rate 64)
    ones="$ones $one" manys="$manys $many"
    ratios="$ratios $(awk "BEGIN {printf \"%.1f\", $many/$one}")"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  one=$(echo "$ones" | median) many=$(echo "$manys" | median)
  echo "$store: 1 writer $one/s, 64 writers $many/s (medians of$ones and$manys), ratio $(awk "BEGIN {printf \"%.1f\", $many/$one}")x (rounds:$ratios)"
done

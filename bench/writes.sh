#!/bin/sh
# writes.sh measures write throughput with group commit: wrk (in its own process) POSTs
# new users with 1 and with 64 connections, against the service in memory and with
# -data on a fresh directory, and prints each rate and the 64-to-1 ratio.
#
# The two rates alternate for several rounds on the same server and the medians are
# compared: on a shared machine the speed available drifts over minutes, and a ratio of
# two runs taken far apart measures the drift as much as the service.
#
# Given builds of the service, it compares their -data rates instead: each round runs
# every build in turn, on a fresh directory, so that the drift falls on all alike.
#
#   bench/writes.sh [seconds per run] [rounds]       (needs wrk: apt-get install wrk)
#   bench/writes.sh SECONDS ROUNDS BUILD...          e.g. two binaries made with go build -o
set -eu
secs=${1:-5}
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd) name=writes.sh
. "$here/lib.sh"
addr=127.0.0.1:18480
rate() { wrk -t1 -c"$1" -d"${secs}s" -s "$here/post.lua" "http://$addr" | awk '/Requests\/sec/ {printf "%d", $2}'; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
serve() { "$@" -http "$addr" -grpc 127.0.0.1:18481 2>/dev/null & pid=$!; healthy "$addr"; }
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
if [ $# -gt 2 ]; then
  shift 2
  for _ in $(seq "$rounds"); do
    n=0
    for build in "$@"; do
      n=$((n + 1))
      rm -rf "$work/data"
      serve "$build" -data "$work/data"
      echo "$(rate 1)" >>"$work/one.$n"
      echo "$(rate 64)" >>"$work/many.$n"
      stop
    done
  done
  n=0
  for build in "$@"; do
    n=$((n + 1))
    ones=$(tr '\n' ' ' <"$work/one.$n") manys=$(tr '\n' ' ' <"$work/many.$n")
    echo "$build: 1 writer $(echo "$ones" | median)/s, 64 writers $(echo "$manys" | median)/s (rounds: $ones/ $manys)"
  done
  exit
fi
(cd "$here/.." && go build -o "$work/quartet" .)
for store in memory data; do
  set -- "$work/quartet"
  [ "$store" = data ] && set -- "$@" -data "$work/data"
  serve "$@"
  ones= manys= ratios=
  for _ in $(seq "$rounds"); do
    one=$(rate 1)
    many=$(rate 64)
    ones="$ones $one" manys="$manys $many"
    ratios="$ratios $(awk "BEGIN {printf \"%.1f\", $many/$one}")"
  done
  stop
  one=$(echo "$ones" | median) many=$(echo "$manys" | median)
  echo "$store: 1 writer $one/s, 64 writers $many/s (medians of$ones and$manys), ratio $(awk "BEGIN {printf \"%.1f\", $many/$one}")x (rounds:$ratios)"
done

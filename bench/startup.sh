#!/bin/sh
# startup.sh measures start-up side by side: the service built at two revisions, each
# started in turn on one generated dataset (by default the large one: 1,000,000 users
# and 100,000 products), alternating A B, B A, ... It prints per round the time from
# exec to the first /healthz 200 and the CPU the process used until then, and the
# medians at the end.
#
#   bench/startup.sh REV_A REV_B [rounds] [users] [products]
set -eu
a=$1 b=$2
rounds=${3:-5}
users=${4:-1000000}
products=${5:-100000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
for v in a b; do
  eval rev=\$$v
  mkdir "$work/$v"
  (cd "$here/.." && git archive "$rev") | tar -x -C "$work/$v"
  (cd "$work/$v" && go build -o "$work/quartet-$v" .)
done
(cd "$here" && go run . gen -users "$users" -posts-per-user 0 -products "$products" -orders 0 -o "$work/large.json") >/dev/null
addr=127.0.0.1:18492
tck=$(getconf CLK_TCK)
for i in $(seq "$rounds"); do
  order="a b"
  [ $((i % 2)) = 0 ] && order="b a"
  for v in $order; do
    t0=$(date +%s%N)
    "$work/quartet-$v" -http "$addr" -grpc 127.0.0.1:18493 -load "$work/large.json" -env production 2>/dev/null &
    pid=$!
    until curl -sf "http://$addr/healthz" >/dev/null 2>&1; do sleep 0.02; done
    t1=$(date +%s%N)
    c=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    echo "$v $(( (t1 - t0) / 1000000 )) $(( c * 1000 / tck ))" | tee -a "$work/results" |
      awk -v i="$i" '{printf "round %s %s: start-up %s ms, CPU %s ms\n", i, $1, $2, $3}'
  done
done
for v in a b; do
  eval rev=\$$v
  for col in 2:start-up-ms 3:CPU-ms; do
    n=${col%%:*} name=${col#*:}
    awk -v v="$v" -v n="$n" '$1 == v {print $n}' "$work/results" | sort -n |
      awk -v l="$v ($rev) $name" '{x[NR] = $1} END {m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%s: median %s (%s–%s)\n", l, m, x[1], x[NR]}'
  done
done

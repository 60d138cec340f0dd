#!/bin/sh
# tricks.sh measures one performance trick side by side: the service built at two
# revisions (A with the trick, B without, or the other way round), each started in turn
# on the side-by-side dataset and loaded by wrk (its own process) over 32 connections
# with GET /api/users/{id} (random ids), GET a page of 10 users sorted by name, and
# POST /api/users. The order
# alternates (A B, B A, ...) so that drift in the machine's other load falls on both.
# Per round and variant it prints requests/s and the server's CPU per request
# (user+system from /proc/PID/stat, the steadier figure on a shared machine); at the
# end, the medians and the spread of each.
#
#   bench/tricks.sh REV_A REV_B [seconds per run] [rounds]      (needs wrk)
#   LOG=file bench/tricks.sh ...   logs to a file rather than /dev/null
#   MODE=inproc bench/tricks.sh REV_A REV_B [iterations] [rounds]
#
# MODE=inproc runs instead the root package's BenchmarkRESTCPU (cpu_bench_test.go,
# copied from this tree into both, so that both measure the same requests) and prints
# each request's CPU time per call, A and B alternating.
set -eu
a=$1 b=$2
secs=${3:-5}
rounds=${4:-5}
here=$(cd "$(dirname "$0")" && pwd) name=tricks.sh
. "$here/lib.sh"
for v in a b; do
  eval rev=\$$v
  mkdir "$work/$v"
  (cd "$here/.." && git archive "$rev") | tar -x -C "$work/$v"
  (cd "$work/$v" && go build -o "$work/quartet-$v" .)
done
if [ "${MODE:-}" = inproc ]; then
  for v in a b; do
    cp "$here/../cpu_bench_test.go" "$work/$v/"
    (cd "$work/$v" && go test -c -o "$work/bench-$v.test" .)
  done
  n=${3:-20000}
  for i in $(seq "$rounds"); do
    order="a b"
    [ $((i % 2)) = 0 ] && order="b a"
    for v in $order; do
      "$work/bench-$v.test" -test.run '^$' -test.bench RESTCPU -test.benchtime "${n}x" |
        awk -v v="$v" '/cpu-ns\/op/ {sub(/-[0-9]+$/, "", $1); print v, $1, $5}' | tee -a "$work/results"
    done
  done
  for v in a b; do
    eval rev=\$$v
    for name in $(awk '{print $2}' "$work/results" | sort -u); do
      awk -v v="$v" -v n="$name" '$1 == v && $2 == n {print $3}' "$work/results" | sort -n |
        awk -v l="$v ($rev) $name cpu-ns/op" '{x[NR] = $1} END {m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%s: median %s (%s–%s)\n", l, m, x[1], x[NR]}'
    done
  done
  exit 0
fi
(cd "$here" && go run . gen -users 1000 -o "$work/small.json") >/dev/null
addr=127.0.0.1:18490
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# run SCRIPT: wrk's requests/s and the server's CPU µs per request, "rate cpu".
run() {
  c0=$(cpu)
  out=$(wrk -t1 -c32 -d"${secs}s" -s "$here/$1" "http://$addr")
  c1=$(cpu)
  echo "$out" | awk -v c="$((c1 - c0))" -v t="$tck" '/^Requests\/sec/ {r = $2} /requests in/ {n = $1} END {printf "%d %.1f", r, c / t * 1e6 / n}'
}
logto=/dev/null
[ "${LOG:-}" = file ] && logto="$work/log"
results="$work/results"
for i in $(seq "$rounds"); do
  order="a b"
  [ $((i % 2)) = 0 ] && order="b a"
  for v in $order; do
    "$work/quartet-$v" -http "$addr" -grpc 127.0.0.1:18491 -load "$work/small.json" -env production 2>"$logto" &
    pid=$!
    healthy "$addr"
    wrk -t1 -c32 -d1s -s "$here/get.lua" "http://$addr" >/dev/null # warm-up
    g=$(run get.lua)
    pg=$(run page.lua)
    p=$(run post.lua)
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    echo "round $i $v: $g $pg $p" | awk '{printf "round %s %s GET %s/s %s µs/req  page %s/s %s µs/req  POST %s/s %s µs/req\n", $2, $3, $4, $5, $6, $7, $8, $9}'
    echo "$v $g $pg $p" >>"$results"
  done
done
# Medians and ranges of each column, per variant.
for v in a b; do
  eval rev=\$$v
  for col in 2:GET-req/s 3:GET-µs/req 4:page-req/s 5:page-µs/req 6:POST-req/s 7:POST-µs/req; do
    n=${col%%:*} name=${col#*:}
    awk -v v="$v" -v n="$n" '$1 == v {print $n}' "$results" | sort -n |
      awk -v l="$v ($rev) $name" '{x[NR] = $1} END {m = (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%s: median %s (%s–%s)\n", l, m, x[1], x[NR]}'
  done
done

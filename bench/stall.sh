#!/usr/bin/env bash
# Readers that stall: SOCKETS connections from ADDRESSES loopback addresses each ask for
# `{ posts { content } }` (130 posts of 100 KB: a 13 MB answer) and never read it, while
# 127.0.0.250 reads GET /api/users/1 five times a second for 13 s. Prints the service's
# RSS before and at its peak, and how the other address was answered.
#   bench/stall.sh [SOCKETS] [ADDRESSES] [BINARY]     (defaults: 40 1, a build of ..)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
bin=${3:-}
if [ -z "$bin" ]; then (cd "$here/.." && go build -o "$work/quartet" .); bin=$work/quartet; fi
python3 - "$work/big.json" <<'PY'
import json, sys
posts = [{"id": i + 1, "userId": 1, "title": "long", "content": "x" * 99990, "createdAt": "2024-01-01T09:00:00Z"} for i in range(130)]
json.dump({"users": [{"id": 1, "name": "Ann", "email": "ann@example.com", "createdAt": "2024-01-01T09:00:00Z"}], "posts": posts}, open(sys.argv[1], "w"))
PY
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$bin" -load "$work/big.json" -http 127.0.0.1:$port -grpc 127.0.0.1:0 -env production >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
python3 "$here/stall.py" "$port" "${1:-40}" "${2:-1}" "$pid"

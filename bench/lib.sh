# lib.sh: what tricks.sh and writes.sh share. Source it after setting here (this
# folder) and name (the script's name, for messages):
#   work   a temporary folder, removed on exit, when the service in $pid is stopped too
#   healthy ADDR   waits until the service at ADDR answers /healthz
command -v wrk >/dev/null || { echo "$name needs wrk (apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
healthy() { until curl -sf "http://$1/healthz" >/dev/null; do sleep 0.1; done; }

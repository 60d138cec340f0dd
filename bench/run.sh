#!/bin/sh
# run.sh runs quartet's load harness from any directory: bench/run.sh [-quick] [flags].
# The harness is a Go module of its own (bench/go.mod), so `go run ./bench` from the
# repository root does not work; this script changes into bench/ first.
set -e
cd "$(dirname "$0")"
exec go run . "$@"

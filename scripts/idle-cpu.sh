#!/usr/bin/env bash
# idle-cpu.sh - CPU time an idle dta process spends: starts `dta ARGS...`, waits 3 s for start-up, then
# prints the process's user+system CPU over the next 10 s (from /proc/PID/stat), and stops it.
#
# usage: scripts/idle-cpu.sh up
#        scripts/idle-cpu.sh collector            (then, in another shell: scripts/idle-cpu.sh translator --collector 127.0.0.1:4791)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/dta
go build -o "$bin" ./cmd/dta
"$bin" "$@" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 3
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
a=$(ticks)
sleep 10
b=$(ticks)
echo "dta $*: $(( (b - a) * 1000 / hz )) ms of CPU in 10 s idle"

#!/usr/bin/env bash
# bench.sh - the figures of docs/BENCHMARKS.md, each 3 times, with this machine's ceilings
# measured in the same session (../shared/tools/limits, built with `./run_all.sh build`).
#
# usage: scripts/bench.sh [OUT] [PARTS...]    parts: machine ceil micro e2e (default: all)
# Raw outputs go to OUT (default bench-out/); nothing is summarised: docs/BENCHMARKS.md says
# which line is which figure. Run as root (taskset, SO_RCVBUFFORCE, net.core.rmem_max for the
# UDP ceiling, restored on exit). About 40 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench-out}
shift || true
PARTS=${*:-machine ceil micro e2e}
LIMITS=${LIMITS:-../shared/tools/limits}
SECS=3
mkdir -p "$OUT"
want() { [[ " $PARTS " == *" $1 "* ]]; }
rep() { for i in 1 2 3; do echo "## run $i: $*"; "$@"; done; }
RMEM=$(cat /proc/sys/net/core/rmem_max)
trap 'sysctl -qw net.core.rmem_max="$RMEM"' EXIT

go build -o "$OUT/dta" ./cmd/dta
for p in wire/dta hashing internal/primitive/keywrite internal/primitive/keyincrement \
    internal/primitive/postcard internal/primitive/appendlist internal/translator internal/region; do
    go test -c -o "$OUT/$(basename "$p").test" "./$p"
done

if want machine; then
    {
        echo "nproc: $(nproc)"
        grep -m1 'model name' /proc/cpuinfo
        echo "kernel: $(uname -r)"
        go version
        echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
        echo "git: $(git rev-parse --short HEAD) $(git status --porcelain | wc -l) files changed"
        uptime
    } | tee "$OUT/machine.txt"
fi

# bench PKG REGEX: one single-threaded go test -bench run on CPU 0, 3 counts.
bench() {
    taskset -c 0 "$OUT/$1.test" -test.run XXX -test.bench "$2" -test.benchtime 1s -test.count 3 -test.cpu 1
}

if want ceil; then
    {
        for m in w r rb rbp rpp; do
            rep env GOMAXPROCS=1 taskset -c 0 "$LIMITS/bin/go-randmem" -mode $m -d 16 -mib 4096 -pages thp -secs $SECS
        done
        rep taskset -c 0 "$LIMITS/bin/crc.test" -test.run XXX -test.bench . -test.benchtime 1s
        # UDP receive ceiling of one core (Go, ReadBatch x64): live (sender on the other core) and
        # drain (the receiver sleeps 6 s while the sender fills its buffer, then empties it).
        sysctl -qw net.core.rmem_max=536870912
        for len in 64 1400; do
            for i in 1 2 3; do
                echo "## run $i: udpgo live batch=64 ${len}B"
                GOMAXPROCS=1 taskset -c 1 "$LIMITS/bin/udpgo" -port 47999 -batch 64 -secs $SECS &
                sleep 0.3
                taskset -c 0 "$LIMITS/bin/udp_send" 47999 $len 64 $((SECS + 2))
                wait
                echo "## run $i: udpgo drain batch=64 ${len}B"
                GOMAXPROCS=1 taskset -c 1 "$LIMITS/bin/udpgo" -port 47999 -batch 64 -secs 10 -fill 6 &
                sleep 0.3
                taskset -c 0 "$LIMITS/bin/udp_send" 47999 $len 64 5
                wait
            done
        done
        sysctl -qw net.core.rmem_max="$RMEM"
    } 2>&1 | tee "$OUT/ceilings.txt"
fi

if want micro; then
    {
        bench hashing 'Key|Checksum|CRC32C|Mix64'
        bench dta 'Decode'
        bench keywrite 'Translate'
        bench keyincrement 'Translate'
        bench postcard 'Translate'
        bench appendlist 'Translate|Poll'
        bench translator 'Handle'
        bench keywrite 'Query/4GiB'
        bench keyincrement 'Query/1GiB'
        bench postcard 'Query/1GiB'
        bench region 'Random'
    } 2>&1 | tee "$OUT/micro.txt"
fi

if want e2e; then
    "$OUT/dta" bench --repeat 3 --json "$OUT/e2e.json" | tee "$OUT/e2e.txt"
    "$OUT/dta" bench --repeat 3 --primitive keywrite,append --mode multi/recvmmsg --readers 2 --senders 2 \
        --json "$OUT/e2e-2x2.json" | tee "$OUT/e2e-2x2.txt"
    # 2^24 flows: the baseline's tables then take about the memory of DTA's 1 GiB stores.
    "$OUT/dta" bench --repeat 3 --mode multi/recvmmsg --keys 16777216 \
        --json "$OUT/e2e-16M.json" | tee "$OUT/e2e-16M.txt"
    # RoCEv2 to a software responder, below its saturation.
    "$OUT/dta" bench --repeat 3 --primitive keywrite,append --mode multi/recvmmsg --sink roce --rate 40000 \
        --json "$OUT/e2e-roce.json" | tee "$OUT/e2e-roce.txt"
fi

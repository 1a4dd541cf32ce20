#!/usr/bin/env bash
# netns_pair.sh DTA_BINARY OUTDIR
#
# Runs `dta collector` and `dta translator` as two processes in two network
# namespaces joined by a veth pair (our own test hosts, 10.77.x.0/24 inside the
# namespaces only), captures the RoCEv2 traffic on the collector's veth with
# tshark, sends reports of every primitive to the translator, queries the
# collector, and checks the capture with ../shared/tools/tshark_check.sh.
# Needs root, iproute2 and tshark. Cleans up after itself.
set -euo pipefail
dta=$(readlink -f "$1"); out=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
shared=${DTA_SHARED:-$here/../../shared}
id=$$; ns1=dtacol$id; ns2=dtatr$id; v1=dc$id; v2=dt$id
net=10.77.$((id % 250)); col=$net.1; tr=$net.2
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  ip netns del "$ns2" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns1"; ip netns add "$ns2"
ip link add "$v1" type veth peer name "$v2"
ip link set "$v1" netns "$ns1"; ip link set "$v2" netns "$ns2"
ip -n "$ns1" addr add "$col/24" dev "$v1"; ip -n "$ns2" addr add "$tr/24" dev "$v2"
for n in "$ns1" "$ns2"; do ip -n "$n" link set lo up; done
ip -n "$ns1" link set "$v1" up; ip -n "$ns2" link set "$v2" up

cat > "$out/dta.yaml" <<YAML
collector: {prefault: false}
translator: {readers: 1, recv_buffer: 4MiB}
stores:
  - {name: keywrite, id: 1, primitive: keywrite, default: true, slots: 4096, value_size: 4, redundancy: 4}
  - {name: keyincrement, id: 2, primitive: keyincrement, default: true, slots: 4096, redundancy: 4}
  - {name: postcard, id: 3, primitive: postcard, default: true, chunks: 1024, hops: 5, redundancy: 2}
  - {name: append, id: 4, primitive: append, default: true, lists: 4, capacity: 64, entry_size: 4, batch: 4}
YAML

ip netns exec "$ns1" tshark -q -i "$v1" -f "udp port 4791" -w "$out/roce.pcap" >"$out/tshark.log" 2>&1 &
pids+=($!)
sleep 2
ip netns exec "$ns1" "$dta" collector --config "$out/dta.yaml" --rdma "$col:4791" --http "$col:8040" >"$out/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do ip netns exec "$ns1" "$dta" query stores --server "http://$col:8040" >/dev/null 2>&1 && break; sleep 0.1; done
ip netns exec "$ns2" "$dta" translator --config "$out/dta.yaml" --collector "$col:4791" --rdma-local "$tr:4791" --listen "$tr:40040" --http "$tr:8041" >"$out/translator.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q "reports on udp" "$out/translator.log" && break; sleep 0.1; done

rep() { ip netns exec "$ns2" "$dta" report "$@" --to "$tr:40040" -q; }
rep keywrite --key 1 --value 42
rep keywrite --key 2 --value 7 --immediate
rep keyincrement --key 7 --delta 10
rep keyincrement --key 7 --delta 5
rep postcard --key 99 --hops 11,22,33,44,55
rep append --list 1 --value 1000 --count 4
sleep 1
q() { ip netns exec "$ns1" "$dta" query "$@" --server "http://$col:8040" -o json; }
q keywrite --key 1 | tee "$out/keywrite.json"
q keyincrement --key 7 | tee "$out/keyincrement.json"
q postcard --key 99 | tee "$out/postcard.json"
q append --list 1 --cursor 0 | tee "$out/append.json"
grep -q '"value_u32":42' "$out/keywrite.json"
grep -q '"count":15' "$out/keyincrement.json"
grep -q '"complete":true' "$out/postcard.json"
[ "$(grep -o '"value_u32":1000' "$out/append.json" | wc -l)" -eq 4 ]

kill "${pids[2]}"; wait "${pids[2]}" 2>/dev/null || true   # translator: DREQ
sleep 1
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true   # tshark
"$shared/tools/tshark_check.sh" "$out/roce.pcap" > "$out/check.txt"
tail -1 "$out/check.txt"

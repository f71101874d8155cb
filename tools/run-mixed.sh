#!/usr/bin/env bash
# run-mixed.sh BUILD - `make run-mixed`: a mixed cluster on loopback, in the
# foreground: edgelockd nodes 1 and 2 (the small profile,
# BUILD/small/bin/edgelockd) and node 3 a firmware image under QEMU
# (mps2-an385), its UART on a unix socket that edgelock-uart-relay carries
# to the peer network as node 3. Log lines are prefixed by their process;
# Ctrl-C stops all four by PID. State lives in BUILD/run-mixed and is wiped
# at each start: the firmware node keeps its Raft state in RAM, so a cluster
# that remembered it would hold a voter that forgot its votes
# (docs/mixed-cluster.md). EL_RUN_PORT (default 7400) picks the ports: peers
# PORT+1..3, clients PORT+101..102.
set -u
build=$1
base=${EL_RUN_PORT:-7400}
root=$(pwd)
run="$root/$build/run-mixed" certs="$root/$build/certs"
rm -rf "$run" && mkdir -p "$run"
peers=""
for i in 1 2 3; do peers+="$i = tls+tcp://127.0.0.1:$((base + i))"$'\n'; done
endpoints=""
for i in 1 2; do
	cat >"$run/node$i.conf" <<CONF
; edgelockd config written by make run-mixed (tools/run-mixed.sh)
[node]
id = $i
data_dir = $run/node$i
peer_addr = tls+tcp://127.0.0.1:$((base + i))
client_addr = tls+tcp://127.0.0.1:$((base + 100 + i))
cluster = mixed

[tls]
ca_file = $certs/ca.pem
cert_key_file = $certs/node$i.pem
client_auth = required

[peers]
$peers
[timing]
; the firmware node's (examples/firmware/mixed_node_main.c): all must agree
election_ms = 1000
heartbeat_ms = 100
CONF
	endpoints+="${endpoints:+,}tls+tcp://127.0.0.1:$((base + 100 + i))"
done
cat >"$run/edgelock.conf" <<CONF
; written by make run-mixed: the two daemons of the mixed cluster
[client]
endpoints = $endpoints
ca_file = $certs/ca.pem
cert_key_file = $certs/client.pem
CONF

pids=()
stop() {
	trap - INT TERM
	echo "stopping the mixed cluster (pids ${pids[*]})"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	exit 0
}
trap stop INT TERM
for i in 1 2; do
	"$root/$build/small/bin/edgelockd" -c "$run/node$i.conf" --bootstrap \
		> >(sed -u "s/^/[node$i] /") 2>&1 &
	pids+=($!)
done
# -display none (not -nographic): QEMU leaves the terminal alone, so Ctrl-C
# reaches this script; the firmware's log comes out through semihosting.
qemu-system-arm -M mps2-an385 -display none -monitor none \
	-semihosting-config enable=on,target=native \
	-serial "unix:$run/node3.uart,server=on,wait=off" \
	-kernel "$root/$build/boards/mps2-an385/mixed-node.elf" </dev/null \
	> >(sed -u "s/^/[node3 fw] /") 2>&1 &
pids+=($!)
"$root/$build/small/bin/edgelock-uart-relay" --id 3 --cluster mixed --ca "$certs/ca.pem" \
	--cert "$certs/node3.pem" --listen "tls+tcp://127.0.0.1:$((base + 3))" \
	--peer "1=tls+tcp://127.0.0.1:$((base + 1))" --peer "2=tls+tcp://127.0.0.1:$((base + 2))" \
	--uart "unix:$run/node3.uart" > >(sed -u "s/^/[relay3] /") 2>&1 &
pids+=($!)
cat <<MSG
mixed cluster on loopback: edgelockd nodes 1, 2 (clients: $endpoints),
node 3 = firmware under QEMU (mps2-an385), UART on $run/node3.uart via edgelock-uart-relay
  try:   build/bin/edgelock --config $run/edgelock.conf status
         build/bin/edgelock --config $run/edgelock.conf lock demo -- sh -c 'echo token \$EDGELOCK_TOKEN'
Ctrl-C stops all four.
MSG
wait "${pids[@]}"

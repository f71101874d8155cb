#!/usr/bin/env bash
# run-cluster.sh BUILD - `make run`: three edgelockd on loopback over TLS, in
# the foreground, each log line prefixed by its node; Ctrl-C stops them all.
# State lives in BUILD/run/nodeN (kept between runs: the cluster restarts
# with its locks). EL_RUN_PORT (default 7100) picks the ports: peers
# PORT+1..3, clients PORT+101..103.
set -u
build=$1
base=${EL_RUN_PORT:-7100}
root=$(pwd)
run="$root/$build/run" certs="$root/$build/certs"
mkdir -p "$run"
peers=""
for i in 1 2 3; do peers+="$i = tls+tcp://127.0.0.1:$((base + i))"$'\n'; done
endpoints=""
for i in 1 2 3; do
	cat >"$run/node$i.conf" <<CONF
; edgelockd config written by make run (tools/run-cluster.sh)
[node]
id = $i
data_dir = $run/node$i
peer_addr = tls+tcp://127.0.0.1:$((base + i))
client_addr = tls+tcp://127.0.0.1:$((base + 100 + i))
cluster = dev

[tls]
ca_file = $certs/ca.pem
cert_key_file = $certs/node$i.pem
client_auth = required

[peers]
$peers
[timing]
election_ms = 1000
heartbeat_ms = 100
CONF
	endpoints+="${endpoints:+,}tls+tcp://127.0.0.1:$((base + 100 + i))"
done
# The client config build/bin/edgelock reads when given no flags.
cat >"$root/$build/edgelock.conf" <<CONF
; written by make run: where the local cluster is and how to reach it
[client]
endpoints = $endpoints
ca_file = $certs/ca.pem
cert_key_file = $certs/client.pem
CONF

pids=()
stop() {
	trap - INT TERM
	echo "stopping edgelockd (pids ${pids[*]})"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	exit 0
}
trap stop INT TERM
for i in 1 2 3; do
	mode=""
	[ -e "$run/node$i/snapshot" ] || ls "$run/node$i"/wal-* >/dev/null 2>&1 || mode=--bootstrap
	"$root/$build/bin/edgelockd" -c "$run/node$i.conf" $mode > >(sed -u "s/^/[node$i] /") 2>&1 &
	pids+=($!)
done
cat <<MSG
three edgelockd nodes on loopback (clients: $endpoints)
  configs: $run/node{1,2,3}.conf    data: $run/node{1,2,3}
  client config: $build/edgelock.conf (build/bin/edgelock finds the cluster with it)
  try:   build/bin/edgelock status
         build/bin/edgelock lock demo -- sh -c 'echo token \$EDGELOCK_TOKEN; sleep 2'
Ctrl-C stops all three.
MSG
wait "${pids[@]}"

#!/usr/bin/env bash
# sweep.sh SIM START COUNT - a long sweep of one simulator binary: COUNT seeds
# from START split over JOBS (default 2) niced processes. Prints every failing
# seed, then "N passed, N failed" over all of them.
set -u
sim=$1 start=$2 count=$3
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chunk=$(( (count + jobs - 1) / jobs ))
for ((j = 0; j < jobs; j++)); do
	s=$((start + j * chunk)) n=$chunk
	[ $((j * chunk + n)) -gt "$count" ] && n=$((count - j * chunk))
	[ "$n" -le 0 ] && continue
	nice "$sim" --start "$s" --count "$n" >"$tmp/$j.out" 2>&1 &
done
wait
pass=0 fail=0
for f in "$tmp"/*.out; do
	grep '^FAIL seed' "$f"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$f" | tail -n 1)
	[ -z "$line" ] && { fail=$((fail + 1)); echo "a chunk printed no closing line"; continue; }
	pass=$((pass + $(sed -E 's/^([0-9]+) passed.*/\1/' <<<"$line")))
	fail=$((fail + $(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$line")))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

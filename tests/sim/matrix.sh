#!/usr/bin/env bash
# matrix.sh BUILD START COUNT CONFIG... - the simulator at other limits than
# the tuned one: for each CONFIG (W-T-E-I: log window, compaction threshold,
# entries per message, appends in flight; built by mk/sim.mk as
# BUILD/sim-matrix/CONFIG/sim) run COUNT seeds from START. Prints one line per
# configuration with its failing seeds, then the seeds over all of them as
# "N passed, N failed". JOBS (default 2) configurations run at once, niced.
# SEEDS_FILE (optional): lines "CONFIG SEED  why", seeds that once failed
# outside the range, replayed too (each counts as one seed).
set -u
build=$1 start=$2 count=$3; shift 3
jobs=${JOBS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_one() {
	nice "$build/sim-matrix/$1/sim" --start "$start" --count "$count" >"$tmp/$1.out" 2>&1
	echo $? >"$tmp/$1.rc"
}
running=0
for cfg in "$@"; do
	run_one "$cfg" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
pass=0 fail=0
for cfg in "$@"; do
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$tmp/$cfg.out" | tail -n 1)
	p=$(sed -E 's/^([0-9]+) passed.*/\1/' <<<"${line:-0 passed, 1 failed}")
	f=$(sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"${line:-0 passed, 1 failed}")
	[ "$(cat "$tmp/$cfg.rc")" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	pass=$((pass + p)); fail=$((fail + f))
	IFS=- read -r w t e i <<<"$cfg"
	printf 'window %3s compact %3s entries/msg %s in flight %s: %s passed, %s failed\n' \
		"$w" "$t" "$e" "$i" "$p" "$f"
	grep '^FAIL seed' "$tmp/$cfg.out" | head -n 5 | sed 's/^/    /'
done
if [ -n "${SEEDS_FILE:-}" ]; then
	while read -r cfg seed why; do
		case "$cfg" in '' | '#'*) continue ;; esac
		if "$build/sim-matrix/$cfg/sim" --seed "$seed" >"$tmp/replay.out" 2>&1; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1))
			echo "    FAIL replay $cfg seed $seed ($why)"
		fi
	done <"$SEEDS_FILE"
	echo "replayed the seeds of $SEEDS_FILE"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# run_replica.sh FUZZ_DIR [SECONDS] - the live-replica fuzzer, default and
# small config: first the committed seed corpus (corpus/replica, programs
# that reach each state: elections, lock traffic, a lagging follower fed a
# snapshot, the spare joining, transfers, restarts), then fuzzing, either for
# SECONDS per config or, without SECONDS, a fixed seeded number of runs (the
# bounded, repeatable run of `make test`). New inputs and crash files go to
# FUZZ_DIR/work/replica*, never into the corpus. Ends with "N passed, N failed".
set -u
dir=$1 secs=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/corpus/replica"
pass=0 fail=0
for t in replica replica_small; do
	bin="$dir/fuzz_$t" work="$dir/work/$t"
	# the seeded run starts from nothing but the corpus, so it is the same
	# run every time (a kept work folder made it slower at each run)
	[ -n "$secs" ] || rm -rf "$work"
	mkdir -p "$work"
	if "$bin" -artifact_prefix="$work/" "$corpus"/* >"$work/regression.log" 2>&1; then
		pass=$((pass + 1)); echo "ok   $t: seed corpus ($(ls "$corpus" | wc -l) inputs)"
	else
		fail=$((fail + 1)); echo "FAIL $t: seed corpus (see $work/regression.log)"; tail -n 20 "$work/regression.log"
	fi
	if [ -n "$secs" ]; then limit=(-max_total_time="$secs"); else limit=(-seed=1 -runs=8000); fi
	if "$bin" "${limit[@]}" -max_len=4096 -artifact_prefix="$work/" -print_final_stats=1 \
		"$work" "$corpus" >"$work/fuzz.log" 2>&1; then
		pass=$((pass + 1))
		echo "ok   $t: $(grep -aE '^Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)," \
			"$(grep -aE 'cov: [0-9]+' "$work/fuzz.log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+')"
	else
		fail=$((fail + 1)); echo "FAIL $t: fuzzing found a crash (see $work/fuzz.log)"; tail -n 30 "$work/fuzz.log"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

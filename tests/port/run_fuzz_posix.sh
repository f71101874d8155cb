#!/usr/bin/env bash
# run_fuzz_posix.sh BUILD [SECONDS] - fuzz storage recovery: generate seed
# directories with the real port, then run fuzz_posix_storage, for SECONDS or
# (without) a fixed seeded number of runs, the bounded run of `make test`.
# Work files and crash artifacts go under BUILD/fuzz/work/posix.
set -u
build=$1 secs=${2:-}
work="$build/fuzz/work/posix"
[ -n "$secs" ] || rm -rf "$work" # the seeded run: the same run every time
mkdir -p "$work/corpus" "$work/seeds" "$work/dirs"
pass=0 fail=0
if "$build/host/gen_posix_corpus" "$work/seeds"; then
	pass=$((pass + 1)); echo "ok   seed corpus written"
else
	fail=$((fail + 1)); echo "FAIL gen_posix_corpus"
fi
if [ -n "$secs" ]; then limit=(-max_total_time="$secs"); else limit=(-seed=1 -runs=10000); fi
if FUZZ_POSIX_DIR="$work/dirs" "$build/fuzz/fuzz_posix_storage" "${limit[@]}" -max_len=16384 \
	-artifact_prefix="$work/" "$work/corpus" "$work/seeds" >"$work/fuzz.log" 2>&1; then
	pass=$((pass + 1)); echo "ok   recovery: $(grep -E '^Done [0-9]+ runs' "$work/fuzz.log")"
else
	fail=$((fail + 1)); echo "FAIL recovery fuzzing found a problem (see $work/fuzz.log)"
	tail -n 30 "$work/fuzz.log"
fi
rm -rf "$work"/dirs/fuzz-posix-*
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

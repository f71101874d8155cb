#!/usr/bin/env bash
# run.sh FUZZ_DIR [SECONDS] - run the CBOR/wire fuzz targets built in FUZZ_DIR:
# first over the committed seed corpus (regression), then fuzzing, either for
# SECONDS per target (FUZZ_TARGETS picks the targets; default wire cbor oracle snapshot) or, without SECONDS, a fixed seeded number of runs (FUZZ_RUNS, 300,000 by default; the
# bounded, repeatable run of `make test`). New inputs and crash artifacts go
# under FUZZ_DIR/work, never into tests/fuzz/corpus. Ends with the harness
# line "N passed, N failed".
set -u
dir=$1 secs=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0
for t in ${FUZZ_TARGETS:-wire cbor oracle snapshot}; do
	bin="$dir/fuzz_$t" work="$dir/work/$t" corpus="$here/corpus/$t"
	[ "$t" = oracle ] && corpus="$here/corpus/cbor" # the oracle reads plain CBOR too
	[ -n "$secs" ] || rm -rf "$work" # the seeded run: the same run every time
	mkdir -p "$work"
	if "$bin" -artifact_prefix="$work/" "$corpus"/* >"$work/regression.log" 2>&1; then
		pass=$((pass + 1)); echo "ok   $t: seed corpus"
	else
		fail=$((fail + 1)); echo "FAIL $t: seed corpus (see $work/regression.log)"; tail -n 20 "$work/regression.log"
	fi
	if [ -n "$secs" ]; then limit=(-max_total_time="$secs"); else limit=(-seed=1 -runs="${FUZZ_RUNS:-300000}"); fi
	if "$bin" "${limit[@]}" -max_len=12000 -artifact_prefix="$work/" "$work" "$corpus" \
		>"$work/fuzz.log" 2>&1; then
		pass=$((pass + 1)); echo "ok   $t: $(grep -aE '^Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)"
	else
		fail=$((fail + 1)); echo "FAIL $t: fuzzing found a crash (see $work/fuzz.log)"; tail -n 30 "$work/fuzz.log"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

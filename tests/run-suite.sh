#!/usr/bin/env bash
# run-suite.sh RESULTS_DIR NAME CMD... - run one test suite, keep its log, and
# record its closing "N passed, N failed" line (or a failure when the command
# exits non-zero or prints no such line) in RESULTS_DIR/NAME. Exits non-zero
# when the suite failed, so `make test-unit` and the other per-suite targets
# fail; `make test` sets EL_TEST_ALL=1 to run every suite regardless and lets
# tests/summary.sh give the verdict.
set -u
results=$1 name=$2; shift 2
mkdir -p "$results"
log="$results/$name.log"
start=$(date +%s)
"$@" >"$log" 2>&1
rc=$?
secs=$(( $(date +%s) - start ))
line=$(grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
passed=0 failed=0
if [ -n "$line" ]; then
	passed=$(sed -E 's/^([A-Za-z]+: )?([0-9]+) passed.*/\2/' <<<"$line")
	failed=$(sed -E 's/^([A-Za-z]+: )?[0-9]+ passed, ([0-9]+) failed.*/\2/' <<<"$line")
fi
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
if [ -z "$line" ] && [ "$rc" -eq 0 ]; then failed=1; echo "no closing line" >>"$log"; fi
echo "$name $passed $failed $rc $secs" >"$results/$name"
status=ok; [ "$failed" -ne 0 ] && status=FAIL
printf '%-28s %6s passed %4s failed  %4ss  %s\n' "$name" "$passed" "$failed" "$secs" "$status"
if [ "$failed" -ne 0 ]; then
	echo "---- last lines of $log ----"; tail -n 30 "$log"; echo "----"
	[ -n "${EL_TEST_ALL:-}" ] || exit 1
fi
exit 0

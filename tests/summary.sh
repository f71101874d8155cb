#!/usr/bin/env bash
# summary.sh RESULTS_DIR - add up every suite's counts, print the closing
# line "N passed, N failed", and exit non-zero if anything failed or no
# suite ran at all. A failed suite's name and its FAIL lines (or, without
# any, the last lines of its log), and the leader changes a daemon suite
# printed as "WHY" lines, are repeated just above the closing line:
# a CI that keeps only the tail of the output still says what failed.
set -u
dir=$1
total_p=0 total_f=0 suites=0
for f in "$dir"/*; do
	[ -f "$f" ] || continue
	case "$f" in *.log) continue ;; esac
	read -r name p fl rc secs <"$f"
	total_p=$((total_p + p)); total_f=$((total_f + fl)); suites=$((suites + 1))
	[ "$fl" -eq 0 ] && continue
	echo "failed: $name ($fl failed, exit $rc, ${secs}s; log $f.log)"
	if grep -q 'FAIL' "$f.log" 2>/dev/null; then
		grep 'FAIL' "$f.log" | head -n 8 | cut -c1-300 | sed 's/^/    /'
	else
		tail -n 8 "$f.log" 2>/dev/null | cut -c1-300 | sed 's/^/    /'
	fi
	# a daemon suite's "WHY" lines: the leader changes around its failure
	grep '^WHY ' "$f.log" 2>/dev/null | tail -n 12 | cut -c1-250 | sed 's/^/    /'
done
echo "suites: $suites"
if [ "$suites" -eq 0 ]; then echo "0 passed, 1 failed"; exit 1; fi
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]

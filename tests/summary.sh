#!/usr/bin/env bash
# summary.sh RESULTS_DIR - add up every suite's counts, print the closing
# line "N passed, N failed", and exit non-zero if anything failed or no
# suite ran at all.
set -u
dir=$1
total_p=0 total_f=0 suites=0
for f in "$dir"/*; do
	[ -f "$f" ] || continue
	case "$f" in *.log) continue ;; esac
	read -r name p fl rc secs <"$f"
	total_p=$((total_p + p)); total_f=$((total_f + fl)); suites=$((suites + 1))
done
echo "suites: $suites"
if [ "$suites" -eq 0 ]; then echo "0 passed, 1 failed"; exit 1; fi
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]

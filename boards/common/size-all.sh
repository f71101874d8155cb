#!/usr/bin/env bash
# size-all.sh "BOARD ELF FLASH RAM STACK"... - size-check.sh for each board;
# one check per board, closing with "N passed, N failed" for tests/run-suite.sh.
set -u
here=$(dirname "$0")
pass=0 fail=0
for spec in "$@"; do
	# shellcheck disable=SC2086
	if "$here/size-check.sh" $spec; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

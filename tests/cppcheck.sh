#!/usr/bin/env bash
# cppcheck.sh DIR... - cppcheck every C file of the shipped code; one test per
# directory, so the closing line says which area is clean.
set -u
pass=0 fail=0
for dir in "$@"; do
	files=$(find "$dir" -name '*.c' | sort)
	[ -n "$files" ] || continue
	incs=$(find core port net cmd -type d 2>/dev/null | sed 's/^/-I/')
	if out=$(cppcheck --enable=warning,style,performance,portability --std=c11 -q \
		--error-exitcode=1 --inline-suppr --suppress=missingIncludeSystem \
		-D__GNUC__ $incs $files 2>&1); then
		pass=$((pass + 1)); echo "ok   $dir"
	else
		fail=$((fail + 1)); echo "FAIL $dir"; echo "$out"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# mutants.sh [NAME...] - prove the port's tests see each durability hole of
# tests/port/mutants/: every patch there is applied to a copy of the tree,
# the port/posix suites run on the copy, and at least one must fail. Prints
# which suites caught each; exits 1 when a planted hole got through.
# Not part of `make test` (about a minute per hole): `make test-posix-mutants`.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${MUTANTS_DIR:-$top/build/mutants}
pass=0 fail=0
names=("$@")
[ ${#names[@]} -eq 0 ] && for p in "$top"/tests/port/mutants/*.patch; do names+=("$(basename "$p" .patch)"); done
for name in "${names[@]}"; do
	copy="$work/$name"
	rm -rf "$copy" && mkdir -p "$copy"
	(cd "$top" && tar cf - --exclude=./build --exclude=./.git .) | (cd "$copy" && tar xf -)
	if ! patch -s -p1 -d "$copy" -i "$top/tests/port/mutants/$name.patch"; then
		fail=$((fail + 1)); echo "FAIL $name: the patch no longer applies"; continue
	fi
	make -C "$copy" --no-print-directory -k test-posix test-posix-san test-fuzz-posix \
		KILLS=50 >"$copy/run.log" 2>&1
	caught=$(for r in "$copy"/build/results/*; do
		case $r in *.log) continue ;; esac
		awk '$3 > 0 {print $1}' "$r"
	done | tr '\n' ' ')
	if [ -n "$caught" ]; then
		pass=$((pass + 1)); echo "ok   $name: caught by $caught"
	else
		fail=$((fail + 1)); echo "FAIL $name: every port suite passed"
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

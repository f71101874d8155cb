#!/usr/bin/env bash
# bugs.sh BUILD NAME... - the simulator's self-test: for each planted bug
# tests/sim/bugs/NAME.patch, the simulator built from a copy of core/ with
# that patch applied ($BUILD/sim-bug/NAME/sim, see mk/sim.mk) must find a
# failing seed within the first seeds it tries. A bug it cannot catch fails
# this suite. The patches stay out of core/: the product source holds none.
set -u
build=$1; shift
seeds=${BUG_SEEDS:-20000}
pass=0 fail=0
for bug in "$@"; do
	out=$("$build/sim-bug/$bug/sim" --start 1 --count "$seeds" --expect-failure 2>&1)
	rc=$?
	first=$(grep -m1 '^FAIL seed' <<<"$out")
	if [ $rc -eq 0 ] && [ -n "$first" ]; then
		pass=$((pass + 1)); echo "ok   bug $bug caught: $first"
	else
		fail=$((fail + 1)); echo "FAIL bug $bug not caught in $seeds seeds"
	fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

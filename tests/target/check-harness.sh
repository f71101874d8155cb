#!/usr/bin/env bash
# check-harness.sh QEMU:MACHINE DIR - prove the board test harness reports what
# happened: each image in DIR must end QEMU with its expected exit status and
# print its expected line. A harness that swallowed failures would let every
# target suite pass, so this runs before trusting them.
set -u
machine=$1 dir=$2
here=$(dirname "$0")
pass=0 fail=0

expect() { # image status pattern
	local out rc
	out=$("$here/qemu-run.sh" "$machine" "$dir/$1.elf" 60)
	rc=$?
	last_out=$out
	if [ "$rc" -eq "$2" ] && grep -qE "$3" <<<"$out"; then
		pass=$((pass + 1)); echo "ok   $1: exit $rc, prints /$3/"
	else
		fail=$((fail + 1)); echo "FAIL $1: exit $rc (want $2), output:"; echo "$out" | tail -n 5
	fi
}

expect selftest-fail 1 '^1 passed, 1 failed$'
# Board images carry no assertion text (EL_ASSERT_TEXT 0): file and line say where.
expect selftest-panic 99 'assertion failed at .*selftest_panic\.c:[0-9]+:'
# An undefined instruction: a HardFault (exception 3) on Cortex-M, an
# illegal-instruction trap (mcause 2) on RISC-V.
# An unaligned word load: a HardFault on Armv6-M (the M0+ image), a plain
# load elsewhere (Armv7-M and QEMU's RISC-V allow it).
case $(readelf -h "$dir/node.elf" | sed -n 's/^ *Machine: *//p') in
RISC-V) expect selftest-fault 102 'unhandled exception illegal instruction'
	expect selftest-unaligned 0 'selftest-unaligned' ;;
*) expect selftest-fault 103 'unhandled exception HardFault'
	if readelf -A "$dir/node.elf" | grep -q 'Tag_CPU_arch: v6S-M'; then
		expect selftest-unaligned 103 'unhandled exception HardFault'
	else
		expect selftest-unaligned 0 'selftest-unaligned'
	fi ;;
esac
expect node 0 'commands applied.*stack used [0-9]+ of [0-9]+ bytes, err 0'
# The small config's node holds every lock of its table at once (issue 18).
if grep -qE 'held ([0-9]+) of \1 locks at once' <<<"$last_out"; then
	pass=$((pass + 1)); echo "ok   node: held every lock of its table at once"
else
	fail=$((fail + 1)); echo "FAIL node: did not hold every lock at once"
fi

# The node's measured stack must not pass the static bound the reserve is
# sized from (boards/common/stack-bound.sh): a bound below a real run would
# mean the bound misses something.
used=$(sed -nE 's/.*stack used ([0-9]+) of ([0-9]+) bytes.*/\1 \2/p' <<<"$last_out" | tail -n 1)
bound=$("$here/../../boards/common/stack-bound.sh" "$dir/node.elf" 1000000 |
	sed -nE 's/.*stack bound ([0-9]+) of.*/\1/p')
if [ -n "$used" ] && [ -n "$bound" ] && [ "${used% *}" -le "$bound" ] && [ "$bound" -le "${used#* }" ]; then
	pass=$((pass + 1)); echo "ok   node: stack used ${used% *} <= static bound $bound <= reserve ${used#* }"
else
	fail=$((fail + 1)); echo "FAIL node: stack used/reserve '$used', static bound '$bound'"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

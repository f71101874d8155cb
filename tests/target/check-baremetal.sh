#!/usr/bin/env bash
# check-baremetal.sh NODE_ELF... - the rules port/baremetal and the boards
# keep: cppcheck finds nothing in them; port/baremetal includes only core,
# board and freestanding headers; a node image links no stdio, no heap and
# no libc I/O (only the mem* routines the core needs).
set -u
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

if out=$(cppcheck --enable=warning,style,performance,portability --std=c11 --inline-suppr \
	--error-exitcode=1 -q -D__GNUC__ --include=boards/mps2-an385/el_board_config.h \
	-Icore -Iport/baremetal -Iboards/mps2-an385 -Iboards/common -Iexamples/firmware \
	-Itests/lib -Itests/target port/baremetal boards examples/firmware tests/target 2>&1); then
	ok "cppcheck: port/baremetal, boards, examples/firmware, tests/target"
else
	bad "cppcheck:"; echo "$out" | head -20
fi

incs=$(grep -hE '^[[:space:]]*#[[:space:]]*include' port/baremetal/*.c port/baremetal/*.h \
	port/baremetal/*/*.c |
	sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*//' | sort -u)
badinc=$(grep -vE '^(<(stdint|stddef|stdbool|string|stdarg)\.h>|"el_[a-z0-9_]+\.h"|"board\.h"|"cortex_m\.h"|"riscv_csr\.h")$' <<<"$incs")
if [ -z "$badinc" ]; then ok "port/baremetal includes only core, board and freestanding headers"
else bad "port/baremetal includes: $badinc"; fi

for elf in "$@"; do
	case $(readelf -h "$elf" | sed -n 's/^ *Machine: *//p') in
	RISC-V) nm=riscv64-unknown-elf-nm ;;
	ARM) nm=arm-none-eabi-nm ;;
	*) bad "$elf: not an image of a known board architecture"; continue ;;
	esac
	syms=$("$nm" "$elf" | awk '{print $NF}' |
		grep -Ew '(printf|vfprintf|puts|malloc|free|_sbrk|_write|fopen|abort)' | sort -u)
	if [ -z "$syms" ]; then ok "$elf: no stdio, heap or libc I/O"
	else bad "$elf links: $(echo $syms)"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

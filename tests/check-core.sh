#!/usr/bin/env bash
# check-core.sh BUILD - prove core/ is freestanding and allocation-free:
#  1. core includes only <stdint.h> <stddef.h> <stdbool.h> <string.h> and its own headers;
#  2. the host, Cortex-M3, Cortex-M0+ and RV32 objects reference no symbol
#     outside the core but what core/README.md says it needs from the platform
#     (memcpy, memmove, memset, memcmp, el_panic, el_panic_here) and the compiler's shift,
#     multiply and switch-table helpers: no division helper either, so no
#     microcontroller links libgcc's division (no malloc/free, no stdio, no
#     clock, no rand, no abort);
#  3. the objects of every microcontroller family exist (built with -Werror,
#     so zero warnings).
set -u
build=$1
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

incs=$(grep -hE '^[[:space:]]*#[[:space:]]*include' core/*.c core/*.h |
	sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*//' | sort -u)
badinc=$(grep -vE '^(<(stdint|stddef|stdbool|string)\.h>|"el_[a-z0-9_]+\.h"|EL_CONFIG_FILE)$' <<<"$incs")
if [ -z "$badinc" ]; then ok "core includes only freestanding headers"; else bad "core includes: $badinc"; fi

check_syms() { # label objs...
	local label=$1; shift
	local defined undefined extra
	local nm=nm
	[ "$label" = rv32 ] && nm=riscv64-unknown-elf-nm
	defined=$("$nm" --defined-only "$@" 2>/dev/null | awk 'NF>=3 {print $3}' | sort -u)
	undefined=$("$nm" -u "$@" 2>/dev/null | awk 'NF>=2 {print $2}' | sort -u)
	[ -n "$defined" ] || { bad "$label: no symbols read"; return; }
	extra=$(comm -23 <(echo "$undefined") <(echo "$defined") |
		grep -vE '^(_GLOBAL_OFFSET_TABLE_|mem(cpy|set|cmp|move)|el_panic|el_panic_here|__aeabi_(llsl|llsr|lasr|lmul|lcmp|ulcmp|mem(cpy|move|set|clr)[48]?)|__gnu_thumb1_case_[a-z0-9]+|__(ashl|ashr|lshr|mul|clz|ctz|popcount|bswap)[sd]i3|__riscv_(save|restore)_[0-9]+)$')
	if [ -z "$extra" ]; then ok "$label: no platform symbols"; else bad "$label uses: $(echo $extra)"; fi
	local forbidden
	forbidden=$(grep -Ew 'malloc|calloc|realloc|free|printf|fprintf|puts|fopen|clock_gettime|time|gettimeofday|rand|abort' <<<"$undefined")
	if [ -z "$forbidden" ]; then ok "$label: no malloc/free/stdio/clock"; else bad "$label: $forbidden"; fi
}

host_objs=$(ls "$build"/host/core/*.o 2>/dev/null)
arm_objs=$(ls "$build"/arm/core/*.o 2>/dev/null)
m0_objs=$(ls "$build"/m0plus/core/*.o 2>/dev/null)
rv_objs=$(ls "$build"/rv32/core/*.o 2>/dev/null)
srcs=$(ls core/*.c | wc -l)
for fam in "cortex-m3:$arm_objs" "cortex-m0plus:$m0_objs" "rv32imac:$rv_objs"; do
	if [ "$(echo "${fam#*:}" | grep -c .)" -eq "$srcs" ]; then ok "every core file builds for ${fam%%:*} with -Werror"
	else bad "missing ${fam%%:*} objects"; fi
done
check_syms host $host_objs
check_syms cortex-m3 $arm_objs
check_syms cortex-m0plus $m0_objs
check_syms rv32 $rv_objs
if arm-none-eabi-readelf -h $arm_objs 2>/dev/null | grep -q 'Machine:.*ARM'; then ok "objects are ARM ELF"; else bad "objects are not ARM"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bash
# size-check.sh BOARD ELF FLASH_BUDGET RAM_BUDGET STACK - flash and RAM of one
# node image (core + port/baremetal + startup + the libc/libgcc pieces they
# pull in), against the board's budget; exit 1 when either is passed.
#   flash = everything loaded: vectors, text, rodata, exidx, .data's initial values
#   RAM   = .data + .bss + heap + the stack reserve (STACK, from board.mk)
#   stack = the static worst case of stack-bound.sh, within STACK
# A breakdown of flash by part and by core file comes from the debug line of
# each symbol (the image is built with -g).
set -eu
board=$1 elf=$2 flash_budget=$3 ram_budget=$4 stack=$5
here=$(dirname "$0")

# The binutils of the image's architecture.
case $(readelf -h "$elf" | sed -n 's/^ *Machine: *//p') in
RISC-V) tools=riscv64-unknown-elf- ;;
*) tools=arm-none-eabi- ;;
esac

sect() { "${tools}size" -A "$elf" | awk -v s="$1" '$1 == s {print $2; f=1} END {if (!f) print 0}'; }
text=$(( $(sect .vectors) + $(sect .text) + $(sect .ARM.exidx) ))
# RISC-V keeps thread-local data (.tdata, .tbss) apart; Cortex-M has none.
data=$(( $(sect .data) + $(sect .tdata) ))
bss=$(( $(sect .bss) + $(sect .tbss) ))
heap=$(sect .heap)
flash=$((text + data))
ram=$((data + bss + heap + stack))
storage=$(sect .el_storage)

verdict() { # used budget
	if [ "$1" -le "$2" ]; then echo "ok ($(( $2 - $1 )) left)"; else echo "OVER BUDGET by $(( $1 - $2 ))"; fi
}
printf '%-11s flash %6d of %6d bytes (text %d + data %d)  %s\n' "$board:" "$flash" "$flash_budget" \
	"$text" "$data" "$(verdict "$flash" "$flash_budget")"
printf '%-11s RAM   %6d of %6d bytes (data %d + bss %d + heap %d + stack %d)  %s\n' "$board:" \
	"$ram" "$ram_budget" "$data" "$bss" "$heap" "$stack" "$(verdict "$ram" "$ram_budget")"

if [ "$storage" -gt 0 ]; then
	printf '%-11s storage %4d bytes (the RAM store standing in for flash, not in RAM above)\n' \
		"$board:" "$storage"
fi

# The reserve counted above must hold the deepest call chain.
stack_ok=true
"$here/stack-bound.sh" "$elf" "$stack" || stack_ok=false

# Flash per part and per core module, from the debug line of every symbol the
# link kept (nm -l): with LTO the link map names only ltrans objects, but
# DWARF still says which source file each function came from (a function
# inlined into another counts for its caller). Symbols without a line are
# the C library's and libgcc's.
"${tools}nm" -S -l --size-sort "$elf" | awk '
	function hex(h,    v, i) { v = 0; h = tolower(h)
		for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
		return v }
	NF < 4 { next }
	{ size = hex($2); type = $3; file = (NF >= 5) ? $5 : ""; sub(/:[0-9]+$/, "", file)
	  if (type ~ /^[tTrRwWvVdDgG]$/) f = size; else next  # RAM: "largest in RAM" below
	  p = "libc + libgcc"
	  if (file ~ /\/core\//) p = "core"; else if (file ~ /\/port\/baremetal\//) p = "port/baremetal"
	  else if (file ~ /\/boards\//) p = "board startup"; else if (file ~ /\/examples\//) p = "node main + state"
	  fl[p] += f; seen[p] = 1
	  if (p == "core") { m = file; sub(/.*\//, "", m); mod[m] += f } }
	END {
		n = split("core|port/baremetal|board startup|node main + state|libc + libgcc", order, "|")
		printf "  %-22s %8s\n", "by part", "flash"
		for (i = 1; i <= n; i++) if (order[i] in seen)
			printf "  %-22s %8d\n", order[i], fl[order[i]]
		line = "  core flash by file:"
		for (k in mod) names[++nm] = k
		for (i = 1; i <= nm; i++) for (j = i + 1; j <= nm; j++)
			if (mod[names[j]] > mod[names[i]]) { t = names[i]; names[i] = names[j]; names[j] = t }
		for (i = 1; i <= nm; i++) {
			item = sprintf(" %s %d", names[i], mod[names[i]])
			if (length(line) + length(item) > 96) { print line; line = "   " }
			line = line item
		}
		print line
	}'
# The biggest RAM users by symbol (the node's state is a few large objects).
echo "  largest in RAM:"
"${tools}objdump" -t "$elf" | awk 'NF >= 4 && ($(NF-2) ~ /^\.(bss|data|sbss|sdata)$/) {print $(NF-1), $NF}' |
	while read -r hexsize name; do echo "$((16#$hexsize)) $name"; done | sort -n | tail -n 4 |
	awk '{printf "    %-20s %8d\n", $2, $1}'
[ "$flash" -le "$flash_budget" ] && [ "$ram" -le "$ram_budget" ] && $stack_ok

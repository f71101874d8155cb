#!/usr/bin/env bash
# size-check.sh BOARD ELF FLASH_BUDGET RAM_BUDGET STACK - flash and RAM of one
# node image (core + port/baremetal + startup + the libc/libgcc pieces they
# pull in), against the board's budget; exit 1 when either is passed.
#   flash = everything loaded: vectors, text, rodata, exidx, .data's initial values
#   RAM   = .data + .bss + heap + the stack reserve (STACK, from board.mk)
#   stack = the static worst case of stack-bound.sh, within STACK
# A breakdown by part comes from the link map (ELF with .map next to it).
set -eu
board=$1 elf=$2 flash_budget=$3 ram_budget=$4 stack=$5
here=$(dirname "$0")
map=${elf%.elf}.map

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

# Per part: sum the input sections the link kept, by the object they came from.
if [ -f "$map" ]; then
	awk '
	/^Linker script and memory map/ { on = 1; next }
	!on { next }
	# mawk has no strtonum: hex by hand
	function hex(h,    v, i, c) {
		v = 0; h = tolower(substr(h, 3))
		for (i = 1; i <= length(h); i++) { c = index("0123456789abcdef", substr(h, i, 1)) - 1; v = v * 16 + c }
		return v
	}
	function part(f) {
		if (f ~ /\/fs\/core\//) return "core"
		if (f ~ /\/fs\/port\/baremetal\//) return "port/baremetal"
		if (f ~ /\/fs\/boards\//) return "board startup"
		if (f ~ /\/fs\/examples\//) return "node main + state"
		return "libc + libgcc"
	}
	function add(sec, size, file) {
		if (size == 0 || file == "") return
		p = part(file)
		if (sec ~ /^\.(text|rodata|srodata|vectors|ARM\.exidx)/) fl[p] += size
		else if (sec ~ /^\.(s|t)?data/) { fl[p] += size; rm[p] += size }
		else if (sec ~ /^(\.(s|t)?bss|COMMON)/) rm[p] += size
		seen[p] = 1
	}
	# an input section on one line: " .text.x 0xaddr 0xsize file"
	/^ [.A-Z]/ && NF >= 4 && $2 ~ /^0x/ && $3 ~ /^0x/ { add($1, hex($3), $4); pend = ""; next }
	# or its name alone, the rest on the next line
	/^ [.A-Z]/ && NF == 1 { pend = $1; next }
	pend != "" && $1 ~ /^0x/ && $2 ~ /^0x/ && NF >= 3 { add(pend, hex($2), $3); pend = ""; next }
	{ pend = "" }
	END {
		n = split("core|port/baremetal|board startup|node main + state|libc + libgcc", order, "|")
		printf "  %-22s %8s %8s\n", "by part", "flash", "RAM"
		for (i = 1; i <= n; i++) if (order[i] in seen)
			printf "  %-22s %8d %8d\n", order[i], fl[order[i]], rm[order[i]]
	}' "$map"
fi
# The biggest RAM users by symbol (the node's state is a few large objects).
echo "  largest in RAM:"
"${tools}objdump" -t "$elf" | awk 'NF >= 4 && ($(NF-2) ~ /^\.(bss|data|sbss|sdata)$/) {print $(NF-1), $NF}' |
	while read -r hexsize name; do echo "$((16#$hexsize)) $name"; done | sort -n | tail -n 4 |
	awk '{printf "    %-20s %8d\n", $2, $1}'
[ "$flash" -le "$flash_budget" ] && [ "$ram" -le "$ram_budget" ] && $stack_ok

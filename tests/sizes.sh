#!/usr/bin/env bash
# sizes.sh BUILD - sizeof the core's big structs, per config: the default
# config on the host, and each board's small config (boards/*/el_board_config.h)
# built with the board's cross compiler and read back from symbol sizes, so the figure
# is the target's own layout (alignment of uint64_t, pointer width).
# `struct el_node` is the whole RAM cost of one node; the other rows show
# where it goes. Rows for headers that do not exist yet are skipped.
set -eu
build=${1:-build}
out=$build/sizes
mkdir -p "$out"

# header:struct pairs, in the order the table prints them.
rows=(el_node.h:el_node el_raft.h:el_raft el_lock.h:el_lock_table el_raft.h:el_entry el_raft.h:el_msg el_raft.h:el_progress)
present=()
for r in "${rows[@]}"; do
	[ -f "core/${r%%:*}" ] && present+=("$r")
done

# A C file with one array per struct: char size_of_NAME[sizeof(struct NAME)].
gen_source() {
	local r
	for r in "${present[@]}"; do echo "#include \"${r%%:*}\""; done | sort -u
	for r in "${present[@]}"; do
		echo "char size_of_${r##*:}[sizeof(struct ${r##*:})];"
	done
}
gen_source >"$out/sizes.c"

# Host, default config: the same file, read with the host nm.
cc_host=${CC:-cc}
$cc_host -std=c11 -fno-common -Icore -c "$out/sizes.c" -o "$out/sizes_host.o"
nm -S -t d "$out/sizes_host.o" | awk '{sub("^size_of_", "", $4); print $4, $2+0}' >"$out/host.txt"

boards=()
for cfg in boards/*/el_board_config.h; do
	[ -f "$cfg" ] || continue
	b=$(basename "$(dirname "$cfg")")
	flags=$(sed -nE "s/^${b}_CPU_FLAGS[[:space:]]*:?=[[:space:]]*//p" "boards/$b/board.mk")
	tools=arm-none-eabi-
	grep -qE "^${b}_ARCH[[:space:]]*:?=[[:space:]]*riscv" "boards/$b/board.mk" && tools=riscv64-unknown-elf-
	# shellcheck disable=SC2086
	"${tools}gcc" -std=c11 -ffreestanding -fno-common $flags -include "$cfg" -Icore \
		-c "$out/sizes.c" -o "$out/sizes_$b.o"
	"${tools}nm" -S -t d "$out/sizes_$b.o" |
		awk '{sub("^size_of_", "", $4); print $4, $2+0}' >"$out/$b.txt"
	boards+=("$b")
done

lookup() { awk -v k="$2" '$1 == k {print $2}' "$1"; }
printf '%-22s %16s' "sizeof (bytes)" "default (host)"
for b in "${boards[@]}"; do printf ' %16s' "$b (small)"; done
echo
for r in "${present[@]}"; do
	s=${r##*:}
	printf '%-22s %16s' "struct $s" "$(lookup "$out/host.txt" "$s")"
	for b in "${boards[@]}"; do printf ' %16s' "$(lookup "$out/$b.txt" "$s")"; done
	echo
done

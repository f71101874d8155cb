#!/usr/bin/env bash
# stack-bound.sh ELF STACK - a static worst case of the main stack of one node
# image, from its own machine code, against the reserve STACK; exit 1 over it.
#
# Why: the QEMU run of node.elf measures the stack the one-member demo
# touches (tests/target/check-harness.sh), but a real node also decodes peer
# messages, installs snapshots and may panic; those paths never run there.
# So the reserve is sized against this bound, and the run stays as a check
# that the reserve is real (and that the bound is not below what was used).
#
# How: every function's frame is the sum of what its code takes off sp
# (push, stmdb sp!, vpush, sub sp, a store to [sp, #-N]!: every one of them, so shrink-wrapped
# prologues on two paths are both counted); the deepest chain of direct calls
# (bl, and b/b.w tail branches, counted as calls) from el_reset_handler; plus
# the deepest interrupt handler and the exception frame the CPU pushes
# (8 words, 26 with a floating-point context, + 4 bytes of alignment).
# Indirect calls (blx rN) are allowed only where listed below, with their
# targets in this image; anything else fails, so a new function pointer
# cannot slip past (a new target of a listed caller must be added by hand:
# e.g. an event hook in node_main.c). A call cycle is followed at most twice (reported).
set -eu
elf=$1 stack=$2

# caller=callee,... for every indirect call in a node image.
#   el_bm_drive_node: the ready loop's io hooks (node_main.c: hook_send,
#     hook_reply; its event hook is NULL)
#   compact_to (raft_snapshot.c, behind el_raft_compact): the snapshot
#     writer, the lock table's (el_node)
#   el_raft__handle_snapshot: the snapshot validator, the node's (node.c)
#   EL_STACK_INDIRECT replaces the list for another image (mk/mixed.mk).
indirect=${EL_STACK_INDIRECT:-"el_bm_drive_node=hook_send,hook_reply compact_to=el_node__write_snapshot el_raft__handle_snapshot=check_snapshot"}

# The exception frame the hardware pushes: a Cortex-M stacks 8 words (26 with
# a floating-point context) + 4 bytes of alignment; a RISC-V hart pushes
# nothing (its trap handler's own frame is counted like any function's).
case $(readelf -h "$elf" | sed -n 's/^ *Machine: *//p') in
RISC-V) tools=riscv64-unknown-elf- frame=0 ;;
*) tools=arm-none-eabi-
   if readelf -A "$elf" | grep -q 'Tag_FP_arch'; then frame=108; else frame=36; fi ;;
esac

"${tools}objdump" -d --no-show-raw-insn "$elf" | awk -v indirect="$indirect" -v exc="$frame" \
	-v stack="$stack" '
function regs(s,    n) { # registers in "{r4, r5, lr}" or "{d8-d9}"
	sub(/^[^{]*\{/, "", s); sub(/\}.*$/, "", s)
	n = split(s, r, ",")
	return n
}
function imm(s) { sub(/^.*#/, "", s); sub(/[^0-9].*$/, "", s); return s + 0 }
/^[0-9a-f]+ <[^>]+>:$/ { f = $2; gsub(/[<>:]/, "", f); fr[f] += 0; next }
f == "" { next }
# sp adjustments
/\t(push|stmdb\tsp!,)/ { fr[f] += 4 * regs($0); next }
/\tvpush/ { fr[f] += 8 * regs($0); next }
/\tsub(\.w|w)?\tsp, (sp, )?#/ { fr[f] += imm($0); next }
/\[sp, #-[0-9]+\]!/ { match($0, /#-[0-9]+/); fr[f] += substr($0, RSTART + 2, RLENGTH - 2); next }
# RISC-V: addi sp,sp,-N (objdump may print add; compressed or not); with -msave-restore a prologue
# calls __riscv_save_K (link t0), which keeps ra and s0..s(K-1) on the stack
# for the whole function: 16 bytes per four registers, added to its frame.
/\t(c\.)?addi?(16sp)?\tsp,(sp,)?-[0-9]+( |$)/ { match($0, /sp,-[0-9]+/); fr[f] += substr($0, RSTART + 4, RLENGTH - 4); next }
/\tjal\tt0,[0-9a-f]+ <__riscv_save_[0-9]+>$/ {
	k = $NF; gsub(/[^0-9]/, "", k); fr[f] += 16 * int((k + 4) / 4); next
}
/\t(jal|j|c\.j|c\.jal|b[a-z]+)\t([a-z0-9]+,)*[0-9a-f]+ <[^>+]+>$/ {
	t = $NF; gsub(/[<>]/, "", t)
	if (t != f && !((f SUBSEP t) in edge)) { edge[f, t] = 1; calls[f] = calls[f] " " t }
	next
}
/\t(c\.)?jalr\t/ { ind[f] = 1 }
# calls and tail branches to a function start (<name>, not <name+0x..>)
/\t(bl|b|b\.w|b\.n|b[a-z][a-z](\.w|\.n)?)\t[0-9a-f]+ <[^>+]+>$/ {
	t = $NF; gsub(/[<>]/, "", t)
	if (t != f && !((f SUBSEP t) in edge)) { edge[f, t] = 1; calls[f] = calls[f] " " t }
	next
}
/\tblx\tr[0-9]/ { ind[f] = 1 }
function depth(fn,    n, i, c, d, best, list, cut0) {
	if (fn in memo) return memo[fn]
	if (onpath[fn] >= 2) { cut = 1; cyc[fn] = 1; return 0 }
	onpath[fn]++
	cut0 = cut; cut = 0
	best = 0
	n = split(calls[fn], list, " ")
	for (i = 1; i <= n; i++) {
		d = depth(list[i])
		if (d > best) { best = d; nxt[fn] = list[i] }
	}
	onpath[fn]--
	if (!cut) memo[fn] = fr[fn] + best
	cut = cut || cut0
	return fr[fn] + best
}
END {
	# Link-time optimisation renames a function it specialises (name.constprop.0,
	# name.part.0): the list names the source function, which covers them all.
	for (g in fr) { b = g; sub(/\..*$/, "", b); copies[b] = copies[b] " " g }
	n = split(indirect, spec, " ")
	for (i = 1; i <= n; i++) {
		split(spec[i], kv, "="); ok[kv[1]] = 1
		m = split(kv[2], tg, ",")
		for (j = 1; j <= m; j++) {
			if (!(tg[j] in copies)) { print "  stack: indirect target " tg[j] " not in the image"; bad = 1; continue }
			nc = split(copies[kv[1]], callers, " ")
			for (c = 1; c <= nc; c++) calls[callers[c]] = calls[callers[c]] copies[tg[j]]
		}
	}
	for (g in ind) { b = g; sub(/\..*$/, "", b); if (!(b in ok)) { print "  stack: unlisted indirect call in " g; bad = 1 } }
	if (!("el_reset_handler" in fr)) { print "  stack: no el_reset_handler"; exit 1 }
	main = depth("el_reset_handler")
	isr = 0
	for (g in fr) if (g ~ /_handler$/ && g != "el_reset_handler") {
		d = depth(g); if (d > isr) { isr = d; isrname = g }
	}
	total = main + exc + isr
	path = "el_reset_handler"; g = "el_reset_handler"; k = 0
	while ((g in nxt) && k++ < 40) { g = nxt[g]; path = path " > " g }
	for (g in cyc) printf "  stack: call cycle through %s (followed at most twice)\n", g
	printf "  stack bound %d of %d reserved (main %d + exception frame %d + %s %d)%s\n", \
		total, stack, main, exc, isrname, isr, total <= stack ? "" : "  OVER THE RESERVE"
	printf "    deepest: %s\n", path
	exit (bad || total > stack) ? 1 : 0
}'

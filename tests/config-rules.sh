#!/usr/bin/env bash
# config-rules.sh CC - core/el_config.h refuses at compile time every
# configuration outside the no-op room rule (issue 19: a new leader must
# always find a window slot for its no-op), and accepts the ones inside it,
# the shipped, simulator and board limits among them; the batch default
# follows a small window, and a board limit defined before
# el_small_config.h is kept.
set -u
cc=${1:-cc}
pass=0 fail=0
compile() { echo '#include "el_config.h"' | "$cc" -fsyntax-only -Icore "$@" -x c - 2>&1; }
refused() { # refused MESSAGE DESCRIPTION FLAGS...: a static assertion naming MESSAGE
	local msg=$1 what=$2; shift 2
	if compile "$@" | grep -q "static assertion failed: \"$msg"; then
		pass=$((pass + 1)); echo "ok   refused: $what"
	else
		fail=$((fail + 1)); echo "FAIL accepted: $what ($*)"
	fi
}
accepted() {
	local what=$1; shift
	local out; out=$(compile "$@")
	if [ -z "$out" ]; then
		pass=$((pass + 1)); echo "ok   accepted: $what"
	else
		fail=$((fail + 1)); echo "FAIL refused: $what ($*): $out"
	fi
}
# issue 19's wedge: window 16, compaction at 8, half the window uncommitted
refused "no-op room rule" "window 16, threshold 8, 8 uncommitted" -DEL_LOG_WINDOW=16 -DEL_COMPACT_THRESHOLD=8 -DEL_UNCOMMITTED_MAX=8 -DEL_MSG_ENTRIES_MAX=4
refused "no-op room rule" "threshold above half the window" -DEL_LOG_WINDOW=8 -DEL_COMPACT_THRESHOLD=5 -DEL_MSG_ENTRIES_MAX=4
refused "no-op room rule" "no room for the reserve" -DEL_LOG_WINDOW=64 -DEL_COMPACT_THRESHOLD=32 -DEL_UNCOMMITTED_MAX=31
refused "EL_UNCOMMITTED_MAX must be at least 1" "nothing may stand uncommitted" -DEL_LOG_WINDOW=64 -DEL_COMPACT_THRESHOLD=24 -DEL_UNCOMMITTED_MAX=0
accepted "the defaults"
accepted "the simulator (64, 24, 4 per message)" -DEL_LOG_WINDOW=64 -DEL_COMPACT_THRESHOLD=24 -DEL_MSG_ENTRIES_MAX=4
accepted "the boards" -include boards/common/el_small_config.h
# the smallest window alone: the batch default follows it (it was 32 > 8)
accepted "window 8, every other limit its default" -DEL_LOG_WINDOW=8
refused "EL_MSG_ENTRIES_MAX must be between 1 and EL_LOG_WINDOW" "a batch over the window" -DEL_LOG_WINDOW=8 -DEL_MSG_ENTRIES_MAX=16
# a board's own limit, defined before el_small_config.h, is kept (it was
# redefined to the small default, silently under -w)
out=$(printf '#define EL_LOCKS_MAX 8\n#include "boards/common/el_small_config.h"\n#include "el_config.h"\n_Static_assert(EL_LOCKS_MAX == 8, "the board limit was lost");\n' |
	"$cc" -fsyntax-only -Werror -I. -Icore -x c - 2>&1)
if [ -z "$out" ]; then
	pass=$((pass + 1)); echo "ok   kept: a board's EL_LOCKS_MAX 8 defined before el_small_config.h"
else
	fail=$((fail + 1)); echo "FAIL lost: a board's EL_LOCKS_MAX 8 before el_small_config.h: $out"
fi
for w in 8 16 32 512; do
	accepted "window $w, threshold 1" -DEL_LOG_WINDOW=$w -DEL_COMPACT_THRESHOLD=1 -DEL_MSG_ENTRIES_MAX=4
	accepted "window $w, threshold $((w / 2))" -DEL_LOG_WINDOW=$w -DEL_COMPACT_THRESHOLD=$((w / 2)) -DEL_MSG_ENTRIES_MAX=4
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

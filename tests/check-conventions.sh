#!/usr/bin/env bash
# check-conventions.sh BUILD - the core's naming and layout rules (issue 8),
# checked so that they stay true:
#  1. every global symbol the core's objects define starts with el_ (a
#     firmware link shares one namespace; internal helpers are el_MODULE__*);
#  2. no public header declares an internal el_MODULE__ function: those live
#     in the *_internal.h headers;
#  3. every overridable limit (#ifndef EL_X / #define EL_X) is in el_config.h,
#     the one file a board overrides;
#  4. the lock code names records by role (sess, entry, req, watcher, val),
#     not by one capital letter.
set -u
build=$1
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

objs=$(ls "$build"/host/core/*.o 2>/dev/null)
if [ -z "$objs" ]; then
	bad "no core objects in $build/host/core"
else
	# shellcheck disable=SC2086
	stray=$(nm --defined-only -g $objs | awk 'NF >= 3 {print $3}' | grep -v '^el_' | sort -u)
	if [ -z "$stray" ]; then ok "every global symbol of the core starts with el_"
	else bad "core symbols outside el_: $(echo $stray)"; fi
fi

public=$(ls core/el_*.h | grep -v '_internal\.h$')
# shellcheck disable=SC2086
leak=$(grep -nE '\bel_[a-z]+__[a-z_]+\s*\(' $public)
if [ -z "$leak" ]; then ok "no public header declares an el_MODULE__ internal"
else bad "internals in public headers: $leak"; fi

# An overridable limit: "#ifndef EL_NAME" followed by "#define EL_NAME"
# (header guards end in _H and are not limits).
limits=$(grep -nE '^#ifndef EL_[A-Z0-9_]+$' core/*.h | grep -vE '_H$' | grep -v '^core/el_config\.h:')
if [ -z "$limits" ]; then ok "every overridable limit is in core/el_config.h"
else bad "limits outside el_config.h: $limits"; fi

letters=$(grep -nE '\b[SLCWV](->|\s*=\s*&t->)' core/lock*.c)
if [ -z "$letters" ]; then ok "the lock code names records by role, not by one letter"
else bad "one-letter record names: $letters"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

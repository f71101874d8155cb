#!/usr/bin/env bash
# update.sh - one "device" of the staged-rollout example applying its update,
# run under one permit of the rollout semaphore:
#     edgelock lock -n 3 fleet/rollout -- update.sh DEVICE TIMELINE
# It appends "start MS DEVICE TOKEN" when it begins (the permit's fencing
# token in $EDGELOCK_TOKEN), "stop MS DEVICE" when it has finished (the
# download, the flash and the reboot stand in a short sleep; UPDATE_SECONDS,
# default 0.8) to TIMELINE, one line per write, so that lines from the ten
# devices never mix.
#
# The work runs under `setpriv --pdeathsig KILL`: the kernel kills it the
# moment this script dies. The CLI kills this script's whole process group
# when it loses the permit; if the CLI itself is SIGKILLed, the kernel kills
# this script (PR_SET_PDEATHSIG, cmd/edgelock/README.md), and a child left
# running would go on updating without a permit.
set -eu
device=$1 timeline=$2
token=${EDGELOCK_TOKEN:?run me under edgelock lock -n N}
echo "start $(date +%s%3N) $device $token" >>"$timeline"
setpriv --pdeathsig KILL -- sleep "${UPDATE_SECONDS:-0.8}"
echo "stop $(date +%s%3N) $device" >>"$timeline"

#!/usr/bin/env bash
# job.sh - the lock-run example's job, run by a board's scheduler as
#     edgelock lock job/backup --wait 0 --ttl 1500ms -- job.sh PERIOD
# so it runs holding the lock, with the grant's fencing token in
# $EDGELOCK_TOKEN. It does the period's work once, whichever board runs it
# and however often it is run:
#   1. the period's done-marker STORE/done/PERIOD exists: it already ran
#      (the other board, or this one earlier), exit 0 without working;
#   2. the work (a short sleep stands for a backup), announced in the log;
#   3. the commit, serialised by flock on STORE/commit.lock (the store's own
#      lock, not the cluster's) and fenced like core/el_fence.h: a token
#      lower than the highest one committed belongs to a holder that lost the
#      lock while working (a newer holder has committed since): exit 3, no
#      commit. Else, unless the marker appeared meanwhile, append
#      "period N by scheduler X token T" to STORE/job.log, write the marker
#      and record the token as the highest (written, synced, renamed). A
#      STORE/highest that is there but holds no token refuses the commit
#      (exit 1): read as 0, it would let a stale holder through.
# (SCHEDULER, JOB_STORE: set by scheduler.sh; JOB_SECONDS: the work, 0.3.)
set -u
period=$1
token=${EDGELOCK_TOKEN:?run me under edgelock lock}
store=${JOB_STORE:?} who=${SCHEDULER:?}
marker=$store/done/$period
mkdir -p "$store/done"

if [ -e "$marker" ]; then
	echo "job: period $period already done ($(cat "$marker")); token $token skips it"
	exit 0
fi
echo "job: period $period started by scheduler $who token $token"
sleep "${JOB_SECONDS:-0.3}"

exec 9>>"$store/commit.lock"
flock 9
highest=0 # only a missing file is 0
if [ -e "$store/highest" ]; then highest=$(cat "$store/highest"); fi
case $highest in
'' | *[!0-9]*)
	echo "job: period $period token $token REFUSED: $store/highest holds no token"
	exit 1
	;;
esac
if [ "$token" -lt "$highest" ]; then
	echo "job: period $period token $token REFUSED: below the highest committed $highest"
	exit 3
fi
if [ -e "$marker" ]; then
	echo "job: period $period done meanwhile ($(cat "$marker")); token $token skips it"
	exit 0
fi
echo "period $period by scheduler $who token $token" >>"$store/job.log"
echo "scheduler $who token $token" >"$marker.tmp" && mv "$marker.tmp" "$marker"
echo "$token" >"$store/highest.tmp" && sync "$store/highest.tmp" &&
	mv "$store/highest.tmp" "$store/highest" && sync "$store"
echo "job: period $period committed by scheduler $who token $token"

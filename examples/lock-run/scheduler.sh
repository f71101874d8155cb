#!/usr/bin/env bash
# scheduler.sh - one "board" of the lock-run example: a cron-style loop that
# runs the backup job of every period under the cluster lock job/backup,
#     edgelock lock job/backup --wait 0 --ttl TTL -- job.sh PERIOD
# at ATTEMPTS evenly spaced moments of the period (the first at its start),
# as a cron entry with retries would. Exit 75 (the lock is held: the other
# board is running the job) is the normal outcome for the board that loses.
#
#   scheduler.sh NAME EPOCH_MS PERIOD_MS N_PERIODS STORE
#   (EDGELOCK: the CLI; EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT: the
#   cluster; ATTEMPTS: per period, default 4; LOCK_TTL: default 1500ms)
# Every attempt appends the job's output and "period N attempt K exit E" to
# STORE/sched-NAME.log. SIGTERM: stop after the current attempt.
set -u
name=$1 epoch=$2 period=$3 periods=$4 store=$5
attempts=${ATTEMPTS:-4}
here=$(cd "$(dirname "$0")" && pwd)
stopping=0
trap 'stopping=1' TERM INT

now_ms() { date +%s%3N; }

sleep_until() { # EPOCH_MS
	local d=$(($1 - $(now_ms)))
	if ((d > 0)); then sleep "$((d / 1000)).$(printf %03d $((d % 1000)))"; fi
}

attempt() { # PERIOD K
	SCHEDULER=$name JOB_STORE=$store "$EDGELOCK" lock job/backup --wait 0 \
		--ttl "${LOCK_TTL:-1500ms}" -- "$here/job.sh" "$1" >>"$store/sched-$name.log" 2>&1
	echo "period $1 attempt $2 exit $? at $(now_ms)" >>"$store/sched-$name.log"
}

for ((p = 0; p < periods && !stopping; p++)); do
	for ((k = 0; k < attempts && !stopping; k++)); do
		sleep_until $((epoch + p * period + k * period / attempts))
		((stopping)) || attempt "$p" "$k"
	done
done

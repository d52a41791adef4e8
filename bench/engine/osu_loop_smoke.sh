#!/bin/sh
# SPDX-License-Identifier: MIT
# osu_loop_smoke.sh LAUNCH OSU_LATENCY OSU_BW: osu_latency's two loops
# (--loop osu, --loop perftest) on shm and tcp each print one positive
# latency per size, 1 B - 256 KiB (past every driver's eager size: the
# perftest loop's send still in flight while its receive is posted), and
# finish (CTest's timeout catches a loop that deadlocks); osu_bw refuses
# --loop (usage, exit 2).
set -u
launch=$1 lat=$2 bw=$3
for drv in shm tcp; do
	for loop in osu perftest; do
		out=$("$launch" -n 2 "$lat" --driver "$drv" --loop "$loop" \
			--max-size 262144 --iterations 50 --warmup 5) || {
			echo "FAIL: $drv --loop $loop exited $?"; exit 1; }
		rows=$(printf '%s\n' "$out" | awk '!/^#/ && NF == 2 && $2 + 0 > 0' | wc -l)
		echo "$drv --loop $loop: $rows sizes"
		[ "$rows" -eq 19 ] || { printf 'FAIL: want 19 rows:\n%s\n' "$out"; exit 1; }
	done
done
err=$("$launch" -n 2 "$bw" --loop perftest 2>&1 >/dev/null)
rc=$?
printf '%s\n' "$err" | grep -q '^usage: osu ' || {
	printf 'FAIL: osu_bw --loop: no usage message (exit %s):\n%s\n' "$rc" "$err"; exit 1; }
printf '%s\n' "$err" | grep -q 'loop' && {
	printf 'FAIL: osu_bw offers --loop:\n%s\n' "$err"; exit 1; }
[ "$rc" -ne 0 ] || { echo "FAIL: osu_bw accepted --loop"; exit 1; }
echo "osu_bw --loop: refused ($rc)"

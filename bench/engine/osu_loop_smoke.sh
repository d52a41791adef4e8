#!/bin/sh
# SPDX-License-Identifier: MIT
# osu_loop_smoke.sh LAUNCH OSU_LATENCY OSU_BW: osu_latency's two loops
# (--loop osu, --loop perftest) on shm and tcp each print one positive
# latency per size, 1 B - 4 KiB, and finish (CTest's timeout catches a
# loop that deadlocks); osu_bw refuses --loop (usage, exit 2).
set -u
launch=$1 lat=$2 bw=$3
for drv in shm tcp; do
	for loop in osu perftest; do
		out=$("$launch" -n 2 "$lat" --driver "$drv" --loop "$loop" \
			--max-size 4096 --iterations 200 --warmup 10) || {
			echo "FAIL: $drv --loop $loop exited $?"; exit 1; }
		rows=$(printf '%s\n' "$out" | awk '!/^#/ && NF == 2 && $2 + 0 > 0' | wc -l)
		echo "$drv --loop $loop: $rows sizes"
		[ "$rows" -eq 13 ] || { printf 'FAIL: want 13 rows:\n%s\n' "$out"; exit 1; }
	done
done
"$launch" -n 2 "$bw" --loop perftest >/dev/null 2>&1
rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: osu_bw accepted --loop"; exit 1; }
echo "osu_bw --loop: refused ($rc)"

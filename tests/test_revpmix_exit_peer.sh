#!/bin/sh
# test_revpmix_exit_peer.sh - under mpirun (PMIx), a rank that exits
# without opening its session: the other's open fails with -ECONNRESET
# (engine.h: a peer that is gone), over each driver (each has its own
# PMIx fence), not with PMIx's partial success as -EIO. Skips (77)
# without mpirun or PMIx. Usage: test_revpmix_exit_peer.sh JOB_BINARY
job="$1"
. "$(dirname "$0")/mpirun_env.sh"
mpirun_prelude test_revpmix_exit_peer
for d in $drivers; do
	out=$(env -u CANAL_RANK -u CANAL_SIZE -u CANAL_LAUNCH_DIR \
		OMPI_MCA_rmaps_base_oversubscribe=1 \
		timeout -k 5 60 mpirun $root --oversubscribe -n 2 \
		-x CANAL_ENGINE_DRIVER=$d \
		-x LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan-pmix.supp" \
		"$job" 2>&1)
	echo "$out"
	# mpirun's own status is not checked (a rank exiting early may make
	# it report the job as failed): rank 0's verdict is.
	if ! printf '%s\n' "$out" | grep -q "driver $d: .*: ok"; then
		echo "test_revpmix_exit_peer: FAILED with driver $d"
		exit 1
	fi
done
echo "test_revpmix_exit_peer: all checks passed ($drivers)"

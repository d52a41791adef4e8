#!/bin/sh
# test_engine_mpirun.sh - a job of 4 processes started by Open MPI's mpirun
# (PMIx) exchanges messages through the engine over each driver: rank, size
# and addresses come from PMIx (issue 16). Skips (77) without mpirun or
# without PMIx support in canal.  Usage: test_engine_mpirun.sh JOB_BINARY
job="$1"
. "$(dirname "$0")/mpirun_env.sh"
mpirun_prelude test_engine_mpirun
for d in $drivers; do
	# TCP binds by subnet, as a job across hosts would (one setting for
	# every host: transfer/ifaddr.h).
	bind=""
	[ "$d" = tcp ] && bind="-x CANAL_ENGINE_BIND=127.0.0.0/8"
	# No CANAL_* variable may leak in from a canal-launch around us.
	if ! env -u CANAL_RANK -u CANAL_SIZE -u CANAL_LAUNCH_DIR \
		OMPI_MCA_rmaps_base_oversubscribe=1 \
		timeout -k 5 90 mpirun $root --oversubscribe -n 4 \
		-x CANAL_ENGINE_DRIVER=$d -x MPIRUN_EXPECT_SIZE=4 $bind \
		-x LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan-pmix.supp" \
		"$job"; then
		echo "test_engine_mpirun: FAILED with driver $d"
		exit 1
	fi
done
echo "test_engine_mpirun: all checks passed ($drivers)"

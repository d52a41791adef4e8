#!/bin/sh
# test_revpmix_absent_peer.sh - under mpirun (PMIx), a rank that is alive
# but never opens its session: the other's open fails with -ETIMEDOUT at
# its connect timeout, over each driver (each has its own PMIx fence),
# instead of waiting in the fence for ever. Skips (77) without mpirun or
# PMIx. Usage: test_revpmix_absent_peer.sh JOB_BINARY
job="$1"
. "$(dirname "$0")/mpirun_env.sh"
mpirun_prelude test_revpmix_absent_peer
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
for d in $drivers; do
	if ! env -u CANAL_RANK -u CANAL_SIZE -u CANAL_LAUNCH_DIR \
		OMPI_MCA_rmaps_base_oversubscribe=1 \
		timeout -k 5 60 mpirun $root --oversubscribe -n 2 \
		-x CANAL_ENGINE_DRIVER=$d -x MPIRUN_ABSENT_MARK="$tmp/mark.$d" \
		-x LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan-pmix.supp" \
		"$job"; then
		echo "test_revpmix_absent_peer: FAILED with driver $d"
		exit 1
	fi
done
echo "test_revpmix_absent_peer: all checks passed ($drivers)"

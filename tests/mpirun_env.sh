# mpirun_env.sh - sourced by the tests that start jobs with Open MPI's
# mpirun (PMIx): `mpirun_prelude NAME` exits 77 (skipped) without mpirun
# or without PMIx support in canal, and sets $root (mpirun's flag to run as
# root when we are) and $drivers (the engine's drivers to run over: shm,
# tcp, and ucx when canal has UCX).
mpirun_prelude() {
	if ! command -v mpirun >/dev/null 2>&1; then
		echo "$1: SKIP: no mpirun (apt install openmpi-bin)"
		exit 77
	fi
	if [ "$CANAL_HAVE_PMIX" != 1 ]; then
		echo "$1: SKIP: canal built without PMIx (apt install libpmix-dev)"
		exit 77
	fi
	root=""
	[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
	drivers="shm tcp"
	[ "$CANAL_HAVE_UCX" = 1 ] && drivers="$drivers ucx"
}

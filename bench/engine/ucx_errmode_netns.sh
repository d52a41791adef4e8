#!/usr/bin/env bash
# ucx_errmode_netns.sh - what UCX's peer failure detection
# (UCP_ERR_HANDLING_MODE_PEER, the default toward other hosts) costs the
# engine over UCX's TCP: osu_latency --driver ucx between two network
# namespaces joined by a veth pair (not shaped), each rank a host of its
# own (UTS namespace, own hostname), UCX_TLS=tcp; the default (peer) and
# CANAL_UCX_ERR_MODE=none interleaved, REPS runs each, at each size.
#
#   bench/engine/ucx_errmode_netns.sh [BUILD_DIR]     (as root)
#   env: REPS (default 5), SIZES (default "8 65536")
#
# Ranks pinned to CPUs 0 and 1, as canal-launch pins them. Prints each run
# and the medians with their range, one-way us. Needs root, ip, unshare
# and taskset; exits 77 with the reason otherwise. The namespaces are
# removed whatever happens.
set -euo pipefail
build=${1:-build}
reps=${REPS:-5}
sizes=${SIZES:-8 65536}
lat=$build/bench/engine/osu_latency
. "$(dirname "$0")/netns_pair.sh"
netns_pair ucx_errmode_netns canal-ue "$lat" unshare taskset
ip link add ue0 netns "$A" type veth peer name ue0 netns "$B"
ip -n "$A" addr add 10.213.1.1/24 dev ue0
ip -n "$B" addr add 10.213.1.2/24 dev ue0
ip -n "$A" link set ue0 up
ip -n "$B" link set ue0 up
for i in $(seq 100); do
  ip -n "$A" link show ue0 | grep -q 'state UP' &&
    ip -n "$B" link show ue0 | grep -q 'state UP' && break
  sleep 0.05
done

# rank NS RANK CPU MODE SIZE: one rank, in NS as host canal-ue-RANK.
rank() {
  ip netns exec "$1" unshare -u sh -c 'hostname "$0"; exec "$@"' "canal-ue-$2" \
    env CANAL_RANK="$2" CANAL_SIZE=2 CANAL_LAUNCH_DIR="$d" UCX_TLS=tcp \
    UCX_NET_DEVICES=ue0 CANAL_UCX_ERR_MODE="$4" \
    taskset -c "$3" timeout 120 "$lat" --driver ucx --min-size "$5" --max-size "$5"
}

# One run: $1 = CANAL_UCX_ERR_MODE ("" = the default), $2 = size; prints
# the one-way latency in us.
run() {
  d=$(mktemp -d "$dir/run.XXXXXX")
  rank "$B" 1 1 "$1" "$2" >/dev/null &
  local peer=$!
  rank "$A" 0 0 "$1" "$2" | awk -v s="$2" '$1 == s { print $2 }'
  wait $peer
}

echo "# osu_latency --driver ucx, UCX_TLS=tcp, between two network namespaces (veth, not shaped)"
echo "# host $(lscpu | sed -n 's/^Model name: *//p'), $(date -u '+%Y-%m-%d %H:%M UTC')"
for s in $sizes; do
  peer=() none=()
  for k in $(seq 1 "$reps"); do
    x=$(run "" "$s"); peer+=("$x")
    y=$(run none "$s"); none+=("$y")
    echo "$s B run $k: peer (default) $x us, none $y us"
  done
  python3 - "$s" "${peer[*]}" "${none[*]}" <<'EOF'
import statistics, sys
size = sys.argv[1]
for name, arg in (("peer (default)", sys.argv[2]), ("none", sys.argv[3])):
    v = [float(x) for x in arg.split()]
    print(f"{size} B {name}: median {statistics.median(v):.2f} us [{min(v):.2f}-{max(v):.2f}]")
EOF
done

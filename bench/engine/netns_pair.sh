# netns_pair.sh - sourced by the benchmarks that run two ranks in two
# network namespaces (rails_netns.sh, ucx_errmode_netns.sh).
#
#   netns_pair NAME PREFIX BINARY [TOOL...]
#
# Checks root, ip and the TOOLs, and that BINARY was built (exit 77 with
# the reason otherwise); makes the namespaces $A and $B (PREFIX-PID-a and
# -b, loopback up) and the scratch directory $dir, all removed at exit
# whatever happens.
netns_pair() {
  local name=$1 prefix=$2 bin=$3
  shift 3
  if [ "$(id -u)" != 0 ]; then echo "$name: needs root (network namespaces)"; exit 77; fi
  for t in ip "$@"; do
    command -v "$t" >/dev/null || { echo "$name: no '$t'"; exit 77; }
  done
  [ -x "$bin" ] || { echo "$name: no $bin (make build first)"; exit 77; }
  A=$prefix-$$-a
  B=$prefix-$$-b
  dir=$(mktemp -d "/tmp/$prefix.XXXXXX")
  trap netns_pair_cleanup EXIT
  ip netns add "$A"
  ip netns add "$B"
  ip -n "$A" link set lo up
  ip -n "$B" link set lo up
}

netns_pair_cleanup() {
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$dir"
}

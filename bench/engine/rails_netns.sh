#!/usr/bin/env bash
# rails_netns.sh - the engine's bandwidth over one TCP rail and over two,
# between two network namespaces joined by two veth links, each link
# limited to RATE by a tbf qdisc on both ends (two "cards" of equal speed;
# RATE2 makes the second one different). Issue 16's target: two rails
# >= 1.7x one rail for 4 MiB messages.
#
#   bench/engine/rails_netns.sh [BUILD_DIR]     (as root)
#   env: RATE (default 1gbit), RATE2 (default RATE), REPS (default 3),
#        SIZE (default 4194304)
#
# Runs osu_bw (canal engine, --driver tcp) with rank 0 in one namespace and
# rank 1 in the other, one rail and two rails interleaved, REPS times each;
# prints each run and the medians with their range, in MB/s. Needs root,
# ip and tc; exits 77 with the reason otherwise. The namespaces are removed
# whatever happens.
set -euo pipefail
build=${1:-build}
rate=${RATE:-1gbit}
rate2=${RATE2:-$rate}
reps=${REPS:-3}
size=${SIZE:-4194304}
# OSU windows of 64 messages: 3 timed windows (768 MiB at 4 MiB) after one
# warm-up window.
iters=${ITERS:-3}
bw=$build/bench/engine/osu_bw
. "$(dirname "$0")/netns_pair.sh"
netns_pair rails_netns canal-rb "$bw" tc
for i in 1 2; do
  r=$rate; [ $i = 2 ] && r=$rate2
  ip link add "ra$i" netns "$A" type veth peer name "rb$i" netns "$B"
  ip -n "$A" addr add "10.212.$i.1/24" dev "ra$i"
  ip -n "$B" addr add "10.212.$i.2/24" dev "rb$i"
  ip -n "$A" link set "ra$i" up
  ip -n "$B" link set "rb$i" up
  tc -n "$A" qdisc add dev "ra$i" root tbf rate "$r" burst 256kb latency 50ms
  tc -n "$B" qdisc add dev "rb$i" root tbf rate "$r" burst 256kb latency 50ms
done

# One run: $1 = rank 0's bind, $2 = rank 1's; prints MB/s at $size.
run() {
  local d
  d=$(mktemp -d "$dir/run.XXXXXX")
  ip netns exec "$B" env CANAL_RANK=1 CANAL_SIZE=2 CANAL_LAUNCH_DIR="$d" \
    CANAL_ENGINE_BIND="$2" "$bw" --driver tcp --min-size "$size" --max-size "$size" \
    --iterations "$iters" --warmup 1 >/dev/null &
  local peer=$!
  ip netns exec "$A" env CANAL_RANK=0 CANAL_SIZE=2 CANAL_LAUNCH_DIR="$d" \
    CANAL_ENGINE_BIND="$1" timeout 300 "$bw" --driver tcp --min-size "$size" --max-size "$size" \
    --iterations "$iters" --warmup 1 | awk -v s="$size" '$1 == s { print $2 }'
  wait $peer
}

echo "# osu_bw over the canal engine (TCP) between two network namespaces, $size B messages"
echo "# links: rail 1 $rate, rail 2 $rate2 (tbf on both ends); host $(lscpu | sed -n 's/^Model name: *//p')"
one=() two=()
for k in $(seq 1 "$reps"); do
  x=$(run 10.212.1.1 10.212.1.2); one+=("$x")
  y=$(run 10.212.1.1,10.212.2.1 10.212.1.2,10.212.2.2); two+=("$y")
  echo "run $k: one rail $x MB/s, two rails $y MB/s"
done
python3 - "${one[*]}" "${two[*]}" "$rate" "$rate2" <<'EOF'
import re, statistics, sys
one = [float(x) for x in sys.argv[1].split()]
two = [float(x) for x in sys.argv[2].split()]
def bits(r):
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", r.lower())
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] if m else None
m1, m2 = statistics.median(one), statistics.median(two)
print(f"one rail:  median {m1:.1f} MB/s [{min(one):.1f}-{max(one):.1f}]")
print(f"two rails: median {m2:.1f} MB/s [{min(two):.1f}-{max(two):.1f}]")
r = m2 / m1
if sys.argv[3] == sys.argv[4]:
    print(f"two rails / one rail: {r:.2f}x (target >= 1.7x: {'met' if r >= 1.7 else 'missed'})")
else:
    b1, b2 = bits(sys.argv[3]), bits(sys.argv[4])
    ideal = (b1 + b2) / b1 if b1 and b2 else float("nan")
    print(f"two rails / one rail: {r:.2f}x (links of different speeds: ideal {ideal:.2f}x, "
          f"{100 * r / ideal:.0f}% of it)")
EOF

#!/bin/sh
# test_launch_hosts.sh - canal-launch -H across four "hosts": four network
# namespaces (10.205.1.1-4) on a bridge in a fifth ("the switch"), each
# host's link impaired (tc netem delay 5ms loss 1%, or where the kernel has
# no netem a tbf rate limit with nftables dropping 1% of TCP segments). The
# launcher runs on the first host; a remote shell wrapper (ssh's calling
# convention: HOST "COMMAND LINE") enters the namespace of the address it
# is given. Jobs of 4 and 8 ranks (rank i on host i mod 4) exchange
# messages through the engine (engine_launch_job: exactly once and in
# order per tag) over TCP, then over UCX (UCX_TLS=tcp) where canal has it,
# each rank bound to its host's address, the addresses exchanged through
# the launcher's key-value service (no shared directory). Then: the shm
# driver across hosts and an unknown host are refused. Needs root (77 =
# skipped otherwise). Usage: test_launch_hosts.sh CANAL_LAUNCH JOB_BINARY
launch="$1"
job="$2"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "test_launch_hosts: SKIP: needs root and ip (network namespaces)"
	exit 77
fi
p=canal-lh-$$
tmp=$(mktemp -d /tmp/canal-lh.XXXXXX)
cleanup() {
	for n in sw h1 h2 h3 h4; do ip netns del $p-$n 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! ip netns add $p-sw; then
	echo "test_launch_hosts: SKIP: cannot make network namespaces"
	exit 77
fi
set -e
ip -n $p-sw link add br0 type bridge
ip -n $p-sw link set br0 up
for h in 1 2 3 4; do
	ns=$p-h$h
	ip netns add $ns
	ip -n $ns link set lo up
	# The host's end is called lh0 in every host (UCX_NET_DEVICES=lh0).
	ip link add lh0 netns $ns type veth peer name sw$h netns $p-sw
	ip -n $p-sw link set sw$h master br0
	ip -n $p-sw link set sw$h up
	ip -n $ns addr add 10.205.1.$h/24 dev lh0
	ip -n $ns link set lh0 up
	set +e
	if ip netns exec $ns tc qdisc add dev lh0 root netem delay 5ms loss 1% 2>/dev/null; then
		echo "host $h: netem delay 5ms loss 1%"
	else
		ip netns exec $ns tc qdisc add dev lh0 root tbf rate 20mbit burst 32kb latency 100ms
		if ip netns exec $ns nft add table inet canal 2>/dev/null &&
		   ip netns exec $ns nft add chain inet canal out '{ type filter hook output priority 0; }' &&
		   ip netns exec $ns nft add rule inet canal out oifname lh0 meta l4proto tcp numgen random mod 100 '<' 1 counter drop; then
			echo "host $h: no netem in this kernel: tbf 20mbit + nftables drops 1% of TCP segments"
		else
			echo "host $h: no netem in this kernel: tbf 20mbit (no nft: no loss)"
		fi
	fi
	set -e
done
cat > "$tmp/rsh" <<EOS
#!/bin/sh
case "\$1" in
10.205.1.[1-4]) ns=$p-h\${1#10.205.1.} ;;
*) echo "rsh: no such host: \$1" >&2; exit 255 ;;
esac
shift
exec ip netns exec "\$ns" sh -c "\$*"
EOS
chmod +x "$tmp/rsh"
set +e
hosts=10.205.1.1,10.205.1.2,10.205.1.3,10.205.1.4

# run DRIVER N: a job of N ranks; each must say it ran on its host.
run() {
	out=$(ip netns exec $p-h1 env CANAL_ENGINE_DRIVER=$1 UCX_TLS=tcp UCX_NET_DEVICES=lh0 \
		timeout -k 5 120 "$launch" -n $2 -H $hosts -r "$tmp/rsh" "$job" 2>&1)
	rc=$?
	echo "$out"
	if [ $rc != 0 ]; then
		echo "test_launch_hosts: FAILED: $1, $2 ranks: the job exited $rc"
		exit 1
	fi
	r=0
	while [ $r -lt $2 ]; do
		h=$((r % 4 + 1))
		echo "$out" | grep -q "^rank $r of $2 bound to 10.205.1.$h: ok" ||
			{ echo "test_launch_hosts: FAILED: $1: rank $r not on 10.205.1.$h"; exit 1; }
		r=$((r + 1))
	done
	echo "test_launch_hosts: $1, $2 ranks on 4 hosts: ok"
}
run tcp 4
run tcp 8
if [ "$CANAL_HAVE_UCX" = 1 ]; then
	run ucx 4
else
	echo "test_launch_hosts: ucx: SKIP: canal built without UCX"
fi
for h in 1 2 3 4; do
	ip netns exec $p-h$h nft list chain inet canal out 2>/dev/null |
		grep -o 'counter packets [0-9]*' | sed "s/^/host $h: dropped /"
done

# shm cannot cross hosts: the ranks fail to open (-EINVAL, with a message),
# the launcher reports it (non-zero status), nothing hangs.
if ip netns exec $p-h1 env CANAL_ENGINE_DRIVER=shm timeout -k 5 60 \
	"$launch" -n 2 -H $hosts -r "$tmp/rsh" "$job" >/dev/null 2>&1; then
	echo "test_launch_hosts: FAILED: shm across hosts was not refused"
	exit 1
fi
# An unknown host name is refused before anything starts.
if "$launch" -n 2 -H no-such-host.invalid "$job" >/dev/null 2>&1; then
	echo "test_launch_hosts: FAILED: an unknown host was accepted"
	exit 1
fi
echo "test_launch_hosts: all checks passed"

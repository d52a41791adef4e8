#!/bin/sh
# test_launch_hosts.sh - canal-launch -H across two "hosts": two network
# namespaces joined by a veth pair (10.205.1.1 and .2). The launcher runs
# in the first; a remote shell wrapper (ssh's calling convention: HOST
# "COMMAND LINE") enters the namespace of the address it is given. A job
# of 4 ranks (2 per host) exchanges messages through the engine over TCP:
# exactly once and in order (engine_launch_job), each rank bound to its
# host's address, the addresses exchanged through the launcher's key-value
# service (no shared directory). Then: the shm driver across hosts is
# refused, an unknown host is refused. Needs root (77 = skipped
# otherwise). Usage: test_launch_hosts.sh CANAL_LAUNCH JOB_BINARY
launch="$1"
job="$2"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1; then
	echo "test_launch_hosts: SKIP: needs root and ip (network namespaces)"
	exit 77
fi
A=canal-lh-$$-a
B=canal-lh-$$-b
tmp=$(mktemp -d /tmp/canal-lh.XXXXXX)
cleanup() {
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
if ! ip netns add $A || ! ip netns add $B; then
	echo "test_launch_hosts: SKIP: cannot make network namespaces"
	exit 77
fi
set -e
ip -n $A link set lo up
ip -n $B link set lo up
ip link add lha netns $A type veth peer name lhb netns $B
ip -n $A addr add 10.205.1.1/24 dev lha
ip -n $B addr add 10.205.1.2/24 dev lhb
ip -n $A link set lha up
ip -n $B link set lhb up
cat > "$tmp/rsh" <<EOS
#!/bin/sh
case "\$1" in
10.205.1.1) ns=$A ;;
10.205.1.2) ns=$B ;;
*) echo "rsh: no such host: \$1" >&2; exit 255 ;;
esac
shift
exec ip netns exec "\$ns" sh -c "\$*"
EOS
chmod +x "$tmp/rsh"
set +e

out=$(ip netns exec $A env CANAL_ENGINE_DRIVER=tcp timeout -k 5 90 \
	"$launch" -n 4 -H 10.205.1.1,10.205.1.2 -r "$tmp/rsh" "$job" 2>&1)
rc=$?
echo "$out"
if [ $rc != 0 ]; then
	echo "test_launch_hosts: FAILED: the job exited $rc"
	exit 1
fi
for r in 0 2; do
	echo "$out" | grep -q "^rank $r of 4 bound to 10.205.1.1: ok" ||
		{ echo "test_launch_hosts: FAILED: rank $r not on 10.205.1.1"; exit 1; }
done
for r in 1 3; do
	echo "$out" | grep -q "^rank $r of 4 bound to 10.205.1.2: ok" ||
		{ echo "test_launch_hosts: FAILED: rank $r not on 10.205.1.2"; exit 1; }
done

# shm cannot cross hosts: the ranks fail to open (-EINVAL), the launcher
# reports it (non-zero status), nothing hangs.
if ip netns exec $A env CANAL_ENGINE_DRIVER=shm timeout -k 5 60 \
	"$launch" -n 2 -H 10.205.1.1,10.205.1.2 -r "$tmp/rsh" "$job" >/dev/null 2>&1; then
	echo "test_launch_hosts: FAILED: shm across hosts was not refused"
	exit 1
fi
# An unknown host name is refused before anything starts.
if "$launch" -n 2 -H no-such-host.invalid "$job" >/dev/null 2>&1; then
	echo "test_launch_hosts: FAILED: an unknown host was accepted"
	exit 1
fi
echo "test_launch_hosts: all checks passed"

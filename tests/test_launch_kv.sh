#!/bin/bash
# test_launch_kv.sh - the key-value service of canal-launch -H against
# clients that misbehave: malformed and oversized lines get "E" and the
# service keeps answering (an oversized one may be closed unanswered);
# a client that sends one byte every 0.2 s (never a whole line) must not
# stop the launcher from watching its ranks and enforcing -t; a remote
# command line that does not fit is refused. One "host", this machine (127.0.0.1): no root needed.
# Usage: test_launch_kv.sh CANAL_LAUNCH
launch="$1"
tmp=$(mktemp -d /tmp/canal-lkv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# A rank that speaks the protocol, well and badly; exits 0 when every
# answer is the expected one.
cat > "$tmp/client" <<'EOS'
#!/bin/bash
ask() { # ask LINE: the answer line on stdout
	exec 3<>"/dev/tcp/${CANAL_LAUNCH_ADDR%:*}/${CANAL_LAUNCH_ADDR##*:}" || return 1
	printf '%s' "$1" >&3
	local a
	IFS= read -r -t 5 a <&3
	exec 3>&-
	printf '%s' "$a"
}
check() { # check LINE WANT
	local a
	a=$(ask "$1")
	if [ "$a" != "$2" ]; then
		echo "client: asked $(printf '%q' "${1:0:40}"), got '$a', want '$2'"
		exit 1
	fi
}
check $'P key.0 some value\n' K
check $'G key.0\n' 'V some value'
check $'G nokey.0\n' N
check $'P\n' E
check $'G\n' E
check $'P \n' E
check $'P key\n' E
check $'X key\n' E
check $'\n' E
big=$(head -c 5000 /dev/zero | tr '\0' v)
# No line fits: refused ("E", or closed unanswered), nothing stored.
a=$(ask "P big.0 $big"$'\n' 2>/dev/null)
if [ "$a" != E ] && [ -n "$a" ]; then
	echo "client: an oversized line got '$a'"
	exit 1
fi
check $'G big.0\n' N
check $'G key.0\n' 'V some value'
echo "client: ok"
EOS
# A rank that dribbles a line that never ends, and when cut off starts
# again, for ever.
cat > "$tmp/drip" <<'EOS'
#!/bin/bash
trap '' PIPE
while :; do
	exec 3<>"/dev/tcp/${CANAL_LAUNCH_ADDR%:*}/${CANAL_LAUNCH_ADDR##*:}" || exit 1
	while printf x >&3 2>/dev/null; do sleep 0.2; done
	exec 3>&-
done
EOS
chmod +x "$tmp/client" "$tmp/drip"

out=$(timeout -s KILL 60 "$launch" -n 1 -H 127.0.0.1 "$tmp/client" 2>&1)
rc=$?
echo "$out"
if [ $rc != 0 ] || ! echo "$out" | grep -q "^client: ok"; then
	echo "test_launch_kv: FAILED: the protocol checks (status $rc)"
	exit 1
fi

# The dribbling rank never exits: the launcher's own -t 2 must stop it
# (status 124). Killed by the outer timeout instead (137): the launcher
# was stuck serving the dribbler.
timeout -s KILL 30 "$launch" -n 1 -t 2 -H 127.0.0.1 "$tmp/drip"
rc=$?
if [ $rc != 124 ]; then
	echo "test_launch_kv: FAILED: a dribbling client held the launcher (status $rc, want 124)"
	exit 1
fi
# The remote command line (cmd[65536] in canal-launch) filled to its last
# bytes by an argument, then an empty argument: refused as too long, not
# written past the buffer. A host that is not this machine's (TEST-NET)
# and a remote shell that only measures the line it is given.
cat > "$tmp/rsh" <<'EOS'
#!/bin/bash
echo "rsh: ${#2}"
EOS
chmod +x "$tmp/rsh"
fill=$(head -c 1000 /dev/zero | tr '\0' a)
m=$("$launch" -n 1 -H 192.0.2.1 -r "$tmp/rsh" prog "$fill" 2>&1 | sed -n 's/^rsh: //p')
if [ -z "$m" ]; then
	echo "test_launch_kv: FAILED: no remote command line measured"
	exit 1
fi
# The line before the empty argument: 65534 bytes (each quoted argument
# is its bytes + 3: two quotes and a space).
fill=$(head -c $((1000 + 65534 - m)) /dev/zero | tr '\0' a)
out=$(timeout -s KILL 30 "$launch" -n 1 -H 192.0.2.1 -r "$tmp/rsh" prog "$fill" "" 2>&1)
rc=$?
echo "$out" | head -c 300; echo
if [ $rc = 0 ] || ! echo "$out" | grep -q "command line too long"; then
	echo "test_launch_kv: FAILED: a command line past the buffer was not refused (status $rc)"
	exit 1
fi
echo "test_launch_kv: all checks passed"

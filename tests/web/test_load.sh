#!/bin/sh
# test_load.sh BUILD_DIR - canal's load generator against the epoll server:
# closed loop, fixed rate (with the per-request CSV), a connection per
# request, 404s counted as non-2xx, refused connections counted as connect
# errors. Bounded: a few seconds.
set -eu
b=$1
tmp=$(mktemp -d /tmp/canal-load-test-XXXXXX)
trap 'kill $srv 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
printf 'hello\n' > "$tmp/root/page.html"
"$b/bench/web/epoll" --port 0 --root "$tmp/root" --cores 1 > "$tmp/srv.out" &
srv=$!
i=0
while ! grep -q listening "$tmp/srv.out" 2>/dev/null; do
	i=$((i + 1)); [ $i -lt 200 ] || { echo "server did not start"; exit 1; }
	sleep 0.05
done
port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$tmp/srv.out")
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
expect() { # expect LINE FIELD VALUE
	v=$(field "$1" "$2")
	[ "$v" = "$3" ] || { echo "FAIL: $2=$v, want $3 in: $1"; exit 1; }
}
L="$b/bench/web/load --port $port --path /page.html"
out=$($L --connections 10 --requests 2000); echo "$out"
expect "$out" requests 2000; expect "$out" ok 2000; expect "$out" read 0
out=$($L --connections 10 --duration 1 --rate 1000 --csv "$tmp/r.csv"); echo "$out"
expect "$out" non2xx 0; expect "$out" connect 0; expect "$out" timeout 0
[ -n "$(field "$out" late_p99_us)" ] || { echo "FAIL: no late_p99_us"; exit 1; }
n=$(($(wc -l < "$tmp/r.csv") - 1))
[ "$n" = "$(field "$out" requests)" ] || { echo "FAIL: csv has $n rows"; exit 1; }
awk -F, 'NR > 1 && $2 < $1 { print "FAIL: request " NR - 1 " sent before its intended start: " $0; bad = 1 } END { exit bad }' "$tmp/r.csv"
[ "$n" -ge 900 ] && [ "$n" -le 1001 ] || { echo "FAIL: $n requests at 1000/s for 1 s"; exit 1; }
# --requests at a fixed rate: exactly those, all answered
out=$($L --connections 2 --requests 30 --rate 300); echo "$out"
expect "$out" requests 30; expect "$out" ok 30
# a response larger than the client's buffer (also through the warm-up)
head -c 40000 /dev/zero | tr '\0' x > "$tmp/root/big.html"
out=$("$b/bench/web/load" --port "$port" --path /big.html --connections 2 --requests 20); echo "$out"
expect "$out" ok 20; expect "$out" read 0; expect "$out" connect 0
# connects that fail at once (no descriptors left): every due request is
# answered or one connect error, and the client survives (a candidate
# pushed again per failure once overran its stack: ASan run)
# few_fds N CMD...: CMD with descriptors 0-2 only and at most N (those
# inherited from the test runner closed first: with them the dynamic
# loader itself could find none)
few_fds() {
	bash -c 'for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done
		ulimit -n "$0"; exec "$@"' "$@"
}
out=$(few_fds 7 $L --connections 4 --duration 0.3 --rate 200 2>&1); echo "$out"
[ $(($(field "$out" ok) + $(field "$out" connect))) = "$(field "$out" requests)" ] || { echo "FAIL: requests lost"; exit 1; }
[ "$(field "$out" connect)" -gt 0 ] && [ "$(field "$out" ok)" -gt 0 ] || { echo "FAIL: want both answers and connect errors"; exit 1; }
few_fds 4 $L --connections 1 --duration 0.2 --rate 1000 > "$tmp/emfile.out" 2>&1 || { cat "$tmp/emfile.out"; echo "FAIL: load failed with no descriptors"; exit 1; }
out=$(cat "$tmp/emfile.out"); echo "$out"
[ "$(field "$out" connect)" = "$(field "$out" requests)" ] && [ "$(field "$out" requests)" -ge 100 ] || { echo "FAIL: want every due request a connect error"; exit 1; }
out=$($L --connections 5 --requests 500 --close); echo "$out"
expect "$out" ok 500
out=$("$b/bench/web/load" --port "$port" --path /nope --connections 2 --requests 50); echo "$out"
expect "$out" non2xx 50; expect "$out" ok 0
kill -TERM $srv; wait $srv || { echo "FAIL: server exit status $?"; exit 1; }
out=$($L --connections 2 --requests 10); echo "$out"
expect "$out" ok 0; expect "$out" connect 10
# at a fixed rate too: every due request is one connect error, none lost
out=$($L --connections 3 --duration 0.2 --rate 200 --csv "$tmp/d.csv"); echo "$out"
expect "$out" ok 0
[ "$(field "$out" connect)" = "$(field "$out" requests)" ] || { echo "FAIL: not all connect errors"; exit 1; }
[ "$(($(wc -l < "$tmp/d.csv") - 1))" = "$(field "$out" requests)" ] || { echo "FAIL: csv rows"; exit 1; }
[ "$(field "$out" requests)" -ge 30 ] || { echo "FAIL: too few requests due"; exit 1; }
echo "test_load: ok"

#!/bin/sh
# Each public header compiles alone, in C (gnu17, pedantic, warnings as
# errors) and in C++ (the header's own extern "C"), and makes available
# what its documented use needs: size_t, the fixed-width integers, and the
# errno codes that its functions return negated (-EPIPE, -EINVAL...).
# Headers are globbed when the test runs: a new include/canal/*.h is covered
# without touching this script.
# Usage: check-headers.sh INCLUDE_DIR CC [CXX]
set -u
inc=$1 cc=$2 cxx=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for h in "$inc"/canal/*.h; do
	name=canal/$(basename "$h")
	n=$((n + 1))
	cat > "$tmp/c.c" <<EOT
#include <$name>
int canal_header_check(void);
int canal_header_check(void)
{
	size_t size = sizeof(uint64_t) + sizeof(int32_t);
	return (int)size - EINVAL - EPIPE - EAGAIN - ETIMEDOUT;
}
EOT
	if ! "$cc" -std=gnu17 -Wall -Wextra -Werror -Wpedantic -Wshadow \
		-Wstrict-prototypes -Wmissing-prototypes -I"$inc" \
		-fsyntax-only "$tmp/c.c" 2> "$tmp/err"; then
		echo "FAIL: $name does not compile alone in C (it must include what its use needs, e.g. <errno.h>, <stddef.h>, <stdint.h>):"
		cat "$tmp/err"
		fail=1
	fi
	[ -n "$cxx" ] || continue
	cp "$tmp/c.c" "$tmp/cxx.cc"
	if ! "$cxx" -std=c++17 -Wall -Wextra -Werror -Wpedantic -I"$inc" \
		-fsyntax-only "$tmp/cxx.cc" 2> "$tmp/err"; then
		echo "FAIL: $name does not compile alone in C++:"
		cat "$tmp/err"
		fail=1
	fi
done
if [ "$n" -eq 0 ]; then
	echo "FAIL: no header found in $inc/canal"
	exit 1
fi
[ -n "$cxx" ] || echo "no C++ compiler found: C++ not checked"
echo "$n public headers checked"
exit $fail

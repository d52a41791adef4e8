#!/bin/sh
# build-peer.sh NAME BUILT OUT -- COMMAND...
# Builds a benchmark peer (Go or Rust) with COMMAND, then copies BUILT to
# OUT. A peer that does not build (no network for its registry, an old
# toolchain) must not fail canal's own build or tests: say so, leave OUT
# absent, and the harness prints SKIPPED rows for it. Set
# CANAL_PEERS_REQUIRED=1 to make such a failure fatal instead.
name=$1 built=$2 out=$3
shift 3
[ "$1" = "--" ] && shift
if "$@" && { [ "$built" = "$out" ] || cp "$built" "$out"; }; then
	exit 0
fi
rm -f "$out"
echo "warning: the $name peer did not build; its benchmark rows will say SKIPPED" >&2
[ "${CANAL_PEERS_REQUIRED:-0}" = 1 ] && exit 1
exit 0

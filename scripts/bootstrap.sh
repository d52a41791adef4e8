#!/bin/sh
# Installs what the build needs on Debian, or says exactly what is missing.
# Idempotent and quiet when everything is present.
set -e
missing=""
need() { # need <command> <debian package>
	command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need_pkg() { # need_pkg <dpkg package>
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" || missing="$missing $1"
}
need cmake cmake
need ninja ninja-build
need cc gcc
need pkg-config pkg-config
need python3 python3
need groff groff-base
need g++ g++
# Optional (CANAL_OPTIONAL=1): chromium, for the test that renders
# results' report.html headless (skipped without it).
[ -n "${CANAL_OPTIONAL:-}" ] && need chromium chromium
if command -v dpkg-query >/dev/null 2>&1; then
	need_pkg python3-venv
	need_pkg liburing-dev
	need_pkg libzmq3-dev
	# The web benchmark (issue 14): its peer, its clients, libFuzzer.
	need_pkg nginx-light
	need_pkg wrk
	need_pkg apache2-utils
	need_pkg clang
	need_pkg libclang-rt-dev
	need_pkg openmpi-bin
	need_pkg libopenmpi-dev
	# Issue 16 (past one machine): UCX driver and ucx_perftest, PMIx launch,
	# TCP handshake, network-namespace tests (ip, tc, nft).
	need_pkg libucx-dev
	need_pkg ucx-utils
	need_pkg libpmix-dev
	need_pkg libsodium-dev
	need_pkg iproute2
	need_pkg nftables
	need_pkg libboost-context-dev
	need_pkg g++
fi
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "bootstrap: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
	echo "bootstrap: missing packages:$missing" >&2
	echo "bootstrap: run: sudo apt-get install -y$missing" >&2
	exit 1
fi

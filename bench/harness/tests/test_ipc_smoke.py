"""Smoke test of the IPC programs: every method binary of the build dir in
$CANAL_BUILD_DIR (set by CTest) runs 100 round trips, and its RESULTS block
must parse with the right counts. uintr must say SKIPPED (exit 77) on a
machine without user interrupts; canal and canal-spin may SKIP in process
mode (no canal shared channels yet) but must pass with --threads. Also run
under ASan/TSan builds (the sanitizers make any leak or race fail the run).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from canal_bench import ipc  # noqa: E402

BUILD = os.environ.get("CANAL_BUILD_DIR")
COUNT = 100

pytestmark = pytest.mark.skipif(
    not BUILD, reason="CANAL_BUILD_DIR is not set (CTest sets it; or export it "
                      "to a build directory)")


def _sanitized() -> bool:
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CANAL_SANITIZE:"):
                    return bool(line.split("=", 1)[1].strip())
    except OSError:
        pass
    return False


# 2 s per run; sanitizers slow start-up and every operation down.
# A hang, not a speed, fails a smoke run: timing belongs in the benchmarks
# (a 2 s bound here failed spin methods on a loaded machine).
HANG_S = 120.0 if BUILD and _sanitized() else 60.0


def _env():
    env = dict(os.environ)
    # Sanitizer failures must fail the run (exit status), with leaks on.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
    env.setdefault("TSAN_OPTIONS", "halt_on_error=1:second_deadlock_stack=1")
    return env


def _binary(method: str) -> str:
    path = ipc.binary(BUILD, method)
    if not os.path.isdir(os.path.dirname(path)):
        pytest.skip(f"no {os.path.dirname(path)} (benchmarks not built)")
    if not os.path.exists(path):
        if method == "zeromq":
            pytest.skip("zeromq not built (no libzmq found by pkg-config)")
        pytest.fail(f"{path} missing")
    return path


def _size(method: str) -> int:
    return 4 if method == "signal" else 64


def _run(method, *extra, size=None, count=COUNT):
    size = _size(method) if size is None else size
    cmd = [_binary(method), "-c", str(count), "-s", str(size), *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_S, env=_env())
    took = time.monotonic() - t0
    return p, took


def _check_ok(method, p, took, size, count=COUNT, threads=False):
    assert p.returncode == 0, f"{method}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert "WARNING: ThreadSanitizer" not in p.stderr, p.stderr
    assert "ERROR: AddressSanitizer" not in p.stderr, p.stderr
    d = ipc.parse_results(p.stdout)
    assert d["count"] == count and d["size"] == size
    assert d["method"] == method
    assert d["launch"] == ("threads" if threads else "processes")
    assert 0 < d["min_us"] <= d["avg_us"] <= d["max_us"]
    assert d["min_us"] <= d["p50_us"] <= d["p99_us"] <= d["p999_us"] <= d["max_us"]
    assert d["rate_msg_s"] > 0 and d["total_ms"] > 0


PROCESS_METHODS = [m for m in ipc.METHODS if m not in ("uintr",)]


@pytest.mark.parametrize("method", PROCESS_METHODS)
def test_method_processes(method):
    p, took = _run(method)
    if method.startswith("canal") and p.returncode == ipc.EXIT_SKIPPED:
        assert "SKIPPED (canal shared channels not available:" in p.stdout
        return
    _check_ok(method, p, took, _size(method))


@pytest.mark.parametrize("method", PROCESS_METHODS)
def test_method_threads(method):
    p, took = _run(method, "--threads")
    _check_ok(method, p, took, _size(method), threads=True)


@pytest.mark.parametrize("method", ["pipe", "unix-seqpacket", "tcp", "shm-futex",
                                    "eventfd", "posix-mq", "canal", "zeromq"])
def test_stream_threads(method):
    p, took = _run(method, "--threads", "--mode", "stream")
    _check_ok(method, p, took, _size(method), threads=True)
    d = ipc.parse_results(p.stdout)
    assert d["mode"] == "stream" and d["mb_s"] > 0


def test_uintr_skips():
    p, _ = _run("uintr")
    assert p.returncode == ipc.EXIT_SKIPPED, p.stdout + p.stderr
    assert p.stdout.startswith("SKIPPED (no uintr: ")


@pytest.mark.parametrize("method,size", [("signal", 64), ("posix-mq", 1 << 20),
                                         ("sysv-mq", 1 << 20)])
def test_size_limits_are_reported(method, size):
    p, _ = _run(method, size=size)
    assert p.returncode == ipc.EXIT_SIZE, p.stdout + p.stderr
    assert p.stdout.startswith("UNSUPPORTED SIZE (")


def test_json_output():
    p, took = _run("pipe", "--json", "--threads")
    assert p.returncode == 0, p.stderr
    d = ipc.parse_json_output(p.stdout)
    assert d["count"] == COUNT and d["size"] == 64 and d["launch"] == "threads"


def test_big_message_partial_io():
    # 256 KiB through a pipe and a stream socket: many partial reads/writes.
    for method in ("pipe", "unix-stream"):
        p, took = _run(method, "--threads", size=256 * 1024, count=20)
        _check_ok(method, p, took, 256 * 1024, count=20, threads=True)


def test_usage_errors():
    for args in (["-s", "0"], ["-c", "0"], ["--mode", "sideways"], ["--pin", "1"]):
        p = subprocess.run([_binary("pipe"), *args], capture_output=True, text=True,
                           timeout=10, env=_env())
        assert p.returncode == 2, args

#!/usr/bin/env python3
"""ucx_perftest (Debian's ucx-utils) run size by size and printed as an OSU
table, so that the engine harness can put raw UCX beside canal over UCX in
the same run (issue 16).

  ucx_perftest_osu.py --test latency|bw [--min-size B] [--max-size B]
                      [--iterations N] [--warmup N]

latency: tag_lat (ping-pong; ucx_perftest reports half the round trip, the
OSU one-way convention), column "overall" average in us. bw: tag_bw (a
stream of tagged sends), column "overall" bandwidth, which ucx_perftest
gives in MiB/s: converted to MB/s (10^6 B/s) as OSU prints. The server is
pinned to CPU 0 and the client to CPU 1, as canal-launch pins its ranks
(-c); UCX chooses its transports (UCX_TLS from the environment).
"""
import argparse
import shutil
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def final_line(text: str):
    for line in text.splitlines():
        if line.strip().startswith("Final:"):
            return line.split()
    return None


def one(test: str, size: int, iters: int, warm: int, timeout: float):
    port = str(free_port())
    kind = "tag_lat" if test == "latency" else "tag_bw"
    base = ["ucx_perftest", "-t", kind, "-s", str(size), "-n", str(iters),
            "-w", str(warm), "-p", port]
    server = subprocess.Popen(base + ["-c", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        out = None
        deadline = time.time() + timeout
        while time.time() < deadline:
            c = subprocess.run(base + ["-c", "1", "127.0.0.1"], capture_output=True,
                               text=True, timeout=timeout)
            f = final_line(c.stdout)
            if f:
                out = f
                break
            time.sleep(0.05)  # server not listening yet
        if not out:
            return None
        # Final: iters lat50 lat_avg lat_overall bw_avg bw_overall rate_avg rate_overall
        if test == "latency":
            return float(out[4])
        return float(out[6]) * 1.048576
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", choices=("latency", "bw"), required=True)
    ap.add_argument("--min-size", type=int, default=1)
    ap.add_argument("--max-size", type=int, default=4 << 20)
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--warmup", type=int, default=-1)
    a = ap.parse_args()
    if not shutil.which("ucx_perftest"):
        print("ucx_perftest_osu: ucx_perftest not installed (apt install ucx-utils)",
              file=sys.stderr)
        return 2
    label = "Latency (us)" if a.test == "latency" else "Bandwidth (MB/s)"
    print(f"# ucx_perftest {'tag_lat' if a.test == 'latency' else 'tag_bw'} "
          f"as an OSU table")
    print(f"# Size  {label}")
    size = a.min_size
    while size <= a.max_size:
        big = size > 8192
        iters = a.iterations or (1000 if big else 10000)
        if a.test == "bw":
            iters = iters * 64 if a.iterations else (640 if big else 6400)
        warm = a.warmup if a.warmup >= 0 else (10 if big else 100)
        v = one(a.test, size, iters, warm, 60.0)
        if v is None:
            print(f"ucx_perftest_osu: no result at {size} B", file=sys.stderr)
            return 1
        print(f"{size:<10d}{v:>20.2f}", flush=True)
        size *= 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

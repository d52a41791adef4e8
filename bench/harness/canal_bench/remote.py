"""Remote channels (issue 16): round trip and messages/s of 8-byte elements
through a remote channel (canal/remote.h: a local channel at each end, a
hub thread forwarding through the engine) beside the engine's own
isend/irecv ping-pong and a bare blocking TCP ping-pong on loopback
(TCP_NODELAY, one write and one read per message; its stream is one
write(8) per message). One program, bench/engine/remote_pingpong, runs all
three in the same run; the runs are repeated (interleaved across drivers)
and the tables give the median with the spread (min-max) of the runs.
Ranks pinned to CPUs 0 and 1 (--pin 1), as canal-launch pins them.

Target of issue 16: remote channel round trip <= 1.2 x bare TCP.
Environment: CANAL_REMOTE_REPS overrides the number of repetitions.
"""
from __future__ import annotations

import os
import re
import subprocess
from typing import Dict, List, Tuple

from . import report, stats

PROG = "bench/engine/remote_pingpong"
TARGET = 1.2

_LINE = re.compile(r"^(bare tcp|engine|remote)\s+rtt_us\s+([0-9.]+)\s+\[[^\]]*\]\s+"
                   r"msgs_per_s\s+([0-9.]+)\s*$")


def parse(text: str) -> Dict[str, Tuple[float, float]]:
    """{method: (round trip us, messages/s)} from remote_pingpong's output;
    other lines ignored. messages/s is 0 where not measured (engine)."""
    out: Dict[str, Tuple[float, float]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


def run(build_dir: str, mode: str) -> str:
    quick = mode == "quick"
    reps = int(os.environ.get("CANAL_REMOTE_REPS", "3" if quick else "7"))
    iters, msgs = ("2000", "100000") if quick else ("20000", "1000000")
    md = report.header_lines(f"Remote channels, 8 B ({mode}, {reps} interleaved runs)")
    md.append("Values: median (min-max) of the runs; each run's round trip is the median of "
              f"{iters} round trips. Host shared with other jobs: noisy.\n")
    prog = os.path.join(build_dir, PROG)
    skipped: List[str] = []
    rtt: Dict[Tuple[str, str], List[float]] = {}
    rate: Dict[Tuple[str, str], List[float]] = {}
    raw_rows = []
    if not os.access(prog, os.X_OK):
        skipped.append(f"{PROG} not built")
    else:
        for rep in range(reps):
            for drv in ("tcp", "shm"):
                report.progress(f"remote channels {drv} run {rep + 1}/{reps}")
                try:
                    p = subprocess.run([prog, "--driver", drv, "--pin", "1",
                                        "--iterations", iters, "--messages", msgs],
                                       capture_output=True, text=True,
                                       timeout=120 if quick else 900)
                except subprocess.TimeoutExpired:
                    skipped.append(f"{drv} run {rep + 1}: timeout")
                    continue
                if p.returncode != 0:
                    skipped.append(f"{drv} run {rep + 1}: exit {p.returncode}: "
                                   f"{p.stderr.strip()[-200:]}")
                    continue
                for method, (us, mps) in parse(p.stdout).items():
                    rtt.setdefault((drv, method), []).append(us)
                    if mps > 0:
                        rate.setdefault((drv, method), []).append(mps)
                    raw_rows.append([drv, method, rep + 1, us, mps])
    rows = []
    for drv in ("tcp", "shm"):
        for method in ("bare tcp", "engine", "remote"):
            if (drv, method) in rtt:
                r = rate.get((drv, method))
                rows.append([drv, method, stats.fmt_spread(rtt[(drv, method)], lambda x: f"{x:.2f}"),
                             stats.fmt_spread(r, lambda x: f"{x / 1e6:.2f} M") if r else "-"])
    md.append(report.markdown_table(["driver", "method", "round trip (us)", "messages/s"], rows))
    bare, remote = rtt.get(("tcp", "bare tcp")), rtt.get(("tcp", "remote"))
    if bare and remote:
        ratio = stats.median(remote) / stats.median(bare)
        verdict = "met" if ratio <= TARGET else "MISSED"
        md.append(f"\nTarget of issue 16: remote channel round trip over TCP <= {TARGET} x bare "
                  f"TCP: {ratio:.2f} x ({verdict}).\n")
        report.headline("remote", "round trip 8 B, TCP loopback", remote, "bare TCP", bare,
                        "us", TARGET)
    if rate.get(("tcp", "remote")) and rate.get(("tcp", "bare tcp")):
        report.headline("remote", "messages/s 8 B, TCP loopback", rate[("tcp", "remote")],
                        "bare TCP", rate[("tcp", "bare tcp")], "msg/s", 1.0,
                        higher_is_better=True)
    if skipped:
        md.append("Not run or failed:\n")
        md += [f"- {s}" for s in skipped]
        md.append("")
    text = "\n".join(md) + "\n"
    out_dir = report.results_dir()
    with open(os.path.join(out_dir, "remote.md"), "w") as f:
        f.write(text)
    report.write_csv(os.path.join(out_dir, "remote-runs.csv"),
                     ["driver", "method", "run", "round_trip_us", "messages_per_s"], raw_rows)
    print(text)
    return text

"""Task runtime benchmark (issue 13): bench/canal-runtime-bench (canal's
tasks), bench/runtimebench-go (goroutines, the same workloads) and
bench/fcontext-switch (Boost.Context's fcontext, the floor of a user-space
switch), run in turn `reps` times (interleaved), medians with min-max.

Workloads: yield ping-pong (ns per switch), spawn + join, condvar
ping-pong, channel ping-pong between two tasks on one loop and on two
(Go: GOMAXPROCS 1 / 2) at capacity 0 and 1, the same between two OS threads
(canal channels, today's thread path), and resident bytes per task parked
on a channel (RSS delta / tasks). Targets of issue 13: task switch <= 2x
fcontext; spawn + join and channel ping-pong task to task <= 0.5x Go;
memory per parked task <= Go's. Environment: CANAL_RB_ROUNDS, CANAL_RB_REPS,
CANAL_RB_PARKED.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from . import report, stats

PROGRAMS = [  # (column, binary)
    ("canal tasks", "bench/canal-runtime-bench"),
    ("Go", "bench/runtimebench-go"),
    ("fcontext", "bench/fcontext-switch"),
]
ROWS = [  # (result, workload, unit)
    ("yield_pingpong", "yield ping-pong, one loop", "ns/switch"),
    ("fcontext_switch", "Boost.Context fcontext switch (floor)", "ns/switch"),
    ("spawn_join", "spawn + join", "ns/task"),
    ("cond_pingpong", "condvar ping-pong, one loop", "ns/round trip"),
    ("chan_pingpong_1loop_0", "channel ping-pong, capacity 0, one loop", "ns/round trip"),
    ("chan_pingpong_2loops_0", "channel ping-pong, capacity 0, two loops", "ns/round trip"),
    ("chan_pingpong_1loop_1", "channel ping-pong, capacity 1, one loop", "ns/round trip"),
    ("chan_pingpong_2loops_1", "channel ping-pong, capacity 1, two loops", "ns/round trip"),
    ("thread_chan_pingpong_0", "channel ping-pong, capacity 0, two OS threads", "ns/round trip"),
    ("thread_chan_pingpong_1", "channel ping-pong, capacity 1, two OS threads", "ns/round trip"),
]
_LINE = re.compile(r"^([a-z_0-9]+)\s+([0-9]+(?:\.[0-9]*)?)\s+(\S+)\s*$")


@dataclass(frozen=True)
class Mode:
    rounds: int
    reps: int
    parked: int
    timeout: float
    quick: bool


def mode_params(mode: str, env: Optional[Dict[str, str]] = None) -> Mode:
    env = os.environ if env is None else env
    if mode == "quick":
        m = dict(rounds=20_000, reps=3, parked=20_000, timeout=300.0)
    elif mode == "full":
        m = dict(rounds=500_000, reps=5, parked=1_000_000, timeout=1800.0)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    for key, var in (("rounds", "CANAL_RB_ROUNDS"), ("reps", "CANAL_RB_REPS"),
                     ("parked", "CANAL_RB_PARKED")):
        if env.get(var):
            m[key] = int(env[var])
    return Mode(quick=(mode == "quick"), **m)


def parse_output(text: str) -> Dict[str, float]:
    """{'yield_pingpong': 85.2, 'parked_bytes_100000': 8192.0, ...}"""
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


@dataclass
class Cell:
    values: List[float]

    def median(self) -> Optional[float]:
        return stats.median(self.values) if self.values else None

    def fmt(self) -> str:
        if not self.values:
            return "n/a"
        med = stats.median(self.values)
        if len(self.values) == 1:
            return stats.fmt_ns(med)
        return f"{stats.fmt_ns(med)} ({stats.fmt_ns(min(self.values))}-{stats.fmt_ns(max(self.values))})"


def collect(runs: Sequence[Dict[str, Dict[str, float]]]) -> Dict[str, Dict[str, Cell]]:
    """runs: one {column: {result: value}} per repetition ->
    {column: {result: Cell}}."""
    out: Dict[str, Dict[str, Cell]] = {}
    for r in runs:
        for col, res in r.items():
            for k, v in res.items():
                out.setdefault(col, {}).setdefault(k, Cell([])).values.append(v)
    return out


def render(cells: Dict[str, Dict[str, Cell]], m: Mode) -> str:
    cols = [c for c, _ in PROGRAMS if c != "fcontext"]
    header = ["workload"] + cols + ["unit"]
    rows = []
    for key, what, unit in ROWS:
        if key == "fcontext_switch":
            cell = cells.get("fcontext", {}).get(key, Cell([]))
            rows.append([what, cell.fmt(), "", unit])
            continue
        rows.append([what] + [cells.get(c, {}).get(key, Cell([])).fmt() for c in cols] + [unit])
    pk = f"parked_bytes_{m.parked}"
    rows.append([f"resident memory per parked task ({m.parked:,} tasks)"]
                + [cells.get(c, {}).get(pk, Cell([])).fmt() for c in cols] + ["bytes/task"])
    table = report.markdown_table(header, rows)

    def med(col: str, key: str) -> Optional[float]:
        c = cells.get(col, {}).get(key)
        return c.median() if c else None

    checks = []
    fc = med("fcontext", "fcontext_switch")
    y = med("canal tasks", "yield_pingpong")
    checks.append(["task switch <= 2x fcontext", stats.fmt_ratio(stats.ratio(y, fc)), "2"])
    for key in ("spawn_join", "chan_pingpong_1loop_0", "chan_pingpong_2loops_0",
                "chan_pingpong_1loop_1", "chan_pingpong_2loops_1"):
        checks.append([f"{key} <= 0.5x Go",
                       stats.fmt_ratio(stats.ratio(med("canal tasks", key), med("Go", key))), "0.5"])
    checks.append(["memory per parked task <= Go",
                   stats.fmt_ratio(stats.ratio(med("canal tasks", pk), med("Go", pk))), "1"])
    rows2 = []
    for what, ratio, limit in checks:
        try:
            verdict = "met" if float(ratio) <= float(limit) else "MISSED"
        except ValueError:
            verdict = "n/a"
        rows2.append([what, ratio, limit, verdict])
    return (table + "\nTargets of issue 13 (ratio of medians):\n\n"
            + report.markdown_table(["target", "ratio", "limit", "verdict"], rows2))


def title(m: Mode) -> str:
    what = "quick run" if m.quick else "full run"
    return (f"canal task runtime vs Go goroutines and Boost.Context ({what}: "
            f"{m.rounds:,} rounds, {m.parked:,} parked tasks, median (min-max) "
            f"of {m.reps} interleaved runs)")


def run(build_dir: str, mode: str) -> str:
    m = mode_params(mode)
    out_dir = report.results_dir()
    progs = []
    for col, rel in PROGRAMS:
        path = os.path.join(build_dir, rel)
        if os.access(path, os.X_OK):
            progs.append((col, path))
        else:
            print(f"SKIPPED: {rel} is not built")
    if not any(c == "canal tasks" for c, _ in progs):
        raise RuntimeError(f"bench/canal-runtime-bench is not built in {build_dir}")
    env = dict(os.environ, CANAL_RB_PARKED=str(m.parked))
    runs = []
    raw = []
    for rep in range(m.reps):
        one: Dict[str, Dict[str, float]] = {}
        for col, path in progs:
            report.progress(f"runtime: {col} run {rep + 1}/{m.reps}")
            rounds = m.rounds * 50 if col == "fcontext" else m.rounds
            p = subprocess.run([path, str(rounds)], capture_output=True, text=True,
                               timeout=m.timeout, env=env)
            if p.returncode != 0:
                print(f"FAILED: {col} ({p.returncode}): {p.stderr.strip()[:300]}")
                continue
            res = parse_output(p.stdout)
            one[col] = res
            raw += [[rep + 1, col, k, v] for k, v in res.items()]
        runs.append(one)
    cells = collect(runs)
    body = render(cells, m)
    md = "\n".join(report.header_lines(title(m))) + "\n" + body
    md += ("\nOne loop: both tasks on one loop thread (Go: GOMAXPROCS=1); two loops: "
           "GOMAXPROCS=2. Timings on a shared VM are noisy: compare columns of the "
           "same run only.\n")
    with open(os.path.join(out_dir, "runtime.md"), "w") as f:
        f.write(md)
    report.write_csv(os.path.join(out_dir, "runtime-runs.csv"),
                     ["rep", "program", "result", "value"], raw)
    print(title(m))
    print(body)
    return md

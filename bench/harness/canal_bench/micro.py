"""Micro benchmark (issue 2 section 3): bench/canal-micro, ns per message
of seq, spsc, mpsc, mpmc (4 + 4 threads) and select (over 4 channels) at
capacity 0, 1 and 1024, ns per ping-pong round trip, and the floor of a
round trip: a value bouncing between two threads in one cache line; then
the same between two processes (a parent and a forked child, CANAL_SHARED
channels): proc_spsc_1024, proc_ping_pong_1 (both sides polling) and its
floor proc_cacheline_rt, the raw shared-futex round trip proc_futex_rt, and
the sleeping round trip proc_ping_pong_sleep (the responder busy-waits
50 us before replying) beside the raw futex round trip with the same delay,
proc_futex_rt_delayed.

The program runs `reps` times; the table shows medians and the two targets
of issue 2: spsc and mpmc at capacity 1024 <= 50 ns per message, ping-pong
round trip <= 2x the cache-line round trip (the line bounce measured in the
same runs); and between processes: proc_spsc_1024 <= 60 ns per message,
proc_ping_pong_1 <= 2x proc_cacheline_rt, proc_ping_pong_sleep <= 1.3x
proc_futex_rt_delayed. Quick runs size the thread cells by time: canal-micro
-T 0.2 runs each again until it has taken 0.2 s. Environment overrides:
CANAL_MICRO_N, CANAL_MICRO_ROUNDS, CANAL_MICRO_REPS, CANAL_MICRO_MIN_SECONDS.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from . import report, runner, stats

BINARY = "bench/canal-micro"
TESTS = ["seq", "spsc", "mpsc", "mpmc", "select", "ping_pong"]
CAPS = [0, 1, 1024]
# Targets of issue 2.
THROUGHPUT_TARGET_NS = 50.0
THROUGHPUT_TARGETS = ["spsc_1024", "mpmc_1024"]
PING_PONG_FACTOR = 2.0
# Between two processes.
PROC_SPSC_TARGET_NS = 60.0
PROC_SLEEP_FACTOR = 1.3
# (result, description, unit) of the process rows, in canal-micro's order.
PROC_ROWS = [
    ("proc_spsc_1024", "spsc, capacity 1024", "ns/message"),
    ("proc_ping_pong_1", "ping-pong, capacity 1, both sides polling", "ns/round trip"),
    ("proc_cacheline_rt", "cache-line round trip (floor)", "ns/round trip"),
    ("proc_futex_rt", "raw shared-futex round trip, both sides sleeping", "ns/round trip"),
    ("proc_futex_rt_delayed", "raw shared-futex round trip, 50 us responder delay",
     "ns/round trip"),
    ("proc_ping_pong_sleep", "ping-pong, capacity 1, 50 us responder delay (sleeping)",
     "ns/round trip"),
]

_LINE = re.compile(r"^([a-z_]+?(?:_\d+)?|cacheline_rt)\s+([0-9]+(?:\.[0-9]*)?)\s+(ns/msg|ns/rt)\s*$")


@dataclass(frozen=True)
class Mode:
    n: int
    rounds: int
    reps: int
    timeout: float
    quick: bool
    min_seconds: float = 0.0


def mode_params(mode: str, env: Optional[Dict[str, str]] = None) -> Mode:
    env = os.environ if env is None else env
    if mode == "quick":
        m = dict(n=100_000, rounds=20_000, reps=3, timeout=120.0, min_seconds=0.2)
    elif mode == "full":
        m = dict(n=1_000_000, rounds=200_000, reps=5, timeout=600.0)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    for key, var in (("n", "CANAL_MICRO_N"), ("rounds", "CANAL_MICRO_ROUNDS"),
                     ("reps", "CANAL_MICRO_REPS")):
        if env.get(var):
            m[key] = int(env[var])
    if env.get("CANAL_MICRO_MIN_SECONDS"):
        m["min_seconds"] = float(env["CANAL_MICRO_MIN_SECONDS"])
    return Mode(quick=(mode == "quick"), **m)


def parse_output(text: str) -> Dict[str, Tuple[float, str]]:
    """{'spsc_1024': (23.4, 'ns/msg'), 'cacheline_rt': (180.0, 'ns/rt'), ...}
    from canal-micro's output; other lines are ignored."""
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m.group(1)] = (float(m.group(2)), m.group(3))
    return out


def medians(runs: Sequence[Dict[str, Tuple[float, str]]]) -> Dict[str, float]:
    """Median over runs of each result present in at least one run."""
    vals: Dict[str, List[float]] = {}
    for r in runs:
        for name, (v, _) in r.items():
            vals.setdefault(name, []).append(v)
    return {k: stats.median(v) for k, v in vals.items()}


@dataclass(frozen=True)
class Check:
    what: str
    value: Optional[float]
    limit: Optional[float]
    base: Optional[str] = None  # the limit is a multiple of this result

    @property
    def ok(self) -> Optional[bool]:
        if self.value is None or self.limit is None:
            return None
        return self.value <= self.limit

    @property
    def verdict(self) -> str:
        return {True: "met", False: "MISSED", None: "n/a"}[self.ok]


def checks(med: Dict[str, float]) -> List[Check]:
    """The targets of issue 2 against the medians."""
    out = [Check(f"{name} <= {THROUGHPUT_TARGET_NS:.0f} ns/msg", med.get(name),
                 THROUGHPUT_TARGET_NS) for name in THROUGHPUT_TARGETS]
    line = med.get("cacheline_rt")
    limit = None if line is None else PING_PONG_FACTOR * line
    for cap in CAPS:
        out.append(Check(f"ping_pong_{cap} <= {PING_PONG_FACTOR:.0f} x cacheline_rt",
                         med.get(f"ping_pong_{cap}"), limit, "cacheline_rt"))
    out.append(Check(f"proc_spsc_1024 <= {PROC_SPSC_TARGET_NS:.0f} ns/msg",
                     med.get("proc_spsc_1024"), PROC_SPSC_TARGET_NS))
    for name, factor, base in (
            ("proc_ping_pong_1", PING_PONG_FACTOR, "proc_cacheline_rt"),
            ("proc_ping_pong_sleep", PROC_SLEEP_FACTOR, "proc_futex_rt_delayed")):
        b = med.get(base)
        out.append(Check(f"{name} <= {factor:g} x {base}", med.get(name),
                         None if b is None else factor * b, base))
    return out


def samples(runs: Sequence[Dict[str, Tuple[float, str]]]) -> Dict[str, List[float]]:
    """Every run's value of each result."""
    vals: Dict[str, List[float]] = {}
    for r in runs:
        for name, (v, _) in r.items():
            vals.setdefault(name, []).append(v)
    return vals


def result_names() -> List[str]:
    """Every result of the table and the targets, in canal-micro's order."""
    names = [f"{t}_{c}" for t in TESTS for c in CAPS if not (t == "seq" and c == 0)]
    return names + ["cacheline_rt"] + [name for name, _, _ in PROC_ROWS]


def missing(spread: Dict[str, List[float]], reps: int) -> Dict[str, int]:
    """{result: runs without its line} for every result (of the table and
    the targets) that some of the reps runs lack: canal-micro prints every
    line or fails, so a missing line is a failed run of that result."""
    return {n: reps - len(spread.get(n, [])) for n in result_names()
            if len(spread.get(n, [])) < reps}


def why_missing(runs: Sequence[Dict[str, Tuple[float, str]]],
                failures: Sequence[str]) -> Dict[str, str]:
    """{result: why} for every result some run lacks: the note of each run
    that failed before printing it ("run 2: exit status 134: ..."), or "no
    result line" for a run that exited 0 without it. failures[i] is run
    i's note, "" when it exited 0."""
    out = {}
    for name in result_names():
        whys: List[str] = []
        for i, (r, note) in enumerate(zip(runs, failures)):
            if name not in r:
                w = f"run {i + 1}: {note}" if note else "no result line"
                if w not in whys:
                    whys.append(w)
        if whys:
            out[name] = "; ".join(whys)
    return out


def fmt(name: str, med: Dict[str, float], spread: Optional[Dict[str, List[float]]],
        reps: Optional[int] = None) -> str:
    """The median of a result, with the range of its runs and "unstable"
    when they differ by more than 3x (when the runs are given); with reps,
    "FAILED k of reps" when k runs lack it (no median of the survivors)."""
    if reps is not None and spread is not None:
        k = reps - len(spread.get(name, []))
        if 0 < k < reps:
            return f"FAILED {k} of {reps}"
    v = med.get(name)
    if v is None:
        return "n/a"
    xs = (spread or {}).get(name, [])
    if len(xs) < 2:
        return stats.fmt_ns(v)
    return stats.fmt_spread(xs, stats.fmt_ns)


def render(med: Dict[str, float], m: Mode,
           spread: Optional[Dict[str, List[float]]] = None,
           reps: Optional[int] = None) -> str:
    """The tables and the targets; with spread and reps, a result that some
    runs lack is FAILED, never a median of the others, and a target on it
    (or on its base) is not judged."""
    if spread is not None and reps is not None:
        med = {k: v for k, v in med.items() if len(spread.get(k, [])) >= reps}
    header = ["workload"] + [f"capacity {c}" for c in CAPS] + ["unit"]
    rows = []
    for t in TESTS:
        unit = "ns/round trip" if t == "ping_pong" else "ns/message"
        cells = []
        for c in CAPS:
            v = med.get(f"{t}_{c}")
            cells.append(fmt(f"{t}_{c}", med, spread, reps) if v is not None
                         or (t, c) != ("seq", 0)
                         else "impossible")
        rows.append([t] + cells + [unit])
    rows.append(["cache-line round trip (floor)", fmt("cacheline_rt", med, spread, reps),
                 "", "", "ns/round trip"])
    table = report.markdown_table(header, rows)
    prows = [[name, what, fmt(name, med, spread, reps), unit]
             for name, what, unit in PROC_ROWS]
    table += ("\nBetween two processes (parent and forked child, CANAL_SHARED "
              "channels, 8-byte messages):\n\n"
              + report.markdown_table(["result", "workload", "measured", "unit"], prows))
    crows = []
    for ch in checks(med):
        ratio = ""
        if ch.base and ch.value is not None and med.get(ch.base):
            ratio = f" ({stats.fmt_ratio(ch.value / med[ch.base])} x)"
        name = ch.what.split()[0]
        crows.append([ch.what, (fmt(name, med, spread, reps) if ch.value is None
                                else stats.fmt_ns(ch.value) + ratio),
                      (fmt(ch.base, med, spread, reps) if ch.base and ch.limit is None
                       else stats.fmt_ns(ch.limit)), ch.verdict])
    targets = report.markdown_table(["target", "measured", "limit", "verdict"], crows)
    return table + "\nTargets of issue 2:\n\n" + targets


def title(m: Mode) -> str:
    what = "quick run" if m.quick else "full run"
    sized = f" or more (each cell at least {m.min_seconds:g} s)" if m.min_seconds > 0 else ""
    return (f"canal micro benchmark ({what}: {m.n:,} messages, {m.rounds:,} round trips"
            f"{sized}, 8-byte messages, median of {m.reps} runs)")


def command(path: str, m: Mode) -> List[str]:
    cmd = [path, "-n", str(m.n), "-r", str(m.rounds)]
    if m.min_seconds > 0:
        cmd += ["-T", f"{m.min_seconds:g}"]
    return cmd


def run(build_dir: str, mode: str) -> str:
    m = mode_params(mode)
    path = os.path.join(build_dir, BINARY)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{BINARY} is not built in {build_dir}")
    out_dir = report.results_dir()
    runs = []
    failures = []
    raw = []
    for rep in range(m.reps):
        report.progress(f"canal-micro run {rep + 1}/{m.reps}")
        o = runner.run(command(path, m), m.timeout, parse=parse_output)
        if o.status == "skipped":
            raise RuntimeError(f"canal-micro skipped: {o.note[:300]}")
        # A run that crashed or hung keeps the lines it printed: canal-micro
        # prints a result once its test is over (threads joined, the child
        # reaped), so only the results it never printed failed in this run;
        # they are FAILED k of n, not measured, like a missing line.
        res = parse_output(o.stdout)
        runs.append(res)
        failures.append("" if o.ok else o.note[:300])
        if not o.ok:
            report.progress(f"canal-micro run {rep + 1}: {o.status}: {o.note[:300]}")
        raw += [[rep + 1, k, v, u] for k, (v, u) in res.items()]
    med = medians(runs)
    headlines(samples(runs), m.reps, why_missing(runs, failures))
    body = render(med, m, samples(runs), m.reps)
    failed = [f"run {i + 1}: {note}" for i, note in enumerate(failures) if note]
    if failed:
        body += ("\nFailed runs (the results each printed before it ended are kept): "
                 + "; ".join(failed) + "\n")
    md = "\n".join(report.header_lines(title(m))) + "\n" + body
    md += ("\nping-pong and the cache-line bounce pin their two threads to two CPUs "
           "when the process may use two; so do the two processes of the proc_ rows. "
           "seq cannot run at capacity 0. proc_futex_rt_delayed and "
           "proc_ping_pong_sleep both include the responder's 50 us delay "
           "(raw values). FAILED k of n: k of the n runs printed no line for that "
           "result (the run exited 0 without it, or crashed or hung before it); "
           "it is not measured (no median of the other runs).\n")
    with open(os.path.join(out_dir, "micro.md"), "w") as f:
        f.write(md)
    report.write_csv(os.path.join(out_dir, "micro-runs.csv"),
                     ["rep", "result", "value", "unit"], raw)
    print(title(m))
    print(body)
    return md


# (workload, canal's result, peer's result or None, peer's name, target, unit)
HEADLINES = [
    ("spsc, capacity 1024", "spsc_1024", None, None, THROUGHPUT_TARGET_NS, "ns/msg"),
    ("mpmc 4x4, capacity 1024", "mpmc_1024", None, None, THROUGHPUT_TARGET_NS, "ns/msg"),
    ("ping-pong, capacity 1", "ping_pong_1", "cacheline_rt", "cache-line floor",
     PING_PONG_FACTOR, "ns/round trip"),
    ("processes: spsc, capacity 1024", "proc_spsc_1024", None, None, PROC_SPSC_TARGET_NS,
     "ns/msg"),
    ("processes: ping-pong, polling", "proc_ping_pong_1", "proc_cacheline_rt",
     "cache-line floor", PING_PONG_FACTOR, "ns/round trip"),
    ("processes: ping-pong, sleeping", "proc_ping_pong_sleep", "proc_futex_rt_delayed",
     "raw futex", PROC_SLEEP_FACTOR, "ns/round trip"),
]


def headlines(spread: Dict[str, List[float]], reps: int,
              whys: Optional[Dict[str, str]] = None) -> None:
    """The targets of issues 2 and 3 as summary rows. A result (or its
    base) that some of the reps runs lack is not measured, with why (whys,
    from why_missing; "no result line" by default): the median of the runs
    that printed it would hide a failed run (every family's rule,
    report.failed_runs_note); a result no run printed stays a row too."""
    lack = missing(spread, reps)

    def why(name: str) -> str:
        return report.failed_runs_note(name, lack[name], reps,
                                       (whys or {}).get(name, "no result line"))

    for label, name, base, peer_name, target, unit in HEADLINES:
        if name in lack:
            report.headline("micro", label, None, peer_name, None, unit, target,
                            note=why(name))
            continue
        peer = None if base is None or base in lack else spread.get(base)
        report.headline("micro", label, spread[name], peer_name, peer, unit, target,
                        note=why(base) if base in lack else f"no {base} result")

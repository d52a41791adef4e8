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

A second table: bench/canal-queue-bench (seed 004, appendix D), ns per
push+pop of a queue holding F packets, for the io_uring completion queue
(NOP, MSG_RING) and user-space queues (plain ring, Vyukov's lock-free
queue, a mutex, a canal channel), run in the same repetitions; rows are the
variants, columns the fill levels, n/a where a queue cannot hold F (the
io_uring CQ stops at 65536). Full mode also draws runtime-queue.png (fill
against ns, log-log). Environment: CANAL_QB_PAIRS, CANAL_QB_FILLS (comma
list).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from . import report, runner, stats

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
    ("sock_pingpong_recv", "socket ping-pong, TCP loopback pair, one loop: a receive per message", "ns/round trip"),
    ("sock_pingpong_rstream", "the same with receive streams (one multishot receive per socket)", "ns/round trip"),
]
_LINE = re.compile(r"^([a-z_0-9]+)\s+([0-9]+(?:\.[0-9]*)?)\s+(\S+)\s*$")

QUEUE_PROGRAM = "bench/canal-queue-bench"
QUEUE_VARIANTS = [  # (variant as the program names it, row label)
    ("uring_nop", "io_uring CQ, NOP"),
    ("uring_msg", "io_uring CQ, MSG_RING"),
    ("ring", "plain ring, no lock (floor)"),
    ("vyukov", "Vyukov MPMC, lock-free"),
    ("mutex", "ring + pthread mutex"),
    ("canal_chan", "canal channel"),
]
_QUEUE_LINE = re.compile(r"^queue\s+([a-z_0-9]+)\s+([0-9]+)\s+([0-9]+(?:\.[0-9]*)?|n/a)\s*$")


@dataclass(frozen=True)
class Mode:
    rounds: int
    reps: int
    parked: int
    timeout: float
    quick: bool
    queue_pairs: int = 200_000
    queue_fills: Tuple[int, ...] = (1, 100, 10_000)


def mode_params(mode: str, env: Optional[Dict[str, str]] = None) -> Mode:
    env = os.environ if env is None else env
    if mode == "quick":
        m = dict(rounds=20_000, reps=3, parked=20_000, timeout=300.0,
                 queue_pairs=200_000, queue_fills=(1, 100, 10_000))
    elif mode == "full":
        m = dict(rounds=500_000, reps=5, parked=1_000_000, timeout=1800.0,
                 queue_pairs=10_000_000,
                 queue_fills=(1, 10, 100, 1_000, 10_000, 100_000, 1_000_000))
    else:
        raise ValueError(f"unknown mode {mode!r}")
    for key, var in (("rounds", "CANAL_RB_ROUNDS"), ("reps", "CANAL_RB_REPS"),
                     ("parked", "CANAL_RB_PARKED"), ("queue_pairs", "CANAL_QB_PAIRS")):
        if env.get(var):
            m[key] = int(env[var])
    if env.get("CANAL_QB_FILLS"):
        m["queue_fills"] = tuple(int(f) for f in env["CANAL_QB_FILLS"].split(","))
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
    failures: List[str] = field(default_factory=list)  # why, for each run without a value
    quiet: int = 0  # completed runs that do not print this result (not failures)

    @property
    def runs(self) -> int:
        return len(self.values) + len(self.failures) + self.quiet

    def median(self) -> Optional[float]:
        """The median, None when a run failed: a median of the runs that
        survived would hide a crash or a hang."""
        return stats.median(self.values) if self.values and not self.failures else None

    def summary_values(self) -> Optional[List[float]]:
        """The repetitions for the summary; None when a run failed."""
        return self.values if self.values and not self.failures else None

    def note(self, name: str, key: str = "") -> str:
        """Why the summary has no figure ("" when it has one): a failed run,
        or runs that all completed without the line of key (get()), or no
        run at all."""
        if self.failures:
            return report.failed_runs_note(name, len(self.failures), self.runs, self.failures[0])
        if not self.values and self.quiet:
            return (f"{name}: no {key or 'result'} line in {self.quiet} completed "
                    f"run{'s' if self.quiet > 1 else ''}")
        if not self.values:
            return f"{name}: not run (not built?)"
        return ""

    def fmt(self) -> str:
        if not self.values:
            text = "n/a"
        else:
            med = stats.median(self.values)
            text = stats.fmt_ns(med)
            if len(self.values) > 1:
                text += f" ({stats.fmt_ns(min(self.values))}-{stats.fmt_ns(max(self.values))})"
        if self.failures:
            text += f"; FAILED {len(self.failures)} of {self.runs}: {self.failures[0]}"
        return text


# A repetition: {column: its results}, or {column: why} when the run failed.
RepRuns = Dict[str, Union[Dict[str, float], str]]
ALL = "*"  # collect's cell of a column as a whole: the failures of its runs


def collect(runs: Sequence[RepRuns]) -> Dict[str, Dict[str, Cell]]:
    """runs: one {column: {result: value} or why it failed} per repetition
    -> {column: {result: Cell}}. A result is any line a completed run of
    its column printed; a run of that column that failed, or completed
    without that line, is a failure of the cell (with why). cells[col][ALL]
    holds the failed runs of the column (for a column that never completed)."""
    out: Dict[str, Dict[str, Cell]] = {}
    keys: Dict[str, List[str]] = {}
    for r in runs:
        for col, res in r.items():
            if isinstance(res, dict):
                keys.setdefault(col, [])
                keys[col] += [k for k in res if k not in keys[col]]
    for r in runs:
        for col, res in r.items():
            cols = out.setdefault(col, {ALL: Cell([])})
            if not isinstance(res, dict):
                cols[ALL].failures.append(res)
            else:
                cols[ALL].quiet += 1
            for k in keys.get(col, []):
                cell = cols.setdefault(k, Cell([]))
                if not isinstance(res, dict):
                    cell.failures.append(res)
                elif k in res:
                    cell.values.append(res[k])
                else:
                    cell.failures.append(f"no {k} line")
    return out


def get(cells: Dict[str, Dict[str, Cell]], col: str, key: str) -> Cell:
    """The cell of a result; for a column that never printed it, the
    column's failed runs (its completed runs do not measure it)."""
    cols = cells.get(col, {})
    if key in cols:
        return cols[key]
    whole = cols.get(ALL, Cell([]))
    return Cell([], list(whole.failures), whole.quiet)


def render(cells: Dict[str, Dict[str, Cell]], m: Mode) -> str:
    cols = [c for c, _ in PROGRAMS if c != "fcontext"]
    header = ["workload"] + cols + ["unit"]
    rows = []
    for key, what, unit in ROWS:
        if key == "fcontext_switch":
            rows.append([what, get(cells, "fcontext", key).fmt(), "", unit])
            continue
        rows.append([what] + [get(cells, c, key).fmt() for c in cols] + [unit])
    pk = f"parked_bytes_{m.parked}"
    pc = f"parked_compact_bytes_{m.parked}"
    rows.append([f"resident memory per parked task ({m.parked:,} tasks)"]
                + [get(cells, c, pk).fmt() for c in cols] + ["bytes/task"])
    rows.append([f"the same, canal with CANAL_RUN_COMPACT_STACKS (opt-in)"]
                + [get(cells, c, pc).fmt() for c in cols] + ["bytes/task"])
    table = report.markdown_table(header, rows)

    def check(what: str, key: str, peer: str, peer_key: str, limit: str) -> List[str]:
        """[target, ratio, limit, verdict]; not measured with why (the
        summary's words, Cell.note) when a cell has no median."""
        c, p = get(cells, "canal tasks", key), get(cells, peer, peer_key)
        ratio = stats.fmt_ratio(stats.ratio(c.median(), p.median()))  # None: a run failed
        try:
            verdict = "met" if float(ratio) <= float(limit) else "MISSED"
        except ValueError:
            why = (c.note("canal tasks", key) if c.median() is None else "") \
                or (p.note(peer, peer_key) if p.median() is None else "")
            verdict = "not measured" + (f" ({why})" if why else "")
        return [what, ratio, limit, verdict]

    rows2 = [check("task switch <= 2x fcontext", "yield_pingpong", "fcontext",
                   "fcontext_switch", "2")]
    for key in ("spawn_join", "chan_pingpong_1loop_0", "chan_pingpong_2loops_0",
                "chan_pingpong_1loop_1", "chan_pingpong_2loops_1"):
        rows2.append(check(f"{key} <= 0.5x Go", key, "Go", key, "0.5"))
    rows2.append(check("memory per parked task <= Go", pk, "Go", pk, "1"))
    rows2.append(check("the same, compacting stacks (opt-in) <= Go", pc, "Go", pk, "1"))
    return (table + "\nTargets of issue 13 (ratio of medians):\n\n"
            + report.markdown_table(["target", "ratio", "limit", "verdict"], rows2))


def headlines(cells: Dict[str, Dict[str, Cell]], m: Mode) -> None:
    """The summary screen's rows: issue 13's targets. A cell with a failed
    run (or a run without its line) has no figure: not measured, with why."""
    def row(what: str, key: str, peer: str, peer_key: str, target: float,
            unit: str = "ns") -> None:
        c, p = get(cells, "canal tasks", key), get(cells, peer, peer_key)
        report.headline("runtime", what, c.summary_values(),
                        "Boost.Context fcontext" if peer == "fcontext" else peer,
                        p.summary_values(), unit, target,
                        note=c.note("canal tasks", key) or p.note(peer, peer_key))

    row("task switch (yield ping-pong)", "yield_pingpong", "fcontext", "fcontext_switch", 2.0)
    row("spawn + join", "spawn_join", "Go", "spawn_join", 0.5)
    for key, what in (("chan_pingpong_1loop_0", "channel ping-pong task to task, capacity 0, one loop"),
                      ("chan_pingpong_2loops_1", "channel ping-pong task to task, capacity 1, two loops")):
        row(what, key, "Go", key, 0.5)
    pk = f"parked_bytes_{m.parked}"
    row(f"memory per parked task ({m.parked:,})", pk, "Go", pk, 1.0, "bytes")
    row(f"memory per parked task ({m.parked:,}), compacting stacks (opt-in)",
        f"parked_compact_bytes_{m.parked}", "Go", pk, 1.0, "bytes")


# ---------------------------------------------------------------------------
# The queue table (seed 004, appendix D): bench/canal-queue-bench

QueueKey = Tuple[str, int]  # (variant, fill)


def parse_queue_output(text: str) -> Dict[QueueKey, Optional[float]]:
    """{('ring', 100): 2.3, ('uring_nop', 100000): None (n/a), ...}"""
    out: Dict[QueueKey, Optional[float]] = {}
    for line in text.splitlines():
        m = _QUEUE_LINE.match(line.strip())
        if m:
            out[(m.group(1), int(m.group(2)))] = None if m.group(3) == "n/a" else float(m.group(3))
    return out


def collect_queue(runs: Sequence[Dict[QueueKey, Optional[float]]]) -> Dict[QueueKey, Cell]:
    """One parse_queue_output() per repetition -> {(variant, fill): Cell};
    an n/a cell has no values."""
    out: Dict[QueueKey, Cell] = {}
    for r in runs:
        for key, v in r.items():
            cell = out.setdefault(key, Cell([]))
            if v is not None:
                cell.values.append(v)
    return out


def fmt_fill(fill: int) -> str:
    """1, 10, 100, 1000, 10^4, 10^5, 10^6 (the seed's axis); others as digits."""
    if fill >= 10_000 and 10 ** (len(str(fill)) - 1) == fill:
        return f"10^{len(str(fill)) - 1}"
    return str(fill)


def queue_variants(cells: Dict[QueueKey, Cell]) -> List[Tuple[str, str]]:
    """The known variants in table order, then any other the program printed."""
    seen = {v for v, _ in cells}
    rows = [(v, label) for v, label in QUEUE_VARIANTS if v in seen]
    rows += [(v, v) for v in sorted(seen - {v for v, _ in QUEUE_VARIANTS})]
    return rows


def render_queue(cells: Dict[QueueKey, Cell], fills: Sequence[int]) -> str:
    """Rows = variants, columns = fill levels, median (min-max) ns per
    push+pop; n/a where the queue could not hold the fill (or no run gave
    a value)."""
    header = ["queue / fill"] + [fmt_fill(f) for f in fills]
    rows = []
    for variant, label in queue_variants(cells):
        rows.append([label] + [cells.get((variant, f), Cell([])).fmt() for f in fills])
    return report.markdown_table(header, rows)


def plot_queue(cells: Dict[QueueKey, Cell], fills: Sequence[int], path: str) -> bool:
    """Fill level against median ns per push+pop, log-log, one line per
    variant (n/a cells left out); False (nothing written) without
    matplotlib or without a value."""
    if not report.have_matplotlib():
        return False
    series = []
    for variant, label in queue_variants(cells):
        pts = [(f, cells[(variant, f)].median()) for f in sorted(fills)
               if f > 0 and (variant, f) in cells and cells[(variant, f)].values]
        if pts:
            series.append((label, pts))
    if not series:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for label, pts in series:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("packets in the queue (fill level)")
    ax.set_ylabel("ns per push+pop (median, log scale)")
    ax.set_title("Queue push+pop: io_uring CQ vs user-space queues (seed 004, app. D)")
    ax.grid(True, which="both", alpha=0.3)
    # Outside the axes, on the right: the lines span the whole width.
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def queue_title(m: Mode) -> str:
    what = "quick run" if m.quick else "full run"
    return (f"Queue push+pop at fill levels (seed 004 appendix D; {what}: "
            f"{m.queue_pairs:,} pairs per cell, ns per push+pop, median (min-max) "
            f"of {m.reps} runs)")


QUEUE_NOTES = """Each cell: the queue is filled with F packets (16 bytes: a CQE's
user_data, res, flags), then push+pop pairs are timed (the fill and drain
are not); one thread. io_uring: a push is a submitted SQE (one
io_uring_enter), a pop reads the CQE from the ring; n/a where the queue
cannot hold F + 1 packets (the CQ stops at 65536 entries, IORING_SETUP_CLAMP).
Every run checks that packets come out in order, each exactly once.
"""


def queue_command(path: str, m: Mode) -> List[str]:
    return [path, "-m", str(m.queue_pairs), "-f", ",".join(str(f) for f in m.queue_fills)]


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
    queue_path = os.path.join(build_dir, QUEUE_PROGRAM)
    if not os.access(queue_path, os.X_OK):
        print(f"SKIPPED: {QUEUE_PROGRAM} is not built")
        queue_path = ""
    runs: List[RepRuns] = []
    queue_runs = []
    queue_failed: List[str] = []
    raw = []
    for rep in range(m.reps):
        one: RepRuns = {}
        for col, path in progs:
            report.progress(f"runtime: {col} run {rep + 1}/{m.reps}")
            rounds = m.rounds * 50 if col == "fcontext" else m.rounds
            o = runner.run([path, str(rounds)], m.timeout, env=env)
            if not o.ok:
                # Kept as a failure of every cell of the column: no median
                # of the runs that survived on the summary.
                print(f"FAILED: {col} ({o.status}): {o.note[:300]}")
                one[col] = o.note or o.status
                raw.append([rep + 1, col, "FAILED", o.note or o.status])
                continue
            res = parse_output(o.stdout)
            one[col] = res
            raw += [[rep + 1, col, k, v] for k, v in res.items()]
        runs.append(one)
        if queue_path:
            report.progress(f"runtime: queue run {rep + 1}/{m.reps}")
            o = runner.run(queue_command(queue_path, m), m.timeout)
            if not o.ok:
                print(f"FAILED: canal-queue-bench ({o.status}): {o.note[:300]}")
                queue_failed.append(o.note or o.status)
                raw.append([rep + 1, "canal-queue-bench", "FAILED", o.note or o.status])
            else:
                qres = parse_queue_output(o.stdout)
                queue_runs.append(qres)
                raw += [[rep + 1, "canal-queue-bench", f"queue_{v}_{f}",
                         "n/a" if x is None else x] for (v, f), x in qres.items()]
    cells = collect(runs)
    headlines(cells, m)
    body = render(cells, m)
    md = "\n".join(report.header_lines(title(m))) + "\n" + body
    md += ("\nOne loop: both tasks on one loop thread (Go: GOMAXPROCS=1); two loops: "
           "GOMAXPROCS=2. Timings on a shared VM are noisy: compare columns of the "
           "same run only.\n")
    queue_body = ""
    if queue_runs:
        qcells = collect_queue(queue_runs)
        queue_body = render_queue(qcells, m.queue_fills)
        if queue_failed:
            queue_body += (f"\ncanal-queue-bench FAILED in {len(queue_failed)} of {m.reps} "
                           f"runs ({queue_failed[0]}): the medians are of the others.\n")
        md += f"\n## {queue_title(m)}\n\n{queue_body}\n{QUEUE_NOTES}"
        if not m.quick:
            if plot_queue(qcells, m.queue_fills, os.path.join(out_dir, "runtime-queue.png")):
                md += "\n![queue: ns per push+pop against the fill level](runtime-queue.png)\n"
            else:
                md += "\nPlot: none (matplotlib not importable).\n"
    with open(os.path.join(out_dir, "runtime.md"), "w") as f:
        f.write(md)
    report.write_csv(os.path.join(out_dir, "runtime-runs.csv"),
                     ["rep", "program", "result", "value"], raw)
    print(title(m))
    print(body)
    if queue_body:
        print(queue_title(m))
        print(queue_body)
    return md

"""Channel comparison (issue 5): canal against Go channels, Rust's
crossbeam-channel and flume on the workloads of crossbeam-channel's own
benchmark suite (docs/bench-chan.md).

Every implementation is a program printing one line per result,
`<workload> <lang> <impl> <seconds> sec`:
  bench/chanbench-canal   C canal               (bench/chan)
  bench/chanbench-canal -m task   C canal-task  (the same, canal tasks in
                                  place of threads: canal/task.h)
  bench/chanbench-go      Go chan               (bench/peers/go/cmd/chanbench)
  bench/chanbench-rust    Rust crossbeam-channel, Rust flume (bench/peers/rust)
The harness runs them interleaved (canal, Go, crossbeam, flume, canal, ...),
one workload kind per invocation, `reps` times, and reports the median ns
per message, canal / best peer and which peer was best. Missing peers (no
go or cargo at build time) give SKIPPED cells. The task column (issue 13:
the grid with tasks in place of threads, beside Go) is not a peer of the
thread columns: it has its own ratio, canal tasks / Go.

Quick runs size each cell by time, once for all its implementations:
in the first repetition every implementation runs the cell with N
messages (the calibration); when one of them took less than 0.2 s
(min_seconds), the cell's N is scaled so that the fastest takes about
that long (at most 50 N), but no further than the slowest implementation
taking 10 min_seconds (common_n); every implementation then runs the cell
again, at once, with that N, which the cell keeps for its later
repetitions; the calibration runs are not counted (one that hung or
failed still marks the cell failed). Every implementation
of a cell moves the same N messages (at capacity N, N is also the
channel's capacity: sizing each implementation alone compared different
workloads).

Environment overrides (both modes): CANAL_CHAN_N, CANAL_CHAN_T,
CANAL_CHAN_REPS, CANAL_CHAN_SIZES (e.g. "8,64"), CANAL_CHAN_KINDS,
CANAL_CHAN_MIN_SECONDS (0: no sizing by time), CANAL_CHAN_CAPS (e.g.
"bounded0,bounded1"), and CANAL_CHAN_BUSY=1: one busy process (a
`while :; do :; done` shell loop) runs beside the whole collection, as on a
machine that is not idle (issue 11).
"""
from __future__ import annotations

import csv
import itertools
import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import report, runner, stats

KINDS = ["seq", "spsc", "mpsc", "mpmc", "select_rx", "select_both", "ping_pong"]
CAPS = ["bounded0", "bounded1", "boundedN", "unbounded"]
SIZES = (0, 8, 64)
CAP_FLAGS = {"bounded0": "0", "bounded1": "1", "boundedN": "N", "unbounded": "u"}


@dataclass(frozen=True)
class Impl:
    key: str              # canal, go, crossbeam, flume
    label: str            # column header
    lang: str             # as printed by the program
    name: str             # as printed by the program
    binary: str           # relative to the build directory
    args: Tuple[str, ...] = ()
    caps: Tuple[str, ...] = ("bounded0", "bounded1", "boundedN")
    # (cap, kind) pairs the program does not run (see NOTES).
    skips: Tuple[Tuple[str, str], ...] = ()


IMPLS: List[Impl] = [
    Impl("canal", "canal", "C", "canal", "bench/chanbench-canal"),
    Impl("go", "Go chan", "Go", "chan", "bench/chanbench-go"),
    Impl("crossbeam", "crossbeam-channel", "Rust", "crossbeam-channel",
         "bench/chanbench-rust", ("-i", "crossbeam"), tuple(CAPS)),
    Impl("flume", "flume", "Rust", "flume",
         "bench/chanbench-rust", ("-i", "flume"), tuple(CAPS),
         (("bounded0", "select_both"), ("bounded1", "select_both"))),
    Impl("canal_task", "canal tasks", "C", "canal-task", "bench/chanbench-canal",
         ("-m", "task")),
]
PEERS = [i.key for i in IMPLS if i.key not in ("canal", "canal_task")]
# The columns before "canal / best peer": canal's threads and the peers.
THREAD_IMPLS = [i for i in IMPLS if i.key != "canal_task"]
TASK_IMPL = next(i for i in IMPLS if i.key == "canal_task")


MIN_SECONDS = 0.2   # quick runs: the least a cell's run should take
MAX_SCALE = 50      # ... with at most MAX_SCALE times N messages
MAX_SLOWEST = 10    # ... and the slowest implementation at most this many
                    # times min_seconds (the cell's N is shared: common_n)


def scaled_n(n: int, seconds: float, min_seconds: float) -> int:
    """N for a cell whose run of n messages took `seconds`: n when it took
    min_seconds or more, else n scaled to take about min_seconds (at most
    MAX_SCALE n)."""
    return stats.scaled_count(n, max(seconds, 1e-6), min_seconds, MAX_SCALE)


def common_n(n: int, took: Iterable[float], min_seconds: float) -> int:
    """The one N of a cell for every implementation, from the seconds each
    took with n messages (its calibration): stats.common_count, the fastest
    sized to take about min_seconds (at most MAX_SCALE n), the slowest at
    most MAX_SLOWEST min_seconds. Every implementation of the cell then
    does the same work."""
    return stats.common_count(n, took, min_seconds, MAX_SCALE, MAX_SLOWEST)


@dataclass(frozen=True)
class Mode:
    n: int
    threads: int
    reps: int
    sizes: Tuple[int, ...]
    kinds: Tuple[str, ...]
    timeout: float        # seconds, per program invocation (one cell)
    quick: bool
    min_seconds: float = 0.0  # size each cell to run at least this long
    caps: Tuple[str, ...] = tuple(CAPS)
    busy: bool = False    # a busy process beside the benchmark


def mode_params(mode: str, env: Optional[Dict[str, str]] = None) -> Mode:
    """The parameters of quick and full mode, with environment overrides."""
    env = os.environ if env is None else env
    if mode == "quick":
        m = dict(n=20_000, threads=4, reps=3, sizes=(8,), min_seconds=MIN_SECONDS)
    elif mode == "full":
        m = dict(n=1_000_000, threads=4, reps=5, sizes=(8, 0, 64), min_seconds=0.0)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    if env.get("CANAL_CHAN_N"):
        m["n"] = int(env["CANAL_CHAN_N"])
    if env.get("CANAL_CHAN_T"):
        m["threads"] = int(env["CANAL_CHAN_T"])
    if env.get("CANAL_CHAN_REPS"):
        m["reps"] = int(env["CANAL_CHAN_REPS"])
    if env.get("CANAL_CHAN_MIN_SECONDS"):
        m["min_seconds"] = float(env["CANAL_CHAN_MIN_SECONDS"])
    if env.get("CANAL_CHAN_SIZES"):
        m["sizes"] = tuple(int(s) for s in env["CANAL_CHAN_SIZES"].split(","))
    kinds = tuple(KINDS)
    if env.get("CANAL_CHAN_KINDS"):
        kinds = tuple(k for k in env["CANAL_CHAN_KINDS"].split(",") if k)
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown workload kind {k!r}")
    caps = tuple(CAPS)
    if env.get("CANAL_CHAN_CAPS"):
        caps = tuple(c for c in env["CANAL_CHAN_CAPS"].split(",") if c)
    for c in caps:
        if c not in CAPS:
            raise ValueError(f"unknown capacity {c!r}")
    m["caps"] = caps
    m["busy"] = env.get("CANAL_CHAN_BUSY", "") not in ("", "0")
    for s in m["sizes"]:
        if s not in SIZES:
            raise ValueError(f"message size must be one of {SIZES}, not {s}")
    if m["n"] < 2 or m["threads"] < 1 or m["n"] < m["threads"] or m["reps"] < 1:
        raise ValueError("need N >= 2, T >= 1, N >= T and reps >= 1")
    return Mode(kinds=kinds, quick=(mode == "quick"), timeout=cell_timeout(m["n"]), **m)


def cell_timeout(n: int, slowest: Optional[float] = None, hung: bool = False) -> float:
    """Seconds one workload at one capacity may take before the program is
    deemed hung and killed. At most 200 us per message (the slowest cells
    measured on a busy 2-core machine take about 50), at least 5 s. Once
    the same implementation has completed the same cell (in an earlier
    repetition), 10 times its slowest such run, but not under 20 s; if it
    has only ever hung there (`hung`), 20 s. A hang (flume's Selector) then
    costs seconds, not minutes. Other implementations' times say nothing:
    a peer can legitimately be 100 times slower than canal on a cell
    (crossbeam at capacity 0)."""
    return stats.run_timeout(max(5.0, n * 200e-6), slowest, hung)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------

_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s+sec\s*$")
_WORKLOAD = re.compile(r"^(bounded0|bounded1|boundedN|unbounded)_([a-z_]+?)(?:_(\d+)B)?$")


@dataclass(frozen=True)
class Result:
    workload: str
    lang: str
    impl: str
    seconds: float


def parse_line(line: str) -> Optional[Result]:
    """One result line `<workload> <lang> <impl> <seconds> sec`, else None."""
    m = _LINE.match(line.strip())
    if not m:
        return None
    return Result(m.group(1), m.group(2), m.group(3), float(m.group(4)))


def parse_output(text: str) -> List[Result]:
    """Every result line of a program's output (other lines are ignored)."""
    return [r for r in map(parse_line, text.splitlines()) if r is not None]


def split_workload(name: str) -> Tuple[str, str, int]:
    """'bounded1_spsc_64B' -> ('bounded1', 'spsc', 64); size 8 by default.
    Raises ValueError for a name that is not a workload."""
    m = _WORKLOAD.match(name)
    if not m or m.group(2) not in KINDS:
        raise ValueError(f"not a workload name: {name!r}")
    return m.group(1), m.group(2), int(m.group(3)) if m.group(3) else 8


def workload_name(cap: str, kind: str, size: int) -> str:
    return f"{cap}_{kind}" + ("" if size == 8 else f"_{size}B")


def messages(workload: str, n: int, threads: int) -> int:
    """Messages a workload moves (its ns-per-message divisor), as every
    implementation counts them: N for seq and spsc, T * (N / T) with T
    threads, 2 * (N / 2) for ping_pong (N / 2 round trips)."""
    _, kind, _ = split_workload(workload)
    if kind in ("seq", "spsc"):
        return n
    if kind == "ping_pong":
        return n // 2 * 2
    return n // threads * threads


def expected_workloads(impl: Impl, kinds: Iterable[str], size: int) -> List[str]:
    """The workload names an implementation prints for these kinds."""
    out = []
    for kind in kinds:
        for cap in CAPS:
            if (cap not in impl.caps or (kind == "seq" and cap == "bounded0")
                    or (cap, kind) in impl.skips):
                continue
            out.append(workload_name(cap, kind, size))
    return out


def impl_of(result: Result) -> Optional[str]:
    for i in IMPLS:
        if i.lang == result.lang and i.name == result.impl:
            return i.key
    return None


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------

@dataclass
class Row:
    workload: str
    ns: Dict[str, Optional[float]] = field(default_factory=dict)   # median ns/msg
    runs: Dict[str, int] = field(default_factory=dict)
    samples: Dict[str, List[float]] = field(default_factory=dict)  # ns/msg per run
    reps: Dict[str, List[Optional[int]]] = field(default_factory=dict)  # each run's repetition
    ratio: Optional[float] = None       # canal / best peer
    best: Optional[str] = None          # best peer's key
    task_ratio: Optional[float] = None  # canal tasks / Go


def sort_key(workload: str) -> Tuple[int, int, int]:
    cap, kind, size = split_workload(workload)
    return (KINDS.index(kind), SIZES.index(size) if size in SIZES else 99, CAPS.index(cap))


def summarize(runs: Sequence[dict], n: int, threads: int) -> List[Row]:
    """Rows of medians from raw runs (dicts with workload, impl, seconds):
    median seconds -> ns per message; canal / best peer; best peer."""
    by: Dict[Tuple[str, str], List[float]] = {}  # ns per message of each run
    reps: Dict[Tuple[str, str], List[Optional[int]]] = {}
    for r in runs:
        msgs = r.get("messages") or messages(r["workload"], n, threads)
        by.setdefault((r["workload"], r["impl"]), []).append(float(r["seconds"]) * 1e9 / msgs)
        reps.setdefault((r["workload"], r["impl"]), []).append(r.get("rep"))
    rows = []
    for wl in sorted({w for w, _ in by}, key=sort_key):
        row = Row(wl)
        for impl in IMPLS:
            ns = by.get((wl, impl.key))
            if ns:
                row.ns[impl.key] = stats.median(ns)
                row.runs[impl.key] = len(ns)
                row.samples[impl.key] = ns
                row.reps[impl.key] = reps[(wl, impl.key)]
        best = stats.argmin({k: row.ns.get(k) for k in PEERS})
        if best is not None:
            row.best = best
            row.ratio = stats.ratio(row.ns.get("canal"), row.ns[best])
        if row.ns.get("canal_task") is not None and row.ns.get("go") is not None:
            row.task_ratio = stats.ratio(row.ns["canal_task"], row.ns["go"])
        rows.append(row)
    return rows


def cell(row: Row, impl: Impl, status: Dict, reps: Optional[int] = None) -> str:
    """A table cell: the median ns (with `*` when fewer than reps runs
    completed) and the range of the runs ("unstable" when they differ by
    more than 3x), or why there is none."""
    v = row.ns.get(impl.key)
    if v is not None:
        short = reps is not None and row.runs.get(impl.key, 0) < reps
        text = stats.fmt_ns(v) + ("*" if short else "")
        xs = row.samples.get(impl.key, [])
        if len(xs) > 1:
            text += f" ({stats.fmt_ns(min(xs))}-{stats.fmt_ns(max(xs))})"
            if stats.is_unstable(xs):
                text += " unstable"
        return text
    if status.get(impl.key) == "SKIPPED":
        return "SKIPPED"
    cap, kind, _ = split_workload(row.workload)
    if cap not in impl.caps:
        return "—"          # no such channel in this implementation
    if (cap, kind) in impl.skips:
        return "not run"
    return status.get((impl.key, row.workload), status.get(impl.key, "n/a"))


def render_table(rows: Sequence[Row], status: Dict, reps: Optional[int] = None) -> str:
    """The grid: canal (threads) and the peers, canal / best peer, then
    canal tasks and canal tasks / Go (issue 13's target: at or below 1)."""
    header = (["workload"] + [i.label for i in THREAD_IMPLS]
              + ["canal / best peer", "best peer", TASK_IMPL.label, "tasks / Go"])
    label = {i.key: i.label for i in IMPLS}
    body = []
    for row in rows:
        body.append([row.workload] + [cell(row, i, status, reps) for i in THREAD_IMPLS]
                    + [stats.fmt_ratio(row.ratio), label.get(row.best, "—"),
                       cell(row, TASK_IMPL, status, reps), stats.fmt_ratio(row.task_ratio)])
    return report.markdown_table(header, body)


def title(m: Mode) -> str:
    what = "quick run" if m.quick else "full run"
    sizes = ", ".join(f"{s} B" for s in m.sizes)
    sized = (f" or more: one N per cell, its fastest implementation taking at least "
             f"{m.min_seconds:g} s"
             if m.min_seconds > 0 else "")
    busy = ", a busy process beside" if m.busy else ""
    return (f"Channels: canal (threads, tasks) vs Go, crossbeam-channel, flume ({what}: "
            f"N = {m.n:,} messages{sized}, T = {m.threads}, {sizes} messages, "
            f"median of {m.reps} interleaved repetitions{busy})")


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def available(build_dir: str) -> Dict[str, Optional[str]]:
    """impl key -> path of its program, or None when it was not built."""
    out = {}
    for i in IMPLS:
        p = os.path.join(build_dir, i.binary)
        out[i.key] = p if os.access(p, os.X_OK) else None
    return out


def command(impl: Impl, path: str, m: Mode, kind: str, size: int,
            caps: Optional[Sequence[str]] = None, n: Optional[int] = None) -> List[str]:
    """The command running one kind at the given capacities (default: all
    of the implementation's), with n messages (default: the mode's)."""
    caps = impl.caps if caps is None else caps
    n = m.n if n is None else n
    return [path, *impl.args, "-n", str(n), "-t", str(m.threads), "-s", str(size),
            "-w", kind, "-c", ",".join(CAP_FLAGS[c] for c in caps)]


def run_once(cmd: List[str], timeout: float) -> Tuple[List[Result], Optional[str]]:
    """Run one program (runner.run); its results and an error word (None,
    TIMEOUT, FAILED, SKIPPED). A timed-out or failed run still yields the
    lines it printed (collect does not count them: the run failed)."""
    o = runner.run(cmd, timeout)
    if o.status != "ok" and o.status != "timeout":
        report.progress(f"{' '.join(cmd)}: {o.status}: {o.note[:200]}")
    err = {"ok": None, "timeout": "TIMEOUT", "failed": "FAILED", "skipped": "SKIPPED"}[o.status]
    return parse_output(o.stdout), err


CSV_HEADER = ["rep", "workload", "impl", "lang", "name", "seconds", "messages",
              "ns_per_msg", "n", "threads", "size"]


def csv_row(r: dict) -> List[object]:
    return [r["rep"], r["workload"], r["impl"], r["lang"], r["name"], f"{r['seconds']:.6f}",
            r["messages"], f"{r['seconds'] * 1e9 / r['messages']:.2f}",
            r["n"], r["threads"], r["size"]]


def collect(build_dir: str, m: Mode, csv_path: Optional[str] = None
            ) -> Tuple[List[dict], Dict, Optional[int]]:
    """Run everything, interleaved; the raw runs, the status words and
    None when every repetition completed, else the repetition (from 1) an
    interrupt came in: it may have no run recorded yet. Each run is
    appended to csv_path as it completes, so a run cut short (Ctrl-C,
    SIGTERM) keeps its data; an interrupt ends the collection and the runs
    so far are reported."""
    paths = available(build_dir)
    status: Dict = {k: "SKIPPED" for k, p in paths.items() if p is None}
    if paths["canal"] is None:
        raise RuntimeError(f"{IMPLS[0].binary} is not built in {build_dir}")
    runs: List[dict] = []
    slowest: Dict[Tuple[str, int, str, str], float] = {}  # (impl, size, kind, cap) -> s
    hung = set()                                           # keys that timed out
    n_for: Dict[Tuple[int, str, str], int] = {}  # (size, kind, cap) -> the cell's N
    out = open(csv_path, "w", newline="") if csv_path else None
    writer = csv.writer(out) if out else None
    if writer:
        writer.writerow(CSV_HEADER)
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if m.busy else None

    def attempt(impl: Impl, path: str, kind: str, size: int, cap: str, n: int,
                timeout: float) -> Tuple[List[Result], Optional[str]]:
        """One run of one implementation on one cell: its results, error word."""
        res, err = run_once(command(impl, path, m, kind, size, [cap], n), timeout)
        if err == "TIMEOUT":
            hung.add((impl.key, size, kind, cap))
        return [r for r in res if impl_of(r) == impl.key], err

    def record(rep: int, impl: Impl, wls: List[str], key: Tuple[str, int, str, str],
               size: int, n: int, got: List[Result], err: Optional[str]) -> None:
        """Keep the counted run of one implementation (in runs and the CSV).
        A run that timed out or failed (err) is a failure of the cell even
        when it printed its line first (a hang at the end, a crash after
        the timing): its lines are not counted, the status says why."""
        if err is not None:
            got = []
        for r in got:
            run = dict(rep=rep + 1, workload=r.workload, impl=impl.key,
                       lang=r.lang, name=r.impl, seconds=r.seconds,
                       messages=messages(r.workload, n, m.threads),
                       n=n, threads=m.threads, size=size)
            runs.append(run)
            slowest[key] = max(slowest.get(key, 0.0), r.seconds)
            if writer:
                writer.writerow(csv_row(run))
                out.flush()
        if not got:
            for wl in wls:
                status[(impl.key, wl)] = err or "no result"

    current = 1  # the repetition under way (from 1): what an interrupt names
    try:
        for rep in range(m.reps):
            current = rep + 1
            report.progress(f"repetition {rep + 1}/{m.reps}")
            # One program invocation per cell, every implementation in
            # turn: a hang costs one cell, and the interleaving is fine.
            for size, kind, cap in itertools.product(m.sizes, m.kinds, m.caps):
                cell = []  # (impl, path, its workload names, key)
                for impl in IMPLS:
                    wls = [w for w in expected_workloads(impl, [kind], size)
                           if split_workload(w)[0] == cap]
                    if paths[impl.key] is not None and wls:
                        cell.append((impl, paths[impl.key], wls, (impl.key, size, kind, cap)))
                if not cell:
                    continue
                ckey = (size, kind, cap)
                if m.min_seconds <= 0:
                    n_for[ckey] = m.n  # no sizing: every run counts as it ends
                if ckey in n_for:
                    n = n_for[ckey]
                    for impl, path, wls, key in cell:
                        got, err = attempt(impl, path, kind, size, cap, n,
                                           cell_timeout(n, slowest.get(key), key in hung))
                        record(rep, impl, wls, key, size, n, got, err)
                    continue
                # The cell's first repetition: every implementation runs
                # it with the mode's N; sizing by time then sets one N for
                # all of them (common_n). Runs too short to trust are only
                # a calibration: the cell runs again, every implementation
                # with that N.
                tries = [(impl, path, wls, key,
                          *attempt(impl, path, kind, size, cap, m.n,
                                   cell_timeout(m.n, slowest.get(key), key in hung)))
                         for impl, path, wls, key in cell]
                took = {key: max(r.seconds for r in got)
                        for _, _, _, key, got, err in tries if got and err is None}
                n = n_for[ckey] = common_n(m.n, took.values(), m.min_seconds)
                for impl, path, wls, key, got, err in tries:
                    if n != m.n:
                        # A calibration that hung or failed is a failed
                        # run of the cell: the sized run passing after it
                        # does not erase it.
                        if err is not None:
                            for wl in wls:
                                status[(impl.key, wl)] = err
                        # Bounded by what the calibration predicts (a hang
                        # costs seconds, as in later repetitions).
                        t = took.get(key)
                        got, err = attempt(impl, path, kind, size, cap, n,
                                           cell_timeout(n, None if t is None else t * n / m.n,
                                                        t is None and err == "TIMEOUT"))
                    record(rep, impl, wls, key, size, n, got, err)
        return runs, status, None
    except KeyboardInterrupt:
        report.caught_interrupt()  # run.py stops after this family
        report.progress(f"interrupted in repetition {current} of {m.reps}: "
                        f"reporting the {len(runs)} runs completed")
        return runs, status, current
    finally:
        if busy:
            busy.kill()
            busy.wait()
        if out:
            out.close()


def write_plots(rows: Sequence[Row], out_dir: str, m: Mode) -> List[str]:
    """One PNG bar chart per workload kind (log scale ns/message); none
    when matplotlib is missing. Returns the files written."""
    if not report.have_matplotlib():
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for kind in m.kinds:
        krows = [r for r in rows if split_workload(r.workload)[1] == kind]
        if not krows:
            continue
        fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(krows)), 4))
        width = 0.8 / len(IMPLS)
        for j, impl in enumerate(IMPLS):
            xs = [i + (j - (len(IMPLS) - 1) / 2) * width for i in range(len(krows))]
            ys = [r.ns.get(impl.key) or float("nan") for r in krows]
            ax.bar(xs, ys, width, label=impl.label)
        ax.set_xticks(range(len(krows)))
        ax.set_xticklabels([r.workload for r in krows], rotation=20, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("ns per message (median, lower is better)")
        ax.set_title(f"{kind} (N = {m.n:,}, T = {m.threads})")
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = os.path.join(out_dir, f"chan-{kind}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        files.append(path)
    return files


NOTES = """Notes:
- ns per message = seconds / messages of each run, then the median;
  ping_pong counts 2 messages per round trip (N / 2 round trips).
- canal / best peer < 1 means canal is faster than every peer measured.
- canal tasks: the same workloads with canal tasks (canal/task.h, one
  loop per CPU) in place of threads, the main thread's part in the main
  task; timing starts inside it, as Go's starts after its runtime is up.
  tasks / Go < 1: canal's tasks are faster than goroutines on that cell.
- Cells: median (min-max of the repetitions); "unstable" when the
  repetitions differ by more than 3x (blocking cells on a busy machine):
  compare those with care.
- "—": the implementation has no such channel (canal and Go have no
  unbounded channel). SKIPPED: the peer was not built (go or cargo absent).
  TIMEOUT / FAILED: the program hung or failed on that workload in every
  repetition (a run that printed its line, then hung or failed, counts as
  failed); `*`: the median of the repetitions that completed.
- flume's select_both at capacity 0 and 1 is not run: flume's Selector
  hangs there (lost wake-up, flume issues #44 and #135); it also hangs now
  and then at other capacities: a program that outlives its timeout (10x
  its own slowest completed run of the cell, at least 20 s; 20 s where it
  has only ever hung) is killed, and the repetitions that completed make
  the median.
- seq runs chunks of min(capacity, N) sends then receives; it cannot run
  at capacity 0.
"""


def run(build_dir: str, mode: str) -> str:
    m = mode_params(mode)
    out_dir = report.results_dir()
    # SIGTERM (a killed session, `timeout`) ends the run like Ctrl-C does.
    old = signal.signal(signal.SIGTERM, report.on_interrupt)
    try:
        runs, status, interrupted = collect(build_dir, m,
                                            os.path.join(out_dir, "chan-runs.csv"))
    finally:
        signal.signal(signal.SIGTERM, old)
    rows = summarize(runs, m.n, m.threads)
    headlines(rows, status,
              "" if interrupted is None
              else f"interrupted in repetition {interrupted} of {m.reps}")
    table = render_table(rows, status, m.reps)
    md = "\n".join(report.header_lines(title(m))) + "\n"
    if interrupted is not None:
        md += (f"\n**Interrupted during repetition {interrupted} of {m.reps}**: medians of the "
               f"runs completed (`*` marks cells with fewer than {m.reps}).\n\n")
    md += table + "\n" + NOTES
    plots = write_plots(rows, out_dir, m)
    if plots:
        md += "\nPlots: " + ", ".join(os.path.basename(p) for p in plots) + "\n"
    with open(os.path.join(out_dir, "chan.md"), "w") as f:
        f.write(md)
    print(title(m))
    print(table)
    return md


# ---------------------------------------------------------------------------
# Headlines (the summary screen)
# ---------------------------------------------------------------------------

HEADLINE_KINDS = ("spsc", "mpmc", "select_rx", "ping_pong")
HEADLINE_CAPS = ("bounded0", "bounded1", "boundedN")
# Issue 5: at or below the best peer at capacity 1 and N, within 1.2x at 0.
TARGET = {"bounded0": 1.2, "bounded1": 1.0, "boundedN": 1.0}


def matched(row: Row, status: Dict) -> Row:
    """The row on the repetitions that every implementation of it without
    a failed repetition (status) completed: after an interrupt (Ctrl-C,
    SIGTERM) canal may have run a cell of the last repetition and its peer
    not yet; a ratio of their medians would compare 3 runs with 2. The row
    itself when the runs carry no repetition number or already match."""
    keys = [k for k in row.samples if (k, row.workload) not in status]
    if not keys or any(rp is None for k in keys for rp in row.reps.get(k, [None])):
        return row
    common = set.intersection(*(set(row.reps[k]) for k in keys))
    if all(set(row.reps[k]) == common for k in keys):
        return row
    runs = [dict(workload=row.workload, impl=k, seconds=x / 1e9, messages=1, rep=rp)
            for k in row.samples for x, rp in zip(row.samples[k], row.reps[k])
            if k not in keys or rp in common]
    out = summarize(runs, 1, 1)
    return out[0] if out else Row(row.workload)


def headlines(rows: Sequence[Row], status: Optional[Dict] = None,
              interrupted: str = "") -> None:
    """canal against the best peer, 8-byte messages, on HEADLINE_KINDS at
    each capacity that this run measured. A cell canal did not complete in
    every repetition while a peer did (it hung or failed in one or all)
    stays a row, "not measured" with the reason from status (collect's
    words: TIMEOUT, FAILED): a hang must not drop out of the summary's
    count, nor a median of the runs that survived hide it (the seed
    family's rule); a best peer that failed a repetition gives no peer
    figure, with why. Every row is judged on the repetitions that all its
    implementations completed (matched()); interrupted: what every row's
    verdict must say of a run cut short ("interrupted in repetition 2 of 3")."""
    status = status or {}
    label = {i.key: i.label for i in IMPLS}
    full = {r.workload: r for r in rows}
    by = {r.workload: matched(r, status) for r in rows}

    def why(impl: str, wl: str, named: bool = True) -> str:
        """The reason; named: with the implementation's name (the summary
        names the peer already)."""
        runs = by[wl].runs.get(impl, 0) if wl in by else 0
        return ((f"{label[impl]}: " if named else "") + status.get((impl, wl), "no result")
                + (f" in a repetition ({runs} completed)" if runs else ""))

    def failed(impl: Optional[str], wl: str) -> bool:
        """impl had a repetition of wl without a result (status says why)."""
        return impl is not None and (impl, wl) in status

    def vals(impl: Optional[str], r: Row) -> Optional[List[float]]:
        return None if impl is None or failed(impl, r.workload) else r.samples.get(impl)

    for kind in HEADLINE_KINDS:
        for cap in HEADLINE_CAPS:
            wl = workload_name(cap, kind, 8)
            r = by.get(wl)
            if r is None:
                continue
            best = r.best or full[wl].best
            canal = vals("canal", r)
            if not canal and "canal" in full[wl].samples and not failed("canal", wl):
                canal, note = None, "not every implementation ran it before the interrupt"
            elif canal is None:
                note = why("canal", wl)
            elif failed(best, wl):
                note = why(best, wl, named=False)
            elif interrupted:
                note = "no peer ran it before the interrupt"
            else:
                note = "none ran (go, cargo absent?)"
            # Peers that hung or failed here are not compared: named.
            out = [f"{label[p]} {status[(p, wl)]}" for p in PEERS
                   if p != best and failed(p, wl)] + ([interrupted] if interrupted else [])
            report.headline("chan", f"{cap}_{kind}", canal,
                            label.get(best, "peers"), vals(best, r), "ns/msg", TARGET[cap],
                            note=note, caveat=", ".join(out))
    # Tasks against goroutines (issue 13: every cell at or below Go's):
    # the worst cell of the grid measured in every repetition by both,
    # named; and every cell where one of them did not complete a
    # repetition while the other completed it (hung, failed).
    worst = max((r for r in by.values() if r.task_ratio is not None
                 and vals("canal_task", r) and vals("go", r)),
                key=lambda r: r.task_ratio, default=None)
    if worst is not None:
        report.headline("chan", f"tasks: worst cell ({worst.workload})",
                        worst.samples["canal_task"], "Go chan", worst.samples["go"],
                        "ns/msg", 1.0, caveat=interrupted)
    for r in by.values():
        wl = r.workload
        if "go" in r.samples and failed("canal_task", wl):
            report.headline("chan", f"tasks: {wl}", None, "Go chan", vals("go", r),
                            "ns/msg", 1.0, note=why("canal_task", wl), caveat=interrupted)
        elif "canal_task" in r.samples and failed("go", wl):
            report.headline("chan", f"tasks: {wl}", r.samples["canal_task"], "Go chan",
                            None, "ns/msg", 1.0, note=why("go", wl, named=False),
                            caveat=interrupted)

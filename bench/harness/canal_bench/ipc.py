"""The IPC family (issue 6): every Linux IPC method measured the same way.

Each method is a program build/bench/ipc/<method> (sources in bench/ipc/)
that prints the ipc-bench RESULTS block, or one JSON object with --json, or
"SKIPPED (...)" with exit status 77, or "UNSUPPORTED SIZE (...)" with exit
status 78 when the method cannot carry a message of that size.

quick: every method at 64 B and 4 KiB, 10 000 round trips or more (one
       count per table, sized by time: _sweep), two processes, plus the
       canal comparison in threads (canal shared channels do not exist
       yet); a table per size in the ipc-bench seed's layout; one run each.
full:  sizes 1 B .. 1 MiB, round trips and one-way streams; Markdown, CSV,
       and log-log plots of latency and rate against size (if matplotlib).
"""
from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import report, runner, stats

# Table order: kernel byte streams, sockets, shared memory, queues and
# notifications, then canal, then the rest.
METHODS: List[str] = [
    "pipe", "fifo", "unix-stream", "unix-dgram", "unix-seqpacket", "tcp",
    "shm-spin", "shm-futex", "mmap-spin", "eventfd", "posix-mq", "sysv-mq",
    "signal", "canal", "canal-spin", "zeromq", "uintr",
]
# Compared in threads too, while canal has no shared channels.
THREAD_METHODS: List[str] = ["pipe", "shm-spin", "shm-futex", "canal", "canal-spin"]

QUICK_SIZES = [64, 4096]
QUICK_COUNT = 10000
FULL_SIZES = [1 << k for k in range(0, 21, 2)]  # 1 B, 4 B, 16 B, ... 1 MiB

EXIT_SKIPPED = 77
EXIT_SIZE = 78

# RESULTS lines -> keys (units stripped).
_KEYS = {
    "Method": "method",
    "Launch": "launch",
    "Mode": "mode",
    "Message size": "size",
    "Message count": "count",
    "Warm-up count": "warmup",
    "Total duration": "total_ms",
    "Average duration": "avg_us",
    "Minimum duration": "min_us",
    "Maximum duration": "max_us",
    "Standard deviation": "stddev_us",
    "Message rate": "rate_msg_s",
    "p50 duration": "p50_us",
    "p99 duration": "p99_us",
    "p99.9 duration": "p999_us",
    "One-way latency": "one_way_us",
    "Throughput": "mb_s",
}
_TEXT_KEYS = {"method", "launch", "mode"}
_INT_KEYS = {"size", "count", "warmup"}
REQUIRED = ("size", "count", "total_ms", "avg_us", "min_us", "max_us",
            "stddev_us", "rate_msg_s")
_UNITS = {"s": 1e6, "ms": 1e3, "us": 1.0, "µs": 1.0, "ns": 1e-3}  # us per unit


def _number(value: str, key: str) -> float:
    parts = value.split()
    if not parts:
        raise ValueError(f"no value for {key}")
    x = float(parts[0])
    unit = parts[1] if len(parts) > 1 else ""
    # Durations are normalised to the unit of the key (ms or us).
    if key.endswith("_us") and unit in _UNITS:
        x *= _UNITS[unit]
    elif key == "total_ms" and unit in _UNITS:
        x *= _UNITS[unit] / 1e3
    return x


def parse_results(text: str) -> Dict[str, object]:
    """Parse the RESULTS block of a method program. Returns a dict with the
    keys of _KEYS found (numbers as float, counts as int); raises ValueError
    when there is no complete block or a required line is missing."""
    lines = text.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if "RESULTS" in l and l.startswith("="))
    except StopIteration:
        raise ValueError("no RESULTS block") from None
    out: Dict[str, object] = {}
    closed = False
    for line in lines[start + 1:]:
        if line.startswith("====="):
            closed = True
            break
        if ":" not in line:
            continue
        label, value = (s.strip() for s in line.split(":", 1))
        key = _KEYS.get(label)
        if key is None:
            continue  # unknown lines are tolerated
        if key in _TEXT_KEYS:
            out[key] = value
        elif key in _INT_KEYS:
            out[key] = int(value.split()[0])
        else:
            out[key] = _number(value, key)
    if not closed:
        raise ValueError("RESULTS block not terminated")
    missing = [k for k in REQUIRED if k not in out]
    if missing:
        raise ValueError(f"RESULTS block lacks {', '.join(missing)}")
    return out


def parse_json_output(text: str) -> Dict[str, object]:
    """The --json output: the last line that is a JSON object."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            d = json.loads(line)
            missing = [k for k in REQUIRED if k not in d]
            if missing:
                raise ValueError(f"JSON lacks {', '.join(missing)}")
            return d
    raise ValueError("no JSON object in the output")


def parse_refusal(text: str) -> Optional[Tuple[str, str]]:
    """("skipped" | "unsupported", reason) for a SKIPPED / UNSUPPORTED SIZE
    line, else None."""
    for line in text.splitlines():
        line = line.strip()
        for prefix, status in (("SKIPPED", "skipped"), ("UNSUPPORTED SIZE", "unsupported")):
            if line.startswith(prefix):
                rest = line[len(prefix):].strip()
                if rest.startswith("(") and rest.endswith(")"):
                    rest = rest[1:-1]
                return status, rest.lstrip(":").strip()
    return None


@dataclass
class Result:
    method: str
    size: int
    count: int
    launch: str = "processes"     # or "threads"
    mode: str = "pingpong"        # or "stream"
    status: str = "ok"            # runner's (ok, failed, timeout, skipped), or unsupported
    reason: str = ""
    stats: Dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def get(self, key: str) -> Optional[float]:
        v = self.stats.get(key)
        return None if v is None else float(v)


def classify(method: str, size: int, count: int, launch: str, mode: str,
             returncode: int, stdout: str, stderr: str = "") -> Result:
    """Turn one program run into a Result (no I/O: unit-testable)."""
    r = Result(method, size, count, launch, mode)
    refusal = parse_refusal(stdout)
    if returncode == EXIT_SKIPPED:
        r.status, r.reason = "skipped", refusal[1] if refusal else "exit 77"
        return r
    if returncode == EXIT_SIZE:
        r.status, r.reason = "unsupported", refusal[1] if refusal else "size not supported"
        return r
    if returncode != 0:
        r.status = "failed"
        err = (stderr.strip().splitlines() or [""])[-1]
        r.reason = f"exit {returncode}" + (f": {err}" if err else "")
        return r
    try:
        stats = parse_json_output(stdout) if stdout.lstrip().startswith("{") \
            else parse_results(stdout)
    except ValueError as e:
        r.status, r.reason = "failed", f"unparsable output: {e}"
        return r
    if int(stats["count"]) != count or int(stats["size"]) != size:
        r.status = "failed"
        r.reason = (f"asked for {count} x {size} B, got "
                    f"{stats['count']} x {stats['size']} B")
    r.stats = stats
    return r


def binary(build_dir: str, method: str) -> str:
    return os.path.join(build_dir, "bench", "ipc", method)


def default_pin() -> Optional[str]:
    """The two sides on two distinct CPUs (the first two this process may
    use), the same for every method; None on a single CPU."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    return f"{cpus[0]},{cpus[1]}" if len(cpus) >= 2 else None


def count_for_size(size: int, base: int = QUICK_COUNT) -> int:
    """Fewer round trips for big messages (the sweep must stay bounded):
    base up to 4 KiB, then in proportion, at least 200."""
    if size <= 4096:
        return base
    return max(200, min(base, base * 4096 // size))


def command(build_dir: str, method: str, size: int, count: int, *,
            threads: bool = False, mode: str = "pingpong",
            pin: Optional[str] = None, json_out: bool = True) -> List[str]:
    cmd = [binary(build_dir, method), "-c", str(count), "-s", str(size), "--mode", mode]
    if threads:
        cmd.append("--threads")
    if pin:
        cmd += ["--pin", pin]
    if json_out:
        cmd.append("--json")
    return cmd


# A run's most time (run_timeout): per round trip or message, generous on
# a busy 2-CPU machine (zeromq takes about 80 us, pipe 45 us), plus the
# bytes moved both ways at a slow 100 MB/s; at least RUN_FLOOR_S.
RUN_PER_MESSAGE_S = 200e-6
RUN_PER_BYTE_S = 1e-8
RUN_FLOOR_S = 5.0


def run_timeout(size: int, count: int, expected: Optional[float] = None) -> float:
    """Seconds one run of count round trips (or messages) of size bytes may
    take before it is deemed hung: bounded by its count, and once the
    cell's calibration has completed, 10x the time that predicts (at least
    20 s): the chan family's rule, stats.run_timeout. A hang costs seconds,
    not a fixed minute."""
    budget = max(RUN_FLOOR_S, count * (RUN_PER_MESSAGE_S + 2 * size * RUN_PER_BYTE_S))
    return stats.run_timeout(budget, expected)


def run_one(build_dir: str, method: str, size: int, count: int, *,
            threads: bool = False, mode: str = "pingpong",
            pin: Optional[str] = None, timeout: Optional[float] = None) -> Result:
    """One run; timeout defaults to run_timeout(size, count)."""
    if timeout is None:
        timeout = run_timeout(size, count)
    launch = "threads" if threads else "processes"
    path = binary(build_dir, method)
    if not os.path.exists(path):
        r = Result(method, size, count, launch, mode, "skipped")
        r.reason = f"{method} not built (no {os.path.relpath(path, build_dir)})"
        return r
    cmd = command(build_dir, method, size, count, threads=threads, mode=mode, pin=pin)
    o = runner.run(cmd, timeout, skip_codes=(EXIT_SKIPPED, EXIT_SIZE))
    if o.status == "timeout":
        return Result(method, size, count, launch, mode, "timeout",
                      f"timed out after {timeout:.0f} s")
    code = o.exit if o.exit is not None else -(o.signal or 0)
    return classify(method, size, count, launch, mode, code, o.stdout, o.stderr)


# ---------------------------------------------------------------------------
# Tables

def fmt_us(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def fmt_rate(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:.0f}"


def size_label(size: int) -> str:
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size >> 10} KiB"
    return f"{size} B"


SEED_HEADER = ["method", "Average(us)", "min(us)", "max(us)", "rate(msg/s)"]


def seed_rows(results: Iterable[Result]) -> List[List[str]]:
    """Rows of the seed's table (method | average | min | max | rate); a
    method that did not run says why in the average column."""
    rows = []
    for r in results:
        if r.ok:
            rows.append([r.method, fmt_us(r.get("avg_us")), fmt_us(r.get("min_us")),
                         fmt_us(r.get("max_us")), fmt_rate(r.get("rate_msg_s"))])
        else:
            word = {"skipped": "SKIPPED", "unsupported": "N/A (size)",
                    "failed": "FAILED", "timeout": "TIMEOUT"}.get(r.status, r.status)
            rows.append([r.method, word, "", "", ""])
    return rows


def percentile_rows(results: Iterable[Result]) -> List[List[str]]:
    return [[r.method, fmt_us(r.get("p50_us")), fmt_us(r.get("p99_us")),
             fmt_us(r.get("p999_us")), fmt_us(r.get("one_way_us"))]
            for r in results if r.ok]


def notes(results: Iterable[Result]) -> List[str]:
    """One line per method that did not run, with its reason (deduplicated)."""
    seen = set()
    out = []
    for r in results:
        if r.ok:
            continue
        key = (r.method, r.status, r.reason)
        if key in seen:
            continue
        seen.add(key)
        out.append(f"- {r.method} ({r.launch}, {size_label(r.size)}): "
                   f"{r.status}: {r.reason}")
    return out


CSV_HEADER = ["method", "launch", "mode", "size", "count", "status", "reason",
              "total_ms", "avg_us", "min_us", "max_us", "stddev_us", "rate_msg_s",
              "p50_us", "p99_us", "p999_us", "one_way_us", "mb_s"]


def csv_rows(results: Iterable[Result]) -> List[List[object]]:
    rows = []
    for r in results:
        row: List[object] = [r.method, r.launch, r.mode, r.size, r.count, r.status, r.reason]
        for k in CSV_HEADER[7:]:
            v = r.get(k)
            row.append("" if v is None else v)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# The lead's targets

TARGETS = [
    # (label, numerator method, denominator method, metric, bound, kind)
    ("canal-spin round trip <= 2x shm-spin", "canal-spin", "shm-spin", "avg_us", 2.0, "max"),
    ("canal round trip <= 1.2x shm-futex", "canal", "shm-futex", "avg_us", 1.2, "max"),
    ("canal-spin rate >= 20x pipe at 64 B", "canal-spin", "pipe", "rate_msg_s", 20.0, "min"),
]


def _find(results: Sequence[Result], method: str, size: int, launch: str,
          mode: str = "pingpong") -> Optional[Result]:
    for r in results:
        if (r.method, r.size, r.launch, r.mode) == (method, size, launch, mode) and r.ok:
            return r
    return None


def _broken(results: Sequence[Result], method: str, size: int, launch: str,
            mode: str = "pingpong") -> Optional[Result]:
    """The run of method that failed or hung there, if any."""
    for r in results:
        if ((r.method, r.size, r.launch, r.mode) == (method, size, launch, mode)
                and r.status in ("failed", "timeout")):
            return r
    return None


def basis(results: Sequence[Result], num: str, den: str, size: int
          ) -> Tuple[str, Optional[Result], Optional[Result], str]:
    """(launch, numerator's run, denominator's run, why not) of a target:
    processes when both methods ran there, else threads. A method that
    failed or hung at a launch ends the search there (its row is not
    measured, with why): falling back to threads would hide a crash
    between processes behind a thread figure. One skipped or unsupported
    there (not built, no such launch) moves on. No launch with both:
    processes, with why."""
    for launch in ("processes", "threads"):
        bad = [r for r in (_broken(results, num, size, launch),
                           _broken(results, den, size, launch)) if r]
        if bad:
            return launch, None, None, "; ".join(
                f"{r.method} {r.status.upper()} ({r.reason})" for r in bad)
        a, b = _find(results, num, size, launch), _find(results, den, size, launch)
        if a and b:
            return launch, a, b, ""
    why = []
    for m in (num, den):
        if not any(_find(results, m, size, la) for la in ("processes", "threads")):
            r = next((r for r in results if r.method == m and r.size == size), None)
            why.append(f"{m}: {r.status} ({r.reason})" if r else f"{m}: not run")
    return "processes", None, None, "; ".join(why) or "no launch ran both"


def check_targets(results: Sequence[Result], size: int = 64) -> List[List[str]]:
    """[target, ratio, verdict, basis] per target: processes when both
    methods ran there, else threads (said in basis), else n/a (see basis())."""
    rows = []
    for label, num, den, metric, bound, kind in TARGETS:
        ratio = None
        launch, a, b, why = basis(results, num, den, size)
        if a and b and b.get(metric):
            ratio = a.get(metric) / b.get(metric)
        if ratio is None:
            rows.append([label, "n/a", "n/a", f"{launch}: {why}" if why else "n/a"])
            continue
        where = f"{launch}, {size_label(size)}"
        ok = ratio <= bound if kind == "max" else ratio >= bound
        rows.append([label, f"{ratio:.2f}", "PASS" if ok else "FAIL", where])
    return rows


# ---------------------------------------------------------------------------
# Plots (only when matplotlib is importable)

def plot_loglog(path: str, title: str, ylabel: str,
                series: Dict[str, List[Tuple[float, float]]]) -> bool:
    if not report.have_matplotlib():
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 6))
    for name, pts in series.items():
        pts = sorted(p for p in pts if p[1] and p[1] > 0)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    markersize=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def series_by_method(results: Iterable[Result], metric: str, mode: str
                     ) -> Dict[str, List[Tuple[float, float]]]:
    out: Dict[str, List[Tuple[float, float]]] = {}
    for r in results:
        if r.ok and r.mode == mode and r.get(metric) is not None:
            name = r.method if r.launch == "processes" else f"{r.method} (threads)"
            out.setdefault(name, []).append((r.size, r.get(metric)))
    return out


# ---------------------------------------------------------------------------
# The family entry point

MIN_MS = 200.0   # quick runs: the least a run should take ...
MAX_SCALE = 50   # ... with at most this many times the round trips ...
MAX_SLOWEST = 10  # ... and the slowest method of the cell at most this many
                  # times MIN_MS (the cell's count is shared: stats.common_count)


def sized_count(count: int, total_ms: Optional[float], min_ms: float = MIN_MS) -> int:
    """The count for a run whose `count` round trips took total_ms: count
    when long enough, else scaled to take about min_ms (at most MAX_SCALE
    times count)."""
    return stats.scaled_count(count, total_ms or None, min_ms, MAX_SCALE)


def _sweep(build_dir: str, runs: List[Tuple[str, int, int, bool, str]],
           pin: Optional[str], min_ms: float = 0.0) -> List[Result]:
    """Run every (method, size, count, threads, mode), in order. With
    min_ms, each cell (consecutive runs of one size, count, launch and
    mode) is sized by time once for all its methods, as in the chan
    family: every method runs with the count asked (the calibration); the
    cell's count is then scaled so that the fastest takes about min_ms (at
    most MAX_SCALE times), but no further than the slowest taking
    MAX_SLOWEST min_ms (stats.common_count), and every method that
    completed its calibration runs again, counted, with that count: every
    method of a cell does the same work. A method whose calibration failed,
    hung, was skipped or unsupported keeps that result (a crash is not
    run again until it passes); with the count unchanged the calibration
    runs are the counted ones. Each run is bounded by run_timeout: its
    count, then what its calibration predicts."""
    results: List[Result] = []
    for _, cell in itertools.groupby(runs, key=lambda r: r[1:]):
        cell = list(cell)
        tries = [run_one(build_dir, method, size, count, threads=threads, mode=mode, pin=pin)
                 for method, size, count, threads, mode in cell]
        _, size, count, threads, mode = cell[0]
        n = stats.common_count(count, [r.get("total_ms") or 0.0 for r in tries if r.ok],
                               min_ms, MAX_SCALE, MAX_SLOWEST)
        for (method, *_), r in zip(cell, tries):
            if r.ok and n != count:
                # Bounded by what its calibration predicts.
                expected = (r.get("total_ms") or 0.0) / 1e3 * n / count
                r = run_one(build_dir, method, size, n, threads=threads, mode=mode, pin=pin,
                            timeout=run_timeout(size, n, expected))
            results.append(r)
            if r.status in ("failed", "timeout"):
                report.progress(f"{method} {size_label(size)} {mode}"
                                f"{' threads' if threads else ''}: FAILED ({r.reason})")
    return results


def _size_tables(results: List[Result], sizes: Sequence[int], launch: str,
                 mode: str, methods: Sequence[str]) -> List[str]:
    md = []
    for size in sizes:
        sel = [r for m in methods for r in results
               if r.method == m and r.size == size and r.launch == launch and r.mode == mode]
        if not sel:
            continue
        counts = sorted({r.count for r in sel if r.ok})
        each = (f", {' / '.join(str(c) for c in counts)} "
                f"{'round trips' if mode == 'pingpong' else 'messages'} each" if counts else "")
        md += [f"### {size_label(size)}, {launch}, {mode}{each}", "",
               report.markdown_table(SEED_HEADER, seed_rows(sel))]
        pr = percentile_rows(sel)
        if pr:
            md += ["Percentiles (us):", "",
                   report.markdown_table(["method", "p50", "p99", "p99.9", "one-way avg"], pr)]
    return md


def run(build_dir: str, mode: str) -> str:
    if not os.path.isdir(os.path.join(build_dir, "bench", "ipc")):
        msg = f"SKIPPED: no {os.path.join(build_dir, 'bench', 'ipc')} (benchmarks not built)"
        print(msg)
        return msg + "\n"
    pin = default_pin()
    t0 = time.monotonic()
    runs: List[Tuple[str, int, int, bool, str]] = []
    if mode == "quick":
        sizes = QUICK_SIZES
        for size in sizes:
            runs += [(m, size, QUICK_COUNT, False, "pingpong") for m in METHODS]
            runs += [(m, size, QUICK_COUNT, True, "pingpong") for m in THREAD_METHODS]
    else:
        sizes = FULL_SIZES
        for size in sizes:
            n = count_for_size(size)
            for stream_mode in ("pingpong", "stream"):
                runs += [(m, size, n, False, stream_mode) for m in METHODS]
                runs += [(m, size, n, True, stream_mode) for m in THREAD_METHODS]
    report.progress(f"{len(runs)} runs, sides pinned to CPUs {pin or '(not pinned)'}")
    results = _sweep(build_dir, runs, pin, MIN_MS if mode == "quick" else 0.0)
    elapsed = time.monotonic() - t0

    md = report.header_lines("IPC methods (issue 6)")
    counts = (f"{QUICK_COUNT} round trips per size, or more, the same for every method "
              f"of a table: scaled so that the fastest takes about {MIN_MS:.0f} ms, "
              f"at most {MAX_SCALE}x, with the slowest within "
              f"{MAX_SLOWEST * MIN_MS / 1e3:g} s (ipc.csv has every count)"
              if mode == "quick" else
              f"{QUICK_COUNT} round trips or messages per size up to 4 KiB, "
              f"fewer above (ipc.csv has every count)")
    md += [f"{'Quick' if mode == 'quick' else 'Full'} run: {counts}, warm-up "
           f"excluded; two processes unless said; both sides pinned to CPUs "
           f"{pin or '(not pinned)'}; {elapsed:.0f} s. One run per method and "
           f"table (no repetitions): no median, no spread; compare close figures "
           f"with care.", ""]
    md += ["## Round trips (ping-pong), processes", ""]
    md += _size_tables(results, sizes, "processes", "pingpong", METHODS)
    thread_methods = THREAD_METHODS
    md += ["## Round trips (ping-pong), threads", ""]
    md += _size_tables(results, sizes, "threads", "pingpong", thread_methods)
    if mode == "full":
        md += ["## One-way stream, processes", ""]
        md += _size_tables(results, sizes, "processes", "stream", METHODS)
        md += ["## One-way stream, threads", ""]
        md += _size_tables(results, sizes, "threads", "stream", thread_methods)
    headlines(results)
    md += ["## Targets", "",
           report.markdown_table(["target", "ratio", "verdict", "basis"],
                                 check_targets(results)), ""]
    nl = notes(results)
    if nl:
        md += ["## Not measured", ""] + nl + [""]

    out = report.results_dir()
    report.write_csv(os.path.join(out, "ipc.csv"), CSV_HEADER, csv_rows(results))
    if mode == "full":
        plots = [
            ("ipc-latency.png", "Round trip vs size (log-log)", "round trip (us)",
             series_by_method(results, "avg_us", "pingpong")),
            ("ipc-rate.png", "One-way stream rate vs size (log-log)", "messages/s",
             series_by_method(results, "rate_msg_s", "stream")),
        ]
        made = [name for name, title, yl, s in plots
                if plot_loglog(os.path.join(out, name), title, yl, s)]
        md += [f"Plots: {', '.join(made)}" if made else
               "Plots: none (matplotlib not importable).", ""]
    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "ipc.md"), "w") as f:
        f.write(text)

    # The console: the seed's tables and the targets.
    for size in sizes:
        for launch, methods in (("processes", METHODS), ("threads", thread_methods)):
            sel = [r for m in methods for r in results
                   if r.method == m and r.size == size and r.launch == launch
                   and r.mode == "pingpong"]
            if sel:
                print(f"\n{size_label(size)}, {launch}, round trips:")
                print(report.markdown_table(SEED_HEADER, seed_rows(sel)), end="")
    print("\nTargets:")
    print(report.markdown_table(["target", "ratio", "verdict", "basis"],
                                check_targets(results)), end="")
    for line in nl:
        print(line)
    print(f"(ipc: {elapsed:.0f} s; {os.path.join(out, 'ipc.md')})", flush=True)
    return text


def headlines(results: Sequence[Result], size: int = 64) -> None:
    """The lead's targets as summary rows (processes when both methods ran
    there, else threads; one run each, no repetitions); a target
    without figures stays a row, not measured, with why (basis())."""
    for label, num, den, metric, bound, kind in TARGETS:
        launch, a, b, why = basis(results, num, den, size)
        unit = "msg/s" if metric == "rate_msg_s" else "us/round trip"
        what = "rate" if metric == "rate_msg_s" else "round trip"
        report.headline("ipc", f"{num} {what}, {size_label(size)}, {launch}",
                        a.get(metric) if a else None,
                        den, b.get(metric) if b else None, unit, bound,
                        higher_is_better=(kind == "min"), note=why)

"""The message engine (issue 15): OSU-format latency, bandwidth and
bidirectional bandwidth of canal's engine over shm and TCP, beside Open MPI
(MPI_Send/MPI_Recv, shared memory = btl self,vader; TCP = btl self,tcp),
ZeroMQ PAIR (ipc:// and tcp://) and each raw driver alone (the engine's
overhead is canal minus raw). Every program prints the OSU table
(`# Size  Latency (us)` or `# Size  Bandwidth (MB/s)`, one line per size);
the implementations run interleaved, `reps` times each, and the tables give
the median with the spread (min-max) of the runs.

quick: sizes 1 B .. 64 KiB (latency) and .. 1 MiB (bandwidths), 1000 and 10
iterations per size (the UCX rows' latency: OSU's counts, see UCX_ROWS);
full: 1 B .. 4 MiB with the OSU iteration counts.
Environment: CANAL_ENGINE_REPS overrides the number of repetitions.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from . import report, stats

LAUNCH = "bin/canal-launch"
OUT = "bench/engine"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2"]

# Targets of issue 15.
LATENCY_TARGET_MAX_SIZE = 65536      # canal shm <= Open MPI shm up to here
RAW_OVERHEAD_TARGET_US = 0.15        # canal shm - raw shm at 8 B
TCP_FACTOR = 1.2                     # canal tcp <= 1.2 x raw tcp

UCX_FACTOR = 1.1                     # canal ucx <= 1.1 x ucx_perftest (issue 16)
UCX_PERFTEST_LOOP = "canal ucx, perftest loop"  # osu_latency --loop perftest
UCX_PERFTEST_OSU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "engine", "ucx_perftest_osu.py")

_ROW = re.compile(r"^\s*(\d+)\s+([0-9]+(?:\.[0-9]*)?)\s*$")


@dataclass(frozen=True)
class Impl:
    name: str          # column label
    test: str          # latency | bw | bibw
    argv: Tuple[str, ...]  # relative to the build directory where marked
    needs: Tuple[str, ...]  # binaries (relative to build) that must exist


def parse_osu(text: str) -> Dict[int, float]:
    """{size: value} from an OSU table; comment and other lines ignored.
    The table must have its header (`# Size ...`); rows before it are
    ignored too, so a program's chatter cannot pass for results."""
    out: Dict[int, float] = {}
    seen_header = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("# Size"):
            seen_header = True
            continue
        if not seen_header or s.startswith("#"):
            continue
        m = _ROW.match(s)
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return out


def implementations(test: str) -> List[Impl]:
    prog = {"latency": "osu_latency", "bw": "osu_bw", "bibw": "osu_bibw"}[test]
    canal = lambda drv, strat="default": Impl(  # noqa: E731
        f"canal {drv}" + ("" if strat == "default" else f" {strat}"), test,
        ("@" + LAUNCH, "-n", "2", "@" + f"{OUT}/{prog}", "--driver", drv,
         "--strategy", strat),
        (LAUNCH, f"{OUT}/{prog}"))
    mpi = lambda btl, label: Impl(  # noqa: E731
        f"Open MPI {label}", test,
        tuple(MPIRUN) + ("--mca", "btl", btl, "@" + f"{OUT}/mpi_{prog}"),
        (f"{OUT}/mpi_{prog}",))
    out = [canal("shm"), mpi("self,vader", "shm"), canal("tcp"), mpi("self,tcp", "tcp")]
    if test in ("latency", "bw"):
        z = f"zmq_{prog}"
        out += [Impl(f"ZeroMQ {t}", test,
                     ("@" + LAUNCH, "-n", "2", "@" + f"{OUT}/{z}", "--transport", t),
                     (LAUNCH, f"{OUT}/{z}")) for t in ("ipc", "tcp")]
    # Issue 16: the engine over UCX beside raw UCX (ucx_perftest), and
    # TCP over two rails (here both on loopback: the rails' overhead, not
    # a second network's bandwidth).
    out.append(canal("ucx"))
    # ucx_perftest's own ping-pong shape (send started, receive posted at
    # once; osu.c's --loop): the target's comparison with ucx_perftest is
    # made on this row, loop for loop; "canal ucx" (osu_latency's blocking
    # loop) is compared with Open MPI's pml ucx, which runs that loop.
    if test == "latency":
        out.append(Impl(UCX_PERFTEST_LOOP, test,
                        canal("ucx").argv + ("--loop", "perftest"), canal("ucx").needs))
    # The same over the engine's own packets (CANAL_ENGINE_UCX_NATIVE=0):
    # what UCX's matching (the default) gains.
    if test in ("latency", "bw"):
        out.append(Impl("canal ucx packets", test,
                        ("env", "CANAL_ENGINE_UCX_NATIVE=0") + canal("ucx").argv,
                        canal("ucx").needs))
    # Open MPI on its UCX layer (pml ucx; it refuses shm/tcp-only hosts
    # unless told any transport and device will do).
    out.append(Impl("Open MPI ucx", test,
                    tuple(MPIRUN) + ("--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
                                     "--mca", "pml_ucx_devices", "any",
                                     "@" + f"{OUT}/mpi_{prog}"),
                    (f"{OUT}/mpi_{prog}",)))
    if test in ("bw", "bibw"):
        out.append(Impl("canal tcp 2 rails", test,
                        ("env", "CANAL_ENGINE_BIND=127.0.0.1,127.0.0.1")
                        + canal("tcp").argv, canal("tcp").needs))
    if test in ("latency", "bw"):
        out.append(Impl("ucx_perftest", test,
                        (sys.executable, UCX_PERFTEST_OSU, "--test", test), ()))
    if test == "latency":
        out += [Impl(f"raw {d}", test,
                     ("@" + LAUNCH, "-n", "2", "@" + f"{OUT}/raw_latency", "--driver", d),
                     (LAUNCH, f"{OUT}/raw_latency")) for d in ("shm", "tcp")]
    return out


# The rows of issue 16's UCX comparison. In quick mode their latency runs
# keep OSU's iteration counts (10 000 up to 8 KiB, 1 000 above; the full
# mode's): a one-way time of 0.4 us over 1 000 iterations is a 0.8 ms
# measurement, and on this VM the host's placement of the two vCPUs moves
# such a short run by 2x (ucx_perftest alone: 0.09-0.45 us at 1 B between
# runs of the same hour). The runs cost little (under 1 us a message).
UCX_ROWS = ("canal ucx", UCX_PERFTEST_LOOP, "canal ucx packets", "Open MPI ucx",
            "ucx_perftest")


def size_args(test: str, quick: bool, name: str = "") -> List[str]:
    if quick:
        top = 65536 if test == "latency" else 1 << 20
        if test == "latency" and name in UCX_ROWS:
            return ["--max-size", str(top)]
        iters = 1000 if test == "latency" else 10
        return ["--max-size", str(top), "--iterations", str(iters),
                "--warmup", "50" if test == "latency" else "2"]
    return ["--max-size", str(4 << 20)]


# raw_latency clamps --max-size to its driver's packet (64 KiB and a
# header, SHM_MAX_PACKET / TCP_MAX_PACKET): its table stops at 64 KiB.
RAW_MAX_SIZE = 65536


def asked_sizes(test: str, quick: bool, name: str) -> set:
    """The sizes a complete run of name prints: 1 B doubling up to the
    --max-size of size_args (every OSU program here starts at 1 B)."""
    args = size_args(test, quick, name)
    top = int(args[args.index("--max-size") + 1])
    if name.startswith("raw "):
        top = min(top, RAW_MAX_SIZE)
    return {1 << k for k in range(top.bit_length()) if 1 << k <= top}


def command(build_dir: str, impl: Impl, extra: Sequence[str]) -> List[str]:
    """argv with '@'-marked paths made absolute in build_dir."""
    return [os.path.join(build_dir, a[1:]) if a.startswith("@") else a
            for a in impl.argv] + list(extra)


def available(build_dir: str, impl: Impl) -> Optional[str]:
    """None when impl can run, else why not."""
    for rel in impl.needs:
        if not os.access(os.path.join(build_dir, rel), os.X_OK):
            return f"{rel} not built"
    if impl.argv[0] == "mpirun" and not shutil.which("mpirun"):
        return "mpirun not installed"
    if impl.name == "ucx_perftest" and not shutil.which("ucx_perftest"):
        return "ucx_perftest not installed (apt install ucx-utils)"
    return None


@dataclass
class Cell:
    values: List[float]

    @property
    def median(self) -> Optional[float]:
        return stats.median(self.values) if self.values else None

    def fmt(self) -> str:
        if not self.values:
            return "-"
        med = self.median
        if len(self.values) == 1:
            return f"{med:.2f}"
        return f"{med:.2f} [{min(self.values):.2f}-{max(self.values):.2f}]"


def collect(runs: Sequence[Tuple[str, Dict[int, float]]]) -> Dict[str, Dict[int, Cell]]:
    """{impl: {size: Cell}} from (impl, parsed table) pairs."""
    out: Dict[str, Dict[int, Cell]] = {}
    for name, table in runs:
        for size, v in table.items():
            out.setdefault(name, {}).setdefault(size, Cell([])).values.append(v)
    return out


Failed = Dict[str, Tuple[int, int]]  # implementation -> (failed runs, runs)


def complete_runs(runs: Sequence[Tuple[str, Dict[int, float]]], failed: "Failed",
                  skipped: List[str], test: str,
                  asked: Optional[Dict[str, set]] = None) -> List[Tuple[str, Dict[int, float]]]:
    """The runs whose table has every size asked of the implementation
    (asked: {name: sizes}, asked_sizes(); by default every size some run
    of the same implementation printed) and at least one. A run that
    exited 0 but stopped early, or printed no table, is a failed run
    (failed is updated, skipped says which sizes it lacks): kept, its sizes
    would be medians of fewer runs than the others, without a mark; and a
    size that every run missed would be absent, not missing."""
    sizes: Dict[str, set] = {}
    for name, t in runs:
        sizes.setdefault(name, set()).update(t)
        if asked and name in asked:
            sizes[name] |= asked[name]
    out = []
    for name, t in runs:
        lacking = sorted(sizes[name] - set(t))
        if t and not lacking:
            out.append((name, t))
            continue
        bad, total = failed.get(name, (0, 0))
        failed[name] = (bad + 1, total)
        skipped.append(f"{name} ({test}): a run exited 0 but "
                       + (f"sizes missing: {', '.join(map(str, lacking))}" if t
                          else "no OSU table"))
    return out


def size_label(n: int) -> str:
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def table(cells: Dict[str, Dict[int, Cell]], order: Sequence[str],
          failed: Optional[Failed] = None) -> str:
    """Medians [min-max] per size; the column of an implementation with a
    failed run says how many (its medians are of the runs that survived),
    and stays when every run failed."""
    failed = failed or {}
    sizes = sorted({s for c in cells.values() for s in c})
    cols = [n for n in order if n in cells or failed.get(n, (0, 0))[0]]
    rows = [[size_label(s)] + [cells.get(n, {}).get(s, Cell([])).fmt() for n in cols]
            for s in sizes]
    head = [f"{n} (FAILED {failed[n][0]} of {failed[n][1]})"
            if failed.get(n, (0, 0))[0] else n for n in cols]
    return report.markdown_table(["size"] + head, rows)


def checks(lat: Dict[str, Dict[int, Cell]], failed: Optional[Failed] = None) -> List[List[str]]:
    """The latency targets of issue 15 against the medians. failed: as in
    headlines(); a target on an implementation with a failed run is not
    measured, with why (never judged on the runs that survived)."""
    failed = failed or {}

    def med(name: str, size: int) -> Optional[float]:
        c = lat.get(name, {}).get(size)
        return c.median if c and not failed.get(name, (0, 0))[0] else None

    def why(*names: str) -> str:
        return "; ".join(report.failed_runs_note(n, *failed[n])
                         for n in names if failed.get(n, (0, 0))[0])

    rows = []

    def not_measured(name: str, *names: str) -> bool:
        w = why(*names)
        if w and any(lat.get(n) for n in names):
            rows.append([name, w, "not measured"])
        return bool(w)

    def sizes(*names: str) -> List[int]:
        # the sizes of either side: an implementation whose every run
        # failed has none, and its targets are rows (not measured) all the same
        return sorted(set().union(*(lat.get(n, {}) for n in names)))

    for s in sizes("canal shm", "Open MPI shm"):
        if s > LATENCY_TARGET_MAX_SIZE:
            continue
        a, b = med("canal shm", s), med("Open MPI shm", s)
        if not_measured(f"shm latency at {size_label(s)} <= Open MPI shm",
                        "canal shm", "Open MPI shm"):
            continue
        if a is not None and b is not None:
            rows.append([f"shm latency at {size_label(s)} <= Open MPI shm",
                         f"{a:.2f} vs {b:.2f} us", "met" if a <= b else "MISSED"])
    a, b = med("canal shm", 8), med("raw shm", 8)
    if (not not_measured(f"overhead over raw shm at 8 B <= {RAW_OVERHEAD_TARGET_US} us",
                         "canal shm", "raw shm")
            and a is not None and b is not None):
        rows.append([f"overhead over raw shm at 8 B <= {RAW_OVERHEAD_TARGET_US} us",
                     f"{a - b:.2f} us", "met" if a - b <= RAW_OVERHEAD_TARGET_US else "MISSED"])
    for s in sizes("canal tcp", "raw tcp"):
        a, b = med("canal tcp", s), med("raw tcp", s)
        if not_measured(f"tcp latency at {size_label(s)} <= {TCP_FACTOR} x raw tcp",
                        "canal tcp", "raw tcp"):
            continue
        if a is not None and b is not None:
            rows.append([f"tcp latency at {size_label(s)} <= {TCP_FACTOR} x raw tcp",
                         f"{stats.fmt_ratio(stats.ratio(a, b))}",
                         "met" if a <= TCP_FACTOR * b else "MISSED"])
    # Issue 16's target, loop for loop: the engine run with ucx_perftest's
    # ping-pong shape against ucx_perftest; never the osu loop's row in its
    # place (a different loop: "not measured" when the perftest loop's
    # runs all failed). The osu loop's peer is Open MPI's pml ucx (same
    # loop), side by side in the table; the issue sets no target there.
    ucx = UCX_PERFTEST_LOOP
    for s in sorted(set(lat.get(ucx, {})) | set(lat.get("ucx_perftest", {}))):
        a, b = med(ucx, s), med("ucx_perftest", s)
        name = f"{ucx} latency at {size_label(s)} <= {UCX_FACTOR} x ucx_perftest"
        if why(ucx, "ucx_perftest"):
            rows.append([name, why(ucx, "ucx_perftest"), "not measured"])
        elif a is not None and b is not None:
            rows.append([name, f"{stats.fmt_ratio(stats.ratio(a, b))}",
                         "met" if a <= UCX_FACTOR * b else "MISSED"])
        else:
            rows.append([name, "-", "not measured"])
    return rows


def headlines(test: str, cells: Dict[str, Dict[int, Cell]],
              failed: Optional[Dict[str, Tuple[int, int]]] = None) -> None:
    """The summary screen's rows: issue 15's targets. failed: {implementation:
    (runs that failed, runs)}; an implementation with a failed run has no
    figure on the summary (not measured, with why): a median of the runs
    that survived would hide a crash or a hang (the seed family's rule)."""
    failed = failed or {}

    def vals(name: str, size: int):
        if failed.get(name, (0, 0))[0]:
            return None
        c = cells.get(name, {}).get(size)
        return c.values if c else None

    def why(*names: str) -> str:
        return "; ".join(report.failed_runs_note(n, *failed[n])
                         for n in names if failed.get(n, (0, 0))[0])

    if test == "latency":
        for size in (8, 1024, 65536):
            report.headline("engine", f"shm one-way latency, {size_label(size)}",
                            vals("canal shm", size), "Open MPI shm",
                            vals("Open MPI shm", size), "us", 1.0,
                            note=why("canal shm", "Open MPI shm"))
        report.headline("engine", "tcp one-way latency, 8 B", vals("canal tcp", 8),
                        "raw tcp ping-pong", vals("raw tcp", 8), "us", TCP_FACTOR,
                        note=why("canal tcp", "raw tcp"))
    elif test == "bw":
        big = max((s for s in cells.get("canal shm", {})), default=None)
        if big is not None or failed.get("canal shm", (0, 0))[0]:
            report.headline("engine", f"shm bandwidth, {size_label(big)}" if big else
                            "shm bandwidth", vals("canal shm", big), "Open MPI shm",
                            vals("Open MPI shm", big), "MB/s", 1.0,
                            higher_is_better=True, note=why("canal shm", "Open MPI shm"))


_OVERHEAD = re.compile(r"engine ([0-9.]+) ns .*raw ([0-9.]+) ns .*overhead (-?[0-9.]+) ns")


def parse_overhead(text: str) -> Optional[Tuple[float, float, float]]:
    """(engine, raw, overhead) ns per message from engine_overhead."""
    m = _OVERHEAD.search(text)
    return (float(m.group(1)), float(m.group(2)), float(m.group(3))) if m else None


_OVERHEAD_RANGES = re.compile(r"engine [0-9.]+ ns \[([0-9.]+)-([0-9.]+)\]"
                              r".*raw [0-9.]+ ns \[([0-9.]+)-([0-9.]+)\]")


def parse_overhead_ranges(text: str) -> Optional[Tuple[Tuple[float, float], Tuple[float, float]]]:
    """((engine min, max), (raw min, max)) ns over engine_overhead's runs,
    or None when it printed no ranges."""
    m = _OVERHEAD_RANGES.search(text)
    if not m:
        return None
    x = [float(g) for g in m.groups()]
    return (x[0], x[1]), (x[2], x[3])


def overhead_table(build_dir: str, skipped: List[str]) -> List[str]:
    """CPU cost per message of the engine over its raw driver, one thread
    (no scheduling, no cross-core transfer in the figure)."""
    prog = os.path.join(build_dir, OUT, "engine_overhead")
    if not os.access(prog, os.X_OK):
        skipped.append("engine_overhead not built")
        return []
    rows = []
    # ucx: UCX's matching, whose raw round is UCX's tagged send and
    # receive themselves (what the engine's requests add on top of UCX).
    for drv, rounds in (("shm", "50000"), ("tcp", "5000"), ("ucx", "50000")):
        report.progress(f"engine overhead {drv}")
        try:
            p = subprocess.run([prog, "--driver", drv, "--rounds", rounds],
                               capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            skipped.append(f"engine overhead {drv}: timeout")
            continue
        # A run that exits non-zero is no figure, whatever it printed.
        v = parse_overhead(p.stdout) if p.returncode == 0 else None
        if v is None:
            skipped.append(f"engine overhead {drv}: exit {p.returncode}")
            continue
        ranges = parse_overhead_ranges(p.stdout)
        cols = [f"{x:.0f}" + (f" [{r[0]:.0f}-{r[1]:.0f}]" if r else "")
                for x, r in zip(v[:2], ranges or (None, None))]
        verdict = ("met" if v[2] <= RAW_OVERHEAD_TARGET_US * 1000 else "MISSED") if drv == "shm" else ""
        if verdict and ranges and any(stats.is_unstable(r) for r in ranges):
            verdict += " (unstable)"
        name = "ucx (raw: UCP tagged messages)" if drv == "ucx" else drv
        rows.append([name] + cols + [f"{v[2]:.0f}", verdict])
    if not rows:
        return []
    return ["CPU cost per 8-byte message, send and receive in one thread (one process per "
            "driver: the median [min-max] of its 7 runs; overhead = the difference of the "
            "medians; target on shm: overhead <= 150 ns, judged on this one process, "
            "\"unstable\" when its runs differ by more than "
            f"{stats.UNSTABLE_FACTOR:g}x):\n",
            report.markdown_table(["driver", "engine ns", "raw driver ns", "overhead ns", "target"],
                                  rows), ""]


def _spread_cell(values: Sequence[float], runs: int, fmt: str) -> str:
    """median [min-max] of the runs that completed, with how many of the
    runs failed beside it ("FAILED 1 of 3"), or "-" when none ran."""
    if not runs:
        return "-"
    text = (f"{fmt.format(stats.median(values))} [{fmt.format(min(values))}-"
            f"{fmt.format(max(values))}]" if values else "-")
    bad = runs - len(values)
    return text + (f" (FAILED {bad} of {runs})" if bad else "")


def parse_overlap(text: str) -> Dict[int, Tuple[float, float, float]]:
    """{size: (comm us, total us, overlap %)} from bench/engine/overlap."""
    out: Dict[int, Tuple[float, float, float]] = {}
    seen = False
    for line in text.splitlines():
        if line.startswith("# Size"):
            seen = True
            continue
        f = line.split()
        if seen and len(f) == 4:
            try:
                out[int(f[0])] = (float(f[1]), float(f[2]), float(f[3]))
            except ValueError:
                continue
    return out


def overlap_table(build_dir: str, reps: int, skipped: List[str]) -> List[str]:
    """How much of a 1 MiB / 4 MiB transfer the sender's computation hides,
    progress by the caller vs by the progress thread (bench/engine/overlap),
    the computation busy (a core taken) or blocked elsewhere (a core
    free); interleaved runs, medians of the overlap."""
    prog = os.path.join(build_dir, OUT, "overlap")
    launch = os.path.join(build_dir, "bin", "canal-launch")
    if not os.access(prog, os.X_OK) or not os.access(launch, os.X_OK):
        skipped.append("overlap not built")
        return []
    sizes = (1 << 20, 4 << 20)
    got: Dict[Tuple[str, str, str], Dict[int, List[float]]] = {}
    runs: Dict[Tuple[str, str, str], int] = {}  # runs started, failed or not
    for rep in range(reps):
        for drv in ("shm", "tcp"):
            for comp in ("busy", "sleep"):
                for mode in ("caller", "thread"):
                    report.progress(f"overlap {drv} {comp} {mode} run {rep + 1}/{reps}")
                    cmd = [launch, "-n", "2", prog, "--driver", drv, "--compute", comp,
                           "--progress", mode, "--iterations", "20",
                           "--min-size", str(sizes[0]), "--max-size", str(sizes[-1])]
                    key = (drv, comp, mode)
                    runs[key] = runs.get(key, 0) + 1
                    try:
                        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                    except subprocess.TimeoutExpired:
                        skipped.append(f"overlap {drv} {comp} {mode} run {rep + 1}: timeout")
                        continue
                    t = parse_overlap(p.stdout)
                    if p.returncode != 0 or not t:
                        skipped.append(f"overlap {drv} {comp} {mode} run {rep + 1}: "
                                       f"exit {p.returncode}")
                        continue
                    for size, v in t.items():
                        got.setdefault(key, {}).setdefault(size, []).append(v[2])
    rows = []
    for drv in ("shm", "tcp"):
        for comp in ("busy", "sleep"):
            for size in sizes:
                cells = []
                for mode in ("caller", "thread"):
                    v = got.get((drv, comp, mode), {}).get(size, [])
                    cells.append(_spread_cell(v, runs.get((drv, comp, mode), 0), "{:.0f}"))
                rows.append([drv, comp, size_label(size)] + cells)
    return ["Overlap of a transfer with the sender's computation, % (bench/engine/overlap; "
            "median [min-max]; FAILED k of n: the median is of the other runs; "
            "'busy' computes on its core, 'sleep' is blocked elsewhere "
            "and leaves its core free; shm large messages are pulled by the receiver "
            "without the sender):\n",
            report.markdown_table(["driver", "compute", "size", "progress caller",
                                   "progress thread"], rows), ""]


_OPEN = re.compile(r"open_us ([0-9.]+) ring_us ([0-9.]+) segments (\d+)")


def parse_open(text: str) -> Optional[Tuple[float, float, int]]:
    """(open us, first ring exchange us, segments) from bench/engine/open_time."""
    m = _OPEN.search(text)
    return (float(m.group(1)), float(m.group(2)), int(m.group(3))) if m else None


def open_table(build_dir: str, reps: int, skipped: List[str]) -> List[str]:
    """Opening a job of n ranks on shm, gates connected on first use (lazy,
    the default) or all at open (eager), interleaved runs."""
    prog = os.path.join(build_dir, OUT, "open_time")
    launch = os.path.join(build_dir, "bin", "canal-launch")
    if not os.access(prog, os.X_OK) or not os.access(launch, os.X_OK):
        skipped.append("open_time not built")
        return []
    got: Dict[Tuple[int, str], List[Tuple[float, float, int]]] = {}
    runs: Dict[Tuple[int, str], int] = {}  # runs started, failed or not
    for rep in range(reps):
        for n in (8, 16):
            for mode in ("lazy", "eager"):
                report.progress(f"open n={n} {mode} run {rep + 1}/{reps}")
                env = dict(os.environ, CANAL_ENGINE_CONNECT=mode, CANAL_ENGINE_DRIVER="shm")
                runs[(n, mode)] = runs.get((n, mode), 0) + 1
                try:
                    p = subprocess.run([launch, "-n", str(n), prog], capture_output=True,
                                       text=True, timeout=120, env=env)
                except subprocess.TimeoutExpired:
                    skipped.append(f"open_time n={n} {mode} run {rep + 1}: timeout")
                    continue
                v = parse_open(p.stdout)
                if p.returncode != 0 or v is None:
                    skipped.append(f"open_time n={n} {mode} run {rep + 1}: exit {p.returncode}")
                    continue
                got.setdefault((n, mode), []).append(v)
    if not got:
        return []
    rows = []
    for n in (8, 16):
        for mode in ("lazy", "eager"):
            v = got.get((n, mode), [])
            # Every column of a row with a failed run says so: each
            # figure is of the runs that survived.
            bad = runs[(n, mode)] - len(v)
            failed = f" (FAILED {bad} of {runs[(n, mode)]})" if bad else ""
            rows.append([str(n), mode,
                         _spread_cell([x[0] / 1000 for x in v], runs[(n, mode)], "{:.1f}"),
                         (f"{stats.median([x[1] / 1000 for x in v]):.1f}" if v else "-")
                         + failed,
                         (str(max(x[2] for x in v)) if v else "-") + failed])
    return ["Opening a job on shm (bench/engine/open_time: slowest rank's canal_engine_open, "
            "then a first ring exchange; segments = gates with a driver at the end, all ranks; "
            "FAILED k of n: the medians are of the other runs; "
            "more processes than the machine's cores):\n",
            report.markdown_table(["ranks", "connect", "open ms", "first ring ms", "segments"],
                                  rows), ""]


_PAGE = re.compile(r"series of \d+ pages:\s+([0-9.]+) us")
_PAGE_BYTES = re.compile(r"pages of (\d+) B")


def parse_page(text: str) -> Optional[float]:
    """Microseconds per series from `seed_patterns page`, or None."""
    m = _PAGE.search(text)
    return float(m.group(1)) if m else None


def parse_page_bytes(text: str) -> Optional[int]:
    """The page size `seed_patterns page` states in its header, or None."""
    m = _PAGE_BYTES.search(text)
    return int(m.group(1)) if m else None


def gains(cells: Dict[str, Dict[int, "Cell"]], drivers: Sequence[str],
          ns: Sequence[int], failed: Optional[Failed] = None) -> List[List[str]]:
    """Rows [driver, gain at each n of ns]: 1 - aggregate / default of the
    medians ("-" where either is missing); drivers with no pair left out.
    failed: as in table(); a driver whose default or aggregate failed a run
    has no gain ("not measured": the medians would be of the survivors)."""
    failed = failed or {}
    rows = []
    for drv in drivers:
        a, b = cells.get(f"{drv} default", {}), cells.get(f"{drv} aggregate", {})
        broken = any(failed.get(f"{drv} {s}", (0, 0))[0] for s in ("default", "aggregate"))
        row = [("not measured" if broken else
                f"{(1 - b[n].median / a[n].median) * 100:.0f} %") if n in a and n in b else "-"
               for n in ns]
        if any(v != "-" for v in row):
            rows.append([drv] + row)
    return rows


# The pack counts a complete `seed_patterns mux` run prints (its ns[], at
# the default --max-packs of 1000).
MUX_PACKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def parse_mux(text: str) -> Dict[int, float]:
    """{n packs: us} from `seed_patterns mux` (its table header is
    `# Packs  Latency (us)`)."""
    return parse_osu(text.replace("# Packs", "# Size"))


def seed_experiments(build_dir: str, quick: bool, reps: int, timeout: float,
                     out_dir: str, skipped: List[str], raw_rows: List[list]) -> List[str]:
    """The seed's page-request pattern (both modes) and the two multiplexed
    flows of n packs (full only), default strategy against aggregate."""
    prog = f"{OUT}/seed_patterns"
    if not os.access(os.path.join(build_dir, prog), os.X_OK):
        skipped.append(f"seed experiments: {prog} not built")
        return []
    md = ["## The seed's experiments: default strategy against aggregate\n",
          "(ucx: over the engine's packets, CANAL_ENGINE_UCX_NATIVE=0; with UCX's "
          "own matching, the default, no strategy applies.)\n"]
    page: Dict[str, List[float]] = {}
    mux: Dict[str, Dict[int, Cell]] = {}
    # label -> (failed runs, runs), as the OSU tables: a gain is given only
    # from labels whose every run completed (a median of the survivors
    # would hide a crash or a hang); the tables say how many failed.
    page_failed: Failed = {}
    mux_failed: Failed = {}

    def count(failed: Failed, label: str, ok: bool) -> None:
        bad, total = failed.get(label, (0, 0))
        failed[label] = (bad + (not ok), total + 1)

    drivers = ("shm", "tcp", "ucx")
    combos = [(d, s) for d in drivers for s in ("default", "aggregate")]
    page_bytes = None
    for rep in range(reps):
        for drv, strat in combos:
            label = f"{drv} {strat}"
            base = [os.path.join(build_dir, LAUNCH), "-n", "2", os.path.join(build_dir, prog)]
            opts = ["--driver", drv, "--strategy", strat]
            report.progress(f"page requests {label} run {rep + 1}/{reps}")
            # Strategies act on the engine's packets: over UCX, not on
            # UCX's matching (which has no strategy).
            env = dict(os.environ, CANAL_ENGINE_UCX_NATIVE="0") if drv == "ucx" else None
            try:
                p = subprocess.run(base + ["page"] + opts + ["--iterations", "300" if quick else "2000"],
                                   capture_output=True, text=True, timeout=timeout, env=env)
                v = parse_page(p.stdout) if p.returncode == 0 else None
                why = f"exit {p.returncode}"
            except subprocess.TimeoutExpired:
                v, why = None, "timeout"
            count(page_failed, label, v is not None)
            if v is None:
                skipped.append(f"page requests {label} run {rep + 1}: {why}")
                if not quick:
                    count(mux_failed, label, False)
                    skipped.append(f"multiplexed flows {label} run {rep + 1}: not run (the "
                                   "page requests failed: no such driver here?)")
                continue
            page_bytes = parse_page_bytes(p.stdout) or page_bytes
            page.setdefault(label, []).append(v)
            raw_rows.append(["page", label, rep + 1, page_bytes, v])
            if quick:
                continue
            report.progress(f"multiplexed flows {label} run {rep + 1}/{reps}")
            try:
                p = subprocess.run(base + ["mux"] + opts, capture_output=True, text=True,
                                   timeout=timeout, env=env)
                # A run that exits non-zero counts for nothing, whatever
                # lines it printed before.
                t = parse_mux(p.stdout) if p.returncode == 0 else {}
                why = f"exit {p.returncode}"
            except subprocess.TimeoutExpired:
                t, why = {}, "timeout"
            # A run that exited 0 but stopped before some pack counts is a
            # failed run (complete_runs' rule): kept, the gains there would
            # be medians of fewer runs than the others, unmarked.
            lacking = [n for n in MUX_PACKS if n not in t]
            if t and lacking:
                t, why = {}, ("exit 0 but pack counts missing: "
                              + ", ".join(map(str, lacking)))
            elif not t and why == "exit 0":
                why = "exit 0 but no table"
            count(mux_failed, label, bool(t))
            if not t:
                skipped.append(f"multiplexed flows {label} run {rep + 1}: {why}")
                continue
            for n, us in t.items():
                mux.setdefault(label, {}).setdefault(n, Cell([])).values.append(us)
                raw_rows.append(["mux", label, rep + 1, n, us])

    def fmt(label: str) -> str:
        bad, total = page_failed.get(label, (0, 0))
        text = Cell(page.get(label, [])).fmt()
        return text + (f" (FAILED {bad} of {total})" if bad else "")

    rows = []
    for drv in drivers:
        a, b = page.get(f"{drv} default"), page.get(f"{drv} aggregate")
        why = "; ".join(report.failed_runs_note(n, *page_failed[n])
                        for n in (f"{drv} default", f"{drv} aggregate")
                        if page_failed.get(n, (0, 0))[0])
        if (a or b) and why:  # a driver none of whose runs completed: not here
            rows.append([drv, fmt(f"{drv} default"), fmt(f"{drv} aggregate"),
                         f"not measured ({why})"])
        elif a and b:
            gain = 1 - stats.median(b) / stats.median(a)
            rows.append([drv, fmt(f"{drv} default"), fmt(f"{drv} aggregate"),
                         f"{gain * 100:.0f} %"])
    if rows:
        md.append(f"Page requests (3 pages of {page_bytes} B, a rendezvous as in the seed's "
                  "figure 3; seed: 88 -> 61 us, 30 %), us per series:\n")
        md.append(report.markdown_table(["driver", "default", "aggregate", "gain"], rows))
    if mux:
        md.append("\nTwo multiplexed flows of n packs (the seed's figure 6), one-way us:\n")
        md.append(table({k.replace(" ", "/"): v for k, v in mux.items()},
                        [f"{d}/{s}" for d, s in combos],
                        {k.replace(" ", "/"): v for k, v in mux_failed.items()})
                  .replace(" B |", " |")
                  .replace("| size |", "| packs |", 1))
        ns = sorted({n for v in mux.values() for n in v})
        rows = gains(mux, drivers, ns, mux_failed)
        if rows:
            md.append("\nGain of aggregate over default (1 - aggregate / default, medians; "
                      "not measured where a run failed):\n")
            md.append(report.markdown_table(["driver"] + [f"n={n}" for n in ns], rows))
        if report.have_matplotlib():
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots()
            for label, cells in sorted(mux.items()):
                ns = sorted(cells)
                ax.plot(ns, [cells[n].median for n in ns], marker="o", label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("packs per flow (n)")
            ax.set_ylabel("one-way latency (us)")
            ax.set_title("Two multiplexed flows of n packs")
            ax.legend()
            fig.savefig(os.path.join(out_dir, "engine-mux.png"), dpi=100)
            plt.close(fig)
            md.append("\n![multiplexed flows](engine-mux.png)\n")
    md.append("")
    return md


def rails_netns(build_dir: str, skipped: List[str]) -> List[str]:
    """Full mode: bench/engine/rails_netns.sh (two namespaces, tbf-limited
    veth links): one TCP rail against two, equal links and unequal ones."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "engine", "rails_netns.sh")
    md = ["## Two TCP rails against one (network namespaces, tbf-limited links)\n"]
    for label, env in (("two links of 1 Gbit/s", {}),
                       ("1 Gbit/s + 250 Mbit/s", {"RATE2": "250mbit"})):
        report.progress(f"rails {label}")
        try:
            p = subprocess.run(["bash", script, build_dir], capture_output=True, text=True,
                               timeout=900, env={**os.environ, "REPS": "3", **env})
        except subprocess.TimeoutExpired:
            skipped.append(f"rails_netns ({label}): timeout")
            continue
        if p.returncode == 77:
            skipped.append(f"rails_netns: {p.stdout.strip()}")
            return []
        if p.returncode != 0:
            skipped.append(f"rails_netns ({label}): exit {p.returncode}: {p.stderr.strip()[-200:]}")
            continue
        md.append(f"{label}:\n\n```\n{p.stdout.strip()}\n```\n")
    return md


def run(build_dir: str, mode: str) -> str:
    quick = mode == "quick"
    reps = int(os.environ.get("CANAL_ENGINE_REPS", "3" if quick else "5"))
    timeout = 120.0 if quick else 900.0
    out_dir = report.results_dir()
    md = report.header_lines(f"Message engine, OSU format ({mode}, {reps} interleaved runs)")
    md.append("Values: median [min-max] of the runs. Host shared with other jobs: noisy.\n")
    raw_rows = []
    skipped = []
    for test in ("latency", "bw", "bibw"):
        impls = [i for i in implementations(test)]
        runnable = []
        for i in impls:
            why = available(build_dir, i)
            if why:
                skipped.append(f"{i.name} ({test}): {why}")
            else:
                runnable.append(i)
        runs = []
        failed: Dict[str, Tuple[int, int]] = {}  # name -> (failed runs, runs)
        for rep in range(reps):
            for i in runnable:  # interleaved: one run of each, then again
                report.progress(f"{test} {i.name} run {rep + 1}/{reps}")
                cmd = command(build_dir, i, size_args(test, quick, i.name))
                bad, total = failed.get(i.name, (0, 0))
                failed[i.name] = (bad + 1, total + 1)  # until it completes
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
                except subprocess.TimeoutExpired:
                    skipped.append(f"{i.name} ({test}) run {rep + 1}: timeout")
                    continue
                if p.returncode != 0:
                    skipped.append(f"{i.name} ({test}) run {rep + 1}: exit {p.returncode}: "
                                   f"{p.stderr.strip()[-200:]}")
                    continue
                t = parse_osu(p.stdout)
                failed[i.name] = (bad, total + 1)
                runs.append((i.name, t))
                raw_rows += [[test, i.name, rep + 1, s, v] for s, v in sorted(t.items())]
        runs = complete_runs(runs, failed, skipped, test,
                             {i.name: asked_sizes(test, quick, i.name) for i in runnable})
        cells = collect(runs)
        unit = "one-way latency, us" if test == "latency" else "bandwidth, MB/s (10^6 B/s)"
        md.append(f"## osu_{test if test != 'latency' else 'latency'} ({unit})\n")
        md.append(table(cells, [i.name for i in impls], failed))
        if quick and test == "latency":
            md.append("\nIterations: 1 000 a size (50 warm-up), the UCX rows ("
                      + ", ".join(UCX_ROWS) + ") OSU's counts: 10 000 up to 8 KiB, "
                      "1 000 above (100 and 10 warm-up).\n")
        headlines(test, cells, failed)
        if test == "latency":
            rows = checks(cells, failed)
            if rows:
                md.append("\nTargets of issue 15:\n")
                md.append(report.markdown_table(["target", "measured", "verdict"], rows))
        md.append("")
    md += overhead_table(build_dir, skipped)
    md += overlap_table(build_dir, reps, skipped)
    md += open_table(build_dir, reps, skipped)
    md += seed_experiments(build_dir, quick, reps, timeout, out_dir, skipped, raw_rows)
    if not quick:
        md += rails_netns(build_dir, skipped)
    if skipped:
        md.append("Not run or failed:\n")
        md += [f"- {s}" for s in skipped]
        md.append("")
    text = "\n".join(md) + "\n"
    with open(os.path.join(out_dir, "engine.md"), "w") as f:
        f.write(text)
    report.write_csv(os.path.join(out_dir, "engine-runs.csv"),
                     ["test", "implementation", "run", "size", "value"], raw_rows)
    print(text)
    return text

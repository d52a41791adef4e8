"""The seed programs (issue 4): cat, copy and fwd in every variant, timed the
way the seed reports timed them, laid out in the seed reports' tables.

Method: every configuration runs N times (full: 8, quick: 3), the variants
interleaved (run 1 of every variant, then run 2, ...) so that a slow moment
of the machine does not land on one variant only. Each run's real time is
measured around the child, user and sys come from the child's rusage
(os.wait4; it includes the grandchildren of the process variants, which
their parent waits for). A run counts only if it exits with 0 and, for fwd,
prints "End of program"; a failed, killed or timed-out run makes its
configuration "FAILED", never timed. Exit status 77 means SKIPPED (a
binary not built, a variant that cannot run here). Programs are run by
runner.run, as in every family. Configurations whose
estimated memory exceeds MemAvailable (or whose task count exceeds what the
kernel allows) are refused with a message instead of run.

Cells show the median real time with its range over the runs, and the
median sys time, in seconds (user is in the detail table and the CSV); a
cell whose runs differ by more than 3x says "unstable". "factor canal/pipe"
is t(pipe) / t(canal), as in the seed: x30 means canal is 30 times faster,
x(1/3) 3 times slower. The seed's own names for the tables are kept as
references ("the seed's fwd 1000/1000").

fwd-canal-task (issue 13) is fwd with canal tasks in place of threads (one
canal_run, a loop per CPU); it runs beside fwd-go (goroutines) and
fwd-canal (threads) in the thread tables, and alone with fwd-go at
100 000 x 100 000 (full mode), which no thread variant can run.
"""
from __future__ import annotations

import dataclasses
import filecmp
import os
import resource
import tempfile
from typing import Dict, List, Optional, Sequence, Tuple

from . import report, runner, stats

# --------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------

THREAD_VARIANTS = ["canal", "canal-sync", "canal-batch", "canal-onecopy",
                   "canal-select", "canal-task", "pipe", "socket", "go", "floor"]
# Variants whose writers and readers are user-space tasks, not threads:
# the kernel's thread limit does not apply, and 100 000 x 100 000 (issue 13)
# runs for them only.
TASK_VARIANTS = {"go", "canal-task"}
PROC_VARIANTS = ["canal-proc", "pipe-proc", "socket-proc", "floor-proc"]
CANAL_EXTENSIONS = ["canal", "canal-sync", "canal-batch", "canal-onecopy",
                    "canal-select"]
CC_VARIANTS = ["canal", "pipe", "socket", "canal-proc", "pipe-proc", "socket-proc"]

Config = Tuple[int, int]  # (writers, readers)

GROUPS: List[Tuple[str, str, List[Config]]] = [
    ("equal", "as many writers as readers",
     [(1, 1), (10, 10), (100, 100), (1000, 1000), (5000, 5000), (10000, 10000),
      (100000, 100000)]),
    ("writers", "more writers than readers",
     [(10, 1), (100, 1), (1000, 1), (10000, 1)]),
    ("readers", "more readers than writers",
     [(1, 10), (1, 100), (1, 1000), (1, 10000)]),
]
QUICK_THREAD_CONFIGS = {(1, 1), (100, 100), (1000, 1000), (10000, 1), (1, 10000)}
# Configurations only the task variants (TASK_VARIANTS) run: 200 001
# threads or processes are beyond what a machine allows.
TASKS_ONLY_CONFIGS = {(100000, 100000)}
QUICK_PROC_CONFIGS = {(1, 1), (100, 100), (1000, 1000)}

RUNS = {"quick": 3, "full": 8}
TIMEOUT = {"quick": 30.0, "full": 600.0}
# cat/copy input files: (label, bytes)
CC_FILES = {"quick": [("small (64 KiB)", 64 << 10), ("big (16 MiB)", 16 << 20)],
            "full": [("small (64 KiB)", 64 << 10), ("big (256 MiB)", 256 << 20)]}

# Memory estimate per task, deliberately pessimistic (measured here: about
# 10 KiB per 64 KiB-stack thread and 100 KiB per forked process, both
# including the kernel's share).
THREAD_BYTES = 32 << 10
PROC_BYTES = 256 << 10
BASE_BYTES = 64 << 20


def config_label(cfg: Config) -> str:
    return f"{cfg[0]}/{cfg[1]}"


def is_proc(variant: str) -> bool:
    return variant.endswith("-proc")


def variant_runs(variant: str, cfg: Config) -> bool:
    """Whether fwd-<variant> runs configuration cfg (TASKS_ONLY_CONFIGS are
    for the task variants only)."""
    return cfg not in TASKS_ONLY_CONFIGS or variant in TASK_VARIANTS


def configs_for(mode: str, proc: bool) -> List[Config]:
    out = []
    for _, _, cfgs in GROUPS:
        for c in cfgs:
            if mode == "full" or c in (QUICK_PROC_CONFIGS if proc else QUICK_THREAD_CONFIGS):
                out.append(c)
    return out


# --------------------------------------------------------------------------
# Memory refusal
# --------------------------------------------------------------------------

def estimate_memory(variant: str, writers: int, readers: int) -> int:
    """Pessimistic bytes needed by one fwd run: the tasks it creates (writers,
    readers and the forwarder) at the per-thread or per-process estimate."""
    tasks = writers + readers + 1
    per = PROC_BYTES if is_proc(variant) else THREAD_BYTES
    if variant in TASK_VARIANTS:
        # goroutines: an 8 KiB stack each; canal tasks: 64 KiB stacks of
        # which fwd touches one page or two (about 3 KiB per task measured
        # at 100 000 x 100 000)
        per = 8 << 10
    return BASE_BYTES + tasks * per


def refusal_reason(variant: str, writers: int, readers: int,
                   mem_available: Optional[int], task_room: Optional[int]) -> Optional[str]:
    """Why this configuration must not run here, or None. mem_available in
    bytes (None: unknown, not checked); task_room: how many more threads or
    processes the kernel allows (None: unknown)."""
    need = estimate_memory(variant, writers, readers)
    if mem_available is not None and need > mem_available:
        return (f"needs about {need / 2**30:.1f} GiB, only "
                f"{mem_available / 2**30:.1f} GiB available (MemAvailable)")
    tasks = writers + readers + 1
    if variant not in TASK_VARIANTS and task_room is not None and tasks > task_room:
        return f"needs {tasks} tasks, the kernel allows only {task_room} more"
    return None


def mem_available() -> Optional[int]:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def task_room() -> Optional[int]:
    """Threads/processes that can still be created: the smallest of pid_max,
    threads-max and RLIMIT_NPROC, minus the tasks now running."""
    limits = []
    for path in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"):
        try:
            with open(path) as f:
                limits.append(int(f.read()))
        except (OSError, ValueError):
            pass
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    if not limits:
        return None
    try:
        with open("/proc/loadavg") as f:  # "... running/total lastpid"
            running = int(f.read().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        running = 0
    return max(0, min(limits) - running - 256)  # a margin for the rest


# --------------------------------------------------------------------------
# Running one program
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    family: str       # "fwd", "cat", "copy"
    variant: str
    config: str       # "W/R" or a file label
    index: int        # 1-based run number
    status: str       # runner's statuses (ok, failed, timeout, skipped), or refused
    real: Optional[float] = None
    user: Optional[float] = None
    sys: Optional[float] = None
    exit: str = ""    # "0", "77", "signal 9", ...
    note: str = ""


def classify(exit_code: Optional[int], term_signal: Optional[int], timed_out: bool,
             stdout: str, stderr: str, expect_end: bool) -> Tuple[str, str]:
    """(status, note) of a finished run (runner.classify; fwd must print
    "End of program")."""
    return runner.classify(exit_code, term_signal, timed_out, stdout, stderr,
                           "End of program" if expect_end else None)


def run_program(argv: Sequence[str], timeout: float, expect_end: bool,
                stdout_path: Optional[str] = None) -> Tuple[str, str, str, float, float, float]:
    """Run argv once with runner.run; returns (status, note, exit, real,
    user, sys). stdout goes to stdout_path if given (cat)."""
    o = runner.run(argv, timeout, expect_line="End of program" if expect_end else None,
                   stdout_path=stdout_path)
    return o.status, o.note, o.exit_text, o.real, o.user, o.sys


# --------------------------------------------------------------------------
# Summaries and tables
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Summary:
    status: str                 # ok, failed, skipped, refused, missing
    real: Optional[float] = None
    user: Optional[float] = None
    sys: Optional[float] = None
    ok: int = 0
    total: int = 0
    note: str = ""
    reals: Tuple[float, ...] = ()   # real time of every run, for the spread


def summarize(runs: Sequence[Run], planned: Optional[int] = None) -> Summary:
    """Median real/user/sys of a configuration's runs. Any failed run makes
    the whole configuration failed, with no time: a time that hides a crash
    or a hang is worse than no time. planned: the runs the configuration
    was to make (run() stops one after a timeout): a failed configuration
    counts as failed every planned run that did not complete, and one with
    fewer completed runs than planned is failed too."""
    if not runs:
        return Summary("missing")
    failed = [r for r in runs if r.status in ("failed", "timeout")]
    n_ok = sum(1 for r in runs if r.status == "ok")
    total = max(planned or 0, len(runs))
    if failed:
        return Summary("failed", ok=n_ok, total=total, note=failed[0].note)
    for st in ("refused", "skipped"):
        hit = [r for r in runs if r.status == st]
        if hit:
            return Summary(st, total=len(runs), note=hit[0].note)
    if n_ok < total:
        return Summary("failed", ok=n_ok, total=total,
                       note=f"only {n_ok} of {total} runs made")
    ok = [r for r in runs if r.status == "ok"]
    return Summary("ok", real=stats.median(r.real for r in ok),
                   user=stats.median(r.user for r in ok),
                   sys=stats.median(r.sys for r in ok), ok=len(ok), total=len(runs),
                   reals=tuple(r.real for r in ok))


def fmt_factor(r: Optional[float]) -> str:
    """The seed's factor notation: x30 (30 times faster), x(1/3) (3 times
    slower), n/a."""
    if r is None or r <= 0:
        return "n/a"  # a zero time (e.g. 0.000 s sys) has no factor
    if r >= 1:
        return f"x{r:.0f}" if r >= 10 else f"x{r:.1f}"
    inv = 1 / r
    return f"x(1/{inv:.0f})" if inv >= 10 else f"x(1/{inv:.1f})"


def cell(s: Optional[Summary]) -> str:
    """real / sys of a summary, or what happened instead."""
    if s is None or s.status == "missing":
        return "—"
    if s.status == "ok":
        real = (stats.fmt_spread(s.reals, stats.fmt_seconds) if s.reals
                else stats.fmt_seconds(s.real))
        return f"{real} / {stats.fmt_seconds(s.sys)}"
    if s.status == "failed":
        return f"FAILED ({s.total - s.ok}/{s.total})"
    return s.status.upper()


def _time(s: Optional[Summary], field: str) -> Optional[float]:
    if s is None or s.status != "ok":
        return None
    return getattr(s, field)


def factor(num: Optional[Summary], den: Optional[Summary], field: str) -> Optional[float]:
    """t(num) / t(den), e.g. factor(pipe, canal, "real")."""
    return stats.ratio(_time(num, field), _time(den, field))


Key = Tuple[str, str, str]  # (family, variant, config)


def _factor_cell(num: Optional[Summary], den: Optional[Summary], field: str) -> str:
    """fmt_factor of factor(), with " unstable" when the real times of
    either side differ by more than 3x (as the cells above it say): a
    factor of two such medians is no verdict alone."""
    text = fmt_factor(factor(num, den, field))
    if text != "n/a" and any(stats.is_unstable(s.reals) for s in (num, den)):
        text += " unstable"
    return text


def comparison_table(configs: Sequence[str], variants: Sequence[str], family: str,
                     summaries: Dict[Key, Summary],
                     factors: Sequence[Tuple[str, str, str]],
                     first_col: str = "writers/readers") -> str:
    """The seed's comparison layout: one column per configuration, one row
    per variant (cells: real / sys), then "factor" rows: for each
    (label, reference, subject), t(reference) / t(subject) on real, then sys.
    Real times show the median (min-max) of the runs.
    Variants absent from summaries everywhere are left out."""
    header = [first_col] + list(configs)
    rows: List[List[str]] = []
    for v in variants:
        if not any((family, v, c) in summaries for c in configs):
            continue
        rows.append([f"{v} (real / sys)"] + [cell(summaries.get((family, v, c))) for c in configs])
    for label, ref, subj in factors:
        for field, word in (("real", "real"), ("sys", "sys")):
            vals = [_factor_cell(summaries.get((family, ref, c)),
                                 summaries.get((family, subj, c)), field)
                    for c in configs]
            if all(v == "n/a" for v in vals):
                continue
            rows.append([f"factor {label} ({word})"] + vals)
    return report.markdown_table(header, rows)


def extension_table(configs: Sequence[str], variants: Sequence[str], family: str,
                    summaries: Dict[Key, Summary]) -> str:
    """The seed's layout for the extensions: one row per configuration, two
    columns (real, sys) per variant."""
    header = ["writers/readers"]
    for v in variants:
        header += [f"{v} (real)", f"{v} (sys)"]
    rows = []
    for c in configs:
        row = [c]
        for v in variants:
            s = summaries.get((family, v, c))
            if s is not None and s.status == "ok":
                flag = " unstable" if stats.is_unstable(s.reals) else ""
                row += [f"{s.real:.3f}s{flag}", f"**{s.sys:.3f}s**"]
            else:
                row += [cell(s), ""]
        rows.append(row)
    return report.markdown_table(header, rows)


def detail_table(summaries: Dict[Key, Summary]) -> str:
    rows = []
    for (fam, v, c), s in summaries.items():
        rows.append([fam, v, c, s.status,
                     stats.fmt_spread(s.reals, stats.fmt_seconds) if s.reals
                     else stats.fmt_seconds(s.real), stats.fmt_seconds(s.user),
                     stats.fmt_seconds(s.sys), f"{s.ok}/{s.total}", s.note])
    return report.markdown_table(
        ["program", "variant", "config", "status", "real (s)", "user (s)", "sys (s)",
         "runs ok", "note"], rows)


# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Job:
    family: str
    variant: str
    config: str
    argv: List[str]
    expect_end: bool
    stdout_path: Optional[str] = None
    refuse: Optional[str] = None
    writers: int = 0
    readers: int = 0


def _binary(build: str, name: str) -> str:
    return os.path.join(build, "bench", name)


def _make_file(path: str, size: int) -> None:
    """size bytes of varied, not very compressible content."""
    block = bytes((i * 2654435761 >> 13) & 0xFF for i in range(1 << 16))
    with open(path, "wb") as f:
        left = size
        n = 0
        while left > 0:
            chunk = block[n % 256:] + block[:n % 256]
            f.write(chunk[:left])
            left -= min(left, len(chunk))
            n += 1


def _plot(out_dir: str, summaries: Dict[Key, Summary]) -> List[str]:
    """log-log time vs thread count per group and kind; [] without matplotlib."""
    if not report.have_matplotlib():
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    for key, title, cfgs in GROUPS:
        for kind, variants in (("threads", THREAD_VARIANTS), ("proc", PROC_VARIANTS)):
            fig, ax = plt.subplots(figsize=(7, 4.5))
            drawn = 0
            for v in variants:
                xs, ys = [], []
                for w, r in cfgs:
                    s = summaries.get(("fwd", v, config_label((w, r))))
                    if s is not None and s.status == "ok" and s.real:
                        xs.append(r if key == "readers" else w)
                        ys.append(s.real)
                if xs:
                    ax.plot(xs, ys, marker="o", label=v)
                    drawn += 1
            if not drawn:
                plt.close(fig)
                continue
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel({"equal": "writers = readers", "writers": "writers (1 reader)",
                           "readers": "readers (1 writer)"}[key])
            ax.set_ylabel("median real time (s)")
            ax.set_title(f"fwd, {title} ({kind})")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
            path = os.path.join(out_dir, f"seed-fwd-{key}-{kind}.png")
            fig.tight_layout()
            fig.savefig(path, dpi=110)
            plt.close(fig)
            files.append(path)
    return files


def _jobs(build: str, mode: str, work: str) -> Tuple[List[Job], Dict[str, str]]:
    jobs: List[Job] = []
    avail, room = mem_available(), task_room()
    for proc, variants in ((False, THREAD_VARIANTS), (True, PROC_VARIANTS)):
        for cfg in configs_for(mode, proc):
            for v in variants:
                w, r = cfg
                if not variant_runs(v, cfg):
                    continue
                jobs.append(Job("fwd", v, config_label(cfg),
                                [_binary(build, f"fwd-{v}"), str(w), str(r)], True,
                                refuse=refusal_reason(v, w, r, avail, room),
                                writers=w, readers=r))
    files = {}
    for i, (label, size) in enumerate(CC_FILES[mode]):
        path = os.path.join(work, f"input-{i}")
        _make_file(path, size)
        files[label] = path
        for prog in ("cat", "copy"):
            for v in CC_VARIANTS:
                if prog == "cat":
                    argv = [_binary(build, f"cat-{v}"), path]
                    jobs.append(Job(prog, v, label, argv, False, stdout_path=os.devnull))
                else:
                    argv = [_binary(build, f"copy-{v}"), path, os.path.join(work, "copy-out")]
                    jobs.append(Job(prog, v, label, argv, False))
    return jobs, files


def _verify_cc(jobs: Sequence[Job], files: Dict[str, str], work: str, timeout: float) -> Dict[Tuple[str, str, str], str]:
    """One untimed run of every cat/copy job whose output is compared with
    its input. Returns {(family, variant, config): problem} for every job
    whose output was not checked equal: a mismatch, no output, or a
    verification run that failed or timed out (it checked nothing). A
    skipped run (exit 77) is not a problem here: the timed runs skip too."""
    bad = {}
    check = os.path.join(work, "check-out")
    for j in jobs:
        if j.family not in ("cat", "copy") or not os.path.exists(j.argv[0]):
            continue
        if os.path.exists(check):
            os.unlink(check)
        argv = list(j.argv)
        if j.family == "copy":
            argv[-1] = check
            st, note, *_ = run_program(argv, timeout, False)
        else:
            st, note, *_ = run_program(argv, timeout, False, stdout_path=check)
        key = (j.family, j.variant, j.config)
        if st in ("failed", "timeout"):
            bad[key] = f"verification run {st}" + (f": {note}" if note else "")
        elif st == "ok" and not os.path.exists(check):
            bad[key] = "output not checked: no output file"
        elif st == "ok" and not filecmp.cmp(files[j.config], check, shallow=False):
            bad[key] = "output differs from input"
        if os.path.exists(check):
            os.unlink(check)
    return bad


def run(build_dir: str, mode: str) -> str:
    """Run the seed benchmarks, write seed.md, seed-runs.csv and the plots
    into report.results_dir(), report the headlines, print the tables,
    return the Markdown."""
    if mode not in RUNS:
        raise ValueError(f"mode {mode!r}: quick or full")
    out_dir = report.results_dir()
    n_runs = RUNS[mode]
    timeout = TIMEOUT[mode]
    runs: List[Run] = []
    with tempfile.TemporaryDirectory(prefix="canal-seed-") as work:
        jobs, files = _jobs(build_dir, mode, work)
        bad_output = _verify_cc(jobs, files, work, timeout)
        dead: Dict[Tuple[str, str, str], str] = {}  # stop re-running these
        for j in jobs:
            key = (j.family, j.variant, j.config)
            if j.refuse:
                dead[key] = "refused"
                runs.append(Run(j.family, j.variant, j.config, 0, "refused", note=j.refuse))
                report.progress(f"refused fwd-{j.variant} {j.config}: {j.refuse}")
            elif not os.path.exists(j.argv[0]):
                dead[key] = "skipped"
                runs.append(Run(j.family, j.variant, j.config, 0, "skipped",
                                note=f"{os.path.basename(j.argv[0])} not built"))
            elif key in bad_output:
                dead[key] = "failed"
                runs.append(Run(j.family, j.variant, j.config, 0, "failed", note=bad_output[key]))
        live = [j for j in jobs if (j.family, j.variant, j.config) not in dead]
        total = len(live) * n_runs
        done = 0
        skipped_variants: Dict[Tuple[str, str], str] = {}
        for i in range(1, n_runs + 1):
            for j in live:  # interleaved: run i of every job, then run i+1
                key = (j.family, j.variant, j.config)
                done += 1
                if key in dead or (j.family, j.variant) in skipped_variants:
                    continue
                name = os.path.basename(j.argv[0])
                if j.family == "copy" and os.path.exists(j.argv[-1]):
                    # Untimed: otherwise the next copy pays for truncating
                    # the previous run's output (16 MiB after a big file).
                    os.unlink(j.argv[-1])
                st, note, ex, real, user, sys_t = run_program(j.argv, timeout, j.expect_end,
                                                              j.stdout_path)
                runs.append(Run(j.family, j.variant, j.config, i, st, real, user, sys_t, ex, note))
                left = total - done
                if st == "ok":
                    report.progress(f"[{done}/{total}, {left} left] {name} {j.config} "
                                    f"run {i}/{n_runs}: {real:.3f}s real, {sys_t:.3f}s sys")
                else:
                    report.progress(f"[{done}/{total}, {left} left] {name} {j.config} "
                                    f"run {i}/{n_runs}: {st.upper()} {note}")
                if st == "skipped":
                    skipped_variants[(j.family, j.variant)] = note
                elif st == "timeout":  # runner.run's status for a run it killed
                    dead[key] = "failed"  # do not spend another timeout on it
        # Runs of skipped variants that did not happen count as skipped.
        for j in live:
            if (j.family, j.variant) in skipped_variants and not any(
                    r.family == j.family and r.variant == j.variant and r.config == j.config
                    for r in runs):
                runs.append(Run(j.family, j.variant, j.config, 0, "skipped",
                                note=skipped_variants[(j.family, j.variant)]))

    md = build_report(runs, mode, n_runs, list(files))
    report.write_csv(os.path.join(out_dir, "seed-runs.csv"),
                     [f.name for f in dataclasses.fields(Run)],
                     [dataclasses.astuple(r) for r in runs])
    summaries = group_runs(runs, n_runs)
    plots = _plot(out_dir, summaries)
    if plots:
        md += "\nPlots: " + ", ".join(os.path.basename(p) for p in plots) + "\n"
    headlines(summaries)
    path = os.path.join(out_dir, "seed.md")
    with open(path, "w") as f:
        f.write(md + "\n")
    print(md)
    print(f"seed: tables in {path}, raw runs in seed-runs.csv"
          + ("" if plots else " (no plots: matplotlib not available)"))
    return md


def group_runs(runs: Sequence[Run], planned: Optional[int] = None) -> Dict[Key, Summary]:
    """summarize() of each configuration's runs; planned: the runs each
    configuration was to make (summarize)."""
    by: Dict[Key, List[Run]] = {}
    for r in runs:
        by.setdefault((r.family, r.variant, r.config), []).append(r)
    return {k: summarize(v, planned) for k, v in by.items()}


def build_report(runs: Sequence[Run], mode: str, n_runs: int, file_labels: Sequence[str]) -> str:
    """The Markdown of the seed family from raw runs (pure: no I/O)."""
    s = group_runs(runs, n_runs)
    out = [f"# The seed programs (cat, copy, fwd), {mode} run", "",
           f"{n_runs} interleaved runs of each configuration; cells: median real time "
           "(min-max of the runs; \"unstable\" when they differ by more than 3x) / median "
           "system time, in seconds (user time: detail table and CSV). \"factor A/B\" = "
           "t(B) / t(A): x30 = A is 30 times faster, x(1/3) = 3 times slower (\"unstable\" "
           "when either side's runs are). "
           "writers/readers = W/R, fwd's arguments (the seed's \"Écrivains/Lecteurs\"). "
           "FAILED: at least one run failed, was killed or timed out (never timed); "
           "SKIPPED: variant not available here; REFUSED: estimated memory > MemAvailable.",
           ""]
    thread_factors = [("canal/pipe", "pipe", "canal"), ("canal/Go", "go", "canal"),
                      ("canal-task/Go", "go", "canal-task")]
    proc_factors = [("canal/pipe", "pipe-proc", "canal-proc")]
    present = {k[2] for k in s if k[0] == "fwd"}
    for key, title, cfgs in GROUPS:
        labels = [config_label(c) for c in cfgs if config_label(c) in present]
        if not labels:
            continue
        out += [f"## fwd, {title} (threads)", "",
                comparison_table(labels, THREAD_VARIANTS, "fwd", s, thread_factors)]
        plabels = [c for c in labels if any(("fwd", v, c) in s for v in PROC_VARIANTS)]
        if plabels:
            out += [f"## fwd, {title} (processes)", "",
                    comparison_table(plabels, PROC_VARIANTS, "fwd", s, proc_factors)]
    all_labels = [config_label(c) for _, _, cfgs in GROUPS for c in cfgs
                  if config_label(c) in present]
    if all_labels:
        out += ["## fwd, the channel variants (threads)", "",
                extension_table(all_labels, CANAL_EXTENSIONS, "fwd", s)]
    for prog in ("cat", "copy"):
        if any(k[0] == prog for k in s):
            out += [f"## {prog} (threads and processes)", "",
                    comparison_table(list(file_labels), CC_VARIANTS, prog, s,
                                     [("canal/pipe", "pipe", "canal"),
                                      ("canal/socket", "socket", "canal"),
                                      ("canal/pipe (proc)", "pipe-proc", "canal-proc")],
                                     first_col="file")]
    out += ["## Detail (medians)", "", detail_table(s)]
    return "\n".join(out)


# --------------------------------------------------------------------------
# Headlines (the summary screen)
# --------------------------------------------------------------------------

# (workload label, family, config, canal variant, peers, target on t(canal) / t(peer))
HEADLINES = [
    ("fwd 1/1, threads", "fwd", "1/1", "canal", ["pipe", "socket", "go"], 1.0),
    ("fwd 100/100, threads", "fwd", "100/100", "canal", ["pipe", "socket", "go"], 1.0),
    ("fwd 1000/1000, threads", "fwd", "1000/1000", "canal", ["pipe", "socket", "go"], 1.0),
    ("fwd 10000/1, threads", "fwd", "10000/1", "canal", ["pipe", "socket", "go"], 1.0),
    ("fwd 1/10000, threads", "fwd", "1/10000", "canal", ["pipe", "socket", "go"], 1.0),
    ("fwd 1000/1000 vs the floor", "fwd", "1000/1000", "canal", ["floor"], 1.3),
    ("fwd 1000/1000, tasks vs goroutines", "fwd", "1000/1000", "canal-task", ["go"], 1.0),
    ("fwd 100/100, processes", "fwd", "100/100", "canal-proc",
     ["pipe-proc", "socket-proc"], 1.0),
    # issue 11: faster than pipes between processes at 100/100 and 1000/1000
    ("fwd 1000/1000, processes", "fwd", "1000/1000", "canal-proc",
     ["pipe-proc", "socket-proc"], 1.0),
]


def headlines(summaries: Dict[Key, Summary]) -> None:
    """canal against the fastest peer (median real time) on the headline
    configurations of issue 4 (fwd-canal at least as fast as pipes, within
    1.3x of the thread floor; cat and copy not slower than pipes), for the
    configurations this run measured."""
    rows = list(HEADLINES)
    for prog in ("cat", "copy"):
        big = sorted({k[2] for k in summaries if k[0] == prog and k[2].startswith("big")})
        for cfg in big:
            rows.append((f"{prog} {cfg.split('(')[-1].rstrip(')')} file, threads", prog, cfg,
                         "canal", ["pipe", "socket"], 1.0))
    for label, fam, cfg, subject, peers, target in rows:
        c = summaries.get((fam, subject, cfg))
        if c is None:
            continue  # not in this run's matrix
        done = {p: summaries[(fam, p, cfg)] for p in peers
                if (fam, p, cfg) in summaries and summaries[(fam, p, cfg)].status == "ok"}
        best = stats.argmin({p: s.real for p, s in done.items()})
        name = {"go": "Go", "floor": "thread floor"}.get(best or "", best)
        # A peer that failed cannot be compared, and must not vanish: the
        # verdict names it (it may have been the fastest).
        failed = [p for p in peers if (fam, p, cfg) in summaries
                  and summaries[(fam, p, cfg)].status == "failed"]

        def why(variant: str, s: Summary, note: str = "") -> str:
            # every family's words for a failed cell (report.failed_runs_note)
            return report.failed_runs_note(variant, s.total - s.ok, s.total, note)

        report.headline("seed", label, c.reals if c.status == "ok" else None, name or peers[0],
                        done[best].reals if best else None, "s", target,
                        note=(why(f"{fam}-{subject}", c, c.note) if c.status == "failed"
                              else (c.note or c.status) if c.status != "ok"
                              else "FAILED" if failed and not best else "no peer ran"),
                        caveat=", ".join(why(p, summaries[(fam, p, cfg)]) for p in failed))

"""Unit tests of the seed family's harness (canal_bench.seed): statistics,
run classification, failed-run handling, table layout, memory refusal.
Pure: no binary is needed, except the last test, which runs tiny shell
commands through run_program."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import seed  # noqa: E402
from canal_bench.seed import Run  # noqa: E402


def ok(variant, config, real, sys_t=0.0, user=0.0, family="fwd", i=1):
    return Run(family, variant, config, i, "ok", real, user, sys_t, "0")


# ------------------------------------------------------------------ median

def test_summary_is_the_median_of_each_time():
    runs = [ok("canal", "1/1", r, s, u, i=i) for i, (r, s, u) in
            enumerate([(3.0, 0.3, 1.0), (1.0, 0.1, 9.0), (2.0, 0.9, 5.0)], 1)]
    s = seed.summarize(runs)
    assert s.status == "ok"
    assert (s.real, s.sys, s.user) == (2.0, 0.3, 5.0)
    assert (s.ok, s.total) == (3, 3)


def test_summary_median_of_even_count_is_the_middle_mean():
    s = seed.summarize([ok("pipe", "1/1", x) for x in (4.0, 1.0, 2.0, 3.0)])
    assert s.real == pytest.approx(2.5)


# ------------------------------------------------------------------ failures

def test_one_failed_run_fails_the_configuration_without_a_time():
    runs = [ok("canal", "1/1", 0.1), ok("canal", "1/1", 0.2),
            Run("fwd", "canal", "1/1", 3, "failed", 0.05, 0, 0, "signal 9", "killed by signal 9")]
    s = seed.summarize(runs)
    assert s.status == "failed"
    assert s.real is None and s.sys is None and s.user is None
    assert seed.cell(s) == "FAILED (1/3)"
    assert "signal 9" in s.note


def test_skipped_and_refused_have_no_time():
    sk = seed.summarize([Run("fwd", "canal-proc", "1/1", 1, "skipped", note="no shared")])
    assert sk.status == "skipped" and sk.real is None and seed.cell(sk) == "SKIPPED"
    rf = seed.summarize([Run("fwd", "pipe-proc", "1/1", 0, "refused", note="memory")])
    assert seed.cell(rf) == "REFUSED"
    assert seed.summarize([]).status == "missing"


@pytest.mark.parametrize("args,expected", [
    # (exit, signal, timed_out, stdout, stderr, expect_end)
    ((0, None, False, "Working...\nEnd of program\n", "", True), "ok"),
    ((0, None, False, "Working...\n", "", True), "failed"),          # no end line
    ((0, None, False, "Working...\nEnd of programme\n", "", True), "failed"),
    ((0, None, False, "", "", False), "ok"),                          # cat/copy
    ((1, None, False, "Working...\nEnd of program\n", "boom", True), "failed"),
    ((None, 9, False, "Working...\n", "", True), "failed"),
    ((None, 9, True, "Working...\n", "", True), "timeout"),
    ((77, None, False, "SKIPPED: no shared channels\n", "", True), "skipped"),
])
def test_classify(args, expected):
    status, note = seed.classify(*args)
    assert status == expected
    if expected == "skipped":
        assert note == "no shared channels"
    if args[2]:
        assert "timeout" in note
    if args[0] == 1:
        assert note == "exit status 1: boom"


# ------------------------------------------------------------------ factors

@pytest.mark.parametrize("r,text", [(30.4, "x30"), (2.0, "x2.0"), (1 / 3, "x(1/3.0)"),
                                    (0.05, "x(1/20)"), (None, "n/a"), (0.0, "n/a")])
def test_fmt_factor(r, text):
    assert seed.fmt_factor(r) == text


def test_factor_is_reference_over_subject_and_absent_when_failed():
    canal = seed.summarize([ok("canal", "1/1", 0.5, 0.25)])
    pipe = seed.summarize([ok("pipe", "1/1", 5.0, 1.0)])
    assert seed.factor(pipe, canal, "real") == pytest.approx(10.0)
    assert seed.factor(pipe, canal, "sys") == pytest.approx(4.0)
    failed = seed.summarize([Run("fwd", "pipe", "1/1", 1, "failed", note="x")])
    assert seed.factor(failed, canal, "real") is None


# ------------------------------------------------------------------ tables

def test_comparison_table_layout():
    runs = [ok("canal", "1/1", 0.01, 0.02), ok("canal", "10/10", 0.2, 0.4),
            ok("pipe", "1/1", 0.02, 0.04), ok("pipe", "10/10", 0.2, 0.4),
            ok("go", "1/1", 0.005, 0.001),
            Run("fwd", "go", "10/10", 1, "failed", note="killed")]
    s = seed.group_runs(runs)
    md = seed.comparison_table(["1/1", "10/10"], ["canal", "pipe", "socket", "go"], "fwd", s,
                               [("canal/pipe", "pipe", "canal"), ("canal/Go", "go", "canal")])
    lines = md.strip().splitlines()
    assert lines[0] == "| writers/readers | 1/1 | 10/10 |"
    assert lines[1] == "|---|---|---|"
    assert lines[2] == "| canal (real / sys) | 0.010 / 0.020 | 0.200 / 0.400 |"
    assert lines[3] == "| pipe (real / sys) | 0.020 / 0.040 | 0.200 / 0.400 |"
    assert lines[4] == "| go (real / sys) | 0.005 / 0.001 | FAILED (1/1) |"
    assert not any("socket" in ln for ln in lines)  # never run: no row
    assert lines[5] == "| factor canal/pipe (real) | x2.0 | x1.0 |"
    assert lines[6] == "| factor canal/pipe (sys) | x2.0 | x1.0 |"
    assert lines[7] == "| factor canal/Go (real) | x(1/2.0) | n/a |"
    assert lines[8] == "| factor canal/Go (sys) | x(1/20) | n/a |"
    assert len(lines) == 9
    # every row has as many cells as the header
    assert {ln.count("|") for ln in lines} == {4}


def test_extension_table_layout():
    s = seed.group_runs([ok("canal", "1/1", 0.015, 0.012), ok("canal-sync", "1/1", 1.1, 0.94)])
    md = seed.extension_table(["1/1"], ["canal", "canal-sync"], "fwd", s)
    lines = md.strip().splitlines()
    assert lines[0] == ("| writers/readers | canal (real) | canal (sys) | "
                        "canal-sync (real) | canal-sync (sys) |")
    assert lines[2] == "| 1/1 | 0.015s | **0.012s** | 1.100s | **0.940s** |"


def test_build_report_has_a_section_per_group_and_the_floor():
    runs = [ok(v, c, 0.1, 0.05, i=i) for v in ("canal", "pipe", "go", "floor")
            for c in ("1/1", "1000/1000", "10000/1", "1/10000") for i in (1, 2, 3)]
    runs.append(Run("fwd", "canal-proc", "1/1", 1, "skipped", note="unsupported"))
    runs += [ok(v, "small", t, family="cat", i=i)
             for v, t in (("canal", 0.01), ("pipe", 0.02)) for i in (1, 2, 3)]
    md = seed.build_report(runs, "quick", 3, ["small"])
    for title in ("as many writers as readers (threads)",
                  "more writers than readers (threads)",
                  "more readers than writers (threads)",
                  "as many writers as readers (processes)",
                  "## cat", "floor (real / sys)", "SKIPPED", "factor canal/Go (real)"):
        assert title in md, title
    assert "## copy" not in md
    # configurations in the seed's order within a group
    eq = md.split("as many writers as readers (threads)")[1]
    assert eq.index("1/1") < eq.index("1000/1000")


def test_quick_matrix_is_a_subset_of_full():
    quick, full = seed.configs_for("quick", False), seed.configs_for("full", False)
    assert set(quick) < set(full)
    assert (10000, 10000) in full and (10000, 10000) not in quick
    assert set(seed.configs_for("quick", True)) <= set(quick)
    assert len(full) == 15  # the seed's 14 and issue 13's 100 000 x 100 000


def test_100k_by_100k_runs_only_tasks_and_goroutines():
    big = (100000, 100000)
    assert big in seed.configs_for("full", False)
    assert big not in seed.configs_for("quick", False)
    assert seed.variant_runs("canal-task", big) and seed.variant_runs("go", big)
    for v in ("canal", "pipe", "floor", "canal-proc", "pipe-proc"):
        assert not seed.variant_runs(v, big)
    assert seed.variant_runs("canal", (10000, 10000))
    # tasks are not threads: the kernel's thread limit does not refuse them
    assert seed.refusal_reason("canal-task", 100000, 100000, 64 << 30, 15000) is None
    assert seed.refusal_reason("canal", 10000, 10000, 64 << 30, 15000) is not None


# ------------------------------------------------------------------ memory

def test_memory_estimate_grows_with_tasks_and_processes_cost_more():
    t = seed.estimate_memory("canal", 10000, 10000)
    p = seed.estimate_memory("pipe-proc", 10000, 10000)
    assert seed.estimate_memory("canal", 1, 1) < t < p
    assert p >= 20001 * seed.PROC_BYTES


def test_refusal_on_memory():
    gib = 1 << 30
    assert seed.refusal_reason("pipe-proc", 10000, 10000, 64 * gib, 100000) is None
    why = seed.refusal_reason("pipe-proc", 10000, 10000, 1 * gib, 100000)
    assert why is not None and "MemAvailable" in why
    # threads need far less: the same memory is enough for them
    assert seed.refusal_reason("canal", 10000, 10000, 1 * gib, 100000) is None
    # unknown memory: not refused on memory
    assert seed.refusal_reason("pipe-proc", 10000, 10000, None, None) is None


def test_refusal_on_task_limit():
    gib = 1 << 30
    why = seed.refusal_reason("canal", 10000, 10000, 64 * gib, 15000)
    assert why is not None and "20001 tasks" in why
    assert seed.refusal_reason("canal", 5000, 5000, 64 * gib, 15000) is None
    assert seed.refusal_reason("go", 10000, 10000, 64 * gib, 15000) is None  # goroutines


# ------------------------------------------------------------------ running

def test_run_program_times_and_classifies_real_processes(tmp_path):
    st, note, ex, real, user, sys_t = seed.run_program(
        ["sh", "-c", "echo Working...; echo End of program"], 10, True)
    assert (st, ex) == ("ok", "0") and real >= 0 and user >= 0 and sys_t >= 0
    st, note, ex, *_ = seed.run_program(["sh", "-c", "echo SKIPPED: nope; exit 77"], 10, True)
    assert (st, note, ex) == ("skipped", "nope", "77")
    st, note, ex, *_ = seed.run_program(["sh", "-c", "kill -9 $$"], 10, True)
    assert st == "failed" and ex == "signal 9"
    st, note, ex, real, *_ = seed.run_program(["sleep", "5"], 0.3, True)
    assert st == "timeout" and "timeout" in note and real < 4


# ------------------------------------------------------------------ spread and headlines

def test_cells_show_the_spread_and_flag_unstable_runs():
    s = seed.summarize([ok("canal", "1/1", x, 0.01) for x in (0.01, 0.02, 0.5)])
    assert seed.cell(s) == "0.020 (0.010-0.500) unstable / 0.010"
    s = seed.summarize([ok("canal", "1/1", x, 0.01) for x in (0.01, 0.02, 0.025)])
    assert seed.cell(s) == "0.020 (0.010-0.025) / 0.010"


def test_headlines_compare_canal_with_the_fastest_peer():
    from canal_bench import report
    report.reset_headlines()
    runs = [ok("canal", "1000/1000", x) for x in (0.1, 0.2, 0.3)]
    runs += [ok("pipe", "1000/1000", x) for x in (0.4, 0.4, 0.4)]
    runs += [ok("go", "1000/1000", x) for x in (0.05, 0.05, 0.06)]
    runs += [ok("floor", "1000/1000", x) for x in (0.1, 0.1, 0.1)]
    seed.headlines(seed.group_runs(runs))
    rows = {h.workload: h for h in report.HEADLINES}
    h = rows["fwd 1000/1000, threads"]
    assert h.peer_name == "Go" and h.ratio == pytest.approx(0.2 / 0.05)
    assert h.met is False and h.verdict == "MISSED"
    f = rows["fwd 1000/1000 vs the floor"]
    assert f.peer_name == "thread floor" and f.ratio == pytest.approx(2.0) and f.met is False
    assert "fwd 1/1, threads" not in rows  # not measured in this run: no row
    report.reset_headlines()


def test_headlines_judge_processes_at_100_and_1000():
    """Issue 11's target between processes is pipes at 100/100 and at
    1000/1000: both are summary rows. (Failed before: the summary had the
    100/100 row only, and 1000/1000, the configuration the target was
    missed at, was in the seed tables alone.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = []
    for cfg in ("100/100", "1000/1000"):
        runs += [ok("canal-proc", cfg, x) for x in (0.25, 0.26, 0.30)]
        runs += [ok("pipe-proc", cfg, x) for x in (0.24, 0.245, 0.27)]
    try:
        seed.headlines(seed.group_runs(runs))
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    for cfg in ("100/100", "1000/1000"):
        h = rows[f"fwd {cfg}, processes"]
        assert h.peer_name == "pipe-proc" and h.ratio == pytest.approx(0.26 / 0.245)
        assert h.met is False


def test_a_configuration_that_timed_out_is_not_run_again(tmp_path, monkeypatch):
    """A configuration killed at its timeout is FAILED for good: the later
    repetitions must not each wait out the timeout again (30 s quick, 600 s
    full, per repetition). runner.run reports such a run with the status
    "timeout" (note "killed: timeout"). (Failed before the fix: the loop
    looked for status "failed" with "timeout" in its note, which no run
    has, and ran fwd-canal 1/1 in all 3 repetitions.)"""
    from canal_bench import report
    bench = tmp_path / "build" / "bench"
    bench.mkdir(parents=True)
    for v in ("canal", "pipe"):
        p = bench / f"fwd-{v}"
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    calls = []

    def fake(argv, timeout, expect_end, stdout_path=None):
        name = os.path.basename(argv[0])
        calls.append((name, tuple(argv[1:])))
        if name == "fwd-canal" and argv[1:] == ["1", "1"]:
            return "timeout", "killed: timeout", "signal 9", timeout, 0.0, 0.0
        return "ok", "", "0", 0.01, 0.0, 0.0
    monkeypatch.setattr(seed, "run_program", fake)
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(seed, "_plot", lambda out, s: [])
    report.reset_headlines()
    try:
        seed.run(str(tmp_path / "build"), "quick")
    finally:
        report.reset_headlines()
    assert calls.count(("fwd-canal", ("1", "1"))) == 1
    assert calls.count(("fwd-pipe", ("1", "1"))) == seed.RUNS["quick"]
    # failed runs of the planned count (test_a_timed_out_configuration_...)
    assert f"FAILED ({seed.RUNS['quick']}/{seed.RUNS['quick']})" in (tmp_path / "seed.md").read_text()


def test_headlines_name_a_peer_that_failed():
    """canal is judged against the fastest peer that completed; a peer that
    failed (or hung) in that configuration cannot be the one compared, but
    the row must say so: a verdict "met" against sockets while pipes, the
    target's peer, crashed hides that peer. (Failed before the fix: the row
    read "socket", met, with nothing about pipe.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = [ok("canal", "100/100", x) for x in (0.1, 0.1, 0.1)]
    runs += [ok("pipe", "100/100", 0.05, i=1),
             Run("fwd", "pipe", "100/100", 2, "failed", note="exit status 1: EPIPE")]
    runs += [ok("socket", "100/100", x) for x in (0.2, 0.2, 0.2)]
    try:
        seed.headlines(seed.group_runs(runs))
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    h = rows["fwd 100/100, threads"]
    assert h.ratio == pytest.approx(0.5)         # against socket, the peer that completed
    assert "pipe" in h.verdict and "FAILED" in h.verdict
    assert "pipe" in report.summary_text([h])


def test_headline_of_a_failed_canal_says_how_many_runs_failed():
    """A headline whose canal variant failed a run is not measured, and the
    summary says so in every family's words (report.failed_runs_note:
    "fwd-canal FAILED in 1 of 3 runs: ..."), not only the run's exit text;
    a peer that failed is named with its count too. (Failed before the
    fix: the summary read "exit status 1: boom", with no FAILED nor how
    many of the runs, and the caveat "pipe FAILED" without its count.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = [ok("canal", "100/100", 0.1, i=1), ok("canal", "100/100", 0.1, i=2),
            Run("fwd", "canal", "100/100", 3, "failed", note="exit status 1: boom")]
    runs += [ok("pipe", "100/100", 0.05, i=1),
             Run("fwd", "pipe", "100/100", 2, "timeout", note="killed: timeout")]
    runs += [ok("socket", "100/100", x) for x in (0.2, 0.2, 0.2)]
    try:
        seed.headlines(seed.group_runs(runs))
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    h = rows["fwd 100/100, threads"]
    assert h.verdict.startswith("not measured")
    assert h.values_text() == "fwd-canal FAILED in 1 of 3 runs: exit status 1: boom"
    assert h.caveat == "pipe FAILED in 1 of 2 runs"


def test_factor_rows_say_unstable():
    """A factor ("x30") of two medians, one of which comes from runs that
    differ by more than 3x, says "unstable" as the cells above it do.
    (Failed before the fix: the factor row read x5.0 alone.)"""
    s = seed.group_runs([ok("canal", "1/1", x, i=i) for i, x in enumerate((0.1, 0.1, 0.5), 1)]
                        + [ok("pipe", "1/1", x, i=i) for i, x in enumerate((0.5, 0.5, 0.5), 1)]
                        + [ok("canal", "10/10", 0.1, i=1), ok("pipe", "10/10", 0.2, i=1)])
    t = seed.comparison_table(["1/1", "10/10"], ["canal", "pipe"], "fwd", s,
                              [("canal/pipe", "pipe", "canal")])
    assert "| factor canal/pipe (real) | x5.0 unstable | x2.0 |" in t


def _fake_seed_build(tmp_path, names):
    bench = tmp_path / "build" / "bench"
    bench.mkdir(parents=True, exist_ok=True)
    for n in names:
        p = bench / n
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    return str(tmp_path / "build")


def _run_seed(tmp_path, monkeypatch, build, fake):
    from canal_bench import report
    monkeypatch.setattr(seed, "run_program", fake)
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(seed, "_plot", lambda out, s: [])
    report.reset_headlines()
    try:
        seed.run(build, "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    return (tmp_path / "seed.md").read_text(), rows


def test_a_timed_out_configuration_counts_its_planned_runs(tmp_path, monkeypatch):
    """A configuration that timed out in run 2 of 3 is not run again (run 3
    is never made): its cell and its summary row count the failed runs of
    the 3 planned, in report.failed_runs_note's words, never only the runs
    made. (Failed before the fix: the cell read "FAILED (1/2)" and the
    summary "fwd-canal FAILED in 1 of 2 runs", as if 2 runs had been
    planned and one had completed a comparable half.)"""
    build = _fake_seed_build(tmp_path, ["fwd-canal", "fwd-pipe"])
    seen = {"n": 0}

    def fake(argv, timeout, expect_end, stdout_path=None):
        if os.path.basename(argv[0]) == "fwd-canal" and argv[1:] == ["1", "1"]:
            seen["n"] += 1
            if seen["n"] == 2:
                return "timeout", "killed: timeout", "signal 9", timeout, 0.0, 0.0
        return "ok", "", "0", 0.01, 0.0, 0.0
    md, rows = _run_seed(tmp_path, monkeypatch, build, fake)
    n = seed.RUNS["quick"]
    assert seen["n"] == 2
    assert f"FAILED ({n - 1}/{n})" in md
    h = rows["fwd 1/1, threads"]
    assert h.verdict.startswith("not measured") and h.met is None
    assert h.values_text() == f"fwd-canal FAILED in {n - 1} of {n} runs: killed: timeout"


def test_a_peer_that_timed_out_counts_its_planned_runs(tmp_path, monkeypatch):
    """The caveat naming a peer that timed out counts its planned runs too.
    (Failed before the fix: "pipe FAILED in 1 of 1 runs" for a timeout in
    run 1 of 3.)"""
    build = _fake_seed_build(tmp_path, ["fwd-canal", "fwd-pipe", "fwd-socket"])

    def fake(argv, timeout, expect_end, stdout_path=None):
        if os.path.basename(argv[0]) == "fwd-pipe" and argv[1:] == ["1", "1"]:
            return "timeout", "killed: timeout", "signal 9", timeout, 0.0, 0.0
        return "ok", "", "0", 0.01, 0.0, 0.0
    md, rows = _run_seed(tmp_path, monkeypatch, build, fake)
    n = seed.RUNS["quick"]
    h = rows["fwd 1/1, threads"]
    assert h.caveat == f"pipe FAILED in {n} of {n} runs"


def test_fewer_completed_runs_than_planned_is_no_median():
    """A configuration with fewer completed runs than planned (its variant
    exited 77 in a later run, after this one ran once) has no median beside
    its peers' medians of every run: it is failed, saying how many ran.
    (Failed before the fix: summarize knew no planned count; the cell was a
    median of 1 run beside medians of 3.)"""
    s = seed.summarize([ok("canal", "1/1", 0.1)], planned=3)
    assert s.status == "failed" and s.real is None
    assert (s.ok, s.total) == (1, 3) and "1 of 3" in s.note


def _cc_fake(bad_verify):
    """A run_program for cat/copy: copies the input as the programs do,
    except bad_verify(name) for the untimed verification run, which returns
    (status, note) and writes nothing."""
    import shutil

    def fake(argv, timeout, expect_end, stdout_path=None):
        name = os.path.basename(argv[0])
        out = stdout_path if name.startswith("cat-") else argv[-1]
        verifying = os.path.basename(out or "") == "check-out"
        if verifying and bad_verify(name):
            st, note = bad_verify(name)
            return st, note, "1", 0.01, 0.0, 0.0
        if out and out != os.devnull:
            shutil.copyfile(argv[1], out)
        return "ok", "", "0", 0.01, 0.0, 0.0
    return fake


def test_a_failed_verification_run_fails_the_cell(tmp_path, monkeypatch):
    """The untimed run that checks cat's output against its input must
    itself complete: a verification run that failed checked nothing, and
    the cell is FAILED (not timed, not compared on the summary), never
    timed as if its output had been checked. (Failed before the fix: only
    an "ok" run that printed other bytes was recorded; cat-canal's failed
    verification run left its cell timed and its summary row judged.)"""
    names = [f"{p}-{v}" for p in ("cat", "copy") for v in ("canal", "pipe", "socket")]
    build = _fake_seed_build(tmp_path, names)
    fake = _cc_fake(lambda n: ("failed", "exit status 1: short write")
                    if n == "cat-canal" else None)
    md, rows = _run_seed(tmp_path, monkeypatch, build, fake)
    n = seed.RUNS["quick"]
    cat = md.split("## cat")[1].split("##")[0]
    assert f"| canal (real / sys) | FAILED ({n}/{n}) | FAILED ({n}/{n}) |" in cat
    h = rows["cat 16 MiB file, threads"]
    assert h.verdict.startswith("not measured") and h.met is None
    assert "cat-canal FAILED" in h.values_text() and "short write" in h.values_text()
    assert rows["copy 16 MiB file, threads"].met is True  # the others as before


def test_a_verification_run_without_output_fails_the_cell(tmp_path, monkeypatch):
    """A verification run that exits 0 but writes no output file fails its
    cell ("no output"), it does not end the family with FileNotFoundError.
    (Failed before the fix: filecmp.cmp raised, seed.run died.)"""
    names = [f"{p}-{v}" for p in ("cat", "copy") for v in ("canal", "pipe", "socket")]
    build = _fake_seed_build(tmp_path, names)
    fake = _cc_fake(lambda n: ("ok", "") if n == "copy-canal" else None)
    md, rows = _run_seed(tmp_path, monkeypatch, build, fake)
    h = rows["copy 16 MiB file, threads"]
    assert h.verdict.startswith("not measured")
    assert "copy-canal FAILED" in h.values_text()
    assert rows["cat 16 MiB file, threads"].met is True

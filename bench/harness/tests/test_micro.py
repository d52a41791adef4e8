"""Unit tests of the micro benchmark harness (canal_bench/micro.py):
parsing canal-micro's output, medians and the targets of issue 2."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import micro  # noqa: E402

SAMPLE = """seq_1 20.5 ns/msg
seq_1024 9.0 ns/msg
spsc_0 900.0 ns/msg
spsc_1024 30.0 ns/msg
mpmc_1024 70.0 ns/msg
select_1 123.4 ns/msg
ping_pong_1 300.0 ns/rt
cacheline_rt 200.0 ns/rt
garbage line
spsc_1 abc ns/msg
"""

PROC_SAMPLE = """proc_spsc_1024 48.6 ns/msg
proc_ping_pong_1 277.5 ns/rt
proc_cacheline_rt 100.0 ns/rt
proc_futex_rt 9000.0 ns/rt
proc_futex_rt_delayed 60000.0 ns/rt
proc_ping_pong_sleep 90000.0 ns/rt
"""


def test_parse_output():
    res = micro.parse_output(SAMPLE)
    assert res["spsc_1024"] == (30.0, "ns/msg")
    assert res["ping_pong_1"] == (300.0, "ns/rt")
    assert res["cacheline_rt"] == (200.0, "ns/rt")
    assert res["select_1"] == (123.4, "ns/msg")
    assert "spsc_1" not in res and len(res) == 8


def test_medians():
    runs = [micro.parse_output("spsc_1024 30 ns/msg\ncacheline_rt 100 ns/rt"),
            micro.parse_output("spsc_1024 10 ns/msg"),
            micro.parse_output("spsc_1024 20 ns/msg\ncacheline_rt 300 ns/rt")]
    med = micro.medians(runs)
    assert med["spsc_1024"] == 20.0
    assert med["cacheline_rt"] == 200.0


def test_checks():
    med = {k: v for k, (v, _) in micro.parse_output(SAMPLE).items()}
    by = {c.what: c for c in micro.checks(med)}
    assert by["spsc_1024 <= 50 ns/msg"].ok is True
    assert by["mpmc_1024 <= 50 ns/msg"].ok is False
    assert by["mpmc_1024 <= 50 ns/msg"].verdict == "MISSED"
    pp = by["ping_pong_1 <= 2 x cacheline_rt"]
    assert pp.limit == 400.0 and pp.ok is True
    assert by["ping_pong_0 <= 2 x cacheline_rt"].verdict == "n/a"


def test_render_table():
    med = {k: v for k, (v, _) in micro.parse_output(SAMPLE).items()}
    md = micro.render(med, micro.mode_params("quick", env={}))
    seq = next(line for line in md.splitlines() if line.startswith("| seq "))
    assert "impossible" in seq and "20.5" in seq and "9.0" in seq
    assert "| ping_pong_1 <= 2 x cacheline_rt | 300 (1.50 x) | 400 | met |" in md


def test_modes():
    q = micro.mode_params("quick", env={})
    f = micro.mode_params("full", env={"CANAL_MICRO_REPS": "7"})
    assert q.quick and q.n < f.n and f.reps == 7
    with pytest.raises(ValueError):
        micro.mode_params("x", env={})


def test_parse_proc_output():
    res = micro.parse_output(SAMPLE + PROC_SAMPLE)
    assert len(res) == 14
    assert res["proc_spsc_1024"] == (48.6, "ns/msg")
    assert res["proc_cacheline_rt"] == (100.0, "ns/rt")
    assert res["proc_futex_rt"] == (9000.0, "ns/rt")
    assert res["proc_futex_rt_delayed"] == (60000.0, "ns/rt")
    assert res["proc_ping_pong_sleep"] == (90000.0, "ns/rt")
    assert res["cacheline_rt"] == (200.0, "ns/rt")  # not confused with proc_


def test_proc_checks():
    med = {k: v for k, (v, _) in micro.parse_output(SAMPLE + PROC_SAMPLE).items()}
    by = {c.what: c for c in micro.checks(med)}
    assert by["proc_spsc_1024 <= 60 ns/msg"].ok is True
    pp = by["proc_ping_pong_1 <= 2 x proc_cacheline_rt"]
    assert pp.limit == 200.0 and pp.ok is False and pp.base == "proc_cacheline_rt"
    sl = by["proc_ping_pong_sleep <= 1.3 x proc_futex_rt_delayed"]
    assert sl.limit == pytest.approx(78000.0) and sl.verdict == "MISSED"
    med["proc_ping_pong_sleep"] = 70000.0
    med["proc_spsc_1024"] = 61.0
    by = {c.what: c for c in micro.checks(med)}
    assert by["proc_ping_pong_sleep <= 1.3 x proc_futex_rt_delayed"].ok is True
    assert by["proc_spsc_1024 <= 60 ns/msg"].ok is False
    # the existing thread checks still use the thread floor
    assert by["ping_pong_1 <= 2 x cacheline_rt"].limit == 400.0


def test_proc_checks_missing():
    med = {k: v for k, (v, _) in micro.parse_output(SAMPLE).items()}
    by = {c.what: c for c in micro.checks(med)}
    for what in ("proc_spsc_1024 <= 60 ns/msg",
                 "proc_ping_pong_1 <= 2 x proc_cacheline_rt",
                 "proc_ping_pong_sleep <= 1.3 x proc_futex_rt_delayed"):
        assert by[what].verdict == "n/a"


def test_render_proc_rows():
    med = {k: v for k, (v, _) in micro.parse_output(SAMPLE + PROC_SAMPLE).items()}
    md = micro.render(med, micro.mode_params("quick", env={}))
    for name, _, _ in micro.PROC_ROWS:
        assert f"| {name} |" in md
    row = next(line for line in md.splitlines() if line.startswith("| proc_futex_rt_delayed |"))
    assert "60000" in row
    assert "| proc_ping_pong_1 <= 2 x proc_cacheline_rt | 278 (2.77 x) | 200 | MISSED |" in md
    assert ("| proc_ping_pong_sleep <= 1.3 x proc_futex_rt_delayed | 90000 (1.50 x) "
            "| 78000 | MISSED |") in md
    assert "| proc_spsc_1024 <= 60 ns/msg | 48.6 | 60.0 | met |" in md
    # without process results the rows still render, as n/a
    md = micro.render({k: v for k, (v, _) in micro.parse_output(SAMPLE).items()},
                      micro.mode_params("quick", env={}))
    assert "| proc_spsc_1024 | spsc, capacity 1024 | n/a | ns/message |" in md


def test_quick_sizes_cells_by_time():
    q = micro.mode_params("quick", env={})
    f = micro.mode_params("full", env={})
    assert micro.command("x", q)[-2:] == ["-T", "0.2"] and "0.2 s" in micro.title(q)
    assert "-T" not in micro.command("x", f)
    assert micro.mode_params("quick", env={"CANAL_MICRO_MIN_SECONDS": "0"}).min_seconds == 0


def test_a_result_missing_from_a_run_is_not_measured():
    """A result line missing from one run (the run exited 0 but its output
    lacks the line) must not leave the median of the other runs judged on
    the summary or in the targets: the row is "not measured" with why (the
    rule of the other families, report.failed_runs_note), and so is a row
    whose base (the cache-line floor) lacks a run; a result missing from
    every run stays a row too. (Failed before the fix: spsc_1024 "met" on 2
    of 3 runs, ping-pong judged against a floor of 2 runs, the proc rows
    left out of the summary without a word.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = [micro.parse_output("spsc_1024 30 ns/msg\nmpmc_1024 30 ns/msg\n"
                               "ping_pong_1 300 ns/rt\ncacheline_rt 200 ns/rt"),
            micro.parse_output("mpmc_1024 30 ns/msg\nping_pong_1 300 ns/rt"),
            micro.parse_output("spsc_1024 30 ns/msg\nmpmc_1024 30 ns/msg\n"
                               "ping_pong_1 300 ns/rt\ncacheline_rt 200 ns/rt")]
    micro.headlines(micro.samples(runs), len(runs))
    by = {h.workload: h for h in report.HEADLINES}
    report.reset_headlines()
    spsc = by["spsc, capacity 1024"]
    assert spsc.verdict == "not measured" and spsc.met is None
    assert "spsc_1024 FAILED in 1 of 3 runs" in spsc.values_text()
    assert by["mpmc 4x4, capacity 1024"].met is True
    pp = by["ping-pong, capacity 1"]
    assert pp.met is None and "cacheline_rt FAILED in 1 of 3 runs" in pp.values_text()
    proc = by["processes: spsc, capacity 1024"]
    assert proc.verdict == "not measured" and "3 of 3" in proc.values_text()
    # The targets table does not judge the survivors either.
    md = micro.render(micro.medians(runs), micro.mode_params("quick", env={}),
                      micro.samples(runs), len(runs))
    row = next(line for line in md.splitlines() if line.startswith("| spsc_1024 <= 50"))
    assert "met" not in row and "FAILED 1 of 3" in row
    assert "FAILED 1 of 3" in next(line for line in md.splitlines()
                                   if line.startswith("| spsc |"))


def _fake_micro(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_a_failed_run_leaves_the_other_rows_measured(tmp_path, monkeypatch):
    """A canal-micro run that crashed or hung part-way must make only the
    results it did not print "not measured" (FAILED k of n, with the run's
    exit status or timeout), as a missing line does; the results every run
    printed keep their figures. canal-micro prints each line once that test
    is over (threads joined, child reaped), so a printed line is a finished
    measurement. (Failed before the fix: the first failed run raised, the
    whole micro family failed and every micro row left the summary.)"""
    from canal_bench import report
    build = tmp_path / "build"
    count = tmp_path / "count"
    # Run 2 crashes after the thread results; run 3 hangs after them too.
    _fake_micro(build / micro.BINARY, f"""
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
echo "spsc_1024 30 ns/msg"
echo "mpmc_1024 30 ns/msg"
echo "ping_pong_1 300 ns/rt"
echo "cacheline_rt 200 ns/rt"
if [ $n = 2 ]; then echo "canal-micro: proc_spsc_1024: the child failed" >&2; exit 134; fi
if [ $n = 3 ]; then exec sleep 30; fi
echo "proc_spsc_1024 40 ns/msg"
echo "proc_ping_pong_1 300 ns/rt"
echo "proc_cacheline_rt 200 ns/rt"
""")
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(micro, "mode_params", lambda mode: micro.Mode(
        n=10, rounds=10, reps=3, timeout=1.0, quick=True))
    report.reset_headlines()
    try:
        md = micro.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert count.read_text().strip() == "3"
    # What every run printed keeps its figure.
    assert rows["spsc, capacity 1024"].met is True
    assert rows["ping-pong, capacity 1"].met is True
    # What the failed runs did not print is not measured, with why.
    for label in ("processes: spsc, capacity 1024", "processes: ping-pong, polling"):
        h = rows[label]
        assert h.verdict == "not measured" and h.met is None
        assert "2 of 3" in h.values_text()
        assert "134" in h.values_text() and "timeout" in h.values_text()
    row = next(line for line in md.splitlines() if line.startswith("| proc_spsc_1024 |"))
    assert "FAILED 2 of 3" in row
    assert "exit status 134" in md and "timeout" in md

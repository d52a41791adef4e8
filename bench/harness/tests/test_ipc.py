"""Unit tests of the IPC harness (canal_bench/ipc.py): parsing, results,
tables, targets. Pure: no program is run."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from canal_bench import ipc, runner  # noqa: E402

BLOCK = """\
============ RESULTS ================
Method: pipe
Launch: processes
Mode: pingpong
Message size: 64
Message count: 10000
Warm-up count: 1000
Total duration: 312.500 ms
Average duration: 31.250 us
Minimum duration: 19.319 us
Maximum duration: 4408.669 us
Standard deviation: 12.000 us
Message rate: 32000 msg/s
p50 duration: 30.000 us
p99 duration: 60.000 us
p99.9 duration: 90.000 us
One-way latency: 15.625 us
Throughput: 2.048 MB/s
=====================================
"""

SEED_BLOCK = """\
============ RESULTS ================
Message size: 1
Message count: 1000
Total duration: 2.648 ms
Average duration: 1.934 us
Minimum duration: 1.792 us
Maximum duration: 71.680 us
Standard deviation: 2.210 us
Message rate: 377670 msg/s
=====================================
"""

JSON = ('{"method": "shm-spin", "launch": "threads", "mode": "pingpong", "size": 64, '
        '"count": 100, "warmup": 10, "total_ms": 0.1, "avg_us": 1.0, "min_us": 0.5, '
        '"max_us": 2.0, "stddev_us": 0.1, "rate_msg_s": 1000000.0, "p50_us": 1.0, '
        '"p99_us": 1.5, "p999_us": 1.9, "one_way_us": 0.5, "mb_s": 64.0}\n')


def test_parse_results_full_block():
    d = ipc.parse_results(BLOCK)
    assert d["method"] == "pipe" and d["launch"] == "processes"
    assert d["size"] == 64 and d["count"] == 10000 and d["warmup"] == 1000
    assert d["total_ms"] == pytest.approx(312.5)
    assert d["avg_us"] == pytest.approx(31.25)
    assert d["max_us"] == pytest.approx(4408.669)
    assert d["rate_msg_s"] == pytest.approx(32000)
    assert d["p999_us"] == pytest.approx(90.0)
    assert d["one_way_us"] == pytest.approx(15.625)
    assert d["mb_s"] == pytest.approx(2.048)


def test_parse_results_accepts_the_seed_block():
    # The original ipc-bench block, without the percentile lines.
    d = ipc.parse_results("noise before\n" + SEED_BLOCK)
    assert d["size"] == 1 and d["count"] == 1000
    assert d["avg_us"] == pytest.approx(1.934)
    assert "p99_us" not in d


def test_parse_results_units_are_normalised():
    text = BLOCK.replace("Average duration: 31.250 us", "Average duration: 31250 ns") \
                .replace("Minimum duration: 19.319 us", "Minimum duration: 19.319 µs") \
                .replace("Total duration: 312.500 ms", "Total duration: 0.3125 s")
    d = ipc.parse_results(text)
    assert d["avg_us"] == pytest.approx(31.25)
    assert d["min_us"] == pytest.approx(19.319)
    assert d["total_ms"] == pytest.approx(312.5)


@pytest.mark.parametrize("text", [
    "",
    "SKIPPED (x)\n",
    BLOCK.replace("=====================================\n", ""),  # not terminated
    BLOCK.replace("Message rate: 32000 msg/s\n", ""),              # required line
])
def test_parse_results_rejects_incomplete(text):
    with pytest.raises(ValueError):
        ipc.parse_results(text)


def test_parse_json_output():
    d = ipc.parse_json_output("warning on stdout\n" + JSON)
    assert d["method"] == "shm-spin" and d["count"] == 100
    with pytest.raises(ValueError):
        ipc.parse_json_output("no json here\n")
    with pytest.raises(ValueError):
        ipc.parse_json_output('{"size": 1}\n')


def test_parse_refusal():
    assert ipc.parse_refusal("SKIPPED (no uintr: the CPU lacks UINTR)\n") == \
        ("skipped", "no uintr: the CPU lacks UINTR")
    assert ipc.parse_refusal("UNSUPPORTED SIZE (signal: one int)\n") == \
        ("unsupported", "signal: one int")
    assert ipc.parse_refusal(BLOCK) is None


def test_classify_statuses():
    ok = ipc.classify("pipe", 64, 10000, "processes", "pingpong", 0, BLOCK)
    assert ok.ok and ok.get("avg_us") == pytest.approx(31.25)
    js = ipc.classify("shm-spin", 64, 100, "threads", "pingpong", 0, JSON)
    assert js.ok and js.get("p99_us") == pytest.approx(1.5)
    sk = ipc.classify("uintr", 64, 100, "processes", "pingpong", 77, "SKIPPED (no uintr: x)\n")
    assert sk.status == "skipped" and sk.reason == "no uintr: x"
    un = ipc.classify("signal", 64, 100, "processes", "pingpong", 78,
                      "UNSUPPORTED SIZE (signal: one int)\n")
    assert un.status == "unsupported"
    bad = ipc.classify("pipe", 64, 100, "processes", "pingpong", 1, "", "pipe: recv: boom\n")
    assert bad.status == "failed" and "boom" in bad.reason
    garbage = ipc.classify("pipe", 64, 100, "processes", "pingpong", 0, "hello\n")
    assert garbage.status == "failed"


def test_classify_checks_counts():
    r = ipc.classify("pipe", 64, 100, "processes", "pingpong", 0, BLOCK)  # block says 10000
    assert r.status == "failed" and "10000" in r.reason
    r = ipc.classify("pipe", 4096, 10000, "processes", "pingpong", 0, BLOCK)  # size 64
    assert r.status == "failed"


def test_command_line():
    cmd = ipc.command("/b", "tcp", 4096, 100, threads=True, mode="stream", pin="0,1")
    assert cmd[0] == os.path.join("/b", "bench", "ipc", "tcp")
    assert cmd[1:] == ["-c", "100", "-s", "4096", "--mode", "stream", "--threads",
                       "--pin", "0,1", "--json"]


def test_missing_binary_is_skipped(tmp_path):
    r = ipc.run_one(str(tmp_path), "pipe", 64, 10)
    assert r.status == "skipped" and "not built" in r.reason


def test_count_for_size():
    assert ipc.count_for_size(1) == 10000
    assert ipc.count_for_size(4096) == 10000
    assert ipc.count_for_size(65536) == 625
    assert ipc.count_for_size(1 << 20) == 200


def test_sizes():
    assert ipc.QUICK_SIZES == [64, 4096]
    assert ipc.FULL_SIZES[0] == 1 and ipc.FULL_SIZES[-1] == 1 << 20
    assert ipc.FULL_SIZES == sorted(set(ipc.FULL_SIZES))
    assert ipc.size_label(64) == "64 B"
    assert ipc.size_label(4096) == "4 KiB"
    assert ipc.size_label(1 << 20) == "1 MiB"


def test_every_method_listed_once():
    assert len(ipc.METHODS) == len(set(ipc.METHODS)) == 17
    for m in ipc.THREAD_METHODS:
        assert m in ipc.METHODS


def _res(method, avg, rate, launch="processes", size=64, status="ok"):
    r = ipc.Result(method, size, 100, launch, "pingpong", status)
    if status == "ok":
        r.stats = {"avg_us": avg, "min_us": avg / 2, "max_us": avg * 3,
                   "rate_msg_s": rate, "p50_us": avg, "p99_us": avg * 2,
                   "p999_us": avg * 2.5, "one_way_us": avg / 2}
    return r


def test_seed_rows_layout():
    rows = ipc.seed_rows([_res("pipe", 31.25, 32000.4),
                          _res("uintr", 0, 0, status="skipped")])
    assert ipc.SEED_HEADER == ["method", "Average(us)", "min(us)", "max(us)", "rate(msg/s)"]
    assert rows[0] == ["pipe", "31.250", "15.625", "93.750", "32000"]
    assert rows[1][0] == "uintr" and rows[1][1] == "SKIPPED"


def test_targets_prefer_processes_then_threads():
    results = [
        _res("shm-spin", 0.15, 6e6, "threads"), _res("canal-spin", 0.30, 3e6, "threads"),
        _res("shm-futex", 40.0, 25e3, "threads"), _res("canal", 50.0, 20e3, "threads"),
        _res("pipe", 40.0, 25e3, "processes"), _res("pipe", 40.0, 25e3, "threads"),
        _res("canal-spin", 0.1, 1e7, "processes", status="skipped"),
    ]
    rows = {r[0]: r for r in ipc.check_targets(results)}
    spin = rows["canal-spin round trip <= 2x shm-spin"]
    assert spin[1] == "2.00" and spin[2] == "PASS" and spin[3].startswith("threads")
    blocking = rows["canal round trip <= 1.2x shm-futex"]
    assert blocking[1] == "1.25" and blocking[2] == "FAIL"
    rate = rows["canal-spin rate >= 20x pipe at 64 B"]
    assert rate[1] == "120.00" and rate[2] == "PASS"


def test_targets_missing_is_na():
    rows = ipc.check_targets([_res("pipe", 40.0, 25e3)])
    assert all(r[2] == "n/a" for r in rows)


def test_csv_rows_and_notes():
    results = [_res("pipe", 31.25, 32000), _res("uintr", 0, 0, status="skipped")]
    results[1].reason = "no uintr: x"
    rows = ipc.csv_rows(results)
    assert len(rows[0]) == len(ipc.CSV_HEADER)
    assert rows[1][5] == "skipped" and rows[1][8] == ""
    n = ipc.notes(results + [results[1]])
    assert len(n) == 1 and "no uintr: x" in n[0]


def test_series_by_method():
    results = [_res("pipe", 10, 1e5, size=1), _res("pipe", 20, 5e4, size=64),
               _res("canal", 1, 1e6, "threads", size=64)]
    s = ipc.series_by_method(results, "avg_us", "pingpong")
    assert s["pipe"] == [(1, 10), (64, 20)]
    assert s["canal (threads)"] == [(64, 1)]


def test_sized_count_by_time():
    assert ipc.sized_count(10000, 500.0) == 10000
    assert ipc.sized_count(10000, 50.0) == 40000
    assert ipc.sized_count(10000, 0.5) == 10000 * ipc.MAX_SCALE
    assert ipc.sized_count(10000, None) == 10000
    assert ipc.sized_count(10000, 50.0, 0.0) == 10000


def test_headlines_keep_a_target_canal_failed():
    """A target whose canal method failed or hung in processes must not move
    to the threads row (a crash between processes hidden behind a thread
    figure), nor vanish from the summary when no launch has both figures:
    the row stays, "not measured", with why (as in the chan, seed, web and
    engine families). A method that is skipped or unsupported in processes
    still falls back to threads. (Failed before the fix: canal-spin's row
    was judged on threads; canal's row was missing.)"""
    from canal_bench import report
    report.reset_headlines()
    failed = _res("canal-spin", 0, 0, status="failed")
    failed.reason = "exit 134: ring damaged"
    timeout = _res("canal", 0, 0, status="timeout")
    timeout.reason = "timed out after 60 s"
    results = [failed, _res("canal-spin", 1.0, 1e6, "threads"),
               _res("shm-spin", 1.0, 1e6), _res("shm-spin", 1.0, 1e6, "threads"),
               timeout, _res("shm-futex", 5.0, 2e5),
               _res("pipe", 40.0, 25e3)]
    try:
        ipc.headlines(results)
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    spin = rows["canal-spin round trip, 64 B, processes"]
    assert spin.verdict == "not measured" and "ring damaged" in spin.values_text()
    assert "canal-spin round trip, 64 B, threads" not in rows
    blocking = rows["canal round trip, 64 B, processes"]
    assert blocking.verdict == "not measured" and "timed out" in blocking.values_text()
    rate = rows["canal-spin rate, 64 B, processes"]
    assert rate.verdict == "not measured"
    # Skipped in processes (e.g. not built there): threads, as before.
    report.reset_headlines()
    try:
        ipc.headlines([_res("canal-spin", 0, 0, status="skipped"),
                       _res("canal-spin", 2.0, 1e6, "threads"),
                       _res("shm-spin", 1.0, 1e6), _res("shm-spin", 1.0, 1e6, "threads")])
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert rows["canal-spin round trip, 64 B, threads"].met is True


def test_quick_sweep_gives_every_method_of_a_cell_the_same_count(monkeypatch):
    """Quick runs size by time once per cell (size, launch, mode), as the
    chan family does (stats.common_count): every method of the cell does
    the same number of round trips, scaled for the fastest but no further
    than the slowest taking ipc.MAX_SLOWEST x MIN_MS; a method whose
    calibration failed keeps its failure (it is not run until it passes);
    the calibration runs count when the count does not change. (Failed
    before the fix: each method was sized from its own time, canal-spin
    ran 500 000 round trips against pipe's 10 000.)"""
    per_rt_us = {"canal-spin": 0.27, "shm-spin": 0.27, "pipe": 44.0, "zeromq": 76.0}
    calls = []

    def fake_run_one(build_dir, method, size, count, *, threads=False, mode="pingpong",
                     pin=None, timeout=60.0):
        calls.append((method, count, threads))
        launch = "threads" if threads else "processes"
        if method == "tcp":
            return ipc.Result(method, size, count, launch, mode, "failed", "exit 1")
        us = per_rt_us[method] * (2.0 if threads else 1.0)
        return ipc.Result(method, size, count, launch, mode, stats=dict(
            size=size, count=count, total_ms=us * count / 1e3, avg_us=us))
    monkeypatch.setattr(ipc, "run_one", fake_run_one)
    runs = [(m, 64, ipc.QUICK_COUNT, False, "pingpong")
            for m in ("pipe", "tcp", "shm-spin", "zeromq", "canal-spin")]
    runs += [(m, 64, ipc.QUICK_COUNT, True, "pingpong") for m in ("pipe", "canal-spin")]
    results = ipc._sweep("build", runs, None, ipc.MIN_MS)
    assert [(r.method, r.launch) for r in results] == [(m, "threads" if t else "processes")
                                                        for m, _, _, t, _ in runs]
    procs = [r for r in results if r.launch == "processes" and r.ok]
    # zeromq took 760 ms at 10 000: 2 s allows 2x; the fastest wanted 50x.
    assert {r.count for r in procs} == {2 * ipc.QUICK_COUNT}
    assert max(r.get("total_ms") for r in procs) <= ipc.MAX_SLOWEST * ipc.MIN_MS
    assert next(r for r in results if r.method == "tcp").status == "failed"
    assert [c for c in calls if c[0] == "tcp"] == [("tcp", ipc.QUICK_COUNT, False)]
    # Threads: its own cell, its own count (pipe took 880 ms: 2x again).
    threads = [r for r in results if r.launch == "threads"]
    assert {r.count for r in threads} == {2 * ipc.QUICK_COUNT}
    # A cell whose slowest leaves no room keeps the calibration runs.
    calls.clear()
    slow = ipc._sweep("build", [(m, 64, ipc.QUICK_COUNT, False, "pingpong")
                                for m in ("canal-spin", "zeromq")], None, 100.0)
    assert {r.count for r in slow} == {ipc.QUICK_COUNT} and len(calls) == 2
    # Full runs (no sizing by time): one count, as asked.
    calls.clear()
    full = ipc._sweep("build", runs, None, 0.0)
    assert {r.count for r in full} == {ipc.QUICK_COUNT} and len(calls) == len(runs)


def test_sweep_bounds_each_run_by_its_calibration(monkeypatch):
    """A hang must cost seconds, not a fixed minute per run: a calibration
    run is bounded by its count (a generous time per round trip, at least
    a few seconds), and the sized run after it by 10x what the calibration
    predicts (at least 20 s), the chan family's rule (stats.run_timeout).
    (Failed before the fix: every run, the sized ones too, had 60 s.)"""
    timeouts = []

    def fake_run(argv, timeout, **kw):
        timeouts.append((int(argv[argv.index("-c") + 1]), timeout))
        count, size = int(argv[argv.index("-c") + 1]), int(argv[argv.index("-s") + 1])
        out = json.dumps(dict(size=size, count=count, total_ms=count * 1e-3,
                              avg_us=1.0, min_us=1.0, max_us=1.0, stddev_us=0.0,
                              rate_msg_s=1e6))
        return runner.Outcome("ok", argv, 0, None, out)
    monkeypatch.setattr(ipc.runner, "run", fake_run)
    monkeypatch.setattr(ipc.os.path, "exists", lambda p: True)
    ipc._sweep("build", [("pipe", 64, ipc.QUICK_COUNT, False, "pingpong")], None, ipc.MIN_MS)
    (cal_n, cal_t), (n, t) = timeouts
    assert cal_n == ipc.QUICK_COUNT and n > cal_n
    # 10 000 round trips: seconds, not a minute.
    assert cal_t <= 10.0
    # The calibration took 10 ms: the sized run is predicted to take
    # 10 ms x n / 10 000; it gets 10x that, and at least 20 s, no more.
    expected = 10e-3 * n / cal_n
    assert t == pytest.approx(max(20.0, 10 * expected))
    # A big count with no calibration (a full run): bounded by its count.
    timeouts.clear()
    ipc._sweep("build", [("pipe", 1 << 20, 200, False, "stream")], None, 0.0)
    assert timeouts[0][1] <= 10.0

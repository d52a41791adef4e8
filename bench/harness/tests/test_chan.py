"""Unit tests of the channel comparison harness (canal_bench/chan.py):
parsing of the programs' lines, workload names, message counts, medians,
ratios, best peer and the table, timeouts and the collection loop (with a
stand-in for the programs). Pure and fast: no program is run."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import chan, stats  # noqa: E402


def test_parse_line_crossbeam_format():
    r = chan.parse_line("bounded1_mpmc Rust crossbeam-channel 0.123 sec")
    assert r == chan.Result("bounded1_mpmc", "Rust", "crossbeam-channel", 0.123)
    r = chan.parse_line("  boundedN_spsc_64B C canal 1.5e-3 sec\n")
    assert r is not None and r.seconds == pytest.approx(0.0015)
    assert r.workload == "boundedN_spsc_64B"


@pytest.mark.parametrize("line", [
    "", "bounded1_mpmc Rust crossbeam-channel sec",
    "bounded1_mpmc Rust crossbeam-channel 0.1 ms",
    "bounded1_mpmc Rust 0.1 sec",
    "chanbench-rust: skipping bounded0_select_both for flume: hangs",
    "bounded1_mpmc Go chan -0.1 sec",
])
def test_parse_line_rejects(line):
    assert chan.parse_line(line) is None


def test_parse_output_skips_noise():
    text = ("warming up\nbounded0_spsc Go chan 0.5 sec\n"
            "bounded1_spsc Go chan 0.25 sec\nDone\n")
    res = chan.parse_output(text)
    assert [r.workload for r in res] == ["bounded0_spsc", "bounded1_spsc"]
    assert [chan.impl_of(r) for r in res] == ["go", "go"]


def test_impl_of_every_program():
    assert chan.impl_of(chan.Result("x", "C", "canal", 1)) == "canal"
    assert chan.impl_of(chan.Result("x", "Rust", "flume", 1)) == "flume"
    assert chan.impl_of(chan.Result("x", "Rust", "crossbeam-channel", 1)) == "crossbeam"
    assert chan.impl_of(chan.Result("x", "Rust", "chan", 1)) is None


def test_split_workload():
    assert chan.split_workload("bounded1_spsc") == ("bounded1", "spsc", 8)
    assert chan.split_workload("unbounded_select_both_0B") == ("unbounded", "select_both", 0)
    assert chan.split_workload("boundedN_ping_pong_64B") == ("boundedN", "ping_pong", 64)
    for bad in ("bounded2_spsc", "bounded1_nothing", "spsc", "bounded1_spsc_B"):
        with pytest.raises(ValueError):
            chan.split_workload(bad)


def test_workload_name_roundtrip():
    for cap in chan.CAPS:
        for kind in chan.KINDS:
            for size in chan.SIZES:
                assert chan.split_workload(chan.workload_name(cap, kind, size)) == (cap, kind, size)
    assert chan.workload_name("bounded1", "spsc", 8) == "bounded1_spsc"
    assert chan.workload_name("bounded1", "spsc", 64) == "bounded1_spsc_64B"


def test_messages_per_workload():
    assert chan.messages("boundedN_seq", 1000, 3) == 1000
    assert chan.messages("bounded0_spsc", 1000, 3) == 1000
    assert chan.messages("bounded1_mpmc", 1000, 3) == 999        # 3 * (1000 // 3)
    assert chan.messages("bounded1_select_both_64B", 1001, 4) == 1000
    assert chan.messages("bounded0_ping_pong", 1001, 4) == 1000  # 500 round trips


def test_expected_workloads_skip_impossible_and_absent():
    canal = next(i for i in chan.IMPLS if i.key == "canal")
    flume = next(i for i in chan.IMPLS if i.key == "flume")
    assert chan.expected_workloads(canal, ["seq"], 8) == ["bounded1_seq", "boundedN_seq"]
    assert chan.expected_workloads(flume, ["select_both"], 8) == [
        "boundedN_select_both", "unbounded_select_both"]
    assert chan.expected_workloads(flume, ["spsc"], 64) == [
        "bounded0_spsc_64B", "bounded1_spsc_64B", "boundedN_spsc_64B", "unbounded_spsc_64B"]


def test_command_line():
    canal = chan.IMPLS[0]
    m = chan.mode_params("quick", env={})
    cmd = chan.command(canal, "/b/chanbench-canal", m, "spsc", 64)
    assert cmd[0] == "/b/chanbench-canal"
    assert cmd[cmd.index("-s") + 1] == "64" and cmd[cmd.index("-w") + 1] == "spsc"
    assert cmd[cmd.index("-c") + 1] == "0,1,N"
    cb = next(i for i in chan.IMPLS if i.key == "crossbeam")
    cmd = chan.command(cb, "/b/chanbench-rust", m, "mpmc", 8)
    assert cmd[1:3] == ["-i", "crossbeam"] and cmd[cmd.index("-c") + 1] == "0,1,N,u"
    cmd = chan.command(cb, "/b/chanbench-rust", m, "mpmc", 8, ["unbounded"])
    assert cmd[cmd.index("-c") + 1] == "u"


def _runs(table):
    """[(workload, impl, [seconds...])] -> raw run dicts."""
    return [dict(workload=w, impl=i, seconds=s) for w, i, ss in table for s in ss]


def test_summarize_medians_ratio_best():
    runs = _runs([
        ("bounded1_spsc", "canal", [0.030, 0.010, 0.020]),      # median 0.020
        ("bounded1_spsc", "go", [0.040, 0.040, 0.050]),         # 0.040
        ("bounded1_spsc", "crossbeam", [0.010, 0.012, 0.011]),  # 0.011: best
        ("bounded1_spsc", "flume", [0.5]),
        ("unbounded_spsc", "crossbeam", [0.002]),
        ("unbounded_spsc", "flume", [0.001]),
    ])
    rows = chan.summarize(runs, n=1_000_000, threads=4)
    assert [r.workload for r in rows] == ["bounded1_spsc", "unbounded_spsc"]
    r = rows[0]
    assert r.ns["canal"] == pytest.approx(20.0)   # 0.020 s / 1e6 messages
    assert r.ns["crossbeam"] == pytest.approx(11.0)
    assert r.best == "crossbeam"
    assert r.ratio == pytest.approx(20.0 / 11.0)
    assert r.runs["canal"] == 3
    u = rows[1]
    assert u.best == "flume" and u.ratio is None and "canal" not in u.ns


def test_summarize_orders_by_kind_size_capacity():
    wls = ["unbounded_mpsc", "bounded0_spsc_64B", "boundedN_spsc", "bounded0_spsc", "bounded1_seq"]
    rows = chan.summarize(_runs([(w, "canal", [1.0]) for w in wls]), 100, 4)
    assert [r.workload for r in rows] == [
        "bounded1_seq", "bounded0_spsc", "boundedN_spsc", "bounded0_spsc_64B", "unbounded_mpsc"]


def test_render_table_cells():
    runs = _runs([("bounded1_spsc", "canal", [0.001]), ("bounded1_spsc", "crossbeam", [0.002]),
                  ("unbounded_spsc", "crossbeam", [0.003]),
                  ("bounded0_select_both", "canal", [0.004])])
    rows = chan.summarize(runs, 1000, 4)
    status = {"go": "SKIPPED", ("flume", "bounded0_select_both"): "TIMEOUT",
              ("flume", "bounded1_spsc"): "TIMEOUT"}
    md = chan.render_table(rows, status)
    lines = md.splitlines()
    assert lines[0].startswith("| workload | canal | Go chan | crossbeam-channel | flume |")
    spsc = next(line for line in lines if line.startswith("| bounded1_spsc "))
    cells = [c.strip() for c in spsc.strip("|").split("|")]
    assert cells[:7] == ["bounded1_spsc", "1000", "SKIPPED", "2000", "TIMEOUT", "0.50",
                         "crossbeam-channel"]
    assert cells[7:] == ["n/a", "n/a"]     # no task run, no Go: no ratio
    unb = next(line for line in lines if line.startswith("| unbounded_spsc "))
    cells = [c.strip() for c in unb.strip("|").split("|")]
    assert cells[1] == "—" and cells[2] == "SKIPPED" and cells[5] == "n/a"
    sb = next(line for line in lines if line.startswith("| bounded0_select_both "))
    assert "not run" in sb and "| — |" in sb   # no peer: no ratio, no best
    md3 = chan.render_table(rows, status, reps=3)   # 1 run of 3: starred
    assert "| bounded1_spsc | 1000* | SKIPPED | 2000* |" in md3
    assert "| bounded1_spsc | 1000 | SKIPPED | 2000 |" in chan.render_table(rows, status, reps=1)


def test_mode_params_and_title():
    q = chan.mode_params("quick", env={})
    f = chan.mode_params("full", env={})
    assert q.quick and not f.quick
    assert q.n < f.n and q.reps >= 3 and f.reps == 5
    assert f.n == 1_000_000 and f.threads == 4 and set(f.sizes) == {0, 8, 64}
    assert "quick run" in chan.title(q) and "3 interleaved" in chan.title(q)
    e = chan.mode_params("quick", env={"CANAL_CHAN_N": "1000", "CANAL_CHAN_SIZES": "0,64",
                                       "CANAL_CHAN_KINDS": "spsc,ping_pong"})
    assert e.n == 1000 and e.sizes == (0, 64) and e.kinds == ("spsc", "ping_pong")
    with pytest.raises(ValueError):
        chan.mode_params("quick", env={"CANAL_CHAN_SIZES": "16"})
    with pytest.raises(ValueError):
        chan.mode_params("quick", env={"CANAL_CHAN_KINDS": "spmc"})
    with pytest.raises(ValueError):
        chan.mode_params("slow", env={})


def test_cell_timeout_scales_with_n():
    assert chan.cell_timeout(20_000) == 5.0
    assert chan.cell_timeout(1_000_000) == pytest.approx(200.0)
    assert chan.mode_params("full", env={}).timeout == pytest.approx(200.0)


def test_cell_timeout_follows_completed_runs():
    # 10x the slowest completed run of the cell, at least 20 s, at most
    # the per-message bound.
    assert chan.cell_timeout(1_000_000, 0.05) == pytest.approx(20.0)
    assert chan.cell_timeout(1_000_000, 3.0) == pytest.approx(30.0)
    assert chan.cell_timeout(1_000_000, 50.0) == pytest.approx(200.0)
    assert chan.cell_timeout(20_000, 0.01) == pytest.approx(5.0)
    # Only ever hung there: 20 s; completed once, the completed run counts.
    assert chan.cell_timeout(1_000_000, None, hung=True) == pytest.approx(20.0)
    assert chan.cell_timeout(1_000_000, 3.0, hung=True) == pytest.approx(30.0)
    assert chan.cell_timeout(20_000, None, hung=True) == pytest.approx(5.0)


def _fake_runner(calls, interrupt_at=None):
    """A run_once stand-in: every program 'takes' 1 s on every workload
    asked of it, except flume, which 'hangs'; the call numbered
    interrupt_at raises KeyboardInterrupt as Ctrl-C would."""
    def run_once(cmd, timeout):
        calls.append((cmd, timeout))
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise KeyboardInterrupt
        impl = max((i for i in chan.IMPLS if cmd[1:1 + len(i.args)] == list(i.args)
                    and os.path.basename(cmd[0]) == os.path.basename(i.binary)),
                   key=lambda i: len(i.args))
        if impl.key == "flume":
            return [], "TIMEOUT"
        size, kind = int(cmd[cmd.index("-s") + 1]), cmd[cmd.index("-w") + 1]
        flags = cmd[cmd.index("-c") + 1].split(",")
        caps = [c for c in chan.CAPS if chan.CAP_FLAGS[c] in flags]
        lines = [chan.Result(w, impl.lang, impl.name, 1.0)
                 for w in chan.expected_workloads(impl, [kind], size)
                 if chan.split_workload(w)[0] in caps]
        return lines, None
    return run_once


def _fake_build(tmp_path):
    for i in chan.IMPLS:
        if i.key == "go":
            continue            # absent: SKIPPED
        p = tmp_path / i.binary
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    return str(tmp_path)


def test_collect_interleaves_times_out_and_writes_csv(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(chan, "run_once", _fake_runner(calls))
    m = chan.mode_params("full", env={"CANAL_CHAN_REPS": "2", "CANAL_CHAN_SIZES": "8",
                                      "CANAL_CHAN_KINDS": "spsc"})
    csv_path = tmp_path / "runs.csv"
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m, str(csv_path))
    assert interrupted is None and status["go"] == "SKIPPED"
    assert status[("flume", "bounded0_spsc")] == "TIMEOUT"
    # canal, crossbeam, flume per capacity, in turn. In the first
    # repetition every program gets the full bound; in the second, 10x its
    # own slowest completed run of the cell (at least 20 s), or the full
    # bound again if it never completed (flume), 20 s if it timed out.
    progs = [(os.path.basename(c[0]), c[1:3], t) for c, t in calls]
    first = [("chanbench-canal", ["-n", "1000000"], 200.0),
             ("chanbench-rust", ["-i", "crossbeam"], 200.0),
             ("chanbench-rust", ["-i", "flume"], 200.0)]
    second = [("chanbench-canal", ["-n", "1000000"], 20.0),
              ("chanbench-rust", ["-i", "crossbeam"], 20.0),
              ("chanbench-rust", ["-i", "flume"], 20.0)]
    assert progs[:3] == first and progs[len(progs) // 2:][:3] == second
    assert len(runs) == 2 * (3 + 4 + 3)   # canal 3 caps, crossbeam 4, tasks 3, per rep
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("rep,workload,impl") and len(lines) == 1 + len(runs)


def test_collect_interrupted_keeps_runs(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(chan, "run_once", _fake_runner(calls, interrupt_at=4))
    m = chan.mode_params("full", env={"CANAL_CHAN_SIZES": "8", "CANAL_CHAN_KINDS": "spsc"})
    csv_path = tmp_path / "runs.csv"
    runs, _, interrupted = chan.collect(_fake_build(tmp_path), m, str(csv_path))
    assert interrupted == 1
    assert [r["impl"] for r in runs] == ["canal", "crossbeam"]
    assert len(csv_path.read_text().splitlines()) == 3


def test_stats_argmin():
    assert stats.argmin({"a": 3.0, "b": None, "c": 1.0}) == "c"
    assert stats.argmin({"a": None}) is None
    assert stats.argmin({}) is None
    assert stats.argmin({"x": 2.0, "y": 2.0}) == "x"


def test_cells_show_the_range_and_flag_unstable_repetitions():
    runs = _runs([("bounded1_spsc", "canal", [0.001, 0.002, 0.010]),
                  ("bounded1_spsc", "go", [0.001, 0.0011, 0.0012])])
    rows = chan.summarize(runs, 1000, 4)
    md = chan.render_table(rows, {}, reps=3)
    line = next(ln for ln in md.splitlines() if ln.startswith("| bounded1_spsc "))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1] == "2000 (1000-10000) unstable"
    assert cells[2] == "1100 (1000-1200)"


def test_headlines_report_canal_against_the_best_peer():
    from canal_bench import report
    report.reset_headlines()
    runs = _runs([("bounded1_spsc", "canal", [0.001, 0.002, 0.003]),
                  ("bounded1_spsc", "go", [0.004, 0.004, 0.004]),
                  ("bounded1_spsc", "crossbeam", [0.003, 0.003, 0.003]),
                  ("bounded1_seq", "canal", [0.001])])
    chan.headlines(chan.summarize(runs, 1000, 4))
    assert [h.workload for h in report.HEADLINES] == ["bounded1_spsc"]  # seq: not a headline
    h = report.HEADLINES[0]
    assert h.peer_name == "crossbeam-channel" and h.ratio == pytest.approx(2 / 3)
    assert h.target == 1.0 and h.met
    report.reset_headlines()


def test_scaled_n_sizes_short_cells_by_time():
    assert chan.scaled_n(20_000, 0.5, 0.2) == 20_000       # long enough
    assert chan.scaled_n(20_000, 0.02, 0.2) == 200_000     # 10x
    assert chan.scaled_n(20_000, 0.0001, 0.2) == 20_000 * chan.MAX_SCALE
    assert chan.scaled_n(20_000, 0.02, 0.0) == 20_000      # sizing off


def test_collect_sizes_quick_cells_by_time(tmp_path, monkeypatch):
    """A cell whose first run takes 0.01 s runs again at once with 20x N;
    later repetitions keep that N; runs record their own message count."""
    calls = []
    inner = _fake_runner(calls)

    def fast(cmd, timeout):
        lines, err = inner(cmd, timeout)
        n = int(cmd[cmd.index("-n") + 1])
        return [chan.Result(r.workload, r.lang, r.impl, 0.01 * n / 20_000) for r in lines], err
    monkeypatch.setattr(chan, "run_once", fast)
    m = chan.mode_params("quick", env={"CANAL_CHAN_REPS": "2", "CANAL_CHAN_KINDS": "spsc"})
    assert m.min_seconds == pytest.approx(0.2)
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    canal = [c for c, _ in calls if os.path.basename(c[0]) == "chanbench-canal"
             and "-m" not in c]
    ns = [int(c[c.index("-n") + 1]) for c in canal]
    assert ns[:2] == [20_000, 400_000]                  # calibration, then sized
    sized = [t for c, t in calls if os.path.basename(c[0]) == "chanbench-canal"
             and "-m" not in c][1]
    assert sized == pytest.approx(20.0)  # bounded by the calibration, not 80 s
    assert ns[-1] == 400_000 and ns.count(20_000) == 3  # one calibration per capacity
    r = next(r for r in runs if r["impl"] == "canal")
    assert r["n"] == 400_000 and r["messages"] == 400_000
    rows = chan.summarize(runs, m.n, m.threads)
    assert rows[0].ns["canal"] == pytest.approx(0.2 * 1e9 / 400_000)


def test_caps_and_busy_overrides():
    m = chan.mode_params("quick", {"CANAL_CHAN_CAPS": "bounded0,bounded1",
                                   "CANAL_CHAN_BUSY": "1"})
    assert m.caps == ("bounded0", "bounded1")
    assert m.busy
    assert "busy process" in chan.title(m)
    m = chan.mode_params("quick", {})
    assert m.caps == tuple(chan.CAPS) and not m.busy
    with pytest.raises(ValueError):
        chan.mode_params("quick", {"CANAL_CHAN_CAPS": "bounded7"})


def test_task_column_has_its_own_ratio_against_go():
    from canal_bench import report
    report.reset_headlines()
    runs = _runs([("bounded0_spsc", "canal", [0.004]),
                  ("bounded0_spsc", "go", [0.002, 0.002, 0.002]),
                  ("bounded0_spsc", "canal_task", [0.001, 0.003, 0.001]),
                  ("bounded1_mpsc", "go", [0.001]),
                  ("bounded1_mpsc", "canal_task", [0.004])])
    rows = chan.summarize(runs, 1000, 4)
    by = {r.workload: r for r in rows}
    # The task column is not a peer of canal's threads.
    assert by["bounded0_spsc"].best == "go" and by["bounded0_spsc"].ratio == pytest.approx(2.0)
    assert by["bounded0_spsc"].task_ratio == pytest.approx(0.5)
    assert by["bounded1_mpsc"].task_ratio == pytest.approx(4.0)
    md = chan.render_table(rows, {}, reps=3)
    assert md.splitlines()[0].endswith("| canal / best peer | best peer | canal tasks | tasks / Go |")
    line = next(ln for ln in md.splitlines() if ln.startswith("| bounded0_spsc "))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[-2:] == ["1000 (1000-3000)", "0.50"]
    chan.headlines(rows)
    task = [h for h in report.HEADLINES if h.workload.startswith("tasks:")]
    assert [h.workload for h in task] == ["tasks: worst cell (bounded1_mpsc)"]
    assert task[0].peer_name == "Go chan" and not task[0].met
    report.reset_headlines()


def test_collect_sizes_a_cell_once_for_every_implementation(tmp_path, monkeypatch):
    """Sizing by time must not give the implementations of one cell
    different message counts: at capacity N the count is the channel's
    capacity (a 20 000-slot buffer against a 400 000-slot one is another
    workload), and thread start-up weighs on a short run's ns/message.
    Here canal runs 10x faster than the Rust peers; every counted run of a
    cell must still move the same N, in every repetition.
    (Failed before the fix: canal's counted runs used N = 400 000, the
    Rust peers' 40 000: each implementation was sized alone.)"""
    calls = []
    inner = _fake_runner(calls)

    def speeds(cmd, timeout):
        lines, err = inner(cmd, timeout)
        n = int(cmd[cmd.index("-n") + 1])
        per_msg = 0.5e-6 if os.path.basename(cmd[0]) == "chanbench-canal" else 5e-6
        return [chan.Result(r.workload, r.lang, r.impl, per_msg * n) for r in lines], err
    monkeypatch.setattr(chan, "run_once", speeds)
    m = chan.mode_params("quick", env={"CANAL_CHAN_REPS": "2", "CANAL_CHAN_KINDS": "spsc"})
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    assert interrupted is None
    by_cell = {}
    for r in runs:
        by_cell.setdefault((r["workload"], r["rep"]), set()).add(r["n"])
    shared = [w for w, _ in by_cell if w != "unbounded_spsc"]
    assert shared and all(len(by_cell[k]) == 1 for k in by_cell), by_cell
    # One N per cell across the repetitions too, above the calibration's.
    for w in shared:
        assert by_cell[(w, 1)] == by_cell[(w, 2)]
        (n,) = by_cell[(w, 1)]
        assert n > m.n
    # The comparison itself: canal / best peer is the speed ratio.
    rows = {r.workload: r for r in chan.summarize(runs, m.n, m.threads)}
    assert rows["bounded1_spsc"].ratio == pytest.approx(0.1)


def test_common_n_sizes_for_the_fastest_within_the_slowest_budget():
    assert chan.common_n(20_000, [0.5, 1.0], 0.2) == 20_000          # long enough
    assert chan.common_n(20_000, [0.02, 0.05], 0.2) == 200_000       # fastest: 10x
    # The slowest may take at most MAX_SLOWEST x min_seconds (2 s): 4x here.
    assert chan.common_n(20_000, [0.001, 0.5], 0.2) == 80_000
    assert chan.common_n(20_000, [0.001, 5.0], 0.2) == 20_000        # never below N
    assert chan.common_n(20_000, [], 0.2) == 20_000                  # nothing completed
    assert chan.common_n(20_000, [0.001], 0.0) == 20_000             # sizing off


def test_headlines_keep_a_cell_canal_did_not_complete():
    """A headline cell where canal hung or failed in every repetition while
    the peers completed it must stay on the summary ("not measured", with
    why), not vanish: the summary counts targets met and missed, and a
    hang is not a target that can quietly drop out. The same for the task
    column against Go. (Failed before the fix: no row at all for
    bounded1_spsc, nor for the task cell.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = _runs([("bounded1_spsc", "crossbeam", [0.003, 0.003, 0.003]),
                  ("bounded1_spsc", "go", [0.004, 0.004, 0.004]),
                  ("bounded1_mpmc", "canal", [0.002, 0.002, 0.002]),
                  ("bounded1_mpmc", "crossbeam", [0.003, 0.003, 0.003]),
                  ("bounded1_mpmc", "go", [0.004, 0.004, 0.004]),
                  ("bounded1_mpmc", "canal_task", [0.001, 0.001, 0.001])])
    status = {("canal", "bounded1_spsc"): "TIMEOUT", ("canal_task", "bounded1_spsc"): "FAILED"}
    chan.headlines(chan.summarize(runs, 1000, 4), status)
    by = {h.workload: h for h in report.HEADLINES}
    h = by["bounded1_spsc"]
    assert h.verdict == "not measured" and h.met is None
    assert "TIMEOUT" in h.values_text()
    t = next(h for w, h in by.items() if w.startswith("tasks:") and "bounded1_spsc" in w)
    assert t.verdict == "not measured" and "FAILED" in t.values_text()
    # The cells canal completed are judged as before.
    assert by["bounded1_mpmc"].met is True
    report.reset_headlines()


def test_headlines_do_not_hide_a_failed_repetition():
    """A headline cell where canal failed (or hung) in one repetition and
    completed the others must not be judged on the runs that survived: the
    row is "not measured", with why, as in the seed, web, engine and runtime
    families. Likewise a best peer that failed a repetition gives no peer
    figure (naming it), and a task cell that failed a repetition is not the
    task row's "worst cell" judged on its survivors. (Failed before the fix:
    bounded1_spsc was "met" on 2 of 3 runs, bounded1_mpmc "met" against the
    crossbeam median of 2 runs, the task cell judged on 2.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = _runs([("bounded1_spsc", "canal", [0.002, 0.002]),          # 1 of 3 failed
                  ("bounded1_spsc", "crossbeam", [0.003, 0.003, 0.003]),
                  ("bounded1_mpmc", "canal", [0.002, 0.002, 0.002]),
                  ("bounded1_mpmc", "crossbeam", [0.003, 0.003]),      # 1 of 3 hung
                  ("bounded1_mpmc", "go", [0.004, 0.004, 0.004]),
                  ("bounded1_mpmc", "canal_task", [0.009, 0.009]),     # 1 of 3 failed
                  ("bounded1_mpmc", "go", [])])
    status = {("canal", "bounded1_spsc"): "FAILED", ("crossbeam", "bounded1_mpmc"): "TIMEOUT",
              ("canal_task", "bounded1_mpmc"): "FAILED"}
    chan.headlines(chan.summarize(runs, 1000, 4), status)
    by = {h.workload: h for h in report.HEADLINES}
    report.reset_headlines()
    h = by["bounded1_spsc"]
    assert h.verdict == "not measured" and h.met is None
    assert "FAILED" in h.values_text()
    p = by["bounded1_mpmc"]
    assert p.met is None and "TIMEOUT" in p.values_text()
    assert not any(w.startswith("tasks: worst cell") for w in by)
    t = by["tasks: bounded1_mpmc"]
    assert t.verdict == "not measured" and "FAILED" in t.values_text()


def test_headlines_name_a_peer_that_failed():
    """The best peer is the fastest that completed every repetition; a peer
    that hung or failed in the cell is left out of the comparison but named
    in the verdict (it may have been the fastest). (Failed before the fix:
    "met" against flume, nothing about Go's hang.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = _runs([("bounded1_spsc", "canal", [0.002, 0.002, 0.002]),
                  ("bounded1_spsc", "flume", [0.003, 0.003, 0.003])])
    chan.headlines(chan.summarize(runs, 1000, 4), {("go", "bounded1_spsc"): "TIMEOUT"})
    h = report.HEADLINES[0]
    report.reset_headlines()
    assert h.peer_name == "flume" and h.met is True
    assert "Go chan TIMEOUT" in h.verdict


@pytest.mark.parametrize("err", ["TIMEOUT", "FAILED"])
def test_collect_counts_a_run_that_printed_then_failed_as_failed(tmp_path, monkeypatch, err):
    """A run that printed its result line and then hung (killed at its
    timeout) or exited non-zero is not a clean measurement: the cell's
    status says so and the line is not counted, so the headline is not
    judged on it. (Failed before the fix: a failure was recorded only when
    the run printed nothing; the line counted and bounded1_spsc was met.)"""
    from canal_bench import report
    calls = []
    inner = _fake_runner(calls)
    seen = []

    def flaky(cmd, timeout):
        lines, e = inner(cmd, timeout)
        canal = os.path.basename(cmd[0]) == "chanbench-canal" and "-m" not in cmd
        if canal and cmd[cmd.index("-c") + 1] == "1":
            seen.append(cmd)
            if len(seen) == 2:          # the second repetition's run
                return lines, err
        return lines, e
    monkeypatch.setattr(chan, "run_once", flaky)
    m = chan.mode_params("full", env={"CANAL_CHAN_REPS": "3", "CANAL_CHAN_SIZES": "8",
                                      "CANAL_CHAN_KINDS": "spsc"})
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    assert interrupted is None and len(seen) == 3
    assert status[("canal", "bounded1_spsc")] == err
    assert len([r for r in runs if (r["impl"], r["workload"]) == ("canal", "bounded1_spsc")]) == 2
    report.reset_headlines()
    chan.headlines(chan.summarize(runs, m.n, m.threads), status)
    h = next(h for h in report.HEADLINES if h.workload == "bounded1_spsc")
    report.reset_headlines()
    assert h.verdict.startswith("not measured") and err in h.values_text()


def test_collect_keeps_a_failed_calibration(tmp_path, monkeypatch):
    """In a quick run, the first repetition of a cell is a calibration that
    runs again with the cell's sized N. A calibration run that crashed or
    hung is a failed run of that cell: the sized run passing afterwards
    must not erase it (the headline would be judged as if every run had
    passed). (Failed before the fix: no status for canal's bounded1_spsc,
    met on the runs after the crash.)"""
    from canal_bench import report
    calls = []
    inner = _fake_runner(calls)
    crashed = []

    def fast(cmd, timeout):
        lines, err = inner(cmd, timeout)
        n = int(cmd[cmd.index("-n") + 1])
        canal = os.path.basename(cmd[0]) == "chanbench-canal" and "-m" not in cmd
        if canal and cmd[cmd.index("-c") + 1] == "1" and not crashed:
            crashed.append(cmd)
            return [], "FAILED"
        return [chan.Result(r.workload, r.lang, r.impl, 0.01 * n / 20_000) for r in lines], err
    monkeypatch.setattr(chan, "run_once", fast)
    m = chan.mode_params("quick", env={"CANAL_CHAN_REPS": "2", "CANAL_CHAN_KINDS": "spsc"})
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    assert crashed and status[("canal", "bounded1_spsc")] == "FAILED"
    report.reset_headlines()
    chan.headlines(chan.summarize(runs, m.n, m.threads), status)
    h = next(h for h in report.HEADLINES if h.workload == "bounded1_spsc")
    report.reset_headlines()
    assert h.verdict.startswith("not measured") and "FAILED" in h.values_text()


def test_an_interrupted_run_judges_equal_repetitions_and_says_so(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) during a repetition leaves a cell where canal
    ran and its peer did not yet: the summary row must compare the
    repetitions both completed (not canal's 2 medianed against the peer's
    1), and the summary screen must say the run was interrupted (only
    chan.md did). (Failed before the fix: bounded1_spsc was MISSED on
    canal's 2 runs against crossbeam's 1, and no row said interrupted.)"""
    from canal_bench import report
    calls = []
    inner = _fake_runner(calls, interrupt_at=20)  # rep 2: crossbeam's bounded1

    def slow_second(cmd, timeout):
        lines, err = inner(cmd, timeout)
        canal = os.path.basename(cmd[0]) == "chanbench-canal" and "-m" not in cmd
        if canal and len(calls) > 14:          # canal's runs of the second repetition
            lines = [chan.Result(r.workload, r.lang, r.impl, 3.0) for r in lines]
        return lines, err
    monkeypatch.setattr(chan, "run_once", slow_second)
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    for k, v in (("CANAL_CHAN_REPS", "3"), ("CANAL_CHAN_SIZES", "8"),
                 ("CANAL_CHAN_KINDS", "spsc"), ("CANAL_CHAN_N", "1000")):
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CANAL_CHAN_CAPS", raising=False)
    report.reset_headlines()
    try:
        md = chan.run(_fake_build(tmp_path), "full")
        rows = {h.workload: h for h in report.HEADLINES}
        screen = report.summary_text()
    finally:
        report.reset_headlines()
    assert "Interrupted during repetition 2 of 3" in md
    h = rows["bounded1_spsc"]
    assert h.peer_name == "crossbeam-channel"
    assert len(h.canal) == len(h.peer) == 1 and h.met is True
    assert "interrupted" in h.verdict
    # bounded0: every implementation ran both repetitions.
    assert len(rows["bounded0_spsc"].canal) == len(rows["bounded0_spsc"].peer) == 2
    assert "interrupted" in screen


def test_a_cell_interrupted_before_its_peers_ran_says_so(tmp_path, monkeypatch):
    """Interrupted after canal's first run: the row has no peer figure and
    says the interrupt, not "go, cargo absent"."""
    from canal_bench import report
    calls = []
    monkeypatch.setattr(chan, "run_once", _fake_runner(calls, interrupt_at=2))
    m = chan.mode_params("full", env={"CANAL_CHAN_SIZES": "8", "CANAL_CHAN_KINDS": "spsc"})
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    assert interrupted == 1
    report.reset_headlines()
    chan.headlines(chan.summarize(runs, m.n, m.threads), status, "interrupted")
    h = report.HEADLINES[0]
    report.reset_headlines()
    assert h.workload == "bounded0_spsc" and h.verdict == "no peer figure (interrupted)"
    assert "before the interrupt" in h.values_text()


def test_an_interrupt_at_the_start_of_a_repetition_names_that_repetition(tmp_path,
                                                                        monkeypatch):
    """Ctrl-C at the very first run of repetition 2 (no run of it
    recorded) was in repetition 2: collect() says so, and chan.md and the
    summary's caveat name it. (Failed before the fix: the repetition was
    taken as the last one with a recorded run, "repetition 1 of 3".)"""
    from canal_bench import report
    calls = []
    monkeypatch.setattr(chan, "run_once", _fake_runner(calls, interrupt_at=15))
    m = chan.mode_params("full", env={"CANAL_CHAN_REPS": "3", "CANAL_CHAN_SIZES": "8",
                                      "CANAL_CHAN_KINDS": "spsc", "CANAL_CHAN_N": "1000"})
    runs, status, interrupted = chan.collect(_fake_build(tmp_path), m)
    assert interrupted == 2 and {r["rep"] for r in runs} == {1}
    # The same through run(): chan.md and every summary row.
    calls.clear()
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    for k, v in (("CANAL_CHAN_REPS", "3"), ("CANAL_CHAN_SIZES", "8"),
                 ("CANAL_CHAN_KINDS", "spsc"), ("CANAL_CHAN_N", "1000")):
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CANAL_CHAN_CAPS", raising=False)
    report.reset_headlines()
    try:
        md = chan.run(_fake_build(tmp_path), "full")
        rows = list(report.HEADLINES)
    finally:
        report.reset_headlines()
    assert "Interrupted during repetition 2 of 3" in md
    assert rows and all("interrupted in repetition 2 of 3" in h.verdict for h in rows)
    # Interrupted in the first run of all: repetition 1, not 0.
    calls.clear()
    monkeypatch.setattr(chan, "run_once", _fake_runner(calls, interrupt_at=1))
    assert chan.collect(_fake_build(tmp_path), m)[2] == 1

"""The runtime harness family: parsing, medians with spread, targets."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from canal_bench import runtime  # noqa: E402


def test_parse_output():
    text = "yield_pingpong 85.2 ns/switch\nnoise\nparked_bytes_1000 8192 bytes/task\n"
    assert runtime.parse_output(text) == {"yield_pingpong": 85.2, "parked_bytes_1000": 8192.0}


def test_mode_params_env():
    m = runtime.mode_params("quick", {"CANAL_RB_REPS": "7"})
    assert m.reps == 7 and m.quick
    assert runtime.mode_params("full", {}).parked == 1_000_000


def test_render_targets():
    m = runtime.mode_params("quick", {"CANAL_RB_PARKED": "10"})
    runs = [
        {"canal tasks": {"yield_pingpong": 10.0, "spawn_join": 100.0, "parked_bytes_10": 4096.0},
         "Go": {"yield_pingpong": 50.0, "spawn_join": 400.0, "parked_bytes_10": 2048.0},
         "fcontext": {"fcontext_switch": 6.0}},
        {"canal tasks": {"yield_pingpong": 12.0, "spawn_join": 300.0, "parked_bytes_10": 4096.0},
         "Go": {"yield_pingpong": 60.0, "spawn_join": 400.0, "parked_bytes_10": 2048.0},
         "fcontext": {"fcontext_switch": 6.0}},
    ]
    out = runtime.render(runtime.collect(runs), m)
    assert "task switch <= 2x fcontext" in out
    lines = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("|")}
    assert "met" in lines["task switch <= 2x fcontext"]      # medians 11 / 6
    assert "MISSED" in lines["memory per parked task <= Go"]
    assert "met" in lines["spawn_join <= 0.5x Go"]            # 200 / 400


# ---------------------------------------------------------------------------
# The queue table (seed 004 appendix D, bench/canal-queue-bench)

QUEUE_RUN_1 = """queue uring_nop 1 484.55
queue uring_nop 100000 n/a
queue ring 1 4.51
queue ring 100000 3.14
noise line
yield_pingpong 85.2 ns/switch
queue canal_chan 1 15
"""
QUEUE_RUN_2 = """queue uring_nop 1 500.00
queue uring_nop 100000 n/a
queue ring 1 4.00
queue ring 100000 3.50
queue canal_chan 1 17.0
queue newqueue 1 9.0
"""


def test_parse_queue_output():
    got = runtime.parse_queue_output(QUEUE_RUN_1)
    assert got == {("uring_nop", 1): 484.55, ("uring_nop", 100000): None,
                   ("ring", 1): 4.51, ("ring", 100000): 3.14, ("canal_chan", 1): 15.0}
    # The runtime table's lines are not queue lines, and vice versa.
    assert runtime.parse_output(QUEUE_RUN_1) == {"yield_pingpong": 85.2}


def test_mode_params_queue():
    q = runtime.mode_params("quick", {})
    assert q.queue_pairs == 200_000 and q.queue_fills == (1, 100, 10_000)
    f = runtime.mode_params("full", {})
    assert f.queue_pairs == 10_000_000
    assert f.queue_fills == (1, 10, 100, 1_000, 10_000, 100_000, 1_000_000)
    e = runtime.mode_params("quick", {"CANAL_QB_PAIRS": "5000", "CANAL_QB_FILLS": "1,1000"})
    assert e.queue_pairs == 5000 and e.queue_fills == (1, 1000)
    assert runtime.queue_command("/b/canal-queue-bench", e) == [
        "/b/canal-queue-bench", "-m", "5000", "-f", "1,1000"]


def test_fmt_fill():
    assert [runtime.fmt_fill(f) for f in (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)] == [
        "1", "10", "100", "1000", "10^4", "10^5", "10^6"]
    assert runtime.fmt_fill(65536) == "65536"


def test_render_queue():
    cells = runtime.collect_queue([runtime.parse_queue_output(QUEUE_RUN_1),
                                   runtime.parse_queue_output(QUEUE_RUN_2)])
    out = runtime.render_queue(cells, (1, 100000))
    lines = out.splitlines()
    assert lines[0] == "| queue / fill | 1 | 10^5 |"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in lines[2:]}
    # Table order: the known variants in QUEUE_VARIANTS order, then others.
    assert [line.split("|")[1].strip() for line in lines[2:]] == [
        "io_uring CQ, NOP", "plain ring, no lock (floor)", "canal channel", "newqueue"]
    assert rows["io_uring CQ, NOP"] == ["492 (485-500)", "n/a"]
    assert rows["plain ring, no lock (floor)"] == ["4.3 (4.0-4.5)", "3.3 (3.1-3.5)"]
    assert rows["canal channel"] == ["16.0 (15.0-17.0)", "n/a"]  # no 10^5 line: n/a
    assert rows["newqueue"] == ["9.0", "n/a"]                    # one run: no range


def test_plot_queue_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setattr(runtime.report, "have_matplotlib", lambda: False)
    cells = runtime.collect_queue([runtime.parse_queue_output(QUEUE_RUN_1)])
    path = tmp_path / "runtime-queue.png"
    assert runtime.plot_queue(cells, (1, 100000), str(path)) is False
    assert not path.exists()


def test_plot_queue(tmp_path):
    pytest.importorskip("matplotlib")
    cells = runtime.collect_queue([runtime.parse_queue_output(QUEUE_RUN_1),
                                   runtime.parse_queue_output(QUEUE_RUN_2)])
    path = tmp_path / "runtime-queue.png"
    assert runtime.plot_queue(cells, (1, 100000), str(path)) is True
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Only n/a cells: nothing to draw, no file.
    none = runtime.collect_queue([{("uring_nop", 100000): None}])
    assert runtime.plot_queue(none, (100000,), str(tmp_path / "empty.png")) is False
    assert not (tmp_path / "empty.png").exists()


@pytest.mark.skipif(not os.environ.get("CANAL_BUILD_DIR"),
                    reason="CANAL_BUILD_DIR is not set (CTest sets it)")
def test_queue_program_output_parses():
    path = os.path.join(os.environ["CANAL_BUILD_DIR"], runtime.QUEUE_PROGRAM)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{runtime.QUEUE_PROGRAM} is not built")
    m = runtime.mode_params("quick", {"CANAL_QB_PAIRS": "1000", "CANAL_QB_FILLS": "1,70000"})
    p = subprocess.run(runtime.queue_command(path, m), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    got = runtime.parse_queue_output(p.stdout)
    assert set(got) == {(v, f) for v, _ in runtime.QUEUE_VARIANTS for f in (1, 70000)}
    for v in ("ring", "vyukov", "mutex", "canal_chan"):
        assert got[(v, 1)] > 0 and got[(v, 70000)] > 0
    # The io_uring CQ cannot hold 70 000 (65536 at most): n/a, never a number.
    assert got[("uring_nop", 70000)] is None and got[("uring_msg", 70000)] is None


def _fake_program(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_headlines_do_not_hide_a_failed_run(tmp_path, monkeypatch):
    """A repetition of a runtime program that failed (an exit status, a
    timeout) or completed without a figure must not leave the summary judging
    canal on the runs that survived: the row is "not measured", with why, as
    in the seed, web and engine families; the table says FAILED k of n
    beside the median of the rest. (Failed before the fix: spawn + join was
    "met" on 2 of 3 runs, the row of a figure missing from one run was met
    on the other two, and the table showed plain medians.)"""
    from canal_bench import report
    build = tmp_path / "build"
    count = tmp_path / "count"
    # canal's second run crashes; its third prints no cond_pingpong line.
    _fake_program(build / "bench/canal-runtime-bench", f"""
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
if [ $n = 2 ]; then echo "runtime: crashed" >&2; exit 134; fi
echo "yield_pingpong 10 ns/switch"
echo "spawn_join 100 ns/task"
echo "chan_pingpong_1loop_0 100 ns/rt"
[ $n = 3 ] || echo "cond_pingpong 100 ns/rt"
echo "parked_bytes_10 1000 bytes/task"
""")
    _fake_program(build / "bench/runtimebench-go", """
echo "spawn_join 400 ns/task"
echo "chan_pingpong_1loop_0 400 ns/rt"
echo "cond_pingpong 400 ns/rt"
echo "parked_bytes_10 2000 bytes/task"
""")
    _fake_program(build / "bench/fcontext-switch", 'echo "fcontext_switch 6 ns/switch"\n')
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setenv("CANAL_RB_REPS", "3")
    monkeypatch.setenv("CANAL_RB_PARKED", "10")
    report.reset_headlines()
    try:
        md = runtime.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert count.read_text().strip() == "3"
    h = rows["spawn + join"]
    assert h.verdict == "not measured" and h.met is None
    assert "1 of 3" in h.values_text() and "134" in h.values_text()
    # The Go runs all completed; canal's failure is what the row says.
    assert rows["task switch (yield ping-pong)"].verdict == "not measured"
    # The table: the median of the rest, and how many runs failed.
    table = {line.split("|")[1].strip(): line for line in md.splitlines()
             if line.startswith("|")}
    assert "FAILED 1 of 3" in table["spawn + join"]
    assert "FAILED 2 of 3" in table["condvar ping-pong, one loop"]  # crash + no line
    # The targets table does not judge a cell with a failed run.
    assert "met" not in table["spawn_join <= 0.5x Go"].split("|")[4]
    # A program that hangs is a failed run (timeout), not an exception that
    # ends the family.
    _fake_program(build / "bench/fcontext-switch", "exec sleep 30\n")
    monkeypatch.setattr(runtime, "mode_params", lambda mode: runtime.Mode(
        rounds=1, reps=1, parked=10, timeout=0.5, quick=True, queue_fills=(1,)))
    report.reset_headlines()
    try:
        runtime.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    h = rows["task switch (yield ping-pong)"]
    assert h.verdict == "no peer figure" and "timeout" in h.values_text()


def test_a_result_no_completed_run_printed_says_why():
    """A result whose runs all completed without printing its line (a
    program that no longer prints it, a renamed result) must say why the
    summary has no figure, like a failed run does. (Failed before the fix:
    "not measured" / "no figure", no reason; Go's missing line gave a bare
    "Go: n/a".)"""
    from canal_bench import report
    m = runtime.mode_params("quick", {"CANAL_RB_PARKED": "10"})
    runs = [{"canal tasks": {"yield_pingpong": 10.0, "spawn_join": 100.0,
                             "chan_pingpong_2loops_1": 100.0},
             "Go": {"spawn_join": 400.0, "chan_pingpong_1loop_0": 400.0},
             "fcontext": {"fcontext_switch": 6.0}}] * 3
    report.reset_headlines()
    try:
        runtime.headlines(runtime.collect(runs), m)
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    h = rows["channel ping-pong task to task, capacity 0, one loop"]
    assert h.verdict == "not measured"
    assert "no chan_pingpong_1loop_0 line" in h.values_text() and "3" in h.values_text()
    g = rows["memory per parked task (10)"]
    assert "canal tasks" in g.values_text() and "no parked_bytes_10 line" in g.values_text()
    # canal measured, Go never printed it: the peer's side says why.
    p = rows["task switch (yield ping-pong)"]
    assert p.verdict.startswith("met")
    s = rows["spawn + join"]
    assert s.verdict.startswith("met")
    q = rows["channel ping-pong task to task, capacity 1, two loops"]
    assert q.verdict == "no peer figure"
    assert "Go: no chan_pingpong_2loops_1 line in 3 completed runs" in q.values_text()


def test_the_targets_table_says_why_a_target_is_not_measured():
    """runtime.md's targets table must give the reason a target has no
    ratio, as the summary does (Cell.note): a result no completed run
    printed, a failed run. (Failed before the fix: "n/a | ... | not
    measured" with no reason.)"""
    m = runtime.mode_params("quick", {"CANAL_RB_PARKED": "10"})
    runs = [{"canal tasks": {"yield_pingpong": 10.0, "spawn_join": 100.0,
                             "chan_pingpong_2loops_1": 100.0},
             "Go": {"spawn_join": 400.0, "chan_pingpong_1loop_0": 400.0},
             "fcontext": "exit status 134"}] * 3
    out = runtime.render(runtime.collect(runs), m)
    lines = {line.split("|")[1].strip(): line for line in out.splitlines()
             if line.startswith("|")}
    assert "not measured" in lines["chan_pingpong_1loop_0 <= 0.5x Go"]
    assert ("canal tasks: no chan_pingpong_1loop_0 line in 3 completed runs"
            in lines["chan_pingpong_1loop_0 <= 0.5x Go"])
    assert "Go: no chan_pingpong_2loops_1 line in 3 completed runs" in \
        lines["chan_pingpong_2loops_1 <= 0.5x Go"]
    assert "fcontext FAILED in 3 of 3 runs: exit status 134" in \
        lines["task switch <= 2x fcontext"]
    assert lines["spawn_join <= 0.5x Go"].rstrip(" |").endswith("met")

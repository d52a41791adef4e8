"""remote.py: parsing remote_pingpong's lines."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import remote  # noqa: E402


def test_parse_lines_and_ignore_the_rest():
    out = remote.parse("# remote_pingpong: 8 B, driver tcp\n"
                       "bare tcp     rtt_us 6.34 [6.12-4040.08] msgs_per_s 868620\n"
                       "bare tcp poll rtt_us 5.10 [5.00-90.00] msgs_per_s 0\n"
                       "engine       rtt_us 6.46 [5.76-20055.13] msgs_per_s 0\n"
                       "remote       rtt_us 29.61 [18.00-1547.13] msgs_per_s 10999794\n"
                       "remote rtt_us garbage\n")
    assert out == {"bare tcp": (6.34, 868620.0), "bare tcp poll": (5.1, 0.0),
                   "engine": (6.46, 0.0),
                   "remote": (29.61, 10999794.0)}


def test_parse_nothing():
    assert remote.parse("") == {}
    assert remote.parse("remote rtt_us 1 msgs_per_s 2\n") == {}


def test_parse_osu8():
    assert remote.parse_osu8("# Size  Latency (us)\n1  3.0\n8                      38.48\n") == 38.48
    assert remote.parse_osu8("# Size  Latency (us)\n16  3.0\n") == 0.0


def test_best_bare_is_the_faster():
    rtt = {("tcp", "bare tcp"): [80.0, 70.0, 90.0], ("tcp", "bare tcp poll"): [6.0, 7.0, 6.5],
           ("shm", "engine"): [0.5]}
    assert remote.best_bare(rtt) == ("bare TCP, polling", [6.0, 7.0, 6.5])
    rtt[("tcp", "bare tcp")] = [5.0, 5.5, 5.2]
    assert remote.best_bare(rtt) == ("bare TCP", [5.0, 5.5, 5.2])
    del rtt[("tcp", "bare tcp")]
    assert remote.best_bare(rtt)[0] == "bare TCP, polling"
    assert remote.best_bare({}) == ("", [])


OUT = ("bare tcp     rtt_us {bare:.2f} [1-2] msgs_per_s 800000\n"
       "bare tcp poll rtt_us {poll:.2f} [1-2] msgs_per_s 0\n"
       "engine       rtt_us 6.00 [1-2] msgs_per_s 0\n"
       "remote       rtt_us 5.00 [1-2] msgs_per_s 1000000\n")


def _run(tmp_path, monkeypatch, outcome):
    """remote.run (quick, 3 runs) with remote_pingpong faked: outcome(drv,
    run) -> (exit status, stdout). Returns {workload: headline}."""
    import subprocess
    from canal_bench import report
    prog = tmp_path / "build" / remote.PROG
    prog.parent.mkdir(parents=True, exist_ok=True)
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    seen = {}

    def fake_run(cmd, **kw):
        if os.path.basename(cmd[0]) != "remote_pingpong":
            return subprocess.CompletedProcess(cmd, 1, "", "")  # no zeromq here
        drv = cmd[cmd.index("--driver") + 1]
        seen[drv] = seen.get(drv, 0) + 1
        rc, out = outcome(drv, seen[drv])
        return subprocess.CompletedProcess(cmd, rc, out, "boom" if rc else "")
    monkeypatch.setattr(remote.subprocess, "run", fake_run)
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setenv("CANAL_REMOTE_REPS", "3")
    report.reset_headlines()
    try:
        remote.run(str(tmp_path / "build"), "quick")
        return {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()


def test_a_failed_run_is_not_judged_on_the_others(tmp_path, monkeypatch):
    """A tcp run of remote_pingpong that failed (exit status, timeout) must
    not leave the target judged on the runs that survived: the row is not
    measured, with how many of the runs failed (report.failed_runs_note,
    every family's rule); and when every run failed the rows stay, not
    measured, instead of vanishing from the summary. (Failed before the
    fix: "met" on 2 of 3 runs; no row at all when all 3 failed.)"""
    rows = _run(tmp_path, monkeypatch,
                lambda drv, i: (1, "") if (drv, i) == ("tcp", 2)
                else (0, OUT.format(bare=10.0, poll=9.0)))
    h = rows["round trip 8 B, TCP loopback"]
    assert h.verdict.startswith("not measured") and h.met is None
    assert "FAILED in 1 of 3 runs" in h.values_text()
    assert rows["messages/s 8 B, TCP loopback"].met is None

    rows = _run(tmp_path, monkeypatch, lambda drv, i: (134, ""))
    h = rows["round trip 8 B, TCP loopback"]
    assert h.verdict.startswith("not measured") and "FAILED in 3 of 3 runs" in h.values_text()


def test_a_bare_ping_pong_missing_from_a_run_is_named(tmp_path, monkeypatch):
    """A bare ping-pong that a run did not print (the faster one, polling)
    cannot be the peer judged on its other runs, and must not vanish: the
    target is judged against the bare ping-pong complete in every run, and
    the verdict names the other. (Failed before the fix: polling, 1.0 us in
    2 runs, was the peer judged on 2 runs, nothing said of the third.)"""
    def outcome(drv, i):
        text = OUT.format(bare=10.0, poll=1.0)
        if i == 3:
            text = "\n".join(l for l in text.splitlines() if "poll" not in l) + "\n"
        return 0, text
    rows = _run(tmp_path, monkeypatch, outcome)
    h = rows["round trip 8 B, TCP loopback"]
    assert h.peer_name == "bare TCP" and h.peer == [10.0] * 3
    assert "bare TCP, polling" in h.verdict and "1 of 3" in h.verdict

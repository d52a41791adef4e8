"""run.py: families that cannot be imported or that fail are errors, the
screen shows progress and the summary, the tables go to the files."""
import io
import json
import os
import signal
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import run  # noqa: E402
from canal_bench import report  # noqa: E402


def _setup(monkeypatch, tmp_path, families):
    monkeypatch.setattr(run, "FAMILIES", families)
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["run.py", "quick", "--build", str(tmp_path)])
    report.reset_headlines()


def test_a_family_that_cannot_be_imported_is_an_error(monkeypatch, tmp_path, capsys):
    _setup(monkeypatch, tmp_path, ["no_such_family_xyz"])
    assert run.main() == 1
    out = capsys.readouterr().out
    assert "ERROR: family no_such_family_xyz cannot be imported" in out
    assert "families that failed: no_such_family_xyz" in out


def test_tables_go_to_the_log_progress_and_summary_to_the_screen(monkeypatch, tmp_path,
                                                                  capsys):
    fam = types.ModuleType("canal_bench.fakefam")

    def fake_run(build_dir, mode):
        report.progress("working")
        print("| a big | table |")
        report.headline("fakefam", "work", [1.0, 1.1], "peer", [2.0, 2.1], "s", 1.0)
        return "# Fake family\n\n| a big | table |\n"
    fam.run = fake_run
    monkeypatch.setitem(sys.modules, "canal_bench.fakefam", fam)
    bad = types.ModuleType("canal_bench.badfam")

    def bad_run(build_dir, mode):
        raise RuntimeError("boom")
    bad.run = bad_run
    monkeypatch.setitem(sys.modules, "canal_bench.badfam", bad)
    _setup(monkeypatch, tmp_path, ["fakefam", "badfam"])
    assert run.main() == 1
    out = capsys.readouterr().out
    assert "  .. working" in out and "| a big | table |" not in out
    assert "FAILED: family badfam: RuntimeError: boom" in out
    assert "fakefam" in out and "met" in out            # the summary row
    assert "| a big | table |" in (tmp_path / "fakefam.log").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "## Fake family" in md and "badfam" in md
    assert (tmp_path / "report.html").exists() and (tmp_path / "summary.json").exists()
    report.reset_headlines()


def test_progress_only_filter():
    log, screen = io.StringIO(), io.StringIO()
    p = run.ProgressOnly(log, screen)
    p.write("table line\n  .. progress\nSKIPPED: x\npart")
    p.write("ial\n")
    assert screen.getvalue() == "  .. progress\nSKIPPED: x\n"
    assert log.getvalue() == "table line\n  .. progress\nSKIPPED: x\npartial\n"


def test_the_summary_screen_names_the_host(monkeypatch, tmp_path, capsys):
    """Every figure with its host: the end-of-run summary (the screen people
    copy) names the machine (CPU model, CPUs, kernel), not only the first
    lines of the run, which scroll away. (Failed before the fix: the
    machine only at the start.)"""
    fam = types.ModuleType("canal_bench.fakefam")

    def fake_run(build_dir, mode):
        report.headline("fakefam", "work", [1.0], "peer", [2.0], "s", 1.0)
        return "# Fake family\n"
    fam.run = fake_run
    monkeypatch.setitem(sys.modules, "canal_bench.fakefam", fam)
    monkeypatch.setattr(report, "machine_description",
                        lambda: "Test CPU 9000, 2 logical CPUs, 1 GiB, Linux 0.0-test")
    _setup(monkeypatch, tmp_path, ["fakefam"])
    assert run.main() == 0
    out = capsys.readouterr().out
    summary = out[out.index("=== Summary"):]
    assert "Test CPU 9000, 2 logical CPUs, 1 GiB, Linux 0.0-test" in summary
    report.reset_headlines()


def _families(monkeypatch, **runs):
    """Fake families canal_bench.<name> whose run is the function given."""
    for name, fn in runs.items():
        mod = types.ModuleType(f"canal_bench.{name}")
        mod.run = fn
        monkeypatch.setitem(sys.modules, f"canal_bench.{name}", mod)


def _main():
    """run.main(); an interrupt escaping it fails the test (rather than
    ending the pytest session)."""
    try:
        return run.main()
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped run.main(): no report")


def _done(build_dir, mode):
    report.headline("donefam", "work", [1.0], "peer", [2.0], "s", 1.0)
    return "# Done family\n\nits table\n"


def test_an_interrupt_stops_the_run_and_still_reports(monkeypatch, tmp_path, capsys):
    """Ctrl-C during a family (not chan) must stop the run, yet compose
    report.md and summary.json from the families that finished, name the
    interrupted family as interrupted (not failed, not measured), show
    the summary screen and exit 130. (Failed before the fix: only
    Exception was caught: the KeyboardInterrupt left main() with no
    report.md, no summary.json, no summary.)"""
    ran = []

    def interrupted(build_dir, mode):
        raise KeyboardInterrupt

    def later(build_dir, mode):
        ran.append("later")
        return "# Later\n"
    _families(monkeypatch, donefam=_done, intfam=interrupted, laterfam=later)
    _setup(monkeypatch, tmp_path, ["donefam", "intfam", "laterfam"])
    old = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        code = _main()
    finally:
        report.reset_headlines()
    assert code == 130
    assert ran == []                                   # the run stopped
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == old
    out = capsys.readouterr().out
    summary = out[out.index("=== Summary"):]
    assert "donefam" in summary and "met" in summary
    assert "interrupted during family intfam" in summary
    assert "laterfam" in summary                       # named as not run
    md = (tmp_path / "report.md").read_text()
    assert "## Done family" in md and "its table" in md
    assert "interrupted during family intfam" in md.lower() and "laterfam" in md
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["interrupted"] == "intfam" and data["not_run"] == ["laterfam"]
    assert data["failed"] == [] and [h["family"] for h in data["headlines"]] == ["donefam"]


def test_sigterm_stops_the_run_like_ctrl_c(monkeypatch, tmp_path, capsys):
    """SIGTERM (a killed session, `timeout`) during a family ends the run
    as Ctrl-C does (chan's rule), with exit status 143 (128 + SIGTERM).
    (Failed before the fix: SIGTERM killed the harness outright, no
    report.)"""
    def killed(build_dir, mode):
        os.kill(os.getpid(), signal.SIGTERM)
        return "# never\n"
    _families(monkeypatch, donefam=_done, termfam=killed)
    _setup(monkeypatch, tmp_path, ["donefam", "termfam"])
    # SIGTERM's default action would end pytest: a handler that fails the
    # test stands for it (main() must put its own in place, then restore).
    def fail(signum, frame):
        raise AssertionError("SIGTERM reached the default handler")
    old = signal.signal(signal.SIGTERM, fail)
    try:
        code = _main()
        assert signal.getsignal(signal.SIGTERM) is fail
    finally:
        signal.signal(signal.SIGTERM, old)
        report.reset_headlines()
    assert code == 143
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["interrupted"] == "termfam"
    assert "interrupted during family termfam" in capsys.readouterr().out


def test_an_interrupt_chan_reported_itself_stops_the_run(monkeypatch, tmp_path, capsys):
    """chan catches Ctrl-C itself to report the runs it finished (chan.md,
    summary rows marked interrupted): the run must still stop after it,
    keep chan's section, name chan as interrupted and exit 130. (Failed
    before the fix: the next families ran and the exit status was 0.)"""
    import test_chan
    from canal_bench import chan
    calls, ran = [], []
    monkeypatch.setattr(chan, "run_once", test_chan._fake_runner(calls, interrupt_at=6))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    for k, v in (("CANAL_CHAN_REPS", "2"), ("CANAL_CHAN_SIZES", "8"),
                 ("CANAL_CHAN_KINDS", "spsc"), ("CANAL_CHAN_N", "1000")):
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CANAL_CHAN_CAPS", raising=False)
    test_chan._fake_build(tmp_path)

    def later(build_dir, mode):
        ran.append("later")
        return "# Later\n"
    _families(monkeypatch, laterfam=later)
    _setup(monkeypatch, tmp_path, ["chan", "laterfam"])
    try:
        code = _main()
    finally:
        report.reset_headlines()
    assert code == 130 and ran == []
    md = (tmp_path / "report.md").read_text()
    assert "Interrupted during repetition 1 of 2" in md
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["interrupted"] == "chan" and data["not_run"] == ["laterfam"]
    assert data["headlines"] and all("interrupted" in h["verdict"] for h in data["headlines"])

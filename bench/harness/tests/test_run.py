"""run.py: families that cannot be imported or that fail are errors, the
screen shows progress and the summary, the tables go to the files."""
import io
import os
import sys
import types

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

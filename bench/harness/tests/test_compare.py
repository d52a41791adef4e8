"""bench-compare: two results directories side by side."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import compare  # noqa: E402
from canal_bench import report  # noqa: E402


def make_run(path, canal, peer):
    os.makedirs(path)
    report.reset_headlines()
    report.headline("chan", "boundedN_spsc", canal, "crossbeam-channel", peer, "ns/msg", 1.0)
    if canal[0] < 50:
        report.headline("chan", "new row", [1.0], None, None, "ns/msg", 2.0)
    report.compose(str(path), [])
    report.reset_headlines()


def test_compare_two_runs(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    make_run(a, [60.0, 62.0, 64.0], [30.0, 30.0, 30.0])
    make_run(b, [30.0, 31.0, 29.0], [30.0, 30.0, 30.0])
    intro, table = compare.compare(str(a), str(b))
    rows = {r[1]: r for r in table[1:]}
    assert rows["boundedN_spsc"][2] == "62 ns/msg" and rows["boundedN_spsc"][3] == "30 ns/msg"
    assert rows["boundedN_spsc"][4] == "2.07x faster"
    assert rows["boundedN_spsc"][7] == "met"
    assert rows["new row"][2] == "—"   # only in B
    assert compare.main([str(a), str(b)]) == 0
    assert "boundedN_spsc" in capsys.readouterr().out


def test_compare_needs_summaries(tmp_path):
    (tmp_path / "old").mkdir()
    with pytest.raises(SystemExit):
        compare.load(str(tmp_path / "old"))


def test_change_words():
    assert compare.change(2.0, 1.0, False) == "2x faster"
    assert compare.change(1.0, 2.0, False) == "2x slower"
    assert compare.change(1.0, 2.0, True) == "2x faster"
    assert compare.change(None, 2.0, False) == "—"

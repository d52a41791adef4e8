"""Tests of the statistics shared by every benchmark family."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from canal_bench import report, stats  # noqa: E402


def test_median_odd_even():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5
    assert stats.median([7]) == 7


def test_median_empty():
    with pytest.raises(ValueError):
        stats.median([])


def test_percentile():
    xs = list(range(1, 101))
    assert stats.percentile(xs, 0) == 1
    assert stats.percentile(xs, 100) == 100
    assert stats.percentile(xs, 50) == pytest.approx(50.5)
    assert stats.percentile([5], 99) == 5
    with pytest.raises(ValueError):
        stats.percentile(xs, 101)


def test_ratio():
    assert stats.ratio(2.0, 4.0) == 0.5
    assert stats.ratio(None, 4.0) is None
    assert stats.ratio(1.0, 0) is None
    assert stats.fmt_ratio(None) == "n/a"
    assert stats.fmt_ratio(1.234) == "1.23"


def test_markdown_table():
    t = report.markdown_table(["a", "b"], [[1, 2], ["x", "y"]])
    lines = t.strip().split("\n")
    assert lines[0] == "| a | b |"
    assert lines[1] == "|---|---|"
    assert lines[3] == "| x | y |"


def test_machine_description():
    d = report.machine_description()
    assert "cores" in d and "Linux" in d

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
    """The host line counts what os.cpu_count() counts, logical CPUs, and
    says so; physical cores (distinct physical id and core id in
    /proc/cpuinfo) only when they are known, beside them. (Failed before
    the fix: "N cores" with N the logical CPUs, twice the cores with SMT.)"""
    d = report.machine_description()
    assert f"{os.cpu_count()} logical CPUs" in d and "Linux" in d
    smt = "".join(f"processor\t: {i}\nmodel name\t: Test CPU\nphysical id\t: 0\n"
                  f"core id\t\t: {i % 2}\n\n" for i in range(4))
    d = report.machine_description(smt)
    assert d.startswith("Test CPU, 4 logical CPUs (2 cores)") and "4 cores" not in d
    # Without core ids (some VMs, other architectures): logical CPUs only.
    d = report.machine_description("processor\t: 0\nprocessor\t: 1\n")
    assert "2 logical CPUs," in d and "core" not in d

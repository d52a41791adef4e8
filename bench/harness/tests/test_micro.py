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

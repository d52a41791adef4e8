"""Statistics used by every benchmark family: medians, percentiles, ratios.

One module so that every table in canal is computed the same way."""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional, Sequence


def median(values: Iterable[float]) -> float:
    """Median of a non-empty sequence (mean of the two middle values for an
    even count). Raises ValueError on an empty sequence."""
    xs = sorted(values)
    if not xs:
        raise ValueError("median of an empty sequence")
    n = len(xs)
    mid = n // 2
    if n % 2:
        return float(xs[mid])
    return (xs[mid - 1] + xs[mid]) / 2.0


def percentile(values: Sequence[float], p: float) -> float:
    """p-th percentile (0..100) with linear interpolation between ranks."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile {p} outside 0..100")
    if len(xs) == 1:
        return float(xs[0])
    rank = (len(xs) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = math.ceil(rank)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r: Optional[float]) -> str:
    return "n/a" if r is None else f"{r:.2f}"


def fmt_seconds(s: Optional[float]) -> str:
    if s is None:
        return "n/a"
    if s >= 10:
        return f"{s:.1f}"
    if s >= 1:
        return f"{s:.2f}"
    return f"{s:.3f}"


def fmt_ns(ns: Optional[float]) -> str:
    if ns is None:
        return "n/a"
    if ns >= 100:
        return f"{ns:.0f}"
    return f"{ns:.1f}"


def argmin(values: Mapping[str, Optional[float]]) -> Optional[str]:
    """The key of the smallest value, ignoring None values; None when no
    value is present. Ties go to the first key in iteration order."""
    best: Optional[str] = None
    for k, v in values.items():
        if v is not None and (best is None or v < values[best]):
            best = k
    return best


# Sizing by time ---------------------------------------------------------------

def scaled_count(n: int, took: Optional[float], min_took: float, max_scale: int) -> int:
    """The count for a run whose n iterations took `took` (any unit, the
    same as min_took): n when it took min_took or more (or sizing is off:
    min_took <= 0; or took is None), else n scaled (a whole multiple)
    to take about min_took, at most max_scale n."""
    if min_took <= 0 or took is None or took >= min_took:
        return n
    return n * min(max_scale, math.ceil(min_took / max(took, 1e-9)))


def common_count(n: int, took: Iterable[float], min_took: float, max_scale: int,
                 max_slowest: float) -> int:
    """One count for every implementation of a cell, from the time each took
    with n iterations (its calibration): n scaled (a whole multiple of n)
    so that the fastest takes about min_took, at most max_scale n, and no
    further than the slowest taking max_slowest min_took; n when sizing is
    off, when nothing completed, or when the fastest took long enough.
    Every implementation of the cell then does the same work (sizing each
    alone compares different workloads); the chan and ipc families."""
    took = list(took)
    if min_took <= 0 or not took:
        return n
    want = scaled_count(n, min(took), min_took, max_scale) // n
    room = max(1, math.floor(max_slowest * min_took / max(max(took), 1e-9)))
    return n * max(1, min(want, room))


HANG_FACTOR = 10.0  # a run predicted to take t seconds is killed after this x t ...
HANG_FLOOR = 20.0   # ... but not under this many seconds (nor over its budget)


def run_timeout(budget: float, expected: Optional[float] = None, hung: bool = False) -> float:
    """Seconds one run may take before it is deemed hung and killed (the
    chan and ipc families). budget: the most it may ever take, from its
    size alone (a generous time per iteration, with a floor). Once a run
    of the same program on the same cell has completed, `expected` is
    what that predicts for this one (its time, scaled to this count): the
    run gets HANG_FACTOR times that, at least HANG_FLOOR s, at most budget;
    if the program has only ever hung there (`hung`), HANG_FLOOR s. A hang
    then costs seconds, not minutes."""
    floor = min(HANG_FLOOR, budget)
    if expected is None:
        return floor if hung else budget
    return min(budget, max(floor, HANG_FACTOR * expected))


# Spread of repetitions ------------------------------------------------------

UNSTABLE_FACTOR = 3.0
"""Repetitions whose largest value is more than this times the smallest are
flagged "unstable": their median says little."""


class Spread:
    """min, median and max of the repetitions of one cell."""

    __slots__ = ("lo", "median", "hi", "n")

    def __init__(self, values: Iterable[float]):
        xs = sorted(float(v) for v in values)
        if not xs:
            raise ValueError("spread of an empty sequence")
        self.lo, self.hi, self.n = xs[0], xs[-1], len(xs)
        self.median = median(xs)

    @property
    def unstable(self) -> bool:
        return is_unstable([self.lo, self.hi])

    def __repr__(self) -> str:
        return f"Spread({self.lo}, {self.median}, {self.hi}, n={self.n})"


def spread(values: Iterable[float]) -> Spread:
    return Spread(values)


def is_unstable(values: Iterable[float], factor: float = UNSTABLE_FACTOR) -> bool:
    """True when the repetitions differ by more than factor (max > factor *
    min). Zero or negative values are compared by absolute difference from
    zero: a cell with a 0 and a positive value is unstable."""
    xs = [float(v) for v in values]
    if len(xs) < 2:
        return False
    lo, hi = min(xs), max(xs)
    if lo <= 0:
        return hi > 0 and lo != hi
    return hi > factor * lo


def fmt_spread(values: Sequence[float], fmt=None, unstable_word: str = "unstable") -> str:
    """"median (min-max)" of the repetitions, with ", unstable" when they
    differ by more than UNSTABLE_FACTOR; just the value for one repetition."""
    fmt = fmt or (lambda x: f"{x:.3g}")
    s = Spread(values)
    if s.n == 1:
        return fmt(s.median)
    text = f"{fmt(s.median)} ({fmt(s.lo)}-{fmt(s.hi)})"
    return text + (f" {unstable_word}" if s.unstable else "")


def ratio_spread(a: Sequence[float], b: Sequence[float]) -> Optional[Spread]:
    """Spread of a / b over the repetitions: pairwise when both have the same
    number of repetitions (interleaved runs: repetition i of a beside
    repetition i of b), else over every pair. None when b has a zero."""
    if not a or not b or any(x == 0 for x in b):
        return None
    if len(a) == len(b):
        rs = [x / y for x, y in zip(a, b)]
    else:
        rs = [x / y for x in a for y in b]
    return Spread(rs)

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

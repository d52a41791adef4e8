#!/usr/bin/env python3
"""Set two results directories side by side: `make bench-compare A B`
(before and after a change). Reads each directory's summary.json (written
by run.py) and prints, per headline workload present in either, canal's
median and its ratio to the peer in A and in B (each with why not, or
"unstable"), the change of canal's median from A to B, and the verdict
of each. Also lists the files each directory has.

Usage: compare.py results/<stamp-A> results/<stamp-B> [--markdown]"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from canal_bench import report, stats  # noqa: E402

Key = Tuple[str, str]


def load(d: str) -> Tuple[dict, Dict[Key, report.Headline]]:
    path = os.path.join(d, "summary.json")
    if not os.path.exists(path):
        raise SystemExit(f"compare: {path} not found (a results directory of run.py "
                         f"writes it; runs before this summary existed have none)")
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for h in data.get("headlines", []):
        fields = {k: h[k] for k in ("family", "workload", "canal", "peer_name", "peer",
                                    "unit", "target", "higher_is_better", "note")}
        # What the verdict must say (canal's or the peer's failed requests,
        # a peer that failed): summaries before these fields have none.
        fields.update({k: h.get(k, "") for k in ("errors", "peer_errors", "caveat")})
        rows[(h["family"], h["workload"])] = report.Headline(**fields)
    return data, rows


def _median(xs: List[float]) -> Optional[float]:
    return stats.median(xs) if xs else None


def figure(h: Optional[report.Headline], median: Optional[float], absent: str = "") -> str:
    """canal's median in one run, with its failed requests when it had any
    (a rate of errors is no rate), or "—" (with absent, why the row is
    not there: "family failed in B")."""
    if h is None:
        return f"— ({absent})" if absent else "—"
    if median is None:  # not measured there: why (the summary's words)
        return "— (not measured" + (f": {h.note}" if h.note else "") + ")"
    return f"{report._g(median)} {h.unit}" + (f" (errors: {h.errors})" if h.errors else "")


def versus(h: Optional[report.Headline], absent: str = "") -> str:
    """canal against the peer in one run (the summary's "canal is"), with
    "(unstable)" when that run's repetitions differ by more than
    stats.UNSTABLE_FACTOR; why there is none ("— (not measured)", "— (no
    peer figure)", "— (family failed in A)")."""
    if h is None:
        return f"— ({absent})" if absent else "—"
    if not h.canal:
        return "— (not measured)"
    if h.peer_name is not None and not h.peer:
        return "— (no peer figure)"
    return h.comparison() + (" (unstable)" if h.unstable else "")


def change(a: Optional[float], b: Optional[float], higher_is_better: bool,
           unstable: bool = False) -> str:
    """"1.25x faster" / "1.10x slower" from a to b, or "—"; unstable: the
    repetitions of either side differed by more than stats.UNSTABLE_FACTOR,
    said beside it ("1.25x faster (unstable)"): two medians alone."""
    if not a or not b:
        return "—"
    r = b / a if higher_is_better else a / b
    if abs(r - 1) < 0.005:
        text = "same"
    else:
        text = f"{r:.3g}x faster" if r > 1 else f"{1 / r:.3g}x slower"
    return text + (" (unstable)" if unstable else "")


def gone(meta: dict, family: str, side: str) -> str:
    """Why a family's rows may be absent from one side's summary.json
    ("family failed in B", "family interrupted in A", "family not run in
    B"), or ""."""
    if family in meta.get("failed", ()):
        return f"family failed in {side}"
    if family == meta.get("interrupted"):
        return f"family interrupted in {side}"
    if family in meta.get("not_run", ()):
        return f"family not run in {side}"
    return ""


def compare(a_dir: str, b_dir: str) -> Tuple[List[str], List[List[str]]]:
    (ma, ra), (mb, rb) = load(a_dir), load(b_dir)
    keys = list(ra) + [k for k in rb if k not in ra]
    rows = []
    for k in keys:
        ha, hb = ra.get(k), rb.get(k)
        any_h = ha or hb
        unit = any_h.unit
        ca = _median(ha.canal) if ha else None
        cb = _median(hb.canal) if hb else None
        # A row absent from one side because its family failed there, or
        # an interrupt cut that run short.
        gone_a, gone_b = gone(ma, k[0], "A"), gone(mb, k[0], "B")
        rows.append([k[0], k[1], figure(ha, ca, gone_a), figure(hb, cb, gone_b),
                     # A figure of failed requests is no speed to compare.
                     ("— (errors in " + " and ".join(n for n, h in (("A", ha), ("B", hb))
                                                      if h and h.errors) + ")"
                      if (ha and ha.errors) or (hb and hb.errors)
                      else change(ca, cb, any_h.higher_is_better,
                                  # canal's medians: its own repetitions
                                  any(stats.is_unstable(h.canal) for h in (ha, hb) if h))),
                     versus(ha, gone_a), versus(hb, gone_b),
                     ha.verdict if ha else (gone_a or "—"),
                     hb.verdict if hb else (gone_b or "—")])
    header = ["family", "workload", "canal in A", "canal in B", "B against A",
              "A: canal vs peer", "B: canal vs peer", "A: verdict", "B: verdict"]
    intro = [f"A: {a_dir} (canal {ma.get('revision', '?')}, {ma.get('machine', '?')})",
             f"B: {b_dir} (canal {mb.get('revision', '?')}, {mb.get('machine', '?')})"]
    if ma.get("machine") != mb.get("machine"):
        intro.append("WARNING: the two runs are from different machines: compare ratios, "
                     "not figures.")
    return intro, [header] + rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = ap.parse_args(argv)
    intro, table = compare(args.a, args.b)
    print("\n".join(intro) + "\n")
    if args.markdown:
        print(report.markdown_table(table[0], table[1:]), end="")
    else:
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        for j, r in enumerate(table):
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if j == 0:
                print("  ".join("-" * w for w in widths))
    for d in (args.a, args.b):
        files = sorted(f for f in os.listdir(d) if not f.endswith(".log"))
        print(f"\n{d}: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

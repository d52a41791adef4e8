#!/usr/bin/env python3
"""Plots for docs/BENCHMARKS.md, drawn from the tables already in
docs/results/ (no new measurement): the seed's fwd full matrix (threads,
as many writers as readers) and canal / best peer on the channel grid.

Usage: .venv/bin/python3 scripts/doc-plots.py   (needs matplotlib)
Writes docs/results/seed-fwd-equal-threads.png and docs/results/chan-ratios.png."""
from __future__ import annotations

import os
import re
import sys
from typing import Dict, List

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "results")


def table_after(text: str, marker: str) -> List[List[str]]:
    """The first Markdown table after the line containing marker."""
    lines = text[text.index(marker):].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))
    rows = []
    for l in lines[start:]:
        if not l.startswith("|"):
            break
        rows.append([c.strip() for c in l.strip().strip("|").split("|")])
    return [rows[0]] + rows[2:]


def save(fig, name: str) -> str:
    path = os.path.join(DOCS, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def seed_plot() -> str:
    with open(os.path.join(DOCS, "seed.md")) as f:
        text = f.read()
    sec = text[text.index("## 4b."):]
    rows = table_after(sec, "as many writers as readers (threads)")
    xs = [int(c.split("/")[0]) for c in rows[0][1:]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for row in rows[1:]:
        name = row[0].replace(" (real / sys)", "")
        if name not in ("canal", "canal-batch", "pipe", "socket", "go", "floor"):
            continue
        ys = [float(c.split("/")[0]) if re.match(r"^[0-9.]+ /", c) else float("nan")
              for c in row[1:]]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("writers = readers (threads)")
    ax.set_ylabel("median real time of 8 runs (s)")
    ax.set_title("fwd, full matrix, as many writers as readers (Intel Xeon host, 2 vCPUs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, "seed-fwd-equal-threads.png")


def chan_plot() -> str:
    with open(os.path.join(DOCS, "chan.md")) as f:
        text = f.read()
    rows = table_after(text, "<!-- chan-full begin")
    col = rows[0].index("canal / best peer")
    ratios: Dict[str, float] = {}
    for row in rows[1:]:
        wl = row[0]
        if re.search(r"_\d+B$", wl) or wl.startswith("unbounded") or row[col] == "n/a":
            continue
        ratios[wl] = float(row[col])
    fig, ax = plt.subplots(figsize=(10, 4.5))
    names = list(ratios)
    colors = ["tab:green" if ratios[n] <= 1.0 else "tab:red" for n in names]
    ax.bar(range(len(names)), [ratios[n] for n in names], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("canal / best peer (< 1: canal faster)")
    ax.set_title("Channel grid, 8-byte messages (AMD EPYC host, 5 repetitions, commit de2e498)")
    return save(fig, "chan-ratios.png")


def main() -> int:
    for p in (seed_plot(), chan_plot()):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

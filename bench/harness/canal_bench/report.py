"""Reporting shared by every benchmark family: results directory, Markdown
tables, CSV of raw runs, the machine description, optional plots."""
from __future__ import annotations

import csv
import datetime as _dt
import os
import platform
import subprocess
from typing import Dict, List, Optional, Sequence

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def results_dir(stamp: Optional[str] = None) -> str:
    """results/<timestamp>/, created. One directory per harness invocation;
    the timestamp is taken once per process so every family shares it."""
    global _STAMP
    if stamp is None:
        if _STAMP is None:
            _STAMP = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        stamp = _STAMP
    path = os.path.join(ROOT, "results", stamp)
    os.makedirs(path, exist_ok=True)
    return path


_STAMP: Optional[str] = None


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub Markdown table; cells are converted with str()."""
    out = ["| " + " | ".join(str(h) for h in header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    return "\n".join(out) + "\n"


def write_csv(path: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def machine_description() -> str:
    """One line describing this machine: CPU model, cores, memory, kernel."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}, Linux {platform.release()}"


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def git_revision() -> str:
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def progress(msg: str) -> None:
    print(f"  .. {msg}", flush=True)


def header_lines(title: str) -> List[str]:
    return [f"# {title}", "",
            f"Date: {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; "
            f"machine: {machine_description()}; canal {git_revision()}", ""]


Row = Dict[str, object]

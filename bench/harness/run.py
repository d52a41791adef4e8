#!/usr/bin/env python3
"""canal's benchmark entry point: `make bench` runs `run.py quick`,
`make bench-full` runs `run.py full`.

Each family is a module canal_bench/<family>.py with a function
run(build_dir: str, mode: str) -> str that runs its benchmarks, prints its
tables and returns the Markdown it wrote. Families run in the order below;
the first is canal's main job (the seed programs)."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from canal_bench import report  # noqa: E402

FAMILIES = ["seed", "chan", "ipc", "micro", "runtime"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("mode", choices=["quick", "full"])
    ap.add_argument("--build", default="build", help="CMake build directory")
    ap.add_argument("--only", action="append", choices=FAMILIES,
                    help="run only this family (repeatable)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    failed = []
    out = report.results_dir()
    print(f"canal benchmarks ({args.mode}); machine: {report.machine_description()}")
    print(f"results in {out}")
    for fam in args.only or FAMILIES:
        try:
            mod = importlib.import_module(f"canal_bench.{fam}")
        except ModuleNotFoundError:
            continue
        print(f"\n=== {fam} ===", flush=True)
        try:
            mod.run(build, args.mode)
        except Exception as e:  # report and go on with the other families
            print(f"FAILED: family {fam}: {e}", flush=True)
            failed.append(fam)
    if failed:
        print(f"\nfamilies that failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

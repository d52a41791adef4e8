#!/usr/bin/env python3
"""canal's benchmark entry point: `make bench` runs `run.py quick`,
`make bench-full` runs `run.py full`.

Each family is a module canal_bench/<family>.py with a function
run(build_dir: str, mode: str) -> str that runs its benchmarks and returns
the Markdown of its tables; it may call report.headline() for each of its
headline workloads to appear in the summary, e.g. with the repetitions of
canal and of the best peer:

    report.headline("web", "GET 1 KiB, 100 connections", canal_rps, "nginx",
                    nginx_rps, "requests/s", 1.0, higher_is_better=True)

and run its programs with runner.run (one Outcome: ok, failed, timeout,
skipped). Families run in the order below; the first is canal's main job
(the seed programs).

The screen shows each family's progress lines, then the summary: the host
(CPU model, CPUs, kernel) and canal against the best peer on each headline
workload. The tables go to
results/<timestamp>/: report.md (summary, tables, plots), report.html (the
same, offline), each family's own files, and <family>.log (all it printed).
A family that cannot be imported or that fails is an error (exit 1).
Ctrl-C or SIGTERM ends the run: the report is composed from the families
that finished, naming the one interrupted (chan reports the runs it
finished, marked interrupted) and those not run; exit 128 + the signal
(130 for Ctrl-C, 143 for SIGTERM)."""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from canal_bench import report  # noqa: E402

FAMILIES = ["seed", "chan", "ipc", "micro", "web", "engine", "runtime"]
FAMILIES.append("remote")  # issue 16: remote channels (canal_bench/remote.py)


class ProgressOnly:
    """A stdout that keeps everything in a log file and lets only progress
    lines (report.progress: "  .. ") and errors through to the screen."""

    SHOWN = ("  .. ", "FAILED", "ERROR", "SKIPPED", "WARNING")

    def __init__(self, log, screen):
        self.log, self.screen, self.pending = log, screen, ""

    def write(self, s: str) -> int:
        self.log.write(s)
        self.pending += s
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            if line.startswith(self.SHOWN):
                self.screen.write(line + "\n")
                self.screen.flush()
        return len(s)

    def flush(self) -> None:
        self.log.flush()
        self.screen.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["quick", "full"])
    ap.add_argument("--build", default="build", help="CMake build directory")
    ap.add_argument("--only", action="append", choices=FAMILIES,
                    help="run only this family (repeatable)")
    ap.add_argument("--verbose", action="store_true",
                    help="print the families' tables on the screen too")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    failed = []
    sections = []
    families = args.only or FAMILIES
    interrupted = ""      # the family an interrupt (Ctrl-C, SIGTERM) cut short
    not_run: list = []
    out = report.results_dir()
    # SIGTERM (a killed session, `timeout`) ends the run like Ctrl-C does;
    # the handler records which signal it was (the exit status).
    report.reset_interrupt()
    old = {s: signal.signal(s, report.on_interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"canal benchmarks ({args.mode}); machine: {report.machine_description()}")
        print(f"results in {out}")
        for i, fam in enumerate(families):
            try:
                print(f"\n=== {fam} ===", flush=True)
                run_family(fam, build, args, out, sections, failed)
            except KeyboardInterrupt:
                report.caught_interrupt()  # raised with no handler's record: Ctrl-C
            if report.interrupt_signal():
                # Interrupted during fam (which may have reported the runs
                # it finished, as chan does): stop here.
                interrupted, not_run = fam, list(families[i + 1:])
                break
        # From here an interrupt is only recorded: the report of the
        # families that finished must be written.
        for s in old:
            signal.signal(s, report.record_interrupt)
        said = report.interrupted_text(interrupted, not_run,
                                       any(f == interrupted for f, _ in sections))
        if said:
            print(f"\nINTERRUPTED: {said}", flush=True)
        md_path, html_path = report.compose(out, sections, failed=failed,
                                            interrupted=interrupted, not_run=not_run)
        # Every figure with its host: the summary is the screen people copy,
        # the machine line at the start has scrolled away.
        print(f"\n=== Summary: canal against the best peer ({args.mode} run) ===")
        print(f"Host: {report.machine_description()}; canal {report.git_revision()}\n")
        print(report.summary_text(), end="")
        print(f"\nTables and plots: {md_path}\n                  {html_path}")
        if said:
            print(f"\n{said}")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if failed:
        print(f"\nfamilies that failed: {', '.join(failed)}")
    if report.interrupt_signal():
        return 128 + report.interrupt_signal()
    return 1 if failed else 0


def run_family(fam: str, build: str, args: argparse.Namespace, out: str,
               sections: list, failed: list) -> None:
    """Run one family: its section appended to sections, or its name to
    failed when it cannot be imported or raises (an Exception: an
    interrupt is the caller's)."""
    try:
        mod = importlib.import_module(f"canal_bench.{fam}")
    except Exception:  # a family that cannot be imported is an error
        print(f"ERROR: family {fam} cannot be imported:\n{traceback.format_exc()}",
              flush=True)
        failed.append(fam)
        return
    log_path = os.path.join(out, f"{fam}.log")
    with open(log_path, "w") as log:
        screen = sys.stdout
        target = screen if args.verbose else ProgressOnly(log, screen)
        try:
            with contextlib.redirect_stdout(target):
                md = mod.run(build, args.mode)
            sections.append((fam, md or ""))
        except Exception:  # report and go on with the other families
            tb = traceback.format_exc()
            log.write(tb)
            print(f"FAILED: family {fam}: {tb.strip().splitlines()[-1]} "
                  f"(traceback in {log_path})", flush=True)
            failed.append(fam)


if __name__ == "__main__":
    sys.exit(main())

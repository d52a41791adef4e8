"""Running one benchmark program: the one way every family does it.

run(argv, timeout) starts the program in its own process group (killed as a
whole on timeout, with whatever it forked), captures its output, measures
its real time and its CPU time (rusage of the child and the grandchildren it
waited for), and returns an Outcome with exactly one of four statuses:

  ok       exited with 0 (and printed `expect_line`, and `parse` accepted
           its output, when those are given)
  failed   any other exit status, a signal, a missing `expect_line`, or an
           output `parse` rejected (ValueError)
  timeout  killed after `timeout` seconds (what it printed is kept)
  skipped  exited with 77 (EXIT_SKIPPED, bench/lib's BENCH_EXIT_SKIPPED):
           the program cannot run here; the reason is its "SKIPPED" line

A family supplies only its commands, its parser and its tables.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Callable, Mapping, Optional, Sequence

EXIT_SKIPPED = 77
STATUSES = ("ok", "failed", "timeout", "skipped")


@dataclasses.dataclass
class Outcome:
    status: str                   # one of STATUSES
    argv: Sequence[str] = ()
    exit: Optional[int] = None    # exit status, None when killed by a signal
    signal: Optional[int] = None  # the signal that ended it
    stdout: str = ""
    stderr: str = ""
    real: float = 0.0             # seconds, wall clock around the child
    user: float = 0.0             # seconds of CPU (rusage, with grandchildren)
    sys: float = 0.0
    note: str = ""                # why, when not ok
    value: Any = None             # what `parse` returned

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def exit_text(self) -> str:
        """"0", "77", "signal 9"."""
        return f"signal {self.signal}" if self.signal is not None else str(self.exit)


def skip_reason(stdout: str, default: str = "exit status 77") -> str:
    """The reason of a "SKIPPED: why" or "SKIPPED (why)" line, else default."""
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("SKIPPED"):
            rest = line[len("SKIPPED"):].strip().lstrip(":").strip()
            if rest.startswith("(") and rest.endswith(")"):
                rest = rest[1:-1]
            return rest or default
    return default


def classify(exit_code: Optional[int], term_signal: Optional[int], timed_out: bool,
             stdout: str, stderr: str, expect_line: Optional[str] = None,
             skip_codes: Sequence[int] = (EXIT_SKIPPED,)) -> tuple:
    """(status, note) of a finished run. exit_code is None when the process
    was killed by term_signal."""
    if timed_out:
        return "timeout", "killed: timeout"
    if term_signal is not None:
        return "failed", f"killed by signal {term_signal}"
    if exit_code in skip_codes:
        return "skipped", skip_reason(stdout, f"exit status {exit_code}")
    if exit_code != 0:
        tail = stderr.strip().splitlines()[-1:] or [""]
        return "failed", f"exit status {exit_code}" + (f": {tail[0]}" if tail[0] else "")
    if expect_line is not None and expect_line not in [ln.strip() for ln in stdout.splitlines()]:
        return "failed", f"no '{expect_line}' line"
    return "ok", ""


def run(argv: Sequence[str], timeout: float, *,
        expect_line: Optional[str] = None,
        parse: Optional[Callable[[str], Any]] = None,
        stdout_path: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        skip_codes: Sequence[int] = (EXIT_SKIPPED,)) -> Outcome:
    """Run argv once (see the module's text). stdout goes to stdout_path when
    given (a program whose output is the data, like cat), else it is
    captured. A program that cannot be started is "failed"."""
    argv = [str(a) for a in argv]
    with tempfile.TemporaryFile() as err_f, tempfile.TemporaryFile() as tmp_out:
        out_f = open(stdout_path, "wb") if stdout_path else tmp_out
        timed_out = threading.Event()
        try:
            t0 = time.monotonic()
            try:
                proc = subprocess.Popen(argv, stdout=out_f, stderr=err_f,
                                        stdin=subprocess.DEVNULL, start_new_session=True,
                                        env=None if env is None else dict(env), cwd=cwd)
            except OSError as e:
                return Outcome("failed", argv, note=f"cannot run {argv[0]}: {e.strerror}")
            timer = None
            try:
                def kill() -> None:
                    timed_out.set()
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

                timer = threading.Timer(timeout, kill)
                timer.start()
                _, status, ru = os.wait4(proc.pid, 0)
            except BaseException:
                # An interrupt (Ctrl-C, SIGTERM: KeyboardInterrupt) while it
                # runs: in its own session the terminal's SIGINT does not
                # reach it, and the harness goes on to its report: kill
                # the group and reap it, then let the interrupt go on.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    os.waitpid(proc.pid, 0)
                except ChildProcessError:  # already reaped
                    pass
                raise
            finally:
                if timer is not None:
                    timer.cancel()
            real = time.monotonic() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            # Leftover grandchildren of a failed process variant: kill them.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        finally:
            if stdout_path:
                out_f.close()
        err_f.seek(0)
        stderr = err_f.read().decode(errors="replace")
        stdout = ""
        if not stdout_path:
            tmp_out.seek(0)
            stdout = tmp_out.read().decode(errors="replace")
    code = signo = None
    if os.WIFSIGNALED(status):
        signo = os.WTERMSIG(status)
    else:
        code = os.WEXITSTATUS(status)
    st, note = classify(code, signo, timed_out.is_set(), stdout, stderr, expect_line,
                        skip_codes)
    out = Outcome(st, argv, code, signo, stdout, stderr, real, ru.ru_utime, ru.ru_stime, note)
    if parse is not None and st in ("ok", "timeout"):
        try:
            out.value = parse(stdout)
        except ValueError as e:
            if st == "ok":
                out.status, out.note = "failed", f"unparsable output: {e}"
    return out

"""The one runner of every family (canal_bench.runner): statuses, timeout,
skipped programs, parsing, process groups. Runs tiny shell commands."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import runner  # noqa: E402


def test_ok_with_output_and_times():
    o = runner.run(["sh", "-c", "echo hello; echo oops >&2"], 10)
    assert o.status == "ok" and o.ok and o.exit == 0 and o.signal is None
    assert o.stdout == "hello\n" and o.stderr == "oops\n"
    assert o.real >= 0 and o.user >= 0 and o.sys >= 0 and o.exit_text == "0"


def test_failed_exit_status_carries_the_last_stderr_line():
    o = runner.run(["sh", "-c", "echo first >&2; echo boom >&2; exit 3"], 10)
    assert o.status == "failed" and o.exit == 3 and o.note == "exit status 3: boom"


def test_signal_is_failed():
    o = runner.run(["sh", "-c", "kill -9 $$"], 10)
    assert o.status == "failed" and o.signal == 9 and o.exit_text == "signal 9"


def test_timeout_kills_the_whole_group_and_keeps_the_output():
    t0 = time.monotonic()
    o = runner.run(["sh", "-c", "echo partial; sleep 30 & sleep 30; wait"], 0.3)
    assert o.status == "timeout" and "timeout" in o.note
    assert o.stdout == "partial\n"
    assert time.monotonic() - t0 < 10   # the background sleep was killed too


def test_skipped_with_reason():
    o = runner.run(["sh", "-c", "echo 'SKIPPED: no io_uring'; exit 77"], 10)
    assert o.status == "skipped" and o.note == "no io_uring"
    o = runner.run(["sh", "-c", "echo 'SKIPPED (no peer)'; exit 78"], 10, skip_codes=(77, 78))
    assert o.status == "skipped" and o.note == "no peer"
    assert runner.run(["sh", "-c", "exit 78"], 10).status == "failed"


def test_expect_line():
    assert runner.run(["sh", "-c", "echo End of program"], 10,
                      expect_line="End of program").ok
    o = runner.run(["sh", "-c", "echo End"], 10, expect_line="End of program")
    assert o.status == "failed" and "End of program" in o.note


def test_parse_value_and_rejection():
    o = runner.run(["sh", "-c", "echo 42"], 10, parse=lambda s: int(s))
    assert o.ok and o.value == 42
    o = runner.run(["sh", "-c", "echo x"], 10, parse=lambda s: int(s))
    assert o.status == "failed" and "unparsable" in o.note


def test_missing_program_is_failed_not_an_exception(tmp_path):
    o = runner.run([str(tmp_path / "nope")], 10)
    assert o.status == "failed" and "cannot run" in o.note


def test_stdout_to_a_file(tmp_path):
    path = tmp_path / "out"
    o = runner.run(["sh", "-c", "echo data"], 10, stdout_path=str(path))
    assert o.ok and o.stdout == "" and path.read_text() == "data\n"


def test_statuses_are_the_four():
    assert runner.STATUSES == ("ok", "failed", "timeout", "skipped")


def test_an_interrupt_kills_and_reaps_the_program(tmp_path):
    """Ctrl-C or SIGTERM (KeyboardInterrupt) while a program runs must not
    leave it running: it is in its own session, so the terminal's SIGINT
    never reaches it, and run.py now goes on to write the report. The
    program's group is killed and reaped, then the interrupt goes on.
    (Failed before the fix: the timer was cancelled and the program,
    here a 30 s sleep, kept running.) The interrupt is sent once run() is
    in its wait for the program (the main thread asleep in do_wait), not
    by the program itself: that raced with Popen, which returns only once
    the program has started (under load the interrupt came before)."""
    import signal
    import threading
    pidfile = tmp_path / "pid"
    main = threading.main_thread()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    def send_when_waiting():
        wchan = f"/proc/self/task/{main.native_id}/wchan"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if pidfile.read_text().strip() and open(wchan).read() == "do_wait":
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        signal.pthread_kill(main.ident, signal.SIGUSR1)
    old = signal.signal(signal.SIGUSR1, interrupt)
    pid = None
    sender = threading.Thread(target=send_when_waiting)
    try:
        sender.start()
        try:
            runner.run(["sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"], 60)
            raise AssertionError("the interrupt did not reach run()")
        except KeyboardInterrupt:
            pass
        sender.join()
        pid = int(pidfile.read_text())
        # Killed and reaped: no such process (a zombie would still be one).
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive
    finally:
        signal.signal(signal.SIGUSR1, old)
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

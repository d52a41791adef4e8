"""Unit tests of the web harness (canal_bench/web.py): wrk's and ab's
output parsers, percentiles, error text, tables, nginx's configuration,
the CPU accounting. No server or client is run (the outputs below are real
ones, trimmed); the CPU accounting's test runs a shell and a Python child."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from canal_bench import web  # noqa: E402

WRK = """\
Running 1s test @ http://127.0.0.1:38415/page.html
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    96.27us   72.63us   1.09ms   77.11%
    Req/Sec    95.32k    14.33k  109.33k    80.00%
  94575 requests in 1.00s, 102.91MB read
Requests/sec:  94501.95
Transfer/sec:    102.83MB
CANAL_WRK requests=94575 duration_us=1000773 connect=0 read=0 write=0 status=0 timeout=0 mean_us=96.3 p50_us=90 p99_us=347 p999_us=797 max_us=1089
"""

WRK_ERRORS = """\
  Socket errors: connect 3, read 11385, write 2, timeout 7
Requests/sec:  39105.98
CANAL_WRK requests=39106 duration_us=2000000 connect=3 read=11385 write=2 status=5 timeout=7 mean_us=1500.0 p50_us=1000 p99_us=9000 p999_us=20000 max_us=30000
"""

AB = """\
Server Software:        canal
Document Path:          /page.html
Document Length:        1023 bytes

Concurrency Level:      10
Time taken for tests:   0.087 seconds
Complete requests:      2000
Failed requests:        0
Total transferred:      2320000 bytes
Requests per second:    22967.39 [#/sec] (mean)
Time per request:       0.435 [ms] (mean)
Time per request:       0.044 [ms] (mean, across all concurrent requests)
"""

AB_FAILED = """\
Complete requests:      20000
Failed requests:        12
   (Connect: 1, Receive: 2, Length: 4, Exceptions: 5)
Non-2xx responses:      200
Requests per second:    26788.11 [#/sec] (mean)
Time per request:       37.330 [ms] (mean)
Time per request:       0.037 [ms] (mean, across all concurrent requests)
"""

GNUPLOT = ("starttime\tseconds\tctime\tdtime\tttime\twait\n"
           + "".join(f"Mon Nov 23 18:00:51 2026\t1795456851\t0\t{t}\t{t}\t0\n"
                     for t in range(1, 1001)))


def test_parse_wrk():
    r = web.parse_wrk(WRK)
    assert r["requests"] == 94575
    assert r["rps"] == pytest.approx(94575 / 1.000773)
    assert r["mean_ms"] == pytest.approx(0.0963)
    assert (r["p50_ms"], r["p99_ms"], r["p999_ms"]) == pytest.approx((0.090, 0.347, 0.797))
    assert r["errors"] == {"connect": 0, "read": 0, "write": 0, "timeout": 0, "non2xx": 0}


def test_parse_wrk_errors():
    r = web.parse_wrk(WRK_ERRORS)
    assert r["errors"] == {"connect": 3, "read": 11385, "write": 2, "timeout": 7, "non2xx": 5}
    assert r["rps"] == pytest.approx(39106 / 2.0)


def test_parse_wrk_without_script_line():
    with pytest.raises(ValueError):
        web.parse_wrk("Requests/sec:  94501.95\n")


def test_parse_ab():
    r = web.parse_ab(AB)
    assert r["rps"] == pytest.approx(22967.39)
    assert r["mean_ms"] == pytest.approx(0.435)  # per request, not across all
    assert r["requests"] == 2000 and r["failed"] == 0
    assert all(v == 0 for v in r["errors"].values())


def test_parse_ab_failures():
    r = web.parse_ab(AB_FAILED)
    assert r["failed"] == 12
    assert r["errors"] == {"connect": 1, "read": 2, "length": 4, "exceptions": 5, "non2xx": 200}
    assert r["mean_ms"] == pytest.approx(37.33)


def test_parse_ab_unfinished():
    with pytest.raises(ValueError):
        web.parse_ab("apr_socket_recv: Connection reset by peer (104)\nTotal of 17 requests completed\n")


def test_gnuplot_and_percentiles():
    times = sorted(web.parse_ab_gnuplot(GNUPLOT))
    assert len(times) == 1000
    assert web.percentile(times, 50) == 500
    assert web.percentile(times, 99) == 990
    assert web.percentile(times, 99.9) == 999
    assert web.percentile(times, 100) == 1000
    assert web.percentile([], 50) is None


def test_errors_text():
    assert web.errors_text({"connect": 0, "read": 0}) == "0"
    assert web.errors_text({"read": 3, "timeout": 1, "connect": 0}) == "read 3, timeout 1"


def test_table_rows_medians_and_failures():
    runs = [web.Run("wrk", "epoll", 10, i, True, rps=float(x), mean_ms=1.0 * i, p50_ms=1.0,
                    p99_ms=2.0, p999_ms=3.0, errors={"read": 1})
            for i, x in enumerate((100, 300, 200))]
    runs.append(web.Run("wrk", "nginx", 10, 0, False, note="nginx exited"))
    runs[0].client_cpu, runs[1].client_cpu = 0.5, 0.9
    runs[2].server_us = 12.34
    rows = web.table_rows(runs, "wrk", ["epoll", "nginx"], [10])
    assert rows[0][:4] == ["epoll", "10", "200 (100-300)", "1.00"]
    assert rows[0][7:9] == ["70 %", "12.3"]  # medians of what was measured
    assert rows[0][-1] == "read 3"
    assert rows[1][2] == "FAILED" and rows[1][-1] == "nginx exited"
    assert all(len(r) == len(web.TABLE_HEADER) for r in rows)


def test_headlines_p99_against_nginx_first_placement_only():
    from canal_bench import report
    report.reset_headlines()
    runs = []
    for place, slow in (("one CPU", 1.0), ("both CPUs", 100.0)):
        for c in (10, 100, 1000):
            for server, p99 in (("uring", 0.5), ("tasks", 2.0), ("nginx", 1.0)):
                runs.append(web.Run("wrk", server, c, 0, True, rps=1000.0, p99_ms=p99 * slow,
                                    server_us=5.0, placement=place))
    web.headlines(runs)
    rows = {h.workload: h for h in report.HEADLINES}
    report.reset_headlines()
    # smallest and largest concurrency, both servers, against nginx, lower is better
    for c in (10, 1000):
        u, t = rows[f"uring, p99 response time, wrk c={c}"], rows[f"tasks, p99 response time, wrk c={c}"]
        assert u.peer_name == "nginx" and u.unit == "ms" and u.target == 1.0
        assert u.ratio == pytest.approx(0.5) and u.met is True
        assert t.ratio == pytest.approx(2.0) and t.met is False
    assert "uring, p99 response time, wrk c=100" not in rows
    assert not any("load" in k for k in rows)  # no fixed-rate runs, no rows
    # the second placement's runs (100x slower here) are not mixed in
    assert rows["uring, p99 response time, wrk c=10"].canal == [0.5]


def test_headlines_p99_at_fixed_rate():
    # canal's load generator at a fixed rate: p99 of uring and tasks against
    # nginx's at every concurrency it ran, medians of the repetitions.
    from canal_bench import report
    report.reset_headlines()
    runs = [web.Run("load", server, c, rep, True, rps=20000.0, p99_ms=p99 * (1 + rep),
                    placement="one CPU")
            for c in (100, 1000) for rep in range(3)
            for server, p99 in (("uring", 0.2), ("tasks", 0.3), ("nginx", 0.25))]
    web.headlines(runs)
    rows = {h.workload: h for h in report.HEADLINES}
    report.reset_headlines()
    for c in (100, 1000):
        u = rows[f"uring, p99 response time, fixed rate, load c={c}"]
        t = rows[f"tasks, p99 response time, fixed rate, load c={c}"]
        assert u.peer_name == "nginx" and u.unit == "ms" and u.target == 1.0
        assert u.ratio == pytest.approx(0.8) and u.met is True
        assert t.ratio == pytest.approx(1.2) and t.met is False
    assert not any("wrk" in k for k in rows)


def test_parse_stat_cpu_ticks():
    # The command name may hold spaces and parentheses (proc(5)).
    line = "4711 (a) b (c) S 1 4711 4711 0 -1 4194560 100 0 0 0 17 5 0 0 20 0 1 0 99 0 0"
    assert web.parse_stat_cpu_ticks(line) == 22
    with open("/proc/self/stat") as f:
        assert web.parse_stat_cpu_ticks(f.read()) >= 0


def test_tree_cpu_counts_descendants():
    # A shell that only waits, over a child that burns 0.3 s of CPU: the
    # tree's CPU time is the child's; a gone process has none.
    burn = ("import time,sys\n"
            "while time.process_time() < 0.3: pass\n"
            "print('done', flush=True); time.sleep(30)")
    sh = subprocess.Popen(["sh", "-c", f'{sys.executable} -c "{burn}" & wait'],
                          stdout=subprocess.PIPE, text=True)
    try:
        assert sh.stdout.readline().strip() == "done"
        # /proc counts in clock ticks (10 ms), utime and stime each rounded
        # down; the shell alone has used next to nothing.
        assert web.tree_cpu_s(sh.pid) >= 0.25
    finally:
        for c in web._children(sh.pid):
            os.kill(c, signal.SIGKILL)
        sh.wait()
    assert web.tree_cpu_s(sh.pid) is None


def test_cpu_shares():
    assert web.cpu_shares(4.0, 8.0, 2.0, 400000) == (0.5, 5.0)
    assert web.cpu_shares(1.0, 0.0, None, 10) == (None, None)
    assert web.cpu_shares(1.0, 2.0, 3.0, 0) == (0.5, None)


def test_nginx_conf_is_what_users_write():
    conf = web.nginx_conf(8080, "/srv/www", "/tmp/p", 2)
    for line in ("worker_processes 2;", "access_log off;", "sendfile on;", "tcp_nopush on;",
                 "keepalive_timeout 65;", "listen 127.0.0.1:8080", "root /srv/www;",
                 "daemon off;"):
        assert line in conf


LOAD = ("CANAL_LOAD requests=5000 ok=4990 duration_s=1.001 rps=4985.0 mean_us=795.5 p50_us=640 "
        "p99_us=4941 p999_us=12365 max_us=13259 connect=1 read=2 timeout=3 non2xx=4 "
        "max_inflight=50 late_p50_us=12 late_p99_us=70\n")


def test_parse_load():
    r = web.parse_load(LOAD)
    assert r["requests"] == 5000 and r["rps"] == pytest.approx(4985.0)
    assert (r["mean_ms"], r["p50_ms"], r["p99_ms"], r["p999_ms"]) == pytest.approx(
        (0.7955, 0.640, 4.941, 12.365))
    assert r["errors"] == {"connect": 1, "read": 2, "timeout": 3, "non2xx": 4}
    with pytest.raises(ValueError):
        web.parse_load("usage: load ...\n")


def test_load_csv_and_inflight():
    csv = ("intended_ns,start_ns,done_ns,status,error\n"
           "0,0,2000000,200,0\n"
           "1000000,1000000,3000000,200,0\n"
           "5000000,5000000,6000000,0,2\n")
    rows = web.parse_load_csv(csv)
    assert rows == [(0.002, 2.0, 0), (0.003, 2.0, 0), (0.006, 1.0, 2)]
    inf = web.inflight_series(rows)
    assert max(n for _, n in inf) == 2
    assert inf[-1][1] == 0


def test_wrk_without_any_response_has_no_latency():
    text = ("CANAL_WRK requests=0 duration_us=5000000 connect=0 read=0 write=0 status=0 "
            "timeout=0 mean_us=0.0 p50_us=0 p99_us=0 p999_us=0 max_us=0\n")
    r = web.parse_wrk(text)
    assert r["rps"] == 0
    run = web.Run("wrk", "threads", 1000, 0, True, rps=r["rps"], mean_ms=r["mean_ms"],
                  p50_ms=r["p50_ms"], p99_ms=r["p99_ms"], p999_ms=r["p999_ms"])
    row = web.table_rows([run], "wrk", ["threads"], [1000])[0]
    assert row[2] == "0" and row[3:7] == ["-", "-", "-", "-"]


def test_summary_repeats():
    cfg = dict(web.QUICK)
    tools = ["wrk", "ab", "load"]
    assert web.summary_cells(cfg, tools) == [("wrk", 10), ("wrk", 1000), ("ab", 1000),
                                             ("load", 100)]
    got = web.summary_repeats(cfg, ["threads", "uring", "tasks", "nginx", "go"], tools)
    # quick: the three summary servers twice more in each summary cell,
    # interleaved server by server, a whole round before the next
    three = ["uring", "tasks", "nginx"]
    want = [(t, rep, c, n) for rep in (1, 2) for t, c in web.summary_cells(cfg, tools)
            for n in three]
    assert got == want and len(got) == 24
    assert got[:4] == [("wrk", 1, 10, "uring"), ("wrk", 1, 10, "tasks"),
                       ("wrk", 1, 10, "nginx"), ("wrk", 1, 1000, "uring")]
    # a server that is not there is not run; nor is a tool that does not
    # (no load generator built)
    got = web.summary_repeats(cfg, ["uring", "tasks"], ["wrk", "ab"])
    assert {n for _, _, _, n in got} == {"uring", "tasks"}
    assert {t for t, _, _, _ in got} == {"wrk", "ab"} and len(got) == 12
    # full mode repeats every cell already
    assert web.summary_repeats(dict(web.FULL), ["uring", "tasks", "nginx"], tools) == []


def test_placements():
    assert [p[1:] for p in web.placements("quick", 2)] == [("0", "1", 1)]
    assert [p[1:] for p in web.placements("full", 2)] == [("0", "1", 1), ("0,1", "1", 2)]
    assert [p[1:] for p in web.placements("full", 1)] == [(None, None, 1)]


def test_headlines_do_not_hide_a_failed_run():
    """A server that failed in one run of a summary cell (it crashed, did not
    listen, the client failed) must not be judged on the median of the runs
    that did complete: the row says not measured and why, as the seed
    family does ("a time that hides a crash or a hang is worse than no
    time"); a run that completed without a figure (no response at all: wrk
    gives no latency, NaN) does not give the cell a median either. The table
    says how many runs failed. (Failed before the fix: the uring row was
    "met" on the two runs that completed; the NaN p99 of nginx made the
    median of [1.0, nan, 1.0] NaN, a row judged "MISSED" on no figure.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = []
    for rep in range(3):
        for server, rps, p99 in (("uring", 2000.0, 0.5), ("tasks", 1900.0, 0.5),
                                 ("nginx", 1000.0, 1.0)):
            ok = not (server == "uring" and rep == 1)
            if server == "nginx" and rep == 1:
                p99 = float("nan")  # no response in that run
            runs.append(web.Run("wrk", server, 1000, rep, ok, rps=rps if ok else None,
                                p99_ms=p99 if ok else None, server_us=5.0 if ok else None,
                                note="" if ok else "uring exited: segfault",
                                placement="one CPU"))
    web.headlines(runs)
    rows = {h.workload: h for h in report.HEADLINES}
    report.reset_headlines()
    u = rows["uring, wrk c=1000"]
    assert u.verdict == "not measured" and u.met is None
    assert "1 of 3" in u.values_text() and "segfault" in u.values_text()
    t = rows["tasks, wrk c=1000"]
    assert t.met is True and t.canal == [1900.0] * 3  # tasks' runs all completed
    p = rows["tasks, p99 response time, wrk c=1000"]
    assert p.verdict == "no peer figure" and p.met is None
    table = web.table_rows(runs, "wrk", ["uring"], [1000])
    assert "FAILED 1 of 3" in table[0][-1]


def test_headlines_do_not_judge_a_run_with_errors_on_its_rate():
    """Issue 14 requires zero errors: a server whose run had errors (connect,
    read, timeout, non-2xx from wrk, ab or canal's load generator) must not
    be judged "met" on its requests/s (a server that fails requests fast
    would win), and a verdict against a peer that had errors says so.
    (Failed before the fix: the uring row, 3 timeouts a run, was "met" at
    2x nginx, and nothing on the summary named an error.)"""
    from canal_bench import report
    report.reset_headlines()
    runs = []
    for rep in range(3):
        for server, rps, errs in (("uring", 2000.0, {"timeout": 3, "connect": 0}),
                                  ("tasks", 1900.0, {}),
                                  ("nginx", 1000.0, {})):
            runs.append(web.Run("wrk", server, 1000, rep, True, rps=rps, p99_ms=1.0,
                                server_us=5.0, errors=dict(errs), placement="one CPU"))
        # ab: canal clean, nginx with non-2xx responses
        for server, rps, errs in (("uring", 3000.0, {}), ("tasks", 3000.0, {}),
                                  ("nginx", 1000.0, {"non2xx": 7})):
            runs.append(web.Run("ab", server, 1000, rep, True, rps=rps, p99_ms=1.0,
                                errors=dict(errs), placement="one CPU"))
    web.headlines(runs)
    rows = {h.workload: h for h in report.HEADLINES}
    text = report.summary_text()
    report.reset_headlines()
    u = rows["uring, wrk c=1000"]
    assert u.met is False and "MISSED" in u.verdict and "error" in u.verdict
    assert "timeout 9" in u.values_text()          # summed over the 3 runs
    assert rows["tasks, wrk c=1000"].verdict == "met"   # tasks had none
    # tasks against io_uring: the peer failed requests, the verdict says so.
    assert "error" in rows["tasks vs io_uring server, wrk c=1000"].verdict
    a = rows["uring, ab c=1000"]
    assert "error" in a.verdict and "non2xx 21" in a.values_text()
    assert "timeout 9" in text and "non2xx 21" in text


def _one_run_with_stop(monkeypatch, stop_rc, name="uring"):
    """web.one_run with a fake server whose stop() returns stop_rc and a
    wrk that served 1000 requests without an error."""
    class FakeRunning:
        def __init__(self, srv, root, cpu):
            self.port = 1

        def cpu_s(self):
            return 0.0

        def stop(self):
            return stop_rc
    monkeypatch.setattr(web, "Running", FakeRunning)
    monkeypatch.setattr(web, "run_wrk", lambda *a: {
        "rps": 1000.0, "mean_ms": 1.0, "p50_ms": 1.0, "p99_ms": 2.0, "p999_ms": 3.0,
        "requests": 1000, "errors": {"connect": 0}})
    srv = web.Server(name, lambda *a: ["true"])
    return web.one_run("wrk", srv, 10, 0, "/", web.QUICK, (None, None))


def test_a_server_that_crashed_fails_its_run(monkeypatch):
    """canal's servers and Go's exit 0 on SIGTERM: a server that exits
    otherwise (killed by SIGSEGV: -11, an abort) crashed during or at the
    end of its run, and the run is failed (the summary's row is not
    measured, as for any crash), not a figure with a note nobody reads
    on the summary. (Failed before the fix: the run stayed ok, its
    requests/s judged; only the CSV's note said "server exit status -11".)"""
    r = _one_run_with_stop(monkeypatch, -11)
    assert r.ok is False and "server exit status -11" in r.note
    from canal_bench import report
    report.reset_headlines()
    runs = []
    for server in ("uring", "nginx"):
        x = _one_run_with_stop(monkeypatch, -11 if server == "uring" else 0, server)
        x.placement = "one CPU"
        runs.append(x)
    try:
        web.headlines(runs)
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    u = rows["uring, wrk c=10"]
    assert u.verdict == "not measured" and "server exit status -11" in u.values_text()


def test_a_server_that_ignored_sigterm_fails_its_run(monkeypatch):
    """A server still running 15 s after SIGTERM is killed (stop() returns
    None): a hang at the end of the run is a failed run, as a hang of the
    client is. (Failed before the fix: None counted as a clean exit.)"""
    r = _one_run_with_stop(monkeypatch, None)
    assert r.ok is False and "SIGTERM" in r.note
    assert _one_run_with_stop(monkeypatch, 0).ok is True

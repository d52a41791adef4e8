"""The engine family's parser, table and target checks."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from canal_bench import engine  # noqa: E402

OSU = """# OSU-style Latency Test (canal engine, driver shm, strategy default)
# Size  Latency (us)
1                       0.75
2                       0.55
1048576               123.40
"""


def test_parse_osu_table():
    assert engine.parse_osu(OSU) == {1: 0.75, 2: 0.55, 1048576: 123.4}


def test_parse_osu_ignores_rows_before_header_and_noise():
    text = "8 99.0\nwarning: something\n# Size  Bandwidth (MB/s)\n8 12.5\nnot a row 3\n"
    assert engine.parse_osu(text) == {8: 12.5}


def test_parse_osu_empty_without_header():
    assert engine.parse_osu("1 2.0\n2 3.0\n") == {}


def test_collect_and_table_median_spread():
    runs = [("canal shm", {8: 1.0}), ("canal shm", {8: 3.0}), ("canal shm", {8: 2.0}),
            ("Open MPI shm", {8: 0.5})]
    cells = engine.collect(runs)
    assert cells["canal shm"][8].median == 2.0
    t = engine.table(cells, ["canal shm", "Open MPI shm", "absent"])
    assert "| 8 B | 2.00 [1.00-3.00] | 0.50 |" in t
    assert "absent" not in t


def test_checks_verdicts():
    C = engine.Cell
    lat = {"canal shm": {8: C([0.30]), 1 << 20: C([100.0])}, "Open MPI shm": {8: C([0.29])},
           "raw shm": {8: C([0.20])}, "canal tcp": {8: C([6.0])}, "raw tcp": {8: C([5.0])}}
    rows = {r[0]: r for r in engine.checks(lat)}
    assert rows["shm latency at 8 B <= Open MPI shm"][2] == "MISSED"
    assert rows["overhead over raw shm at 8 B <= 0.15 us"][2] == "met"
    assert rows["tcp latency at 8 B <= 1.2 x raw tcp"][2] == "met"
    # sizes above 64 KiB are not held to the Open MPI latency target
    assert not any("1 MiB" in k for k in rows)


def test_commands_use_the_fixed_names():
    impls = {i.name: i for i in engine.implementations("latency")}
    cmd = engine.command("/b", impls["canal shm"], ["--max-size", "8"])
    assert cmd[:4] == ["/b/bin/canal-launch", "-n", "2", "/b/bench/engine/osu_latency"]
    assert cmd[4:6] == ["--driver", "shm"]
    mpi = engine.command("/b", impls["Open MPI shm"], [])
    assert "self,vader" in mpi and mpi[0] == "mpirun"
    assert "self,tcp" in engine.command("/b", impls["Open MPI tcp"], [])
    assert "raw shm" in impls and "ZeroMQ ipc" in impls
    assert "raw shm" not in {i.name for i in engine.implementations("bibw")}


def test_size_label():
    assert engine.size_label(1) == "1 B"
    assert engine.size_label(65536) == "64 KiB"
    assert engine.size_label(4 << 20) == "4 MiB"


def test_parse_seed_patterns():
    assert engine.parse_page("# Page requests (...)\nseries of 3 pages: 61.25 us\n") == 61.25
    assert engine.parse_page("garbage") is None
    assert engine.parse_page_bytes("# Page requests (3 pages of 66560 B; driver shm") == 66560
    assert engine.parse_page_bytes("garbage") is None
    C = engine.Cell
    cells = {"shm default": {1: C([1.0]), 10: C([4.0])},
             "shm aggregate": {1: C([0.9]), 10: C([1.0])},
             "tcp default": {1: C([2.0])}}
    assert engine.gains(cells, ("shm", "tcp"), [1, 10]) == [["shm", "10 %", "75 %"]]
    cells["tcp aggregate"] = {1: C([1.0])}
    assert engine.gains(cells, ("tcp",), [1, 10]) == [["tcp", "50 %", "-"]]
    mux = "# Two multiplexed flows\n# Packs  Latency (us)\n1    0.58\n1000   200.5\n"
    assert engine.parse_mux(mux) == {1: 0.58, 1000: 200.5}


def test_ucx_rows_and_target():
    impls = {i.name: i for i in engine.implementations("latency")}
    cmd = engine.command("/b", impls["canal ucx"], [])
    assert cmd[3:6] == ["/b/bench/engine/osu_latency", "--driver", "ucx"]
    pt = engine.command("/b", impls["ucx_perftest"], ["--max-size", "8"])
    assert pt[1].endswith("ucx_perftest_osu.py") and os.path.exists(pt[1])
    assert pt[2:4] == ["--test", "latency"]
    assert "ucx_perftest" not in {i.name for i in engine.implementations("bibw")}
    C = engine.Cell
    loop = engine.UCX_PERFTEST_LOOP
    rows = {r[0]: r for r in engine.checks({loop: {8: C([0.5]), 64: C([1.0])},
                                            "ucx_perftest": {8: C([0.48]), 64: C([0.5])}})}
    assert rows[f"{loop} latency at 8 B <= 1.1 x ucx_perftest"][2] == "met"
    assert rows[f"{loop} latency at 64 B <= 1.1 x ucx_perftest"][2] == "MISSED"
    # The osu loop's row never stands in for the perftest loop's.
    rows = {r[0]: r for r in engine.checks({"canal ucx": {8: C([0.5])},
                                            "ucx_perftest": {8: C([0.5])}})}
    assert rows[f"{loop} latency at 8 B <= 1.1 x ucx_perftest"][1:] == ["-", "not measured"]
    # The target is checked on the perftest loop's row alone (not on the
    # osu loop's, which would pass here).
    pl = engine.command("/b", impls[loop], [])
    assert pl[-2:] == ["--loop", "perftest"] and "ucx" in pl
    assert loop not in {i.name for i in engine.implementations("bw")}
    rows = {r[0]: r for r in engine.checks({"canal ucx": {8: C([0.5])},
                                            loop: {8: C([0.6])},
                                            "ucx_perftest": {8: C([0.5])}})}
    assert rows[f"{loop} latency at 8 B <= 1.1 x ucx_perftest"][2] == "MISSED"
    assert [r for r in rows if "ucx" in r] == [f"{loop} latency at 8 B <= 1.1 x ucx_perftest"]


def test_two_rails_row():
    impls = {i.name: i for i in engine.implementations("bw")}
    cmd = engine.command("/b", impls["canal tcp 2 rails"], [])
    assert cmd[:2] == ["env", "CANAL_ENGINE_BIND=127.0.0.1,127.0.0.1"]
    assert cmd[2] == "/b/bin/canal-launch" and "--driver" in cmd and "tcp" in cmd
    assert "canal tcp 2 rails" not in {i.name for i in engine.implementations("latency")}


def test_parse_overhead():
    text = "# Engine CPU cost\nengine 104.4 ns [103.1-123.6]  raw 13.1 ns [12.9-13.7]  overhead 91.3 ns\n"
    assert engine.parse_overhead(text) == (104.4, 13.1, 91.3)
    assert engine.parse_overhead("nothing") is None


def test_open_mpi_ucx_row():
    for test in ("latency", "bw", "bibw"):
        impls = {i.name: i for i in engine.implementations(test)}
        cmd = engine.command("/b", impls["Open MPI ucx"], [])
        assert cmd[0] == "mpirun" and "pml" in cmd and "ucx" in cmd
        assert cmd[-1].startswith("/b/bench/engine/mpi_osu_")


OVERLAP = """# canal engine overlap, driver tcp, compute sleep, progress thread
# Size  Comm (us)  Total (us)  Overlap (%)
1048576      215.16      297.79         61.6
4194304      724.53      806.66         88.7
"""


def test_parse_overlap():
    assert engine.parse_overlap(OVERLAP) == {1048576: (215.16, 297.79, 61.6),
                                             4194304: (724.53, 806.66, 88.7)}
    assert engine.parse_overlap("1048576 1 2 3\n") == {}


def test_parse_open():
    assert engine.parse_open("open_us 1167 ring_us 853 segments 2\n") == (1167.0, 853.0, 2)
    assert engine.parse_open("garbage") is None


def test_quick_ucx_latency_rows_keep_osu_counts():
    names = [i.name for i in engine.implementations("latency")]
    for name in names:
        quick = engine.size_args("latency", True, name)
        assert quick[:2] == ["--max-size", "65536"]
        if name in engine.UCX_ROWS:
            # OSU's counts (10 000 iterations up to 8 KiB): no override
            assert "--iterations" not in quick and "--warmup" not in quick
        else:
            assert quick[quick.index("--iterations") + 1] == "1000"
    # every UCX row of the target exists in the latency table
    assert set(engine.UCX_ROWS) <= set(names)
    # bandwidths and the full mode are unchanged
    bw = engine.size_args("bw", True, "canal ucx")
    assert bw[bw.index("--iterations") + 1] == "10"
    assert engine.size_args("latency", False, "canal ucx") == ["--max-size", str(4 << 20)]


def test_headlines_do_not_hide_a_failed_run(tmp_path, monkeypatch):
    """A run of canal's engine that failed (a crash, a timeout) must not
    leave the summary judging canal on the runs that survived: the row is
    "not measured", with why, as in the seed and web families (its table
    keeps the medians of what completed, and lists the failure). (Failed
    before the fix: the 8-byte shm row was "met" on 2 of 3 runs.)"""
    import subprocess
    from canal_bench import report
    build = tmp_path / "build"
    for rel in (engine.LAUNCH, f"{engine.OUT}/osu_latency", f"{engine.OUT}/mpi_osu_latency",
                f"{engine.OUT}/raw_latency"):
        p = build / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    seen = {"canal shm": 0}

    def fake_run(cmd, **kw):
        text = " ".join(str(c) for c in cmd)
        value = 1.0
        if "osu_latency --driver shm --strategy default" in text and "mpi_" not in text \
                and "--loop" not in text and "env" not in cmd[:1]:
            seen["canal shm"] += 1
            if seen["canal shm"] == 2:
                return subprocess.CompletedProcess(cmd, 1, "", "osu: crashed")
            value = 0.5
        out = "# Size  Latency (us)\n" + "".join(f"{s} {value}\n" for s in _asked_sizes(cmd))
        return subprocess.CompletedProcess(cmd, 0, out, "")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    monkeypatch.setattr(engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setenv("CANAL_ENGINE_REPS", "3")
    report.reset_headlines()
    try:
        engine.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert seen["canal shm"] == 3
    h = rows["shm one-way latency, 8 B"]
    assert h.verdict == "not measured" and h.met is None
    assert "1 of 3" in h.values_text()
    # canal tcp's runs all completed: judged as before.
    assert rows["tcp one-way latency, 8 B"].met is True


def test_targets_table_does_not_judge_a_failed_run():
    """The targets of issue 15 in engine.md must not be judged on the runs
    that survived when an implementation failed a run (the summary rows do
    not, report.failed_runs_note): the row is not measured, with why, and
    the table names the failed runs beside the medians. (Failed before the
    fix: canal shm "met" on 2 of 3 runs; the table showed plain medians.)"""
    cells = engine.collect([("canal shm", {8: 1.0}), ("Open MPI shm", {8: 2.0}),
                            ("canal shm", {8: 1.1}), ("Open MPI shm", {8: 2.0}),
                            ("Open MPI shm", {8: 2.0})])
    failed = {"canal shm": (1, 3), "Open MPI shm": (0, 3)}
    rows = {r[0]: r for r in engine.checks(cells, failed)}
    row = rows["shm latency at 8 B <= Open MPI shm"]
    assert row[2] == "not measured" and "canal shm FAILED in 1 of 3 runs" in row[1]
    assert "canal shm (FAILED 1 of 3)" in engine.table(cells, ["canal shm", "Open MPI shm"],
                                                       failed)
    # Without failures, judged as before.
    rows = {r[0]: r for r in engine.checks(cells, {"canal shm": (0, 2)})}
    assert rows["shm latency at 8 B <= Open MPI shm"][2] == "met"


def _asked_sizes(cmd):
    """The sizes an OSU program prints for its --max-size (1, 2, 4 ...);
    8 B, 1 KiB, 64 KiB for the other programs."""
    args = [str(c) for c in cmd]
    if "--max-size" not in args:
        return [8, 1024, 65536]
    top = int(args[args.index("--max-size") + 1])
    return [1 << k for k in range(top.bit_length()) if 1 << k <= top]


def _fake_build(tmp_path, *rels):
    build = tmp_path / "build"
    for rel in (engine.LAUNCH,) + rels:
        p = build / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
    return build


def _seed_patterns_fake(fail, short=None):
    """A fake subprocess.run for seed_patterns: fail(what, label, run) -> None
    (the run completes) or an exit status (the run prints its figures, then
    exits with it); short(label, run) -> None (mux prints every pack count
    of MUX_PACKS) or the pack counts that run prints."""
    import subprocess
    seen = {}

    def fake_run(cmd, **kw):
        what = cmd[4]
        label = f"{cmd[cmd.index('--driver') + 1]} {cmd[cmd.index('--strategy') + 1]}"
        seen[(what, label)] = seen.get((what, label), 0) + 1
        status = fail(what, label, seen[(what, label)]) or 0
        fast = 0.01 if status else 1.0  # a failed run's figures look good
        if what == "page":
            out = f"# Page requests (3 pages of 66560 B\nseries of 3 pages: {88 * fast} us\n"
        else:
            packs = short(label, seen[(what, label)]) if short else None
            out = "# Packs  Latency (us)\n" + "".join(f"{n} {n * fast}\n"
                                                      for n in packs or MUX_PACKS)
        return subprocess.CompletedProcess(cmd, status, out, "crashed" if status else "")
    return fake_run


# The pack counts seed_patterns mux prints (its ns[], default --max-packs).
MUX_PACKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def test_mux_run_that_exits_non_zero_is_failed(tmp_path, monkeypatch):
    """The multiplexed flows (full mode) must not count the lines of a run
    that exited non-zero: its column says FAILED k of n and the gain of
    its driver is not given (a median of the survivors would hide it).
    (Failed before the fix: p.returncode was never read, the crashed run's
    figures entered the medians and the shm gain.)"""
    from canal_bench import report
    build = _fake_build(tmp_path, f"{engine.OUT}/seed_patterns")
    monkeypatch.setattr(engine.subprocess, "run", _seed_patterns_fake(
        lambda what, label, n: 1 if (what, label, n) == ("mux", "shm aggregate", 2) else None))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    skipped = []
    md = "\n".join(engine.seed_experiments(str(build), False, 3, 10.0, str(tmp_path),
                                           skipped, []))
    assert "shm/aggregate (FAILED 1 of 3)" in md
    gain = [line for line in md.splitlines() if line.startswith("| shm |")][-1]
    assert "%" not in gain and "not measured" in gain
    assert any("multiplexed flows shm aggregate" in s and "exit 1" in s for s in skipped)
    # tcp's runs all completed: its gain is given as before.
    assert ([line for line in md.splitlines() if line.startswith("| tcp |")][-1].count("%")
            == len(MUX_PACKS))


def test_mux_pack_counts_match_seed_patterns():
    """The harness's list of the pack counts a complete mux run prints is
    seed_patterns.c's."""
    import re
    src = open(os.path.join(os.path.dirname(__file__), "..", "..", "engine",
                            "seed_patterns.c")).read()
    ns = re.search(r"static const int ns\[\] = \{([^}]*)\}", src).group(1)
    assert tuple(int(x) for x in ns.split(",")) == MUX_PACKS == tuple(engine.MUX_PACKS)


def test_a_mux_run_missing_pack_counts_is_failed(tmp_path, monkeypatch):
    """A multiplexed-flows run that exits 0 but stops before some pack
    counts (as complete_runs does for the OSU tables) is a failed run:
    kept, the gains at the missing counts would be medians of fewer runs
    than the others, unmarked. (Failed before the fix: the shm gain was
    given at every n, two of them from 2 aggregate runs against 3 default
    ones, the column unmarked, nothing in "Not run or failed".)"""
    from canal_bench import report
    build = _fake_build(tmp_path, f"{engine.OUT}/seed_patterns")
    monkeypatch.setattr(engine.subprocess, "run", _seed_patterns_fake(
        lambda what, label, n: None,
        lambda label, n: MUX_PACKS[:4] if (label, n) == ("shm aggregate", 2) else None))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    skipped = []
    md = "\n".join(engine.seed_experiments(str(build), False, 3, 10.0, str(tmp_path),
                                           skipped, []))
    assert "shm/aggregate (FAILED 1 of 3)" in md
    gain = [line for line in md.splitlines() if line.startswith("| shm |")][-1]
    assert "%" not in gain and "not measured" in gain
    assert any("multiplexed flows shm aggregate run 2" in s and "20, 50" in s
               for s in skipped)
    assert ([line for line in md.splitlines() if line.startswith("| tcp |")][-1].count("%")
            == len(MUX_PACKS))


def test_page_gain_names_a_failed_run(tmp_path, monkeypatch):
    """The page-request gain must not be the medians of whatever runs
    survived: a failed run is said next to the figures and the gain is not
    measured. (Failed before the fix: shm's gain was given from 3 default
    runs against 2 aggregate ones; the failure was only in "Not run or
    failed".)"""
    from canal_bench import report
    build = _fake_build(tmp_path, f"{engine.OUT}/seed_patterns")
    monkeypatch.setattr(engine.subprocess, "run", _seed_patterns_fake(
        lambda what, label, n: 1 if (what, label, n) == ("page", "shm aggregate", 2) else None))
    monkeypatch.setattr(report, "have_matplotlib", lambda: False)
    md = "\n".join(engine.seed_experiments(str(build), True, 3, 10.0, str(tmp_path), [], []))
    row = [line for line in md.splitlines() if line.startswith("| shm |")][0]
    assert "FAILED 1 of 3" in row and "%" not in row and "not measured" in row
    row = [line for line in md.splitlines() if line.startswith("| tcp |")][0]
    assert row.endswith("| 0 % |")


def test_overlap_and_open_tables_name_a_failed_run(tmp_path, monkeypatch):
    """The overlap and open tables must say, in the cell, that a run
    failed (the medians are of fewer runs), and keep a row whose runs all
    failed. (Failed before the fix: the cells were plain medians of the
    survivors; a row whose runs all failed vanished.)"""
    import subprocess
    build = _fake_build(tmp_path, f"{engine.OUT}/overlap", f"{engine.OUT}/open_time")
    seen = {}

    def fake_run(cmd, **kw):
        key = tuple(cmd) + (kw.get("env", {}).get("CANAL_ENGINE_CONNECT"), cmd[2])
        seen[key] = seen.get(key, 0) + 1
        if os.path.basename(cmd[3]) == "overlap":
            bad = "--driver shm --compute busy --progress caller" in " ".join(cmd) \
                and seen[key] == 2
            out = "# Size  Comm (us)  Total (us)  Overlap (%)\n" + \
                "".join(f"{s} 1.0 2.0 {99.0 if bad else 50.0}\n" for s in (1 << 20, 4 << 20))
        else:
            bad = key[-2] == "eager" and (cmd[2] == "16" or seen[key] == 3)
            out = "open_us 1000 ring_us 500 segments 2\n"
        return subprocess.CompletedProcess(cmd, 1 if bad else 0, out, "")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    md = "\n".join(engine.overlap_table(str(build), 3, []))
    row = [line for line in md.splitlines() if line.startswith("| shm | busy | 1 MiB |")][0]
    assert "FAILED 1 of 3" in row.split("|")[4] and "FAILED" not in row.split("|")[5]
    md = "\n".join(engine.open_table(str(build), 3, []))
    assert "FAILED 1 of 3" in [line for line in md.splitlines()
                               if line.startswith("| 8 | eager |")][0]
    assert "FAILED 3 of 3" in [line for line in md.splitlines()
                               if line.startswith("| 16 | eager |")][0]
    assert "FAILED" not in [line for line in md.splitlines()
                            if line.startswith("| 8 | lazy |")][0]


def test_a_run_missing_sizes_is_a_failed_run(tmp_path, monkeypatch):
    """A run that exits 0 but whose table lacks some message sizes (or has
    none) is not a complete run: it counts as failed (the column says
    FAILED k of n, the summary row is not measured), never as a full run
    whose missing sizes quietly get the median of fewer runs. (Failed
    before the fix: canal shm's second run printed only 8 B and counted as
    complete; the 1 KiB and 64 KiB medians were of 2 runs, unmarked, and
    the summary judged them.)"""
    import subprocess
    from canal_bench import report
    build = _fake_build(tmp_path, f"{engine.OUT}/osu_latency", f"{engine.OUT}/mpi_osu_latency",
                        f"{engine.OUT}/raw_latency")
    seen = {"canal shm": 0}

    def fake_run(cmd, **kw):
        text = " ".join(str(c) for c in cmd)
        sizes = _asked_sizes(cmd)
        if "osu_latency --driver shm --strategy default" in text and "mpi_" not in text \
                and "--loop" not in text and "env" not in cmd[:1]:
            seen["canal shm"] += 1
            if seen["canal shm"] == 2:
                sizes = [s for s in sizes if s not in (1024, 65536)]  # exit status 0
        out = "# Size  Latency (us)\n" + "".join(f"{s} 1.0\n" for s in sizes)
        return subprocess.CompletedProcess(cmd, 0, out, "")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    monkeypatch.setattr(engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setenv("CANAL_ENGINE_REPS", "3")
    report.reset_headlines()
    try:
        md = engine.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert "canal shm (FAILED 1 of 3)" in md
    assert "sizes missing: 1024, 65536" in md
    assert rows["shm one-way latency, 1 KiB"].verdict == "not measured"
    assert "1 of 3" in rows["shm one-way latency, 1 KiB"].values_text()
    assert rows["tcp one-way latency, 8 B"].verdict.startswith("met")


def test_overhead_table_says_its_spread_and_reads_the_exit_status(tmp_path, monkeypatch):
    """The overhead target's verdict comes from one process (the median of
    its 7 runs): the table must show the spread the program printed and
    say it is one process; a run that exits non-zero is no figure, whatever
    it printed. (Failed before the fix: the [min-max] were dropped, the
    verdict read as if from repetitions, and a crashed tcp run's line was
    tabled.)"""
    import subprocess
    build = _fake_build(tmp_path, f"{engine.OUT}/engine_overhead")

    def fake_run(cmd, **kw):
        drv = cmd[cmd.index("--driver") + 1]
        out = ("# Engine CPU cost\nengine 104.4 ns [103.1-423.6]  raw 13.1 ns [12.9-13.7]  "
               "overhead 91.3 ns\n")
        return subprocess.CompletedProcess(cmd, 134 if drv == "tcp" else 0, out, "abort")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    skipped = []
    md = "\n".join(engine.overhead_table(str(build), skipped))
    row = [line for line in md.splitlines() if line.startswith("| shm |")][0]
    assert "104 [103-424]" in row and "13 [13-14]" in row
    assert "met (unstable)" in row
    assert "one process" in md
    assert not [line for line in md.splitlines() if line.startswith("| tcp |")]
    assert any(s.startswith("engine overhead tcp: exit 134") for s in skipped)


def test_a_size_every_run_missed_is_reported_missing(tmp_path, monkeypatch):
    """complete_runs must check each run against the sizes asked for
    (--max-size: 1 B .. 64 KiB for quick latency), not against the union
    of what the runs printed: a size that every run of canal shm lacks
    (each exited 0 after 32 KiB) is missing, its runs are failed and the
    64 KiB summary row says why, never a silent gap. (Failed before the
    fix: every run "covered" the union 1 B .. 32 KiB, counted as complete;
    the 64 KiB row read "not measured" with no reason, and engine.md had
    no FAILED nor the missing size.)"""
    import subprocess
    from canal_bench import report
    build = _fake_build(tmp_path, f"{engine.OUT}/osu_latency", f"{engine.OUT}/mpi_osu_latency",
                        f"{engine.OUT}/raw_latency")

    def fake_run(cmd, **kw):
        text = " ".join(str(c) for c in cmd)
        sizes = _asked_sizes(cmd)
        if "osu_latency --driver shm --strategy default" in text and "mpi_" not in text \
                and "--loop" not in text and "env" not in cmd[:1]:
            sizes = [s for s in sizes if s < 65536]  # every run stops at 32 KiB
        out = "# Size  Latency (us)\n" + "".join(f"{s} 1.0\n" for s in sizes)
        return subprocess.CompletedProcess(cmd, 0, out, "")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    monkeypatch.setattr(engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(report, "results_dir", lambda stamp=None: str(tmp_path))
    monkeypatch.setenv("CANAL_ENGINE_REPS", "3")
    report.reset_headlines()
    try:
        md = engine.run(str(build), "quick")
        rows = {h.workload: h for h in report.HEADLINES}
    finally:
        report.reset_headlines()
    assert "canal shm (FAILED 3 of 3)" in md
    assert "sizes missing: 65536" in md
    h = rows["shm one-way latency, 64 KiB"]
    assert h.verdict == "not measured" and "canal shm FAILED in 3 of 3" in h.values_text()
    assert rows["tcp one-way latency, 8 B"].verdict.startswith("met")


def test_raw_latency_is_asked_only_the_sizes_a_packet_holds():
    """raw_latency clamps --max-size to the driver's packet (64 KiB and a
    header): its runs are complete up to 64 KiB even in full mode."""
    assert max(engine.asked_sizes("latency", False, "raw shm")) == 65536
    assert max(engine.asked_sizes("latency", False, "canal shm")) == 4 << 20
    assert engine.asked_sizes("bw", True, "canal shm") == {1 << k for k in range(21)}


def test_targets_table_names_an_implementation_whose_every_run_failed():
    """When every run of canal shm (or canal tcp) failed, it has no cell at
    all: the per-size targets must still be rows, "not measured" with why,
    over the peer's sizes, not vanish. (Failed before the fix: the rows
    were made over canal's own sizes only, so none was left.)"""
    cells = engine.collect([("Open MPI shm", {8: 2.0, 1024: 3.0}),
                            ("raw tcp", {8: 5.0})])
    failed = {"canal shm": (3, 3), "Open MPI shm": (0, 3), "canal tcp": (3, 3),
              "raw tcp": (0, 3)}
    rows = {r[0]: r for r in engine.checks(cells, failed)}
    r = rows["shm latency at 1 KiB <= Open MPI shm"]
    assert r[2] == "not measured" and "canal shm FAILED in 3 of 3" in r[1]
    r = rows["tcp latency at 8 B <= 1.2 x raw tcp"]
    assert r[2] == "not measured" and "canal tcp FAILED in 3 of 3" in r[1]


def test_open_table_every_column_of_a_failed_row_says_so(tmp_path, monkeypatch):
    """A row of the open table with a failed run must say so in every
    column: the first ring and segments figures are of the runs that
    survived too. (Failed before the fix: only "open ms" said "FAILED 1
    of 3"; "first ring ms" and "segments" were plain figures.)"""
    import subprocess
    build = _fake_build(tmp_path, f"{engine.OUT}/open_time")
    seen = {}

    def fake_run(cmd, **kw):
        key = (kw.get("env", {}).get("CANAL_ENGINE_CONNECT"), cmd[2])
        seen[key] = seen.get(key, 0) + 1
        bad = key == ("eager", "8") and seen[key] == 2
        return subprocess.CompletedProcess(cmd, 1 if bad else 0,
                                           "open_us 1000 ring_us 500 segments 2\n", "")
    monkeypatch.setattr(engine.subprocess, "run", fake_run)
    md = "\n".join(engine.open_table(str(build), 3, []))
    row = [line for line in md.splitlines() if line.startswith("| 8 | eager |")][0]
    cols = [c.strip() for c in row.strip("|").split("|")]
    assert all("FAILED 1 of 3" in c for c in cols[2:]), cols
    row = [line for line in md.splitlines() if line.startswith("| 8 | lazy |")][0]
    assert "FAILED" not in row
    assert [c.strip() for c in row.strip("|").split("|")][3:] == ["0.5", "2"]

"""bench-compare: two results directories side by side."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import compare  # noqa: E402
from canal_bench import report  # noqa: E402


def make_run(path, canal, peer):
    os.makedirs(path)
    report.reset_headlines()
    report.headline("chan", "boundedN_spsc", canal, "crossbeam-channel", peer, "ns/msg", 1.0)
    if canal[0] < 50:
        report.headline("chan", "new row", [1.0], None, None, "ns/msg", 2.0)
    report.compose(str(path), [])
    report.reset_headlines()


def test_compare_two_runs(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    make_run(a, [60.0, 62.0, 64.0], [30.0, 30.0, 30.0])
    make_run(b, [30.0, 31.0, 29.0], [30.0, 30.0, 30.0])
    intro, table = compare.compare(str(a), str(b))
    rows = {r[1]: r for r in table[1:]}
    assert rows["boundedN_spsc"][2] == "62 ns/msg" and rows["boundedN_spsc"][3] == "30 ns/msg"
    assert rows["boundedN_spsc"][4] == "2.07x faster"
    assert rows["boundedN_spsc"][8] == "met"
    assert rows["new row"][2] == "—"   # only in B
    assert compare.main([str(a), str(b)]) == 0
    assert "boundedN_spsc" in capsys.readouterr().out


def test_compare_needs_summaries(tmp_path):
    (tmp_path / "old").mkdir()
    with pytest.raises(SystemExit):
        compare.load(str(tmp_path / "old"))


def test_change_words():
    assert compare.change(2.0, 1.0, False) == "2x faster"
    assert compare.change(1.0, 2.0, False) == "2x slower"
    assert compare.change(1.0, 2.0, True) == "2x faster"
    assert compare.change(None, 2.0, False) == "—"


def test_compare_keeps_errors_and_caveats(tmp_path):
    """B's verdict in the comparison is the one its own summary gave: a
    row whose canal runs had failed requests is MISSED (errors), a peer's
    errors and a caveat (a peer that FAILED) are said, and canal's figure
    in B says it had errors. (Failed before the fix: load() dropped
    errors, peer_errors and caveat, so a web row canal met only by timing
    out requests read "met".)"""
    a, b = tmp_path / "a", tmp_path / "b"
    for d, errors in ((a, ""), (b, "timeout 9")):
        os.makedirs(d)
        report.reset_headlines()
        report.headline("web", "static 1 KiB", [20000.0], "nginx", [10000.0],
                        "requests/s", 1.0, higher_is_better=True, errors=errors)
        report.headline("seed", "shm 64 B", [1.0], "sockets", [2.0], "us", 1.0,
                        caveat="pipes FAILED", peer_errors="exit 1" if errors else "")
        report.compose(str(d), [])
        report.reset_headlines()
    intro, table = compare.compare(str(a), str(b))
    rows = {r[1]: r for r in table[1:]}
    with open(b / "summary.json") as f:
        stored = {h["workload"]: h["verdict"] for h in json.load(f)["headlines"]}
    assert rows["static 1 KiB"][8] == stored["static 1 KiB"] == "MISSED (errors)"
    assert "errors" in rows["static 1 KiB"][3]
    assert rows["static 1 KiB"][4] == "— (errors in B)"  # no speed-up of errors
    assert rows["shm 64 B"][8] == stored["shm 64 B"]
    assert "pipes FAILED" in rows["shm 64 B"][8] and "sockets errors" in rows["shm 64 B"][8]


def test_compare_says_a_family_failed_and_an_unstable_change(tmp_path):
    """A family that failed in B (its rows absent from B's summary) must
    say so in the comparison, not a bare "—"; and a change from A to B
    computed from medians of which one was unstable says so. (Failed
    before the fix: summary.json did not record the failed families, the
    web row read "—" in B with no word why; the chan row read "2.07x
    faster" though A's repetitions differed by 10x.)"""
    a, b = tmp_path / "a", tmp_path / "b"
    for d, failed in ((a, []), (b, ["web"])):
        os.makedirs(d)
        report.reset_headlines()
        if not failed:
            report.headline("web", "static 1 KiB", [20000.0], "nginx", [10000.0],
                            "requests/s", 1.0, higher_is_better=True)
        report.headline("chan", "boundedN_spsc",
                        [6.0, 62.0, 64.0] if d == a else [30.0, 31.0, 29.0],
                        "crossbeam-channel", [30.0, 30.0, 30.0], "ns/msg", 1.0)
        report.compose(str(d), [], failed=failed)
        report.reset_headlines()
    intro, table = compare.compare(str(a), str(b))
    rows = {r[1]: r for r in table[1:]}
    assert "family failed in B" in rows["static 1 KiB"][3]
    assert "family failed in B" in rows["static 1 KiB"][8]
    assert rows["boundedN_spsc"][4] == "2.07x faster (unstable)"
    assert compare.change(2.0, 1.0, False, unstable=True) == "2x faster (unstable)"


def test_compare_says_a_family_was_interrupted_or_not_run(tmp_path):
    """Rows absent from B because an interrupt cut its run short say so:
    the family interrupted, the families not run (summary.json's
    interrupted and not_run), not a bare "—"."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        os.makedirs(d)
        report.reset_headlines()
        if d == a:
            report.headline("web", "static 1 KiB", [2.0], "nginx", [1.0], "requests/s", 1.0)
            report.headline("engine", "fwd", [1.0], "MPI", [1.0], "us", 1.0)
        report.compose(str(d), [], interrupted="" if d == a else "web",
                       not_run=[] if d == a else ["engine"])
        report.reset_headlines()
    intro, table = compare.compare(str(a), str(b))
    rows = {r[1]: r for r in table[1:]}
    assert "family interrupted in B" in rows["static 1 KiB"][3]
    assert "family not run in B" in rows["fwd"][3]


def test_compare_shows_both_sides_state(tmp_path):
    """Both sides' state is shown, not only B's: A's row not measured says
    so (with why) instead of a bare "—", each side's verdict is there, and
    the canal-vs-peer columns say "unstable" when that side's repetitions
    differ by more than 3x. (Failed before the fix: A's "not measured"
    read "—", A's "(unstable)" appeared nowhere, only B's verdict.)"""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        os.makedirs(d)
        report.reset_headlines()
        if d == a:
            report.headline("chan", "bounded1_spsc", None, "crossbeam-channel", [30.0],
                            "ns/msg", 1.0, note="canal TIMEOUT in a repetition")
            report.headline("chan", "boundedN_spsc", [6.0, 20.0, 64.0], "crossbeam-channel",
                            [30.0, 30.0, 30.0], "ns/msg", 1.0)
        else:
            report.headline("chan", "bounded1_spsc", [20.0, 21.0], "crossbeam-channel",
                            [30.0, 30.0], "ns/msg", 1.0)
            report.headline("chan", "boundedN_spsc", [2.0, 20.0, 21.0], "crossbeam-channel",
                            [30.0, 30.0, 30.0], "ns/msg", 1.0)
        report.compose(str(d), [])
        report.reset_headlines()
    intro, table = compare.compare(str(a), str(b))
    head = table[0]
    rows = {r[1]: dict(zip(head, r)) for r in table[1:]}
    r = rows["bounded1_spsc"]
    assert "not measured" in r["canal in A"] and "TIMEOUT" in r["canal in A"]
    assert "not measured" in r["A: canal vs peer"]
    assert r["A: verdict"] == "not measured" and r["B: verdict"] == "met"
    assert "unstable" not in r["B: canal vs peer"]
    r = rows["boundedN_spsc"]
    assert r["A: verdict"] == "met (unstable)" and r["B: verdict"] == "met (unstable)"
    assert "unstable" in r["A: canal vs peer"] and "unstable" in r["B: canal vs peer"]

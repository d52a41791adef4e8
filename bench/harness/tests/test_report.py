"""The summary screen (report.headline), spreads, and the composed
report.md / report.html of a results directory."""
import html.parser
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from canal_bench import report, stats  # noqa: E402


@pytest.fixture(autouse=True)
def clean_headlines():
    report.reset_headlines()
    yield
    report.reset_headlines()


def test_spread_and_unstable():
    s = stats.Spread([3.0, 1.0, 2.0])
    assert (s.lo, s.median, s.hi, s.n) == (1.0, 2.0, 3.0, 3)
    assert not s.unstable
    assert stats.is_unstable([1.0, 3.5]) and not stats.is_unstable([1.0, 3.0])
    assert not stats.is_unstable([5.0])
    assert stats.fmt_spread([1.0, 2.0, 10.0]) == "2 (1-10) unstable"
    assert stats.fmt_spread([2.0]) == "2"
    r = stats.ratio_spread([1.0, 2.0], [2.0, 2.0])   # pairwise
    assert (r.lo, r.hi) == (0.5, 1.0)
    assert stats.ratio_spread([1.0], [0.0]) is None


def test_headline_ratio_verdict_and_words():
    h = report.headline("seed", "fwd 1/1", [0.1, 0.1, 0.1], "pipe", [0.2, 0.2, 0.2], "s", 1.0)
    assert h.ratio == pytest.approx(0.5) and h.met is True and h.verdict == "met"
    assert h.comparison().startswith("2x faster")
    assert h.target_text() == "as fast"
    h = report.headline("chan", "bounded0_spsc", [300.0], "Go chan", [200.0], "ns/msg", 1.2)
    assert h.met is False and h.verdict == "MISSED"
    assert h.comparison() == "1.5x slower (1 run)" and h.target_text() == "within 1.2x"
    r = report.headline("web", "tasks vs uring", [90.0], "uring", [100.0], "requests/s", 0.9,
                        higher_is_better=True)
    assert r.target_text() == "within 1.11x" and r.met is True


def test_headline_rates_higher_is_better():
    h = report.headline("ipc", "rate", 3e6, "pipe", 1e5, "msg/s", 20, higher_is_better=True)
    assert h.met is True and h.comparison().startswith("30x faster")
    assert h.target_text() == "20x faster"


def test_headline_without_peer_is_an_absolute_target():
    h = report.headline("micro", "spsc", [31.0, 14.0, 40.0], None, None, "ns/msg", 50)
    assert h.met is True and h.ratio is None and h.target_text() == "<= 50 ns/msg"
    assert h.values_text() == "31 (14-40) ns/msg"


def test_unstable_rows_are_flagged():
    h = report.headline("chan", "x", [1.0, 10.0, 2.0], "Go", [1.0, 1.0, 1.0], "ns/msg", 1.0)
    assert h.unstable and h.verdict.endswith("(unstable)")


def test_not_measured_rows_keep_their_reason():
    h = report.headline("web", "GET /", None, "nginx", None, "req/s", 1.0,
                        note="wrk not installed")
    assert h.verdict == "not measured" and h.values_text() == "wrk not installed"


def test_not_measured_rows_keep_their_caveat():
    """A row without canal's figure (or the peer's) still says what else
    failed: "not measured" alone hid a peer that FAILED beside it (the
    caveat lived only in summary.json)."""
    h = report.headline("seed", "fwd", None, "pipe", [1.0], "s", 1.0,
                        note="fwd-canal FAILED in 1 of 3 runs", caveat="socket FAILED in 3 of 3 runs")
    assert h.verdict == "not measured (socket FAILED in 3 of 3 runs)"
    h = report.headline("seed", "fwd", [1.0], "pipe", None, "s", 1.0,
                        note="pipe FAILED in 3 of 3 runs", caveat="socket FAILED in 1 of 3 runs")
    assert h.verdict == "no peer figure (socket FAILED in 1 of 3 runs)"


def test_summary_text_is_one_screen_and_english():
    for i in range(20):
        report.headline("chan", f"workload {i}", [float(i + 1)], "Go chan", [2.0], "ns/msg", 1.0)
    text = report.summary_text()
    lines = text.splitlines()
    assert len(lines) <= 30
    assert max(len(l) for l in lines) <= 160
    assert lines[0].split()[:2] == ["family", "workload"]
    assert "targets met" in text
    assert text.isascii() or "—" in text  # English only (the dash is the one non-ASCII)


# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")


class Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tags, self.stack = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        elif tag not in ("meta", "br", "hr"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()


def compose(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "chan-spsc.png").write_bytes(PNG)
    (out / "seed-fwd-equal-threads.png").write_bytes(PNG)
    report.headline("seed", "fwd 1/1", [0.1, 0.2], "pipe", [0.2, 0.3], "s", 1.0)
    sections = [("seed", "# The seed programs\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                 "Plots: seed-fwd-equal-threads.png\n"),
                ("chan", "# Channels\n\n- one\n- two `code` **bold**\n\n```\nraw <x>\n```\n")]
    return out, report.compose(str(out), sections)


def test_report_md_embeds_every_plot(tmp_path):
    out, (md_path, _) = compose(tmp_path)
    md = open(md_path).read()
    assert "## Summary" in md and "fwd 1/1" in md
    assert "![seed: seed-fwd-equal-threads.png](seed-fwd-equal-threads.png)" in md
    assert "![chan: chan-spsc.png](chan-spsc.png)" in md
    assert "\n## The seed programs\n" in md  # family titles under the report's
    assert "\n## Channels\n" in md
    assert (out / "summary.json").exists()


def test_report_html_parses_and_every_image_exists(tmp_path):
    out, (_, html_path) = compose(tmp_path)
    text = open(html_path).read()
    p = Parser()
    p.feed(text)
    p.close()
    assert not p.stack, f"unclosed: {p.stack}"
    assert "table" in p.tags and "ul" in p.tags and "pre" in p.tags
    assert sorted(p.images) == ["chan-spsc.png", "seed-fwd-equal-threads.png"]
    for src in p.images:
        assert os.path.exists(os.path.join(out, src)), src
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert "raw &lt;x&gt;" in text


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def solid_png(width: int, height: int, rgb) -> bytes:
    """A PNG of one colour (no library needed)."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    row = b"\x00" + bytes(rgb) * width
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
def test_report_html_renders_headless_with_its_plots(tmp_path):
    """Chromium renders report.html offline; the plot (a solid red image
    standing for a chart) is visible in the screenshot."""
    out, (_, html_path) = compose(tmp_path)
    (out / "chan-spsc.png").write_bytes(solid_png(300, 200, (255, 0, 0)))
    shot = tmp_path / "shot.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1200,4000",
                    "file://" + html_path], check=True, timeout=120, capture_output=True)
    assert shot.exists() and shot.stat().st_size > 1000
    image = pytest.importorskip("matplotlib.image")
    px = image.imread(str(shot))
    red = ((px[:, :, 0] > 0.9) & (px[:, :, 1] < 0.1) & (px[:, :, 2] < 0.1)).sum()
    assert red > 300 * 200 * 0.9, f"the plot is not visible ({red} red pixels)"


def test_results_directory_of_a_real_run_if_given():
    """CANAL_RESULTS_DIR=results/<stamp>: check a real `make bench` output."""
    d = os.environ.get("CANAL_RESULTS_DIR")
    if not d:
        pytest.skip("CANAL_RESULTS_DIR not set")
    p = Parser()
    p.feed(open(os.path.join(d, "report.html")).read())
    for src in p.images:
        assert os.path.exists(os.path.join(d, src)), src


def test_summary_counts_the_targets_not_measured():
    """The totals line must count the targets that were not measured (a
    run that failed, hung or was interrupted): "1 targets met, 0 missed"
    read as a clean run when the other targets had no figure at all.
    (Failed before the fix: not-measured rows were counted nowhere.)"""
    report.headline("chan", "a", [1.0], "Go chan", [2.0], "ns/msg", 1.0)
    report.headline("chan", "b", None, "Go chan", [2.0], "ns/msg", 1.0,
                    note="canal: TIMEOUT")
    report.headline("chan", "c", [1.0], "Go chan", None, "ns/msg", 1.0, note="Go: FAILED")
    report.headline("micro", "d", [1.0], None, None, "ns", None)  # no target: not counted
    text = report.summary_text()
    assert "1 targets met, 0 missed, 2 not measured" in text

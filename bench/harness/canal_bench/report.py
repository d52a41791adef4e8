"""Reporting shared by every benchmark family: results directory, Markdown
tables, CSV of raw runs, the machine description, optional plots, and the
one-screen summary that `make bench` ends with.

A family appears in the summary by calling headline() for each of its
headline workloads (see its text); report.md, report.html and summary.json
are composed by compose() once every family has run."""
from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import html
import json
import os
import platform
import re
import signal
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple, Union

from . import stats

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


def machine_description(cpuinfo: Optional[str] = None) -> str:
    """One line describing this machine: CPU model, logical CPUs (what
    os.cpu_count() counts: hardware threads, twice the cores with SMT) and
    the physical cores when /proc/cpuinfo tells them (distinct physical id
    and core id pairs), memory, kernel. cpuinfo: /proc/cpuinfo's text
    (read when None)."""
    model = ""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo = f.read()
        except OSError:
            cpuinfo = ""
    logical = 0
    cores = set()
    phys = core = None
    for line in cpuinfo.splitlines() + [""]:
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name" and not model:
            model = value
        elif key == "processor":
            logical += 1
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
        elif not line.strip():  # the end of one processor's block
            if core is not None:
                cores.add((phys, core))
            phys = core = None
    cpu = model or platform.processor() or "unknown CPU"
    logical = logical or os.cpu_count() or 0
    cpus = f"{logical} logical CPUs" + (f" ({len(cores)} cores)" if cores else "")
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {cpus}{mem}, Linux {platform.release()}"


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


# ---------------------------------------------------------------------------
# Interrupts: Ctrl-C (SIGINT) and SIGTERM (a killed session, `timeout`) end
# the run; run.py composes the report from the families that finished.
# ---------------------------------------------------------------------------

_INTERRUPT = {"signal": 0}  # the signal that cut the run short, 0: none


def on_interrupt(signum: int, frame: object) -> None:
    """A handler for SIGINT and SIGTERM: records the signal, raises
    KeyboardInterrupt (SIGTERM ends a run as Ctrl-C does)."""
    _INTERRUPT["signal"] = signum
    raise KeyboardInterrupt


def record_interrupt(signum: int, frame: object) -> None:
    """A handler that only records the signal (while the report is being
    written: the run ends after it anyway)."""
    _INTERRUPT["signal"] = _INTERRUPT["signal"] or signum


def caught_interrupt() -> None:
    """A family that catches KeyboardInterrupt to report the runs it
    finished (chan) calls this: run.py then stops after it and names it
    interrupted."""
    _INTERRUPT["signal"] = _INTERRUPT["signal"] or int(signal.SIGINT)


def interrupt_signal() -> int:
    """The signal recorded since reset_interrupt(), 0 when none."""
    return _INTERRUPT["signal"]


def reset_interrupt() -> None:
    _INTERRUPT["signal"] = 0


def header_lines(title: str) -> List[str]:
    return [f"# {title}", "",
            f"Date: {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')}; "
            f"machine: {machine_description()}; canal {git_revision()}", ""]


Row = Dict[str, object]


# ---------------------------------------------------------------------------
# Headlines: the rows of the summary screen
# ---------------------------------------------------------------------------

Values = Union[None, float, int, Sequence[float]]


def _values(v: Values) -> List[float]:
    if v is None:
        return []
    if isinstance(v, (int, float)):
        return [float(v)]
    return [float(x) for x in v if x is not None]


@dataclasses.dataclass
class Headline:
    family: str
    workload: str
    canal: List[float]
    peer_name: Optional[str]
    peer: List[float]
    unit: str
    target: Optional[float]
    higher_is_better: bool = False
    note: str = ""
    errors: str = ""       # canal's runs failed requests ("timeout 9"): never met
    peer_errors: str = ""  # the peer's runs failed requests: the verdict says so
    caveat: str = ""       # what else the verdict must say ("pipe FAILED")

    @property
    def measured(self) -> bool:
        return bool(self.canal) and (self.peer_name is None or bool(self.peer))

    @property
    def ratio(self) -> Optional[float]:
        """median(canal) / median(peer); None without a peer or a value."""
        if not self.measured or self.peer_name is None:
            return None
        return stats.ratio(stats.median(self.canal), stats.median(self.peer))

    @property
    def ratio_spread(self) -> Optional[stats.Spread]:
        if not self.measured or self.peer_name is None:
            return None
        return stats.ratio_spread(self.canal, self.peer)

    @property
    def unstable(self) -> bool:
        return stats.is_unstable(self.canal) or stats.is_unstable(self.peer)

    @property
    def met(self) -> Optional[bool]:
        """The target against the ratio (with a peer) or against canal's
        median (without); None when there is no target or no figure."""
        if self.target is None or not self.measured:
            return None
        if self.errors:  # a figure of failed requests meets nothing
            return False
        value = self.ratio if self.peer_name is not None else stats.median(self.canal)
        if value is None:
            return None
        return value >= self.target if self.higher_is_better else value <= self.target

    @property
    def verdict(self) -> str:
        also = f" ({self.caveat})" if self.caveat else ""
        if not self.canal:
            return "not measured" + also
        if not self.measured:
            return "no peer figure" + also
        word = {True: "met", False: "MISSED", None: "no target"}[self.met]
        return (word + (" (unstable)" if self.unstable else "")
                + (" (errors)" if self.errors else "")
                + (f" ({self.peer_name} errors)" if self.peer_errors else "")
                + also)

    def _factor(self, r: float) -> Tuple[float, bool]:
        """(how many times, faster?) for a ratio canal / peer."""
        better = r if self.higher_is_better else 1.0 / r
        return (better, True) if better >= 1 else (1.0 / better, False)

    def comparison(self) -> str:
        """"2.10x faster (1.90-2.30)" than the peer: the median ratio and,
        over the repetitions, its range in the same words; or "—"."""
        r = self.ratio
        if r is None or r <= 0:
            return "—"
        f, faster = self._factor(r)
        text = "level" if abs(f - 1.0) < 0.005 else f"{f:.3g}x {'faster' if faster else 'slower'}"
        sp = self.ratio_spread
        if sp is not None and sp.n > 1 and sp.lo > 0:
            # The range in the median's words: "slower (0.8-1.5)" means from
            # 0.8x slower (that is, faster) to 1.5x slower.
            ends = sorted(x if faster == self.higher_is_better else 1.0 / x
                          for x in (sp.lo, sp.hi))
            text += f" ({_g(ends[0])}-{_g(ends[1])})"
        elif len(self.canal) == 1 and len(self.peer) == 1:
            text += " (1 run)"
        return text

    def target_text(self) -> str:
        if self.target is None:
            return "—"
        t = self.target
        if self.peer_name is None:
            return f"{'>=' if self.higher_is_better else '<='} {t:g} {self.unit}"
        if t == 1:
            return "as fast"
        ahead = (t > 1) == self.higher_is_better
        # 3 significant digits: a rate within 10 % (target 0.9) reads
        # "within 1.11x", not "within 1.11111x".
        return (f"{t if t > 1 else 1 / t:.3g}x faster" if ahead
                else f"within {max(t, 1 / t):.3g}x")

    def values_text(self) -> str:
        text = self._values_text()
        if self.errors:
            text += f"; errors: {self.errors}"
        if self.peer_errors:
            text += f"; {self.peer_name} errors: {self.peer_errors}"
        return text

    def _values_text(self) -> str:
        if not self.canal:
            return self.note or "no figure"
        c = _g(stats.median(self.canal))
        if self.peer_name is not None and not self.peer:
            return f"{c} {self.unit}; {self.peer_name}: {self.note or 'n/a'}"
        if self.peer_name is None:
            if len(self.canal) > 1:
                sp = stats.Spread(self.canal)
                c += f" ({_g(sp.lo)}-{_g(sp.hi)})"
            return f"{c} {self.unit}"
        p = _g(stats.median(self.peer)) if self.peer else "n/a"
        return f"{c} vs {p} {self.unit}"

    def as_dict(self) -> Dict[str, object]:
        d = dataclasses.asdict(self)
        d.update(ratio=self.ratio, verdict=self.verdict, unstable=self.unstable)
        return d


def _g(x: Optional[float]) -> str:
    """Three significant digits, k and M for large numbers."""
    if x is None:
        return "n/a"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.3g}k"
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.3g}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def failed_runs_note(name: str, failed: int, runs: int, why: str = "") -> str:
    """Why a cell with a failed run has no figure on the summary (every
    family's rule, the seed family's first: a median of the runs that
    survived would hide a crash or a hang): "canal shm FAILED in 1 of 3
    runs: exit status 134"."""
    return f"{name} FAILED in {failed} of {runs} runs" + (f": {why}" if why else "")


HEADLINES: List[Headline] = []


def headline(family: str, workload: str, canal: Values, peer_name: Optional[str] = None,
             peer: Values = None, unit: str = "", target: Optional[float] = None, *,
             higher_is_better: bool = False, note: str = "", errors: str = "",
             peer_errors: str = "", caveat: str = "") -> Headline:
    """Record one headline row of the summary screen: canal against a peer
    on one workload.

    family     the family's name, as in run.py's FAMILIES ("web", "engine")
    workload   what was measured, in English ("fwd 1000/1000, threads")
    canal      canal's figure: one number, or the repetitions (a list); the
               spread and the "unstable" flag come from the repetitions
    peer_name  the best peer ("Go chan", "nginx"), or None: then target is
               a bound on canal's own figure (e.g. <= 50 ns/msg)
    peer       the peer's figure(s), same unit, same run
    unit       "s", "ns/msg", "us/round trip", "requests/s" ...
    target     with a peer: the bound on canal / peer (1.0: at least as
               good; 1.2: within 1.2x); without: the bound on canal's median
    higher_is_better  True for rates (requests/s, msg/s); default: times
    note       shown when there is no figure (why not measured)
    errors     canal's runs failed requests (what, e.g. "timeout 9"): the
               row is never met, and says so
    peer_errors  the peer's runs failed requests: the verdict says so
    caveat     what else the verdict must say, e.g. a peer left out because
               it failed ("pipe FAILED")

    Returns the row (also kept in HEADLINES for compose())."""
    h = Headline(family, workload, _values(canal), peer_name, _values(peer), unit, target,
                 higher_is_better, note, errors, peer_errors, caveat)
    HEADLINES.append(h)
    return h


def reset_headlines() -> None:
    HEADLINES.clear()


SUMMARY_COLUMNS = ["family", "workload", "peer", "canal vs peer (medians)",
                   "canal is (range over repetitions)", "target", "verdict"]


def _summary_rows(rows: Sequence[Headline]) -> List[List[str]]:
    return [[h.family, h.workload, h.peer_name or "—", h.values_text(), h.comparison(),
             h.target_text(), h.verdict] for h in rows]


def summary_text(rows: Optional[Sequence[Headline]] = None, width: int = 0) -> str:
    """The summary as aligned plain text (the end of `make bench`)."""
    rows = HEADLINES if rows is None else rows
    if not rows:
        return "No headline figures (no family reported one).\n"
    body = _summary_rows(rows)
    cols = ["family", "workload", "peer", "canal vs peer", "canal is", "target", "verdict"]
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    last = None
    for r in body:
        fam = r[0] if r[0] != last else ""
        last = r[0]
        out.append("  ".join(c.ljust(w) for c, w in zip([fam] + r[1:], widths)).rstrip())
    met = sum(1 for h in rows if h.met is True)
    missed = sum(1 for h in rows if h.met is False)
    # A target without a figure (a failed, hung or interrupted run) is
    # counted too: "3 met, 0 missed" alone reads as a clean run.
    unmeasured = sum(1 for h in rows if h.target is not None and h.met is None)
    unstable = sum(1 for h in rows if h.unstable and h.measured)
    out.append("")
    out.append(f"{met} targets met, {missed} missed, {unmeasured} not measured, "
               f"{unstable} unstable rows "
               f"(repetitions differ by more than {stats.UNSTABLE_FACTOR:g}x: compare with care).")
    out.append("canal vs peer: medians (canal alone: its range); canal is: the ratio "
               "of the medians, in brackets its range over the repetitions.")
    return "\n".join(out) + "\n"


def summary_markdown(rows: Optional[Sequence[Headline]] = None) -> str:
    rows = HEADLINES if rows is None else rows
    if not rows:
        return "No headline figures (no family reported one).\n"
    return markdown_table(SUMMARY_COLUMNS, _summary_rows(rows))


# ---------------------------------------------------------------------------
# report.md and report.html
# ---------------------------------------------------------------------------

_IMG = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
_PNG = re.compile(r"[\w.+-]+\.png")


def demote(md: str, levels: int = 1) -> str:
    """Headings one level down (a family's "# title" under the report's)."""
    return re.sub(r"(?m)^(#{1,5}) ", lambda m: "#" * (len(m.group(1)) + levels) + " ", md)


def family_plots(out_dir: str, family: str, md: str) -> List[str]:
    """PNG files of a family: those its Markdown names and those called
    <family>-*.png, that exist in out_dir and are not embedded yet."""
    embedded = set(os.path.basename(p) for p in _IMG.findall(md))
    names = [n for n in _PNG.findall(md) if n not in embedded]
    try:
        names += sorted(f for f in os.listdir(out_dir)
                        if f.startswith(family + "-") and f.endswith(".png"))
    except OSError:
        pass
    out = []
    for n in names:
        if n not in out and n not in embedded and os.path.exists(os.path.join(out_dir, n)):
            out.append(n)
    return out


def interrupted_text(interrupted: str, not_run: Sequence[str] = (),
                     partial: bool = False) -> str:
    """What the report and the summary screen say of a run cut short;
    partial: the interrupted family reported the runs it finished (chan)."""
    if not interrupted:
        return ""
    return (f"Run interrupted during family {interrupted} (Ctrl-C or SIGTERM): "
            + (f"{interrupted} reported the runs it finished, marked interrupted"
               if partial else f"{interrupted} not measured")
            + (f"; not run: {', '.join(not_run)}" if not_run else "") + ".")


def compose(out_dir: str, sections: Sequence[Tuple[str, str]], title: str = "canal benchmarks",
            failed: Sequence[str] = (), rows: Optional[Sequence[Headline]] = None,
            interrupted: str = "", not_run: Sequence[str] = ()
            ) -> Tuple[str, str]:
    """Write out_dir/report.md (summary, then each family's Markdown with its
    plots embedded), report.html (the same, offline: no script, no remote
    resource) and summary.json. sections: (family, markdown) in run order;
    interrupted: the family an interrupt cut short, not_run: the families
    it left out. Returns the paths of report.md and report.html."""
    rows = HEADLINES if rows is None else rows
    md = header_lines(title)
    md += ["## Summary", "", "canal against the best peer on each headline workload "
           "(medians; spread = min-max of canal / peer over the repetitions; "
           f"\"unstable\": repetitions differ by more than {stats.UNSTABLE_FACTOR:g}x).", "",
           summary_markdown(rows)]
    if failed:
        md += [f"**Families that failed**: {', '.join(failed)} (see their .log files).", ""]
    if interrupted:
        partial = any(f == interrupted for f, _ in sections)
        md += [f"**{interrupted_text(interrupted, not_run, partial)}**", ""]
    for family, text in sections:
        text = text.strip("\n")
        if not text.startswith("# "):  # a family without its own title
            md += [f"## {family}", ""]
        md += [demote(text, 1), ""]
        for png in family_plots(out_dir, family, text):
            md += [f"![{family}: {png}]({png})", ""]
    text = "\n".join(md).rstrip("\n") + "\n"
    md_path = os.path.join(out_dir, "report.md")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(text)
    html_path = os.path.join(out_dir, "report.html")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(markdown_to_html(text, title))
    with open(os.path.join(out_dir, "summary.json"), "w", encoding="utf-8") as f:
        # failed: the families that raised, whose rows are absent (a
        # comparison must say why, not show a bare "—").
        json.dump({"machine": machine_description(), "revision": git_revision(),
                   "failed": list(failed),
                   # interrupted: the family cut short (its rows absent or
                   # marked interrupted); not_run: the families it left out.
                   "interrupted": interrupted, "not_run": list(not_run),
                   "headlines": [h.as_dict() for h in rows]}, f, indent=1)
    return md_path, html_path


def _inline(s: str) -> str:
    s = html.escape(s, quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    s = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
    return s


def markdown_to_html(md: str, title: str) -> str:
    """The Markdown this harness writes (headings, tables, lists, images on
    their own line, code blocks, paragraphs) as one self-contained page."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:80em;margin:auto;padding:1em}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
           "padding:2px 6px;text-align:right}td:first-child,th:first-child{text-align:left}"
           "img{max-width:100%}code,pre{background:#f4f4f4}</style>",
           "</head>", "<body>"]
    lines = md.splitlines()
    i = 0
    para: List[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(#{1,6}) (.*)$", line)
        img = re.match(r"^!\[([^\]]*)\]\(([^)]+)\)\s*$", line)
        if m:
            flush()
            n = len(m.group(1))
            out.append(f"<h{n}>{_inline(m.group(2))}</h{n}>")
        elif img:
            flush()
            out.append(f'<figure><img src="{html.escape(img.group(2))}" '
                       f'alt="{html.escape(img.group(1))}"></figure>')
        elif line.startswith("```"):
            flush()
            i += 1
            code = []
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            out.append("<pre>" + html.escape("\n".join(code)) + "</pre>")
        elif line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            i -= 1
            cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
            out.append("<table>")
            for k, r in enumerate(cells):
                if k == 1 and all(re.fullmatch(r":?-+:?", c or "-") for c in r):
                    continue
                tag = "th" if k == 0 else "td"
                out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in r) + "</tr>")
            out.append("</table>")
        elif re.match(r"^\s*- ", line):
            flush()
            out.append("<ul>")
            while i < len(lines) and re.match(r"^\s*- ", lines[i]):
                item = re.sub(r"^\s*- ", "", lines[i])
                i += 1
                while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                    item += " " + lines[i].strip()
                    i += 1
                out.append(f"<li>{_inline(item)}</li>")
            i -= 1
            out.append("</ul>")
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"

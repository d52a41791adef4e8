"""Remote channels (issue 16): round trip and messages/s of 8-byte elements
through a remote channel (canal/remote.h: a local channel at each end, a
hub thread forwarding through the engine; a thread blocked on a local
channel does the hub's work itself) beside the engine's own isend/irecv
ping-pong and two bare TCP ping-pongs on loopback (TCP_NODELAY, one write
and one read per message): one with blocking reads (its stream is one
write(8) per message), one reading with MSG_DONTWAIT in a busy loop, as
latency-minded code does (a blocking read's wake-up can cost 20-45 us on
these VMs, and canal polls). One program, bench/engine/remote_pingpong,
runs them all in the same run; ZeroMQ PAIR over tcp:// (bench/engine/zmq_osu_latency
and zmq_osu_bw at 8 B, under canal-launch: round trip = 2 x the OSU one-way
latency, messages/s = its bandwidth / 8 B, windows of 64 messages) runs
between them. The runs are repeated (interleaved) and the tables give the
median with the spread (min-max) of the runs.
Ranks pinned to CPUs 0 and 1 (--pin 1), as canal-launch pins them.

Target of issue 16: remote channel round trip <= 1.2 x bare TCP, judged
against the faster of the two bare ping-pongs (by median).
Environment: CANAL_REMOTE_REPS overrides the number of repetitions.
"""
from __future__ import annotations

import os
import re
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

from . import report, stats

PROG = "bench/engine/remote_pingpong"
TARGET = 1.2

_LINE = re.compile(r"^(bare tcp poll|bare tcp|engine|remote)\s+rtt_us\s+([0-9.]+)\s+\[[^\]]*\]\s+"
                   r"msgs_per_s\s+([0-9.]+)\s*$")


def parse(text: str) -> Dict[str, Tuple[float, float]]:
    """{method: (round trip us, messages/s)} from remote_pingpong's output;
    other lines ignored. messages/s is 0 where not measured (engine)."""
    out: Dict[str, Tuple[float, float]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


_OSU_ROW = re.compile(r"^\s*8\s+([0-9.]+)\s*$")


def parse_osu8(text: str) -> float:
    """The 8-byte row of an OSU table, or 0.0."""
    for line in text.splitlines():
        m = _OSU_ROW.match(line)
        if m:
            return float(m.group(1))
    return 0.0


def zmq_run(build_dir: str, iters: str, timeout: float) -> Tuple[float, float]:
    """(round trip us, messages/s) of ZeroMQ PAIR over tcp:// at 8 B; 0.0
    where a program is missing or failed."""
    launch = os.path.join(build_dir, "bin/canal-launch")
    out = []
    for prog, n in (("zmq_osu_latency", iters), ("zmq_osu_bw", "200")):
        path = os.path.join(build_dir, "bench/engine", prog)
        if not (os.access(path, os.X_OK) and os.access(launch, os.X_OK)):
            return 0.0, 0.0
        try:
            p = subprocess.run([launch, "-n", "2", path, "--transport", "tcp", "--min-size", "8",
                                "--max-size", "8", "--iterations", n],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return 0.0, 0.0
        out.append(parse_osu8(p.stdout) if p.returncode == 0 else 0.0)
    return 2 * out[0], out[1] * 1e6 / 8


def best_bare(rtt: Dict[Tuple[str, str], List[float]]) -> Tuple[str, List[float]]:
    """The faster (lower median round trip) of the bare TCP ping-pongs
    measured over TCP: (its name for the tables, its runs), or ("", [])."""
    found = [(stats.median(v), name, v) for name, v in
             (("bare TCP", rtt.get(("tcp", "bare tcp"))),
              ("bare TCP, polling", rtt.get(("tcp", "bare tcp poll")))) if v]
    if not found:
        return "", []
    _, name, runs = min(found, key=lambda f: f[0])
    return name, runs


BARE_NAMES = {"bare tcp": "bare TCP", "bare tcp poll": "bare TCP, polling"}


def headlines(rtt: Dict[Tuple[str, str], List[float]],
              rate: Dict[Tuple[str, str], List[float]], reps: int,
              tcp_failures: Sequence[str]) -> List[str]:
    """The target of issue 16 on the summary (and its line for remote.md).
    A method with a figure from fewer than the reps runs over TCP (a run
    failed, tcp_failures says why; or printed no line for it) has none:
    a median of the runs that survived would hide the failure (every
    family's rule, report.failed_runs_note). The round trip is judged
    against the faster bare ping-pong complete in every run; an
    incomplete one is named in the verdict."""
    def why(name: str, values: Optional[List[float]]) -> str:
        bad = reps - len(values or [])
        if not bad:
            return ""
        return report.failed_runs_note(name, bad, reps,
                                       tcp_failures[0] if tcp_failures else "no result line")

    md: List[str] = []
    remote = rtt.get(("tcp", "remote"))
    bares = {m: rtt.get(("tcp", m)) for m in BARE_NAMES}
    complete = {m: v for m, v in bares.items() if v and not why(m, v)}
    bare_name, bare = best_bare({("tcp", m): v for m, v in complete.items()})
    caveat = ", ".join(why(BARE_NAMES[m], v) for m, v in bares.items() if m not in complete)
    note = why("remote", remote) or ("" if bare else "no bare TCP figure")
    ok = remote if not why("remote", remote) else None
    if ok and bare:
        ratio = stats.median(ok) / stats.median(bare)
        verdict = "met" if ratio <= TARGET else "MISSED"
        md.append(f"\nTarget of issue 16: remote channel round trip over TCP <= {TARGET} x bare "
                  f"TCP (the faster of the two, here {bare_name}): {ratio:.2f} x ({verdict}"
                  + (f"; {caveat}" if caveat else "") + ").\n")
    else:
        md.append(f"\nTarget of issue 16: remote channel round trip over TCP <= {TARGET} x bare "
                  f"TCP: not measured ({'; '.join(w for w in (note, caveat) if w)}).\n")
    report.headline("remote", "round trip 8 B, TCP loopback", ok, bare_name or "bare TCP",
                    bare or None, "us", TARGET, note=note, caveat=caveat)
    r_remote, r_bare = rate.get(("tcp", "remote")), rate.get(("tcp", "bare tcp"))
    w_remote, w_bare = why("remote", r_remote), why("bare TCP", r_bare)
    report.headline("remote", "messages/s 8 B, TCP loopback",
                    None if w_remote else r_remote, "bare TCP", None if w_bare else r_bare,
                    "msg/s", 1.0, higher_is_better=True, note=w_remote or w_bare)
    return md


def run(build_dir: str, mode: str) -> str:
    quick = mode == "quick"
    reps = int(os.environ.get("CANAL_REMOTE_REPS", "3" if quick else "7"))
    iters, msgs = ("2000", "100000") if quick else ("20000", "1000000")
    md = report.header_lines(f"Remote channels, 8 B ({mode}, {reps} interleaved runs)")
    md.append("Values: median (min-max) of the runs; each run's round trip is the median of "
              f"{iters} round trips. Host shared with other jobs: noisy.\n")
    prog = os.path.join(build_dir, PROG)
    skipped: List[str] = []
    rtt: Dict[Tuple[str, str], List[float]] = {}
    rate: Dict[Tuple[str, str], List[float]] = {}
    raw_rows = []
    failures: Dict[str, List[str]] = {}  # driver -> why, for each run that failed
    built = os.access(prog, os.X_OK)
    if not built:
        skipped.append(f"{PROG} not built")
    else:
        for rep in range(reps):
            for drv in ("tcp", "shm"):
                report.progress(f"remote channels {drv} run {rep + 1}/{reps}")
                try:
                    p = subprocess.run([prog, "--driver", drv, "--pin", "1",
                                        "--iterations", iters, "--messages", msgs],
                                       capture_output=True, text=True,
                                       timeout=120 if quick else 900)
                except subprocess.TimeoutExpired:
                    skipped.append(f"{drv} run {rep + 1}: timeout")
                    failures.setdefault(drv, []).append("timeout")
                    continue
                if p.returncode != 0:
                    skipped.append(f"{drv} run {rep + 1}: exit {p.returncode}: "
                                   f"{p.stderr.strip()[-200:]}")
                    failures.setdefault(drv, []).append(f"exit {p.returncode}")
                    continue
                results = parse(p.stdout)
                if drv == "tcp":
                    report.progress(f"zeromq tcp run {rep + 1}/{reps}")
                    results["zeromq"] = zmq_run(build_dir, iters, 120 if quick else 900)
                for method, (us, mps) in results.items():
                    if us > 0:
                        rtt.setdefault((drv, method), []).append(us)
                    if mps > 0:
                        rate.setdefault((drv, method), []).append(mps)
                    raw_rows.append([drv, method, rep + 1, us, mps])
    rows = []
    for drv in ("tcp", "shm"):
        for method in ("bare tcp", "bare tcp poll", "zeromq", "engine", "remote"):
            if (drv, method) in rtt:
                r = rate.get((drv, method))
                rows.append([drv, method, stats.fmt_spread(rtt[(drv, method)], lambda x: f"{x:.2f}"),
                             stats.fmt_spread(r, lambda x: f"{x / 1e6:.2f} M") if r else "-"])
    md.append(report.markdown_table(["driver", "method", "round trip (us)", "messages/s"], rows))
    if built:
        md += headlines(rtt, rate, reps, failures.get("tcp", []))
    if skipped:
        md.append("Not run or failed:\n")
        md += [f"- {s}" for s in skipped]
        md.append("")
    text = "\n".join(md) + "\n"
    out_dir = report.results_dir()
    with open(os.path.join(out_dir, "remote.md"), "w") as f:
        f.write(text)
    report.write_csv(os.path.join(out_dir, "remote-runs.csv"),
                     ["driver", "method", "run", "round_trip_us", "messages_per_s"], raw_rows)
    print(text)
    return text

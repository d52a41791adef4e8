#!/usr/bin/env python3
"""Interleaved chan grid A/B: chan.py REPS NBUSY [KINDS] [CAPS]; env A,B build/bench dirs."""
import os, subprocess, sys, statistics as st, collections
A = os.environ.get("A", "/work/main/build/bench"); B = os.environ.get("B", "/work/wt/chain/build/bench")
reps, nbusy = int(sys.argv[1]), int(sys.argv[2])
kinds = sys.argv[3] if len(sys.argv) > 3 else "spsc,mpsc,mpmc,select_rx,select_both,ping_pong"
caps = sys.argv[4] if len(sys.argv) > 4 else "0,1"
N = os.environ.get("N", "200000")
busy = [subprocess.Popen(["python3", "-c", "import time\nt=time.time()\nwhile time.time()-t<3000: pass"]) for _ in range(nbusy)]
res = collections.defaultdict(list)
try:
    for r in range(reps):
        for name, cmd in [("main", [A + "/chanbench-canal"]), ("cand", [B + "/chanbench-canal"]), ("rust", [os.environ.get("RUST", "/work/main/build/bench") + "/chanbench-rust", "-i", "all"])]:
            out = subprocess.run(cmd + ["-n", N, "-w", kinds, "-c", caps], capture_output=True, text=True, timeout=900).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) >= 4 and p[-1] == "sec":
                    impl = p[2].split("-")[0] if name == "rust" else name
                    res[(p[0], impl)].append(float(p[3]))
finally:
    for b in busy: b.kill()
cells = sorted({c for c, _ in res})
for c in cells:
    peers = [st.median(res[(c, i)]) for i in ("crossbeam", "flume") if (c, i) in res]
    best = min(peers) if peers else float("nan")
    row = f"{c:24}"
    for i in ("main", "cand", "crossbeam", "flume"):
        v = res.get((c, i))
        if v: row += f" {i} {st.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"
    row += f"  main/best {st.median(res[(c,'main')])/best:.2f}x cand/best {st.median(res[(c,'cand')])/best:.2f}x"
    print(row)

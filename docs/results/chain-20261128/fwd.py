#!/usr/bin/env python3
"""Interleaved fwd A/B: python3 fwd.py REPS 'W/R ...' ; env A (main build), B (candidate build)."""
import os, subprocess, sys, time, statistics as st
A = os.environ.get("A", "/work/main/build/bench")
B = os.environ.get("B", "/work/wt/chain/build/bench")
reps = int(sys.argv[1]); cfgs = sys.argv[2].split()
kinds = os.environ.get("KINDS", "proc threads").split()
progs = {"proc": [("main", A + "/fwd-canal-proc"), ("cand", B + "/fwd-canal-proc"), ("pipes", A + "/fwd-pipe-proc")],
         "threads": [("main", A + "/fwd-canal"), ("cand", B + "/fwd-canal"), ("floor", A + "/fwd-floor")]}
res = {}
for r in range(reps):
    for cfg in cfgs:
        w, rd = cfg.split("/")
        for kind in kinds:
            for name, prog in progs[kind]:
                t = time.perf_counter()
                subprocess.run([prog, w, rd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # no timeout: with one, Popen.wait polls with a doubling sleep and quantizes the time
                res.setdefault((kind, cfg, name), []).append(time.perf_counter() - t)
for (kind, cfg, name), v in res.items():
    print(f"{kind:8} {cfg:10} {name:6} median {st.median(v):.4f}  [{min(v):.4f}-{max(v):.4f}]")

import os, subprocess, sys, statistics as st, collections
reps, nbusy = int(sys.argv[1]), int(sys.argv[2]); kinds=sys.argv[3]; caps=sys.argv[4]
exps = sys.argv[5].split(",")
busy = [subprocess.Popen(["python3", "-c", "import time\nt=time.time()\nwhile time.time()-t<3000: pass"]) for _ in range(nbusy)]
res = collections.defaultdict(list)
try:
    for r in range(reps):
        runs=[("e"+x, ["/work/wt/live/build/bench/chanbench-canal"], {"CANAL_EXP":x}) for x in exps]+[("rust",["/work/main/build/bench/chanbench-rust","-i","all"],{})]
        for name, cmd, env in runs:
            out = subprocess.run(cmd + ["-n", "200000", "-w", kinds, "-c", caps], capture_output=True, text=True, timeout=900, env=dict(os.environ, **env)).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) >= 4 and p[-1] == "sec":
                    impl = p[2].split("-")[0] if name == "rust" else name
                    res[(p[0], impl)].append(float(p[3]))
finally:
    for b in busy: b.kill()
for c in sorted({c for c, _ in res}):
    best = min(st.median(res[(c,i)]) for i in ("crossbeam","flume") if (c,i) in res)
    row=f"{c:22} best {best:.3f}"
    for i in ["e"+x for x in exps]:
        v=res[(c,i)]; row+=f" | {i} {st.median(v):.3f} [{min(v):.3f}-{max(v):.3f}] {st.median(v)/best:.2f}x"
    print(row)

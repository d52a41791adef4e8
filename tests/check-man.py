#!/usr/bin/env python3
"""Check the generated man pages: every function exported by libcanal.so
(nm -D --defined-only, T/W symbols named canal_*) has a page in MANDIR/man3,
every page has a NAME and a SYNOPSIS, and, when groff is installed, every
page renders with no warning (groff -man -ww).

Usage: check-man.py path/to/libcanal.so MANDIR"""
import os
import shutil
import subprocess
import sys


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W") and parts[2].startswith("canal_"):
            syms.add(parts[2])
    return syms


def main():
    lib, mandir = sys.argv[1], sys.argv[2]
    errors = []
    syms = exported(lib)
    if not syms:
        errors.append(f"{lib} exports no canal_ function: nm found nothing to check")
    for s in sorted(syms):
        page = os.path.join(mandir, "man3", s + ".3")
        if not os.path.exists(page):
            errors.append(f"{s}: exported by {os.path.basename(lib)} but has no page "
                          f"(document it in its header: ' * {s} - summary' above "
                          f"its declaration)")
    pages = sorted(os.path.join(mandir, "man3", f) for f in os.listdir(os.path.join(mandir, "man3")))
    pages.append(os.path.join(mandir, "man7", "canal.7"))
    groff = shutil.which("groff")
    for p in pages:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION"):
            if section not in text:
                errors.append(f"{p}: no {section}")
        if groff:
            r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", p],
                               capture_output=True, text=True)
            if r.returncode != 0 or r.stderr.strip():
                errors.append(f"{p}: groff: {r.stderr.strip() or r.returncode}")
    if not groff:
        print("groff not installed: pages not rendered (apt-get install groff)")
    for e in errors:
        print("FAIL:", e)
    print(f"{len(syms)} exported functions, {len(pages)} pages, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

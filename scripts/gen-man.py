#!/usr/bin/env python3
"""Generate canal's man pages from the comment blocks of its public headers.

Usage: gen-man.py --out DIR [--version V] include/canal/*.h

Writes DIR/man3/<function>.3 for every documented public function and
DIR/man7/canal.7, the overview (each header's opening comment and the list of
its functions).

A function is documented when a comment block sits directly above its
declaration and starts with its name and a summary, as in channel.h:

    /*
     * canal_name - summary ...           or    /* canal_a, canal_b - summary
     * description ...
     */
    int canal_name(...);

Every function declared right under such a block gets the block as its page,
whether the first line names it or not (canal_try_send_reserve is documented
by the block of canal_send_reserve). Any new header in include/canal/
written in this style gets its pages without changing this script.
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

NAME_LINE = re.compile(r"^\s*(canal_\w+(?:\s*,\s*canal_\w+)*)\s+-(?:\s+(.*))?$")
SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.(?:\s|$)")
DECL_NAME = re.compile(r"\b(canal_\w+)\s*\(")


@dataclass
class Entry:
    header: str                 # "canal/channel.h"
    names: List[str]            # names on the first line, then the declared ones
    summary: str                # the text after " - ", up to the first blank line
    body: List[str]             # the rest of the comment, one string per line
    decls: List[str] = field(default_factory=list)  # normalised prototypes


@dataclass
class Header:
    include: str
    overview: List[str]
    entries: List[Entry]
    types: Dict[str, str] = field(default_factory=dict)  # "struct canal_slot" -> its definition


def comment_lines(block: str) -> List[str]:
    """The text lines of a /* ... */ block without the delimiters and the
    leading ' * ', keeping the indentation that follows the '*'."""
    inner = block[2:-2]
    out = []
    for line in inner.split("\n"):
        s = line.rstrip()
        m = re.match(r"^\s*\*( ?)(.*)$", s)
        if m:
            s = m.group(2)
        else:
            s = s.strip()
        out.append(s.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def strip_attributes(code: str) -> str:
    """code without its __attribute__((...)) (visibility and friends say
    nothing to a reader of the synopsis)."""
    while True:
        i = code.find("__attribute__")
        if i < 0:
            return code
        j = code.find("(", i)
        depth = 0
        for k in range(j, len(code)):
            depth += {"(": 1, ")": -1}.get(code[k], 0)
            if depth == 0:
                code = code[:i] + code[k + 1:]
                break
        else:
            return code


def split_declarations(code: str) -> List[str]:
    """Normalised declarations (whitespace collapsed) ending with ';'. An
    inline definition counts by its head (what precedes its body)."""
    code = re.sub(r"\s+", " ", strip_attributes(code)).strip()
    if "{" in code:
        code = code[:code.index("{")].strip()
        return [code + ";"] if code else []
    return [d.strip() + ";" for d in code.split(";") if d.strip()]


def parse_header(path: str, include: str) -> Header:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # Tokens: comments and the code between them.
    parts: List[Tuple[str, str]] = []
    pos = 0
    for m in re.finditer(r"/\*.*?\*/", text, re.S):
        if m.start() > pos:
            parts.append(("code", text[pos:m.start()]))
        parts.append(("comment", m.group(0)))
        pos = m.end()
    parts.append(("code", text[pos:]))

    overview: List[str] = []
    entries: List[Entry] = []
    for i, (kind, chunk) in enumerate(parts):
        if kind != "comment":
            continue
        lines = comment_lines(chunk)
        if not lines:
            continue
        if not overview and re.match(r"^canal/\S+\.h\s+-\s+", lines[0]):
            overview = lines
            continue
        # A list of names may run over several lines ("canal_a, canal_b,"
        # then "canal_c - summary"): join them first.
        while (len(lines) > 1 and lines[0].rstrip().endswith(",")
               and re.match(r"^\s*canal_\w+", lines[1])):
            lines = [lines[0].rstrip() + " " + lines[1].strip()] + lines[2:]
        m = NAME_LINE.match(lines[0])
        if not m:
            continue
        # The declaration must follow directly: the next chunk is code whose
        # first paragraph (up to a blank line) declares functions.
        if i + 1 >= len(parts) or parts[i + 1][0] != "code":
            continue
        code = parts[i + 1][1]
        if not code.startswith("\n") or re.match(r"\n\s*\n", code):
            continue
        first_par = re.split(r"\n\s*\n", code.strip("\n"), maxsplit=1)[0]
        if first_par.lstrip().startswith("#"):
            continue
        decls = [d for d in split_declarations(first_par) if DECL_NAME.search(d)]
        if not decls:
            continue
        names = [n.strip() for n in m.group(1).split(",")]
        for d in decls:
            n = DECL_NAME.search(d).group(1)
            if n not in names:
                names.append(n)
        # The summary is the first sentence; the rest of its paragraph
        # opens the description.
        first = [m.group(2) or ""]
        rest = lines[1:]
        while rest and rest[0].strip() and not rest[0].startswith(" "):
            first.append(rest.pop(0))
        joined = " ".join(s.strip() for s in first)
        end = SENTENCE_END.search(joined)
        summary, more = (joined[:end.start()], joined[end.end():].strip()) if end \
            else (joined, "")
        if more:
            rest.insert(0, more)
        while rest and not rest[0].strip():
            rest.pop(0)
        entries.append(Entry(include, names, summary, rest, decls))
    types = {f"{m.group(1)} {m.group(2)}": m.group(0)
             for m in re.finditer(r"^(struct|enum) (canal_\w+) \{.*?^\};", text, re.S | re.M)}
    return Header(include, overview, entries, types)


# ---------------------------------------------------------------- troff


def esc(s: str) -> str:
    """Escape text for troff: backslashes, and minus signs that belong to
    options and error codes (-EPIPE, -1) so they print as minus signs."""
    s = s.replace("\\", "\\e")
    s = re.sub(r"(?<![A-Za-z0-9])-(?=[A-Za-z0-9>])", r"\\-", s)
    return s


def line_out(s: str) -> str:
    s = esc(s)
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def body_troff(lines: List[str]) -> List[str]:
    """Paragraphs of plain text are filled; a paragraph holding an indented
    line or a '- ' item (a list of error codes, of conventions) is printed
    as written, line for line."""
    out: List[str] = []
    paragraphs: List[List[str]] = [[]]
    for s in lines:
        if s.strip():
            paragraphs[-1].append(s)
        elif paragraphs[-1]:
            paragraphs.append([])
    for par in paragraphs:
        if not par:
            continue
        if out:
            out.append(".PP")
        laid_out = any(s.startswith(" ") or s.lstrip().startswith("- ") for s in par)
        if laid_out:
            out.append(".nf")
        out.extend(line_out(s) for s in par)
        if laid_out:
            out.append(".fi")
    return out


def wrap_decl(d: str, width: int = 72) -> List[str]:
    if len(d) <= width:
        return [d]
    paren = d.find("(")
    lines, cur = [], ""
    for piece in re.split(r"(?<=,) ", d):
        if cur and len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = " " * (paren + 1) + piece
        else:
            cur = piece if not cur else cur + " " + piece
    lines.append(cur)
    return lines


def th(name: str, section: str, date: str, version: str) -> str:
    return f'.TH {name.upper()} {section} "{date}" "canal {version}" "canal manual"'


def page(entry: Entry, name: str, date: str, version: str, all_names: List[str],
         types: Dict[str, str]) -> str:
    out = [f".\\\" Generated by scripts/gen-man.py from include/{entry.header}; do not edit.",
           th(name, "3", date, version),
           ".SH NAME",
           f"{', '.join(entry.names)} \\- {esc(entry.summary)}",
           ".SH SYNOPSIS",
           ".nf",
           f".B #include <{entry.header}>",
           ".PP"]
    # The public types the prototypes take (struct canal_case for
    # canal_select), as the header defines them.
    for name, definition in types.items():
        if any(re.search(r"\b%s\b" % re.escape(name), d) for d in entry.decls):
            out.extend(line_out(l.expandtabs(8)) for l in definition.splitlines())
            out.append("")
    for d in entry.decls:
        out.extend(line_out(l) for l in wrap_decl(d))
    out += [".fi", ".PP", "Link with \\fI\\-lcanal\\fP (or \\fIpkg\\-config \\-\\-libs canal\\fP).",
            ".SH DESCRIPTION"]
    out += body_troff(entry.body) if entry.body else ["See the summary above."]
    see = [n for n in all_names if n != name and n in entry.names]
    refs = [f"\\fB{n}\\fP(3)" for n in see] + ["\\fBcanal\\fP(7)"]
    out += [".SH SEE ALSO", ",\n".join(refs)]
    return "\n".join(out) + "\n"


def overview_page(headers: List[Header], date: str, version: str) -> str:
    out = [".\\\" Generated by scripts/gen-man.py from include/canal/*.h; do not edit.",
           th("canal", "7", date, version),
           ".SH NAME",
           "canal \\- fast channels and communication between threads and processes",
           ".SH SYNOPSIS",
           ".nf"]
    for h in headers:
        out.append(f".B #include <{h.include}>")
    out += [".fi", ".PP", "Link with \\fI\\-lcanal\\fP, or use \\fIpkg\\-config canal\\fP, "
            "or \\fIfind_package(canal)\\fP and the target \\fIcanal::canal\\fP in CMake.",
            ".SH DESCRIPTION"]
    for h in headers:
        out.append(f".SS <{h.include}>")
        if h.overview:
            # The header's summary: its first paragraph, after the name.
            n = next((i for i, l in enumerate(h.overview) if not l.strip()), len(h.overview))
            first = re.sub(r"^canal/\S+\.h\s+-\s+", "", " ".join(h.overview[:n]))
            out.append(line_out(first[:1].upper() + first[1:]))
            if h.overview[n:]:
                out.append(".PP")
                out += body_troff(h.overview[n + 1:])
        out.append(".PP")
        out.append("Functions:")
        for e in h.entries:
            out.append(".TP")
            out.append(", ".join(f"\\fB{n}\\fP(3)" for n in e.names))
            out.append(esc(e.summary))
    out += [".SH SEE ALSO", "The examples in the source tree (examples/), docs/DESIGN.md and "
            "docs/GUARANTEES.md."]
    return "\n".join(out) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory (man3/ and man7/ go there)")
    ap.add_argument("--version", default="")
    ap.add_argument("--date", default=None, help="date on the pages (default: today, or "
                    "SOURCE_DATE_EPOCH)")
    ap.add_argument("--list", action="store_true", help="print the pages' names, write nothing")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args(argv)
    date = args.date
    if date is None:
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        t = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
             else datetime.datetime.now(datetime.timezone.utc))
        date = t.strftime("%Y-%m-%d")
    headers = []
    for path in sorted(args.headers):
        include = "canal/" + os.path.basename(path)
        headers.append(parse_header(path, include))
    pages = {}
    types: Dict[str, str] = {}
    for h in headers:
        types.update(h.types)
        for e in h.entries:
            for n in e.names:
                if n in pages:
                    print(f"gen-man: warning: {n} documented twice ({h.include}); "
                          f"the first block is its page", file=sys.stderr)
                    continue
                pages[n] = e
    if args.list:
        for n in sorted(pages):
            print(n)
        return 0
    man3 = os.path.join(args.out, "man3")
    man7 = os.path.join(args.out, "man7")
    os.makedirs(man3, exist_ok=True)
    os.makedirs(man7, exist_ok=True)
    # Remove pages of functions that no longer exist.
    for f in os.listdir(man3):
        if f.endswith(".3") and f[:-2] not in pages:
            os.remove(os.path.join(man3, f))
    for n, e in pages.items():
        write_if_changed(os.path.join(man3, n + ".3"),
                         page(e, n, date, args.version, e.names, types))
    write_if_changed(os.path.join(man7, "canal.7"), overview_page(headers, date, args.version))
    return 0


def write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

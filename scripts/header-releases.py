#!/usr/bin/env python3
"""Turn cbindgen's output into the one C header of every served release.

  scripts/header-releases.py HEADER     (rewritten in place)

src/abi declares the items of every UCX release at once (see the top of
src/abi/mod.rs): an item that only some releases have carries a doc line
"Releases: 1.N+." or "Releases: 1.A-1.B.", and an older layout or value of
an item is a second Rust item named <C name>_v1_<N>. C code compiles
against one release, chosen with UCT_RS_UCX_ABI_MINOR, so this script:

* wraps every item with a "Releases:" line (a #define, a typedef, a struct
  with its body, or a struct member) in #if on UCT_RS_UCX_ABI_MINOR;
* gives every <C name>_v1_<N> its C name (only one of them is visible in a
  release);
* writes a trailing zero-length array member as C's flexible array member;
* replaces the line "/* @RELEASES@ */" (cbindgen.toml, after_includes) with
  the release selection and the version numbers of every row of
  ucx-releases.txt.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"^\s*\* Releases: 1\.(\d+)(\+|-1\.(\d+))\.\s*$")


def releases():
    rows = []
    with open(os.path.join(ROOT, "ucx-releases.txt"), encoding="utf-8") as f:
        for line in f:
            cols = line.split()
            if cols and not cols[0].startswith("#"):
                rev, _, branch = cols[5].partition(":")
                rows.append((int(cols[0]), cols[1], rev, branch))
    return rows


def release_block(rows):
    lo, hi = rows[0][0], rows[-1][0]
    out = [
        "/*",
        " * The UCX release whose ABI these declarations describe: define",
        " * UCT_RS_UCX_ABI_MINOR (%d to %d) before including this header; the" % (lo, hi),
        " * default is %d (UCX %s). Items only some releases have sit in #if" % (lo, rows[0][1]),
        " * blocks on it.",
        " */",
        "#ifndef UCT_RS_UCX_ABI_MINOR",
        "#define UCT_RS_UCX_ABI_MINOR %d" % lo,
        "#endif",
        "#if UCT_RS_UCX_ABI_MINOR < %d || UCT_RS_UCX_ABI_MINOR > %d" % (lo, hi),
        '#error "uct-rs: UCT_RS_UCX_ABI_MINOR must be a served release (%d to %d)"' % (lo, hi),
        "#endif",
        "#define UCT_VERNO_MAJOR 1",
    ]
    for i, (minor, ref, rev, branch) in enumerate(rows):
        out.append("#%s UCT_RS_UCX_ABI_MINOR == %d" % ("if" if i == 0 else "elif", minor))
        out.append("#define UCT_VERNO_MINOR %d" % minor)
        out.append("#define UCT_VERNO_PATCH %s" % ref.split(".")[2])
        out.append('#define UCT_VERNO_STRING "%s"' % ref)
        out.append('#define UCT_SCM_VERSION "%s"' % rev)
        out.append('#define UCT_SCM_BRANCH "%s"' % branch)
    out.append("#endif")
    return out


def condition(m):
    lo = int(m.group(1))
    if m.group(2) == "+":
        return "UCT_RS_UCX_ABI_MINOR >= %d" % lo
    hi = int(m.group(3))
    if lo == hi:
        return "UCT_RS_UCX_ABI_MINOR == %d" % lo
    return "UCT_RS_UCX_ABI_MINOR >= %d && UCT_RS_UCX_ABI_MINOR <= %d" % (lo, hi)


def item_end(lines, start):
    """Index of the last line of the item that begins at `start`."""
    first = lines[start].strip()
    if first.startswith("#define"):
        i = start
        while lines[i].rstrip().endswith("\\"):
            i += 1
        return i
    depth = 0
    i = start
    while i < len(lines):
        text = lines[i]
        depth += text.count("{") - text.count("}")
        if depth == 0 and text.rstrip().endswith(";"):
            return i
        i += 1
    sys.exit("header-releases: no end for the item at line %d: %s" % (start + 1, first))


def guard(lines):
    wraps = []  # (doc start, item end, condition)
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        s = i
        while not lines[s].lstrip().startswith("/**"):
            s -= 1
        e = i
        while not lines[e].strip().endswith("*/"):
            e += 1
        wraps.append((s, item_end(lines, e + 1), condition(m)))
    before = {}
    after = {}
    for s, e, cond in wraps:
        before.setdefault(s, []).append("#if %s" % cond)
        after.setdefault(e, []).insert(0, "#endif")
    out = []
    for i, line in enumerate(lines):
        out.extend(before.get(i, []))
        out.append(line)
        out.extend(after.get(i, []))
    return out, len(wraps)


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    placeholder = [i for i, l in enumerate(lines) if l.strip() == "/* @RELEASES@ */"]
    if len(placeholder) != 1:
        sys.exit("header-releases: expected one /* @RELEASES@ */ line")
    lines, n = guard(lines)
    p = lines.index("/* @RELEASES@ */")
    lines[p:p + 1] = release_block(releases())
    text = "\n".join(lines)
    text = re.sub(r"\b([A-Za-z_][A-Za-z0-9_]*?)_v1_\d+\b", r"\1", text)
    # A Rust `[T; 0]` last member is C's flexible array member.
    text = re.sub(r"^(\s+[^;()]*\b[A-Za-z_][A-Za-z0-9_]*)\[0\];$", r"\1[];", text, flags=re.M)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print("header-releases: %d items guarded by release" % n, file=sys.stderr)


if __name__ == "__main__":
    main()

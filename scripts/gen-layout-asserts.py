#!/usr/bin/env python3
"""Generate the ABI layout checks from the reference layout tables.

Input:  tests/data/ucx-<release>-layouts.tsv, one per release in RELEASES
        (columns: header, type, field, c_type, offset, size; made by
        scripts/gen-layout-tsv.py)

Outputs:
  src/abi/layout_asserts_1_<minor>.rs  per release: compile-time
                                 `const _: () = assert!(..)` checks of every
                                 row of its table against crate::abi; every
                                 build compiles all of them
  src/abi/layout_sizes.rs        the size each release gives the structs
                                 whose Rust type serves several layouts
                                 (members appended over the releases)
  c-tests/layout_probe_items.h   the sizeof/offsetof/... probes that
                                 c-tests/layout_probe.c prints: the rows of
                                 every release (items that only some
                                 releases have are guarded by
                                 UCT_RS_UCX_ABI_MINOR) plus a few extra
                                 libucs config types that are compared
                                 between the real headers and ours only

Usage:
  scripts/gen-layout-asserts.py          regenerate all files
  scripts/gen-layout-asserts.py --check  exit 1 if any file is stale
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C_OUT = os.path.join(ROOT, "c-tests", "layout_probe_items.h")

def served_releases():
    """(reference release, minor) of every row of ucx-releases.txt."""
    out = []
    with open(os.path.join(ROOT, "ucx-releases.txt"), encoding="utf-8") as f:
        for line in f:
            cols = line.split()
            if cols and not cols[0].startswith("#"):
                out.append((cols[1], int(cols[0])))
    return out


# (release, minor) of every reference table, oldest first.
RELEASES = served_releases()

# The releases whose checks src/abi compiles (all of RELEASES once every
# release's items are declared).
COMPILED = set(range(13, 23))

# Types whose definitions for a release are still being written elsewhere
# in src/abi: their rows of that release's table are emitted but not
# compiled (a `#[cfg(any())]` module), and the C probe prints only their
# size and alignment for that release. Empty this once they are done.
AWAITING = {}

# Types of the tables the crate does not mirror (it never embeds or fills
# them): their rows are not checked.
NOT_MIRRORED = {"ucs_rcache_config_t"}

# Member paths of the tables that the Rust types spell differently: an
# anonymous union is one member (its members are not checked one by one).
FIELD_RENAMES = {("ucs_rcache_region_t", "(anon)"): "priv_"}
SKIPPED_FIELDS = {("ucs_rcache_region_t", "(anon).priv"), ("ucs_rcache_region_t", "(anon).pfn")}

# C member names that are Rust keywords and need a raw identifier.
RUST_KEYWORDS = {"priv", "type", "self", "match", "move", "ref", "fn", "mod",
                 "impl", "use", "where", "box", "final", "override", "macro"}

# Scalar typedefs that are pointers (no signedness probe for them).
POINTER_SCALARS = {"ucs_status_ptr_t", "ucs_callback_t", "uct_mem_h",
                   "uct_conn_request_h", "uct_rkey_ctx_h"}

# Headers whose types are absent from installed include trees (UCX does not
# install uct_v2.h); the C probe prints them only when PROBE_V2 is defined.
OURS_ONLY_HEADERS = {"v2/uct_v2.h"}

# Extra libucs types that the crate mirrors but the tables do not list:
# (type, [(member, since-minor[, until-minor])]). They are probed in both
# modes and compared with each other.
EXTRA_TYPES = [
    ("ucs_list_link_t", [("prev", 13), ("next", 13)]),
    ("ucs_config_parser_t", [("read", 13), ("write", 13), ("clone", 13),
                             ("release", 13), ("help", 13), ("doc", 17),
                             ("arg", 13)]),
    ("ucs_config_array_t", [("elem_size", 13), ("parser", 13)]),
    ("ucs_config_field_t", [("name", 13), ("dfl_value", 13), ("doc", 13),
                            ("offset", 13), ("parser", 13)]),
    ("ucs_config_global_list_entry_t", [("name", 13), ("prefix", 13),
                                        ("table", 13), ("size", 13),
                                        ("list", 13), ("flags", 15)]),
    ("ucs_config_names_array_t", [("names", 13), ("count", 13), ("pad", 13, 21),
                                  ("truncated", 22)]),
    ("ucs_config_allow_list_t", [("array", 13), ("mode", 13)]),
    ("ucs_range_spec_t", [("first", 13), ("last", 13)]),
    ("ucs_config_bw_spec_t", [("name", 13), ("bw", 13)]),
]
EXTRA_SCALARS = ["ucs_log_level_t", "ucs_config_print_flags_t",
                 "ucs_async_mode_t", "ucs_ternary_auto_value_t",
                 "ucs_on_off_auto_value_t", "ucs_config_allow_list_mode_t",
                 "ucs_cpu_mask_t", "uct_mem_advice_t"]


def tsv_path(release):
    return os.path.join(ROOT, "tests", "data", f"ucx-{release}-layouts.tsv")


def rs_path(minor):
    return os.path.join(ROOT, "src", "abi", f"layout_asserts_1_{minor}.rs")


SIZES_OUT = os.path.join(ROOT, "src", "abi", "layout_sizes.rs")


def parse_range(text):
    """'1.N+' -> (N, None); '1.A-1.B' -> (A, B) (inclusive)."""
    text = text.strip().rstrip(".")
    if text.endswith("+"):
        return (int(text[:-1].split(".")[1]), None)
    a, b = text.split("-")
    return (int(a.split(".")[1]), int(b.split(".")[1]))


def covers(rng, minor):
    lo, hi = rng
    return lo <= minor and (hi is None or minor <= hi)


def rust_items():
    """{base C name: [(rust name, range or None)]} of every `pub struct`
    and `pub const` of src/abi: a doc line `Releases: ...` in the block of
    doc comments and attributes right above an item gives its range, and a
    name ending in `_v1_<N>` is an older layout or value of the base name."""
    import re
    items = {}
    abi = os.path.join(ROOT, "src", "abi")
    for fn in sorted(os.listdir(abi)):
        if not fn.endswith(".rs") or fn.startswith("layout_"):
            continue
        rng = None
        with open(os.path.join(abi, fn), encoding="utf-8") as f:
            for line in f:
                t = line.strip()
                m = re.match(r"/// Releases: (.*)$", t)
                if m:
                    rng = parse_range(m.group(1))
                    continue
                if t.startswith("///") or t.startswith("#["):
                    continue
                m = re.match(r"pub (?:struct|const|union) (\w+)", t)
                if m:
                    name = m.group(1)
                    base = re.sub(r"_v1_\d+$", "", name)
                    items.setdefault(base, []).append((name, rng))
                rng = None
    return items


ITEMS = None


def resolve(name, minor):
    """(rust name, exact): the Rust item that holds `name` for release
    `minor`, and whether it is that release's layout exactly (an item with
    a range of releases) rather than a type serving several."""
    global ITEMS
    if ITEMS is None:
        ITEMS = rust_items()
    cands = ITEMS.get(name, [])
    for rname, rng in cands:
        if rng is not None and covers(rng, minor) and rname != name:
            return rname, True
    for rname, rng in cands:
        if rname == name:
            return name, rng is not None and rng[1] is not None
    return name, False


def read_rows(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header == ["header", "type", "field", "c_type", "offset", "size"], header
        for lineno, line in enumerate(f, start=2):
            line = line.rstrip("\n")
            if not line:
                continue
            cols = line.split("\t")
            if len(cols) != 6:
                sys.exit(f"{path}:{lineno}: expected 6 columns, got {len(cols)}")
            rows.append(cols)
    return rows


# C member names that are Rust keywords without a raw form: the Rust member
# takes a trailing underscore.
UNDERSCORED = {"super", "self", "crate"}


def rust_path(path):
    return ".".join(p + "_" if p in UNDERSCORED else "r#" + p if p in RUST_KEYWORDS else p
                    for p in path.split("."))


def parse_int(text):
    return int(text, 0)


def rust_asserts(rows, minor, shared):
    """Assertion lines for `rows` of release `minor`, and how many
    assertions they are. `shared`: {Rust type: [(minor, size)]} of the
    Rust types that serve releases of different sizes; their size is
    checked as "at least" (the exact size per release is in
    layout_sizes.rs) except for the largest, which must be exact."""
    out = []
    count = 0
    last_type = None
    for header, ty, field, ctype, off, size in rows:
        if ty in NOT_MIRRORED or (ty, field) in SKIPPED_FIELDS:
            continue
        field = FIELD_RENAMES.get((ty, field), field)
        rty, _ = resolve(ty, minor)
        if ty != last_type:
            out.append(f"// ---- {ty} ({header})" + (f" as {rty}" if rty != ty else ""))
            last_type = ty
        if field in ("(whole)", "(scalar)"):
            largest = max(sz for _, sz in shared[rty]) if rty in shared else None
            op = ">=" if largest is not None and parse_int(size) < largest else "=="
            out.append(f"const _: () = assert!(size_of::<{rty}>() {op} {parse_int(size)}, "
                       f"\"sizeof({ty})\");")
            count += 1
        elif field == "(const)":
            names = ty.split("/")
            values = size.split("/")
            assert len(names) == len(values), (ty, size)
            for name, value in zip(names, values):
                rname, _ = resolve(name, minor)
                if name == "UCT_API":
                    rname = f"uct_api(release::Release::new({minor}, 0))"
                out.append(f"const _: () = assert!({rname} as i128 == {parse_int(value)}, "
                           f"\"{name}\");")
                count += 1
        else:
            rp = rust_path(field)
            out.append(f"const _: () = assert!(offset_of!({rty}, {rp}) == {parse_int(off)}, "
                       f"\"offsetof({ty}, {field})\");")
            out.append(f"const _: () = assert!(field_size!({rty}, {rp}) == {parse_int(size)}, "
                       f"\"sizeof({ty}::{field})\");")
            count += 2
    return out, count


def gen_rust(release, minor, rows, shared):
    awaiting = AWAITING.get(minor, set())
    checked = [r for r in rows if r[1] not in awaiting]
    pending = [r for r in rows if r[1] in awaiting]
    out = []
    w = out.append
    w("// @generated by scripts/gen-layout-asserts.py from")
    w(f"// tests/data/ucx-{release}-layouts.tsv -- do not edit by hand.")
    w("//")
    w("// Every row of the reference table becomes a compile-time assertion, so")
    w("// a layout mistake in crate::abi stops the build. Every build compiles")
    w("// the checks of every served release.")
    w("")
    w("#![allow(unused_unsafe, clippy::all)]")
    w("")
    w("use crate::abi::*;")
    w("use crate::abi::release;")
    w("use ::core::mem::{offset_of, size_of};")
    w("")
    w("/// Size of the type a raw pointer points to (no memory is touched).")
    w("const fn pointee_size<F>(_: *const F) -> usize {")
    w("    size_of::<F>()")
    w("}")
    w("")
    w("/// Size of the member `$($f).+` of `$t`, computed on an uninitialised")
    w("/// value through `addr_of!`, which never reads memory.")
    w("macro_rules! field_size {")
    w("    ($t:ty, $($f:tt)+) => {{")
    w("        let u = ::core::mem::MaybeUninit::<$t>::uninit();")
    w("        let p = u.as_ptr();")
    w("        // SAFETY: addr_of! only computes the member's address inside the")
    w("        // live MaybeUninit; nothing is read or referenced.")
    w("        let m = unsafe { ::core::ptr::addr_of!((*p).$($f)+) };")
    w("        pointee_size(m)")
    w("    }};")
    w("}")
    w("")
    w("const _: () = assert!(size_of::<ucs_status_t>() == 1, \"ucs_status_t must be one byte\");")
    w("")
    lines, count = rust_asserts(checked, minor, shared)
    out.extend(lines)
    count += 1
    if pending:
        plines, pcount = rust_asserts(pending, minor, shared)
        w("")
        w("// Rows of types whose definitions for this release are not written yet")
        w("// (AWAITING in scripts/gen-layout-asserts.py): kept here, not compiled.")
        w("#[cfg(any())]")
        w("mod awaiting {")
        w("    use super::*;")
        out.extend("    " + l for l in plines)
        w("}")
        w("")
        w(f"// {count} assertions in total ({pcount} more awaiting).")
    else:
        w("")
        w(f"// {count} assertions in total.")
    return "\n".join(out) + "\n"


def header_excluded():
    """Types cbindgen.toml keeps out of our C header (the probe cannot
    compare them; their layouts are checked at compile time only)."""
    import re
    with open(os.path.join(ROOT, "cbindgen.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^exclude = \[(.*?)\]", text, re.S | re.M)
    return set(re.findall(r'"([^"]+)"', m.group(1))) if m else set()


def probe_items(rows, minor):
    """(item, is_v2) of one release's table, in table order."""
    awaiting = AWAITING.get(minor, set())
    skip = header_excluded() | NOT_MIRRORED
    items = []
    seen = set()

    def add(item, v2):
        if item not in seen:
            seen.add(item)
            items.append((item, v2))

    for header, ty, field, ctype, off, size in rows:
        if field == "(const)" or ty in skip or (ty, field) in SKIPPED_FIELDS:
            continue
        v2 = header in OURS_ONLY_HEADERS
        if field == "(whole)":
            add(f"P_SIZE({ty})", v2)
            add(f"P_ALIGN({ty})", v2)
        elif field == "(scalar)":
            add(f"P_SIZE({ty})", v2)
            if ty not in POINTER_SCALARS:
                add(f"P_SIGNED({ty})", v2)
        elif ty not in awaiting:
            add(f"P_OFF({ty}, {field})", v2)
            # A zero-length last member is a flexible array member in our
            # header: it has no size to print.
            if parse_int(size) != 0:
                add(f"P_FSIZE({ty}, {field})", v2)
    return items


def extra_items(minor):
    awaiting = AWAITING.get(minor, set())
    items = []
    for ty, fields in EXTRA_TYPES:
        items.append(f"P_SIZE({ty})")
        items.append(f"P_ALIGN({ty})")
        if ty in awaiting:
            continue
        for f, since, *until in fields:
            if since <= minor and (not until or minor <= until[0]):
                items.append(f"P_OFF({ty}, {f})")
                items.append(f"P_FSIZE({ty}, {f})")
    for ty in EXTRA_SCALARS:
        items.append(f"P_SIZE({ty})")
        items.append(f"P_SIGNED({ty})")
    return items


def merge(lists):
    """Ordered union of several item lists: each list's order is kept, and
    an item missing from the result goes right after its predecessor."""
    result = []
    for items in lists:
        prev = None
        for it in items:
            if it in result:
                prev = it
                continue
            pos = result.index(prev) + 1 if prev is not None else 0
            result.insert(pos, it)
            prev = it
    return result


def abi_guard(minors, all_minors):
    if set(minors) == set(all_minors):
        return None
    return " || ".join(f"UCT_RS_UCX_ABI_MINOR == {m}" for m in sorted(minors))


def emit_guarded(w, entries):
    """entries: (text, condition or None); consecutive entries with the same
    condition share one #if block."""
    current = None
    for text, cond in entries:
        if cond != current:
            if current is not None:
                w("#endif")
            if cond is not None:
                w(f"#if {cond}")
            current = cond
        w(text)
    if current is not None:
        w("#endif")


def gen_c(tables):
    minors = [m for _, m, _ in tables]
    per_release = {m: probe_items(rows, m) for _, m, rows in tables}
    v2_of = {}
    for m in minors:
        for item, v2 in per_release[m]:
            v2_of[item] = v2
    order = merge([[it for it, _ in per_release[m]] for m in minors])
    members = {m: {it for it, _ in per_release[m]} for m in minors}

    out = []
    w = out.append
    names = ", ".join(f"ucx-{r}-layouts.tsv" for r, _, _ in tables)
    w("/* @generated by scripts/gen-layout-asserts.py from")
    w(f" * tests/data/{{{names}}} -- do not edit by hand.")
    w(" *")
    w(" * Probe list for c-tests/layout_probe.c. The including file defines")
    w(" * P_SIZE(T), P_ALIGN(T), P_SIGNED(T), P_OFF(T, member) and")
    w(" * P_FSIZE(T, member), and UCT_RS_UCX_ABI_MINOR (the release probed):")
    w(" * items only some releases have are guarded by it. Items of uct_v2.h")
    w(" * are guarded by PROBE_V2: UCX does not install that header, so by")
    w(" * default only our header has them.")
    w(" */")
    w("")
    entries = []
    for it in order:
        conds = []
        if v2_of[it]:
            conds.append("defined(PROBE_V2)")
        g = abi_guard([m for m in minors if it in members[m]], minors)
        if g is not None:
            conds.append(f"({g})" if v2_of[it] else g)
        entries.append((it, " && ".join(conds) if conds else None))
    # Keep the plain "#ifdef PROBE_V2" spelling of the single-release header.
    entries = [(t, "__V2__" if c == "defined(PROBE_V2)" else c) for t, c in entries]
    block = []
    emit_guarded(block.append, entries)
    for line in block:
        w("#ifdef PROBE_V2" if line == "#if __V2__" else line)
    w("")
    w("/* Extra libucs types mirrored by the crate (not in the tables). */")
    extra = {m: extra_items(m) for m in minors}
    order = merge([extra[m] for m in minors])
    entries = [(it, abi_guard([m for m in minors if it in extra[m]], minors)) for it in order]
    emit_guarded(w, entries)
    return "\n".join(out) + "\n"


def struct_sizes(tables):
    """{Rust type: [(minor, size)]} of the Rust structs that serve several
    releases giving them different sizes (the type under the C name, or
    an older layout `<C name>_v1_<N>` whose releases appended members)."""
    sizes = {}
    for _, m, rows in tables:
        if m not in COMPILED:
            continue
        for header, ty, field, ctype, off, size in rows:
            if field != "(whole)" or ty in NOT_MIRRORED:
                continue
            rty, _ = resolve(ty, m)
            sizes.setdefault(rty, []).append((m, parse_int(size)))
    return {t: v for t, v in sizes.items() if len({s for _, s in v}) > 1}


def gen_sizes(shared):
    out = []
    w = out.append
    w("// @generated by scripts/gen-layout-asserts.py from the reference layout")
    w("// tables (tests/data/ucx-<release>-layouts.tsv) -- do not edit by hand.")
    w("//")
    w("// The structs whose one Rust type serves several layouts: later")
    w("// releases appended members (announced by field-mask bits), so an older")
    w("// release's struct is a prefix of the Rust one. For each: the size per")
    w("// served release, as (first minor with that size, size).")
    w("")
    w("use super::*;")
    w("use super::release::Release;")
    w("")
    w("/// A struct whose size depends on the release (see the file header).")
    w("pub trait ReleaseSized: Sized {")
    w("    /// (first minor, size) runs, oldest first.")
    w("    const SIZES: &'static [(u8, usize)];")
    w("    /// The size `release` gives the struct.")
    w("    fn size_in(release: Release) -> usize {")
    w("        let mut size = Self::SIZES[0].1;")
    w("        for &(minor, s) in Self::SIZES {")
    w("            if release.minor >= minor {")
    w("                size = s;")
    w("            }")
    w("        }")
    w("        size.min(::core::mem::size_of::<Self>())")
    w("    }")
    w("")
    w("    /// The caller's struct at `p`, read as far as `release` makes it; the")
    w("    /// members that release lacks are zero.")
    w("    ///")
    w("    /// # Safety")
    w("    /// `p` points to a readable struct in `release`'s layout.")
    w("    unsafe fn read_in(p: *const Self, release: Release) -> Self")
    w("    where")
    w("        Self: Default,")
    w("    {")
    w("        let mut v = Self::default();")
    w("        // SAFETY: the caller's struct has size_in(release) readable bytes,")
    w("        // no more than `v` has; plain bytes of a repr(C) struct.")
    w("        unsafe {")
    w("            ::core::ptr::copy_nonoverlapping(p as *const u8, &mut v as *mut Self as *mut u8,")
    w("                                             Self::size_in(release))")
    w("        };")
    w("        v")
    w("    }")
    w("")
    w("    /// Write `self` to the caller's struct at `p`, as far as `release`")
    w("    /// makes it (nothing beyond its end).")
    w("    ///")
    w("    /// # Safety")
    w("    /// `p` points to a writable struct in `release`'s layout.")
    w("    unsafe fn write_in(&self, p: *mut Self, release: Release) {")
    w("        // SAFETY: see the function contract; size_in(release) bytes of")
    w("        // `self` are initialised and fit the caller's struct.")
    w("        unsafe {")
    w("            ::core::ptr::copy_nonoverlapping(self as *const Self as *const u8, p as *mut u8,")
    w("                                             Self::size_in(release))")
    w("        };")
    w("    }")
    w("}")
    for ty in sorted(shared):
        runs = []
        for m, sz in sorted(shared[ty]):
            if not runs or runs[-1][1] != sz:
                runs.append((m, sz))
        body = ", ".join(f"({m}, {sz})" for m, sz in runs)
        w("")
        w(f"impl ReleaseSized for {ty} {{")
        w(f"    const SIZES: &'static [(u8, usize)] = &[{body}];")
        w("}")
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    tables = [(r, m, read_rows(tsv_path(r))) for r, m in RELEASES]
    shared = struct_sizes(tables)
    outputs = {rs_path(m): gen_rust(r, m, rows, shared) for r, m, rows in tables}
    outputs[SIZES_OUT] = gen_sizes(shared)
    index = ["// @generated by scripts/gen-layout-asserts.py -- do not edit by hand.",
             "//",
             "// The compile-time layout checks of every served release.", ""]
    for r, m in RELEASES:
        if m not in COMPILED:
            index.append(f"// 1.{m}: not compiled yet (COMPILED in scripts/gen-layout-asserts.py)")
            continue
        index.append(f"#[path = \"layout_asserts_1_{m}.rs\"]")
        index.append(f"mod v1_{m};")
    outputs[os.path.join(ROOT, "src", "abi", "layout_asserts.rs")] = "\n".join(index) + "\n"
    outputs[C_OUT] = gen_c(tables)
    stale = []
    for path, text in outputs.items():
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old == text:
            continue
        if check:
            stale.append(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"wrote {os.path.relpath(path, ROOT)}")
    if stale:
        for p in stale:
            print(f"stale: {os.path.relpath(p, ROOT)} (run scripts/gen-layout-asserts.py)")
        sys.exit(1)


if __name__ == "__main__":
    main()

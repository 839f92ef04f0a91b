# gdb Python script: print a structural "signature" of ABI types.
#
# Run inside gdb against a binary built with -g
# -fno-eliminate-unused-debug-types:
#
#   gdb -nx -batch -ex "python SIG_NAMES='names.txt'" \
#       -x c-tests/abi_signatures.py ./probe
#
# For every type name in SIG_NAMES (one per line, '#' comments allowed) it
# prints "sig(NAME) DESCRIPTION", or "sig(NAME) <missing>" when the binary
# has neither a typedef nor a struct/union/enum tag of that name. The description ignores spelling (typedef
# names, struct tags, enum vs. integer) and keeps only what matters to the
# ABI: integer width and signedness, floats, pointers and what they point
# to (including const), arrays, member names and offsets, and complete
# function signatures (return and argument types). Two headers declare the
# same ABI exactly when the descriptions agree.

import gdb

MAX_DEPTH = 6


def int_desc(t):
    code = t.code
    size = t.sizeof
    if code == gdb.TYPE_CODE_ENUM:
        signed = any(f.enumval < 0 for f in t.fields())
        # gcc picks an unsigned underlying type for non-negative enums.
        return ("s" if signed else "u") + str(size * 8)
    if code == gdb.TYPE_CODE_BOOL:
        return "bool" + str(size * 8)
    try:
        signed = t.is_signed
    except (AttributeError, ValueError):
        signed = not str(t).startswith("unsigned")
    return ("s" if signed else "u") + str(size * 8)


def qual(t):
    """Qualifier prefix of `t` itself (not of what it points to)."""
    if t == t.unqualified():
        return ""
    if t == t.unqualified().const():
        return "const "
    return "cv "


def describe(t, depth, by_value=True):
    """Describe gdb.Type `t`. Structs reached through pointers are described
    shallowly (by size only) to keep the output finite."""
    q = qual(t)
    t = t.strip_typedefs()
    code = t.code
    if depth > MAX_DEPTH:
        return q + "..."
    if code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_BOOL,
                gdb.TYPE_CODE_CHAR):
        return q + int_desc(t)
    if code == gdb.TYPE_CODE_FLT:
        return q + "f" + str(t.sizeof * 8)
    if code == gdb.TYPE_CODE_VOID:
        return q + "void"
    if code == gdb.TYPE_CODE_PTR:
        return q + "ptr(" + describe(t.target(), depth + 1, by_value=False) + ")"
    if code == gdb.TYPE_CODE_ARRAY:
        lo, hi = t.range()
        n = hi - lo + 1
        if t.sizeof == 0:
            n = 0  # a flexible (or zero-length) array member
        return q + "arr%d(%s)" % (n, describe(t.target(), depth + 1, by_value))
    if code in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        kind = "struct" if code == gdb.TYPE_CODE_STRUCT else "union"
        try:
            size = t.sizeof
            complete = len(t.fields()) > 0 or size > 0
        except gdb.error:
            complete = False
        if not complete:
            return q + kind + "(opaque)"
        if not by_value:
            return q + "%s%d" % (kind, size)
        parts = []
        for f in t.fields():
            off = f.bitpos // 8 if hasattr(f, "bitpos") and f.bitpos is not None else 0
            parts.append("%s@%d:%s" % (f.name, off, describe(f.type, depth + 1, True)))
        return q + "%s%d{%s}" % (kind, size, ",".join(parts))
    if code == gdb.TYPE_CODE_FUNC:
        ret = describe(t.target(), depth + 1, False)
        args = []
        for f in t.fields():
            # Top-level qualifiers of parameters do not affect the ABI.
            args.append(describe(f.type.unqualified(), depth + 1, False))
        return "func(%s;%s)" % (ret, ",".join(args))
    return q + "code%d_size%d" % (code, t.sizeof)


def lookup(name):
    """A typedef name, or else a struct/union/enum tag of that name (our
    header spells C tag names as typedef aliases)."""
    for spelling in (name, "struct " + name, "union " + name, "enum " + name):
        try:
            return gdb.lookup_type(spelling)
        except gdb.error:
            pass
    return None


def main():
    path = SIG_NAMES  # noqa: F821 (set with -ex "python SIG_NAMES=...")
    with open(path) as f:
        names = [l.split("#", 1)[0].strip() for l in f]
    for name in names:
        if not name:
            continue
        t = lookup(name)
        if t is None:
            print("sig(%s) <missing>" % name)
            continue
        print("sig(%s) %s" % (name, describe(t, 0, True)))


main()

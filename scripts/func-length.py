#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a C function is longer than the limit (100 lines by default).

A function is what .clang-format's Linux brace style lays out as a definition: an opening `{`
in column 0 and the next `}` in column 0. Its length is the line of that `}` minus the line of
the `{` (its body plus the closing brace), the measure the project's issues quote.

Usage: func-length.py [--limit N] [--allow FILE] PATH...
PATH is a C file or a directory searched for *.c files. The allow-list names functions that may
stay over the limit for now, one `path function` a line (`#` starts a comment); an entry that no
longer matches an offender is reported as stale on stderr but does not fail the check.
Exit status: 0 when no function not on the allow-list is over the limit, 1 when one is, 2 on bad
arguments or an unreadable allow-list.
"""
import os
import re
import sys

IDENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def function_name(lines, brace):
    """The identifier before the first `(` of the signature that ends just above line `brace`."""
    start = brace - 1
    while start > 0 and lines[start - 1].strip() and not lines[start - 1].rstrip().endswith(
            (";", "}", "*/")) and not lines[start - 1].startswith("#"):
        start -= 1
    sig = " ".join(l.strip() for l in lines[start:brace])
    m = IDENT.search(sig)
    return (m.group(1) if m else "?"), start + 1


def functions(path):
    """Yields (name, first line of the signature, length) for each definition in `path`."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    open_at = None
    for i, line in enumerate(lines):
        if line.startswith("{"):
            open_at = i
        elif line.startswith("}") and open_at is not None:
            name, first = function_name(lines, open_at)
            yield name, first, i - open_at
            open_at = None


def c_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(".c"):
                        yield os.path.join(root, f)
        else:
            yield p


def read_allow(path):
    allow = set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 2:
                raise ValueError(f"{path}:{n}: expected `path function`, got {' '.join(line)}")
            allow.add((os.path.normpath(line[0]), line[1]))
    return allow


def main(argv):
    limit, allow_file, paths = 100, None, []
    it = iter(argv)
    for a in it:
        if a in ("--limit", "--allow"):
            v = next(it, None)
            if v is None:
                print(f"func-length: {a} needs a value", file=sys.stderr)
                return 2
            if a == "--limit":
                if not v.isdigit() or int(v) < 1:
                    print(f"func-length: --limit: not a positive number: {v}", file=sys.stderr)
                    return 2
                limit = int(v)
            else:
                allow_file = v
        elif a.startswith("-"):
            print(f"func-length: unknown option {a}\n{__doc__.split('Usage: ')[1].split(chr(10))[0]}",
                  file=sys.stderr)
            return 2
        else:
            paths.append(a)
    if not paths:
        print("func-length: no path given", file=sys.stderr)
        return 2
    try:
        allow = read_allow(allow_file) if allow_file else set()
    except (OSError, ValueError) as e:
        print(f"func-length: {e}", file=sys.stderr)
        return 2
    used, bad = set(), 0
    for path in c_files(paths):
        try:
            found = list(functions(path))
        except OSError as e:
            print(f"func-length: {e}", file=sys.stderr)
            return 2
        for name, line, length in found:
            if length <= limit:
                continue
            key = (os.path.normpath(path), name)
            if key in allow:
                used.add(key)
                continue
            print(f"{path}:{line}: function {name} is {length} lines (limit {limit})",
                  file=sys.stderr)
            bad = 1
    for path, name in sorted(allow - used):
        print(f"func-length: stale allow-list entry (not over {limit} lines now): {path} {name}",
              file=sys.stderr)
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

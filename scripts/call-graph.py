#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The library's call graph between subsystems, from its object files (docs/architecture.md).

    call-graph.py SOURCE_DIR OBJECT_DIR [--print]

OBJECT_DIR is the build's CMakeFiles/migbench_obj.dir. Each object's defined and undefined
symbols (nm) give the calls between source files; a file's subsystem is its folder under src/
(device, mig, run, ...). Fails (exit 1) when calls between subsystems go round in a circle
(A calls B calls ... calls A), naming the calls on the circle, and when the files of one folder
call each other in a circle (device/: the dispatcher calls the backends, which call only
device_spec.c below both). --print lists the calls between subsystems. Objects whose source file
no longer exists (left behind by a move) are ignored.
"""
import collections
import glob
import os
import subprocess
import sys

def symbols(obj):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        part = line.split()
        if len(part) == 3 and part[1] in "TDBRC":
            defined.add(part[2])
        elif len(part) == 2 and part[0] == "U":
            undefined.add(part[1])
    return defined, undefined


def file_graph(src, objdir):
    """{file: {file it calls: [symbols]}} over the library's current sources."""
    owner, uses = {}, {}
    for obj in glob.glob(os.path.join(objdir, "src", "*", "*.c.o")):
        rel = os.path.relpath(obj, objdir)[: -len(".o")]
        if not os.path.exists(os.path.join(src, rel)):
            continue
        defined, undefined = symbols(obj)
        uses[rel] = undefined
        for s in defined:
            owner[s] = rel
    graph = collections.defaultdict(lambda: collections.defaultdict(list))
    for f, undefined in uses.items():
        for s in sorted(undefined):
            if s in owner and owner[s] != f:
                graph[f][owner[s]].append(s)
    return uses.keys(), graph


def circles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, objdir, show = sys.argv[1], sys.argv[2], "--print" in sys.argv[3:]
    files, graph = file_graph(src, objdir)
    if not files:
        sys.exit("call-graph: no library objects under %s (build first)" % objdir)
    folder = lambda f: f.split("/")[1]
    calls = collections.defaultdict(lambda: collections.defaultdict(list))
    for f, targets in graph.items():
        for t, syms in targets.items():
            if folder(f) != folder(t):
                calls[folder(f)][folder(t)].append("%s -> %s (%s)" % (f, t, syms[0]))
    folders = {folder(f) for f in files}
    bad = circles(folders, {a: set(b) for a, b in calls.items()})
    for comp in bad:
        print("call circle between subsystems: %s" % ", ".join(comp), file=sys.stderr)
        for a in comp:
            for b in comp:
                for c in calls[a].get(b, [])[:3]:
                    print("  " + c, file=sys.stderr)
    inner_bad = circles(set(files), {f: set(t) for f, t in graph.items()})
    for comp in inner_bad:
        print("call circle between the files of %s: %s" % (folder(comp[0]), ", ".join(comp)),
              file=sys.stderr)
        for a in comp:
            for b, syms in sorted(graph[a].items()):
                if b in comp:
                    print("  %s -> %s (%s)" % (a, b, syms[0]), file=sys.stderr)
    if show:
        for a in sorted(calls):
            print("%s -> %s" % (a, ", ".join(sorted(calls[a]))))
    print("call-graph: %d files in %d subsystems, %d circle(s) between subsystems, %d within one"
          % (len(files), len(folders), len(bad), len(inner_bad)))
    sys.exit(1 if bad or inner_bad else 0)


main()

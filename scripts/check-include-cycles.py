#!/usr/bin/env python3
"""Fails when the #include graph of augment/ (or the folders given) has a cycle between components.

A component is one stem: foo.h, foo.cc, foo.cu, foo.cuh and foo_nocuda.cc are the component `foo` (a header and
its implementation are one unit: engine.cc including cuda_engine.h while cuda_engine.h includes engine.h is the
cycle engine <-> cuda_engine); foo_test.cc is a component of its own. Only quoted includes of
files inside the repository count. Prints every strongly connected component with more than one member and the
edges that close it; exit status 1 when there is any.

  python3 scripts/check-include-cycles.py            # augment/
  python3 scripts/check-include-cycles.py augment server
  python3 scripts/check-include-cycles.py --ignore augment/dataset/ augment   # cycles outside augment/dataset only
"""
import os
import re
import sys

# The repository to check: AUGMENTD_ROOT (e.g. another checkout, to count its cycles), else this script's.
ROOT = os.path.abspath(os.environ.get("AUGMENTD_ROOT", os.path.join(os.path.dirname(__file__), "..")))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".h", ".cc", ".cu", ".cuh")
SUFFIXES = ("_nocuda",)  # a test is its own component (a leaf: nothing includes it)


def component(rel):
    stem = os.path.splitext(rel)[0]
    for s in SUFFIXES:
        if stem.endswith(s):
            stem = stem[: -len(s)]
    return stem


def main(args):
    ignore = []
    while len(args) >= 2 and args[0] == "--ignore":
        ignore.append(args[1])
        args = args[2:]
    folders = args or ["augment"]
    return check(folders, ignore)


def check(folders, ignore):
    files = []
    for folder in folders:
        for d, _, names in os.walk(os.path.join(ROOT, folder)):
            files += [os.path.relpath(os.path.join(d, n), ROOT) for n in names if n.endswith(EXTS)]
    known = set(files)
    graph = {}
    for f in files:
        src = component(f)
        graph.setdefault(src, set())
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            for inc in INCLUDE.findall(fh.read()):
                if inc in known and component(inc) != src:
                    graph[src].add(component(inc))
    # Tarjan's strongly connected components.
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    known_cycles = [c for c in sccs if all(m.startswith(tuple(ignore)) for m in c)] if ignore else []
    sccs = [c for c in sccs if c not in known_cycles]
    for scc in sccs:
        members = set(scc)
        edges = sorted(f"{a} -> {b}" for a in scc for b in graph[a] if b in members)
        print(f"cycle ({len(scc)} components): " + ", ".join(scc))
        for e in edges:
            print(f"    {e}")
    skipped = f", {len(known_cycles)} more inside {', '.join(ignore)} ignored" if known_cycles else ""
    print(f"include cycles: {len(sccs)} ({len(graph)} components in {', '.join(folders)}{skipped})")
    return 1 if sccs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

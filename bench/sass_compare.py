#!/usr/bin/env python3
"""Two builds of the same CUDA kernels compared function by function, from their SASS (no GPU needed).

  bench/sass_compare.py OLD NEW [--kernel SpatialKernel] [--diff-only] [--require-same]

OLD, NEW: CUDA objects or cubins (disassembled with `cuobjdump -sass`, found as bench/ncu_source_lines.py finds it)
or the text `cuobjdump -sass` wrote. Functions are matched by mangled name with the anonymous-namespace hash
(`_GLOBAL__N__<hash>_<n>_<file>_cu_<hash>`, which depends on the source path) replaced by ANON, so two checkouts of one
tree compare equal. One row per function:

  same      identical instruction text (addresses and encodings aside)
  regs      identical but for register and predicate numbers (a re-allocation)
  DIFF      different instructions

then the instruction counts, the largest loop (instructions between a backward branch and its target), and the
local-memory instructions (LDL / STL: spills and stack arrays) of each side, e.g.

  DIFF   3224   3160 loop  1232  1163 local   3   3 SpatialKernelILi1ELi4ELb1ELb0ELb0ELb0ELb0E…

--require-same exits 1 when a reported function is not `same` or is missing on one side (a switch that must leave the
default build's machine code alone: session 25 checked all 19 kernel files this way). Static: counts are of the text,
not of what executes.
"""
import argparse
import importlib.util
import os
import re
import sys

_spec = importlib.util.spec_from_file_location(
    "sass_loads_in_flight", os.path.join(os.path.dirname(os.path.abspath(__file__)), "sass_loads_in_flight.py"))
_loads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_loads)

ANON = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+")
NUMBERED = re.compile(r"\b(U?R|U?P|B)(\d+)\b")
TARGET = re.compile(r"\bBRA\b.*?\b0x([0-9a-f]+)\b")


def normalised(funcs):
    """{name with ANON for the anonymous-namespace hash: instructions}."""
    return {ANON.sub("ANON", name): instrs for name, instrs in funcs.items()}


def largest_loop(instrs):
    """Instructions in the longest span from a backward branch's target to the branch (16-byte instructions: sm_70+)."""
    best = 0
    for i, text in enumerate(instrs):
        m = TARGET.search(text)
        if m and int(m.group(1), 16) // 16 <= i:
            best = max(best, i - int(m.group(1), 16) // 16 + 1)
    return best


def local_memory(instrs):
    return sum(1 for text in instrs if _loads.split(text)[0].startswith(("LDL", "STL")))


def verdict(old, new):
    if old == new:
        return "same"
    def strip(instrs):
        return [NUMBERED.sub(lambda m: m.group(1), t) for t in instrs]
    return "regs" if strip(old) == strip(new) else "DIFF"


def compare(old_funcs, new_funcs, kernel=""):
    """[(verdict or 'only-old' / 'only-new', name, old instructions, new instructions)] for names containing kernel."""
    rows = []
    for name in sorted(set(old_funcs) | set(new_funcs)):
        if kernel not in name:
            continue
        old, new = old_funcs.get(name), new_funcs.get(name)
        v = "only-new" if old is None else "only-old" if new is None else verdict(old, new)
        rows.append((v, name, old or [], new or []))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", help="a CUDA object or cubin, or cuobjdump -sass output")
    ap.add_argument("new", help="the same for the other build")
    ap.add_argument("--kernel", default="", help="substring of the (normalised) function names to report")
    ap.add_argument("--diff-only", action="store_true", help="print only functions that are not `same`")
    ap.add_argument("--require-same", action="store_true", help="exit 1 unless every reported function is `same`")
    args = ap.parse_args(argv)
    try:
        old = normalised(_loads.functions(_loads.sass_lines(args.old)))
        new = normalised(_loads.functions(_loads.sass_lines(args.new)))
    except OSError as e:
        print(f"sass_compare.py: {e}", file=sys.stderr)
        return 2
    rows = compare(old, new, args.kernel)
    if not rows:
        print(f"sass_compare.py: no function contains {args.kernel!r} ({len(old)} and {len(new)} functions; "
              "is it cuobjdump -sass output?)", file=sys.stderr)
        return 2
    for v, name, o, n in rows:
        if args.diff_only and v == "same":
            continue
        print(f"{v:8s} {len(o):6d} {len(n):6d} loop {largest_loop(o):5d} {largest_loop(n):5d} "
              f"local {local_memory(o):3d} {local_memory(n):3d} {name}")
    differ = sum(1 for v, *_ in rows if v != "same")
    print(f"{len(rows)} functions, {len(rows) - differ} same, {differ} not")
    return 1 if args.require_same and differ else 0


if __name__ == "__main__":
    sys.exit(main())

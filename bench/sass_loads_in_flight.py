#!/usr/bin/env python3
"""How many global loads each load of a CUDA kernel has in flight, read from its SASS (no GPU needed).

  bench/sass_loads_in_flight.py OBJECT_OR_SASS [--kernel SpatialKernelILi1ELi4ELb1] [--min-loads 6]

OBJECT_OR_SASS: a CUDA object or cubin (e.g. build/augment/kernels/cuda/CMakeFiles/augment_cuda_kernels.dir/
spatial.cu.o; disassembled with `cuobjdump -sass`, found as bench/ncu_source_lines.py finds it: CUDA_BIN, the
project's .venv, PATH) or the text `cuobjdump -sass` wrote.

For every function whose mangled name contains --kernel, walks its instructions in text order; for each LDG it counts
the LDGs issued after it and before the first instruction that reads one of its destination registers ("+k": k later
loads issued while this one is outstanding; a load never read counts to the function's end). Loads are grouped by the
branch-delimited block they are issued in; groups with at least --min-loads loads are printed, one token per load:
F (32-bit float / word), S16 / U16 / S8 / U8, 64 / 128 (vector), e.g.

  F:+7 F:+6 F:+5 F:+4 F:+3 F:+2 F:+1 F:+0    eight gathers issued back to back before the first use
  F:+0 F:+0 F:+0 F:+0 F:+0 F:+0 F:+0 F:+0    each gather consumed before the next is issued (serial)

Static: every path of the function is listed, executed or not (the spatial kernel's crop, elastic and vote paths have
their own groups). Session 19 (augment/kernels/cuda/NOTES.md) used it to find which registers to free at the 64-register
cap of the fused spatial kernel.
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys

FUNC = re.compile(r"\s*Function : (\S+)")
INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
REG = re.compile(r"\bR(\d+)\b")


def functions(lines):
    """{mangled name: [instruction text without address]} of cuobjdump -sass output."""
    out, cur = {}, None
    for line in lines:
        m = FUNC.match(line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        m = INSTR.match(line)
        if m and cur is not None:
            out[cur].append(m.group(2))
    return out


def split(instr):
    """(opcode, destination operand, source operands) of one instruction, its predicate dropped."""
    words = instr.split(None, 1)
    if words and words[0].startswith("@"):
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words:
        return "", "", ""
    op = words[0]
    operands = words[1].split(",") if len(words) > 1 else []
    return op, (operands[0] if operands else ""), ",".join(operands[1:])


def kind(op):
    parts = op.split(".")[1:]
    for p in parts:
        if p in ("S16", "U16", "S8", "U8", "64", "128"):
            return p
    return "F"


def registers(operand, width):
    """The registers an operand names: R4 of a 64-bit (`.64`) load is R4 and R5; RZ names none."""
    m = REG.search(operand)
    if not m:
        return set()
    first = int(m.group(1))
    return {str(first + k) for k in range(width)}


def width(op):
    """32-bit registers a load writes."""
    return {"64": 2, "128": 4}.get(kind(op), 1)


def load_groups(instrs):
    """Per branch-delimited group, [(kind, loads in flight)] of the LDGs issued in it, in issue order: the number of
    LDGs issued after the load and before the first instruction that reads one of its destination registers (in the
    function's text order, across later branches); a load never read counts the LDGs up to the function's end."""
    loads = []  # [group, issue index, kind, destination registers, first use or None]
    group = 0
    for i, instr in enumerate(instrs):
        op, dst, srcs = split(instr)
        read = set(REG.findall(srcs))
        if op.startswith("ST"):  # a store's first operand is its address
            read |= set(REG.findall(dst))
        for load in loads:
            if load[4] is None and load[3] & read:
                load[4] = i
        if op.startswith("LDG"):
            loads.append([group, i, kind(op), registers(dst, width(op)), None])
        if op in ("BRA", "EXIT", "BAR", "RET") or op.startswith(("BRA.", "BAR.", "EXIT.")):
            group += 1
    issued = [load[1] for load in loads]
    groups = {}
    for g, start, k, _, use in loads:
        end = use if use is not None else len(instrs)
        groups.setdefault(g, []).append((k, sum(1 for j in issued if start < j < end)))
    return [groups[g] for g in sorted(groups)]


def sass_lines(path):
    """The SASS text of `path`: as it is, or `cuobjdump -sass` of it when it is a binary (an object or a cubin)."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" not in data[:4096]:
        return data.decode("utf-8", errors="replace").split("\n")
    spec = importlib.util.spec_from_file_location(
        "ncu_source_lines", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu_source_lines.py"))
    ncu_source_lines = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ncu_source_lines)
    done = subprocess.run([ncu_source_lines.tool("cuobjdump"), "-sass", path], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"cuobjdump -sass {path}: {done.stderr.strip() or 'exit %d' % done.returncode}")
    return done.stdout.split("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sass", help="a CUDA object or cubin, or cuobjdump -sass output")
    ap.add_argument("--kernel", default="", help="substring of the mangled function names to report")
    ap.add_argument("--min-loads", type=int, default=6, help="smallest group printed (default 6)")
    args = ap.parse_args(argv)
    try:
        funcs = functions(sass_lines(args.sass))
    except OSError as e:
        print(f"sass_loads_in_flight.py: {e}", file=sys.stderr)
        return 2
    chosen = {k: v for k, v in funcs.items() if args.kernel in k}
    if not chosen:
        print(f"sass_loads_in_flight.py: no function in {args.sass} contains {args.kernel!r} "
              f"({len(funcs)} functions; is it cuobjdump -sass output?)", file=sys.stderr)
        return 2
    for name, instrs in chosen.items():
        print(f"== {name} ({len(instrs)} instructions)")
        for g in load_groups(instrs):
            if len(g) >= args.min_loads:
                print("   " + " ".join(f"{k}:+{n}" for k, n in g))
    return 0


if __name__ == "__main__":
    sys.exit(main())

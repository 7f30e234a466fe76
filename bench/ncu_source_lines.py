#!/usr/bin/env python3
"""Executed instructions and stall samples of one CUDA kernel per source line.

ncu's source page (`ncu -i R.ncu-rep --page source --csv --print-source sass`, what `bench/cuda_perf_check.sh
NCU_DETAIL=1` writes to logs/ncu_sass.csv) counts executed instructions per SASS instruction but names no source
line. This script takes the line of each instruction from `nvdisasm -g` of the same build's object (built with
-lineinfo, as the kernel library is), checks that the opcode sequences agree, and sums per source line:

  bench/ncu_source_lines.py ncu_sass.csv build/augment/kernels/cuda/CMakeFiles/augment_cuda_kernels.dir/spatial.cu.o \\
      --kernel 'SpatialKernelILi1ELi4ELb1ELb0ELb0ELb0E' --per 131072 [--top 40] [--sources augment/kernels/cuda]

--per divides the counts (warp instructions) by a number of work items, e.g. the voxels of the batch over 32 (all-on
B=2 at 128^3: 2*128^3/32 = 131072) to read "instructions per voxel". The object must be the profiled build (the same
source, compiler and flags; nvcc for sm_90 and sm_90a gave the same SASS here); the first opcode that differs is
reported and it and the instructions after it are not attributed. Source text (--sources) comes from the files as they
are now: their line numbers must be the profiled build's. Tools: cuobjdump and nvdisasm from PATH, or from the triton wheel
of the project's .venv (CUDA_BIN overrides).
"""
import argparse
import collections
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def tool(name):
    for d in [os.environ.get("CUDA_BIN", "")] + glob.glob(
            os.path.join(os.path.dirname(__file__), "..", ".venv/lib/python3*/site-packages/triton/backends/nvidia/bin")):
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    found = shutil.which(name)
    if not found:
        sys.exit(f"{name} not found: put it on PATH or set CUDA_BIN")
    return found


def parse_disassembly(text, kernel):
    """[(opcode, (file, line) or None)] of the first function in `nvdisasm -g` output whose name contains `kernel`."""
    out, inside, where = [], False, None
    for line in text:
        if line.startswith(".text."):
            if inside:
                break
            inside = kernel in line
            continue
        if not inside:
            continue
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', line)
        if m:
            where = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if m:
            out.append((m.group(2).split(".")[0], where))
    return out


def disassemble(obj, kernel):
    with tempfile.TemporaryDirectory() as tmp:
        cubin = obj
        if not obj.endswith(".cubin"):
            subprocess.run([tool("cuobjdump"), "-xelf", "all", os.path.abspath(obj)], cwd=tmp, check=True,
                           capture_output=True)
            cubins = glob.glob(os.path.join(tmp, "*.cubin"))
            if not cubins:
                sys.exit(f"no cubin in {obj}")
            cubin = cubins[0]
        text = subprocess.run([tool("nvdisasm"), "-g", "-c", cubin], check=True, capture_output=True,
                              text=True).stdout.split("\n")
    out = parse_disassembly(text, kernel)
    if not out:
        sys.exit(f"no function matching {kernel!r} in {obj}")
    return out


UNATTRIBUTED = ("(unattributed)", 0)


def attribute(rows, sass):
    """Sums the CSV's executed instructions and stall samples per source line of `sass` (parse_disassembly's list).

    Returns (executed, samples, total executed, total samples, index of the first differing instruction or None);
    from that instruction on, counts go to UNATTRIBUTED."""
    header = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    col = {h: i for i, h in enumerate(rows[header])}
    executed, samples = collections.Counter(), collections.Counter()
    total_n = total_s = 0
    lost_at = None  # an opcode differed: the object is not the profiled build from here on
    for k, r in enumerate(rows[header + 1:]):
        n = int(r[col["Instructions Executed"]] or 0)
        s = int(r[col["Warp Stall Sampling (All Samples)"]] or 0)
        total_n += n
        total_s += s
        text = r[col["Source"]].split()
        opcode = (text[1] if text and text[0].startswith("@") else (text[0] if text else "")).split(".")[0]
        if lost_at is None and (k >= len(sass) or sass[k][0] != opcode):
            lost_at = k
        where = UNATTRIBUTED if lost_at is not None else sass[k][1]
        executed[where] += n
        samples[where] += s
    return executed, samples, total_n, total_s, lost_at


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="ncu source page, SASS view, as CSV")
    ap.add_argument("object", help="the profiled build's object (.o with device code, or .cubin)")
    ap.add_argument("--kernel", required=True, help="a substring of the kernel's mangled name")
    ap.add_argument("--per", type=float, default=1.0, help="divide counts by this (default 1)")
    ap.add_argument("--top", type=int, default=40, help="source lines to print (default 40)")
    ap.add_argument("--sources", default="", help="folder to print the source text of each line from")
    args = ap.parse_args()

    for path in (args.csv, args.object):
        if not os.path.isfile(path):
            sys.exit(f"{path}: no such file")
    rows = list(csv.reader(open(args.csv)))
    if not any(r and r[0] == "Address" for r in rows) or not any(
            "Instructions Executed" in r for r in rows if r and r[0] == "Address"):
        sys.exit(f"{args.csv}: not ncu's source page in SASS view (no 'Address' header with 'Instructions Executed'); "
                 f"ncu's own message, if any: {' '.join(rows[0])[:200] if rows else '(empty file)'}")
    sass = disassemble(args.object, args.kernel)
    executed, samples, total_n, total_s, lost_at = attribute(rows, sass)
    if lost_at is not None:
        print(f"# instruction {lost_at} differs between the profile and the object: it and the later ones are not "
              f"attributed", file=sys.stderr)
    per_file = collections.Counter()
    for where, n in executed.items():
        per_file[where[0] if where else "(no line)"] += n
    print(f"total {total_n / args.per:.1f} instructions per unit, {total_s} stall samples")
    print("per file: " + ", ".join(f"{f} {n / args.per:.1f}" for f, n in per_file.most_common()))
    print(f"{'file:line':32s} {'instr/unit':>10s} {'samples':>8s}  source")
    for where, n in executed.most_common(args.top):
        src = ""
        if where and args.sources:
            path = os.path.join(args.sources, where[0])
            if os.path.exists(path):
                lines = open(path).read().split("\n")
                src = lines[where[1] - 1].strip()[:70] if where[1] <= len(lines) else ""
        name = f"{where[0]}:{where[1]}" if where else "(no line)"
        print(f"{name:32s} {n / args.per:10.1f} {100 * samples[where] / max(total_s, 1):7.1f}%  {src}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The instructions one pass through a CUDA kernel's loop executes along a chosen path, counted from its SASS (no GPU).

  bench/sass_path.py OBJECT --kernel NAME --rules RULES [--start ADDR] [--stop ADDR] [--lines] [--sources DIR]

A warp executes every instruction on the path its branches take (divergent lanes: the union of their paths). Static
counts (bench/sass_compare.py) weigh every block alike; this walks one path: from --start (default: the target of the
function's longest conditional backward branch, its main loop's head) it follows the SASS, takes unconditional
branches, leaves `BRA.DIV` (the divergent-warp fallback of warp intrinsics) untaken, counts a CALL as one instruction
(the slow paths of division and square root), and decides each conditional branch by RULES, until it is back at
--start (or reaches --stop / EXIT). It prints the number of instructions and each decision with its running count
(`addrT@n` / `addrN@n`): the difference of two counts is the cost of the code between two branches.

RULES: a JSON object from file:line of the branch instruction (the source line `nvdisasm -g` gives it; `spatial.cu:519`)
or file:line:address (`spatial.cu:519:41d0`, for one of several branches of a line) to "T" (taken) or "N" (not taken),
inline or as a file path. A conditional branch without a rule stops the walk: exit 3, with the branch and the
instructions before it, so that its predicate can be read and a rule added. Which way a branch goes in a scenario
depends on how the compiler set its predicate (`@P1 BRA` may skip or enter a block): read each from its context.

OBJECT: a cubin or an object with device code built with -lineinfo (for the lines), or the text `nvdisasm -g -c`
wrote. --lines prints the path's instructions per source line (--sources: a folder to print their text from).
Tools: nvdisasm and cuobjdump as bench/ncu_source_lines.py finds them (CUDA_BIN, the .venv's triton wheel, PATH).
"""
import argparse
import collections
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

_spec = importlib.util.spec_from_file_location(
    "ncu_source_lines", os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu_source_lines.py"))
_ncu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ncu)

LINE = re.compile(r'\s*//## File "([^"]+)", line (\d+)')
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"^(@!?U?P\w+\s+)?(BRA(?:\.\w+)*)\s+(?:!?U?[PR]\w*,\s*)?`?\(?(\.L_x_\d+|0x[0-9a-f]+)")


def function(text, kernel):
    """[(address, instruction text, (file, line) or None)] and {label: address} of the first function in `nvdisasm -g`
    output whose section name contains `kernel`."""
    instrs, labels, pending, where, inside = [], {}, [], None, False
    for line in text:
        if line.startswith("//--"):  # a section's header: `//------ .text.<mangled name> ------`
            if inside and instrs:
                break
            inside = kernel in line
            continue
        if not inside:
            continue
        m = LINE.match(line)
        if m:
            where = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR.match(line)
        if m:
            address = int(m.group(1), 16)
            for name in pending:
                labels[name] = address
            pending = []
            instrs.append((address, m.group(2), where))
    return instrs, labels


def branch(text, labels):
    """(conditional, kind, target address) of a branch instruction, or None."""
    m = BRANCH.match(text)
    if not m:
        return None
    target = m.group(3)
    address = labels.get(target) if target.startswith(".L") else int(target, 16)
    return m.group(1) is not None or ", " in text.split(m.group(2), 1)[1].split("`")[0], m.group(2), address


def loop_head(instrs, labels):
    """The target of the longest conditional backward branch (the function's main loop; the unconditional ones that
    jump back into it from out-of-line code, such as warp intrinsics' divergent fallbacks, are not loops)."""
    best = None
    for address, text, _ in instrs:
        b = branch(text, labels)
        if b and b[0] and b[2] is not None and b[2] < address and (best is None or address - b[2] > best[0]):
            best = (address - b[2], b[2])
    return best[1] if best else None


class Undecided(Exception):
    pass


def walk(instrs, labels, rules, start, stop=None, limit=100000):
    """(instructions executed, [decision strings], [(address, text, where)] executed) from `start` back to it (or to
    `stop`). Raises Undecided(index) at a conditional branch without a rule."""
    index = {a: i for i, (a, _, _) in enumerate(instrs)}
    stop = start if stop is None else stop
    i, path, decisions = index[start], [], []
    while len(path) < limit:
        address, text, where = instrs[i]
        path.append(instrs[i])
        if text == "EXIT":  # a predicated EXIT ends some lanes only: the path goes on
            break
        b = branch(text, labels)
        take = False
        if b:
            conditional, kind, target = b
            if kind.startswith("BRA.DIV"):
                take = False
            elif not conditional:
                take = True
            else:
                key = f"{where[0]}:{where[1]}" if where else "?"
                rule = rules.get(f"{key}:{address:x}", rules.get(key))
                if rule not in ("T", "N"):
                    raise Undecided(i)
                take = rule == "T"
            decisions.append(f"{address:x}{'T' if take else 'N'}@{len(path)}")
            if take:
                if target == stop:
                    break
                i = index[target]
                continue
        i += 1
        if i >= len(instrs) or instrs[i][0] == stop:
            break
    return len(path), decisions, path


def disassembly(path):
    if not os.path.isfile(path):
        raise OSError(f"no such file: {path}")
    with open(path, "rb") as f:
        head = f.read(4)
    if head != b"\x7fELF":
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().split("\n")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = path
        if not path.endswith(".cubin"):
            subprocess.run([_ncu.tool("cuobjdump"), "-xelf", "all", os.path.abspath(path)], cwd=tmp, check=True,
                           capture_output=True)
            found = glob.glob(os.path.join(tmp, "*.cubin"))
            if not found:
                raise OSError(f"no cubin in {path}")
            cubin = found[0]
        done = subprocess.run([_ncu.tool("nvdisasm"), "-g", "-c", cubin], capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(f"nvdisasm -g -c {cubin}: {done.stderr.strip()}")
        return done.stdout.split("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("object", help="cubin / object built with -lineinfo, or nvdisasm -g -c output")
    ap.add_argument("--kernel", required=True, help="a substring of the function's mangled name")
    ap.add_argument("--rules", default="{}", help="JSON object (inline or a file) from file:line[:addr] to T / N")
    ap.add_argument("--start", help="hex address to start at (default: the main loop's head)")
    ap.add_argument("--stop", help="hex address to stop at (default: back at --start)")
    ap.add_argument("--lines", action="store_true", help="print the path's instructions per source line")
    ap.add_argument("--sources", default="", help="folder to print the source text of --lines from")
    args = ap.parse_args(argv)
    try:
        text = disassembly(args.object)
        rules = json.load(open(args.rules)) if os.path.isfile(args.rules) else json.loads(args.rules)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"sass_path.py: {e}", file=sys.stderr)
        return 2
    instrs, labels = function(text, args.kernel)
    if not instrs:
        print(f"sass_path.py: no function contains {args.kernel!r} (is it nvdisasm -g -c output?)", file=sys.stderr)
        return 2
    start = int(args.start, 16) if args.start else loop_head(instrs, labels)
    if start is None or start not in {a for a, _, _ in instrs}:
        print(f"sass_path.py: no instruction at the start address {args.start}", file=sys.stderr)
        return 2
    try:
        count, decisions, path = walk(instrs, labels, rules, start, int(args.stop, 16) if args.stop else None)
    except Undecided as u:
        address, text_, where = instrs[u.args[0]]
        print(f"undecided branch at {address:x} ({where[0]}:{where[1] if where else '?'}): {text_}", file=sys.stderr)
        for a, t, w in instrs[max(0, u.args[0] - 8):u.args[0] + 3]:
            print(f"    {a:6x}  {t:60s} {w[0]}:{w[1]}" if w else f"    {a:6x}  {t}", file=sys.stderr)
        return 3
    print(f"start {start:x}: {count} instructions")
    print(" ".join(decisions))
    if args.lines:
        per = collections.Counter(w for _, _, w in path)
        for (f, n), c in sorted(per.items(), key=lambda kv: (kv[0] or ("", 0))):
            src = ""
            if args.sources and os.path.isfile(os.path.join(args.sources, f)):
                with open(os.path.join(args.sources, f), encoding="utf-8") as fh:
                    lines = fh.read().split("\n")
                src = lines[n - 1].strip()[:90] if 0 < n <= len(lines) else ""
            print(f"{c:5d}  {f}:{n}  {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The instructions one pass through a CUDA kernel's loop executes along a chosen path, counted from its SASS (no GPU).

  bench/sass_path.py OBJECT --kernel NAME --rules RULES [--minus RULES] [--start ADDR] [--stop ADDR] [--lines]
                     [--sources DIR]

A warp executes every instruction on the path its branches take (divergent lanes: the union of their paths). Static
counts (bench/sass_compare.py) weigh every block alike; this walks one path: from --start (default: the target of the
function's longest conditional backward branch, its main loop's head) it follows the SASS, takes unconditional
branches, leaves `BRA.DIV` (the divergent-warp fallback of warp intrinsics) untaken, counts a CALL as one instruction
(the slow paths of division and square root), and decides each conditional branch by RULES, until it is back at
--start, reaches --stop (not counted) or an unconditional EXIT. It prints the number of instructions, how the walk
ended, and each decision with its running count (`addrT@n` / `addrN@n`): the difference of two counts is the cost of
the code between two branches.

RULES: a JSON object from file:line of the branch instruction (the source line `nvdisasm -g` gives it; `spatial.cu:519`)
or file:line:address (`spatial.cu:519:41d0`, for one of several branches of a line) to "T" (taken) or "N" (not taken),
inline (it starts with `{`) or as a file. A conditional branch without a rule stops the walk: exit 3, with the branch
and the instructions before it, so that its predicate can be read and a rule added. Which way a branch goes in a
scenario depends on how the compiler set its predicate (`@P1 BRA` may skip or enter a block): read each from its
context. Rules that decided no branch are listed on stderr (one rule set may serve several builds).

--minus RULES also walks the path of the other rules and prints the instructions of this path that it does not
execute (a set difference of addresses): with the two paths of a divergent branch, what the warp pays for the second
one. --lines prints the path's instructions per source line (--sources: a folder to print their text from).

OBJECT: a cubin or an object with device code built with -lineinfo (for the lines), or the text `nvdisasm -g -c`
wrote. Tools: nvdisasm and cuobjdump as bench/ncu_source_lines.py finds them (CUDA_BIN, the .venv's triton wheel,
PATH). Exit 2: bad input; 3: a branch without a rule; 4: the walk did not end (no way back within 100,000
instructions: a rule that loops).
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/: also when loaded by path (the tests)
import ncu_source_lines as _ncu  # noqa: E402  (tool(): where nvdisasm and cuobjdump are)

LINE = re.compile(r'\s*//## File "([^"]+)", line (\d+)')
LABEL = re.compile(r"^\s*(\.L\w+):")
INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
# [@guard] BRA[.modifiers] [predicate or uniform register,] target (a label or an address).
BRANCH = re.compile(r"^(@!?U?P\w+\s+)?(BRA(?:\.\w+)*)\s+(!?U?[PR]\w*,\s*)?`?\(?(\.L\w+|0x[0-9a-f]+)")
JUMPS = re.compile(r"^(@!?U?P\w+\s+)?(BRA|BRX|JMX|JMP)\b")
LIMIT = 100000


class WalkError(Exception):
    """Input the walk cannot follow (exit 2)."""


class Undecided(Exception):
    """A conditional branch without a rule, at instruction index args[0] (exit 3)."""


def function(text, kernel):
    """[(address, instruction text, (file, line) or None)] and {label: address} of the one function in `nvdisasm -g`
    output whose section name contains `kernel` (WalkError when several do)."""
    names = [line.split()[1] for line in text if line.startswith("//--") and ".text." in line and kernel in line]
    if len(set(names)) > 1:
        raise WalkError(f"{len(names)} functions contain {kernel!r}: " + ", ".join(names[:4]))
    instrs, labels, pending, where, inside = [], {}, [], None, False
    for line in text:
        if line.startswith("//--"):  # a section's header: `//------ .text.<mangled name> ------`
            if inside and instrs:
                break
            inside = ".text." in line and kernel in line
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
    """(conditional, kind, target address) of a branch instruction, None for other instructions. WalkError for a
    jump this cannot follow (indirect, or to a label the function does not define)."""
    m = BRANCH.match(text)
    if not m:
        if JUMPS.match(text):
            raise WalkError(f"cannot follow the jump {text!r}")
        return None
    guard, kind, predicate, target = m.groups()
    address = labels.get(target) if target.startswith(".L") else int(target, 16)
    if address is None:
        raise WalkError(f"{text!r}: no label {target} in the function")
    return guard is not None or predicate is not None, kind, address


def loop_head(instrs, labels):
    """The target of the longest conditional backward branch (the function's main loop; the unconditional ones that
    jump back into it from out-of-line code, such as warp intrinsics' divergent fallbacks, are not loops)."""
    best = None
    for address, text, _ in instrs:
        b = branch(text, labels)
        if b and b[0] and b[2] < address and (best is None or address - b[2] > best[0]):
            best = (address - b[2], b[2])
    return best[1] if best else None


def place(where):
    return f"{where[0]}:{where[1]}" if where else "?"


def walk(instrs, labels, rules, start, stop=None, used=None):
    """(instructions executed, how it ended, [decision strings], [(address, text, where)] executed) from `start` back
    to it (or to `stop`, not counted, or an unconditional EXIT). `rules`: {(file:line, address or None): "T" / "N"}.
    Raises Undecided at a conditional branch without a rule, WalkError when the walk does not end within LIMIT."""
    index = {a: i for i, (a, _, _) in enumerate(instrs)}
    stop = start if stop is None else stop
    i, path, decisions = index[start], [], []
    while len(path) < LIMIT:
        address, text, where = instrs[i]
        path.append(instrs[i])
        if text == "EXIT":  # a predicated EXIT ends some lanes only: the path goes on
            return len(path), f"EXIT at {address:x}", decisions, path
        b = branch(text, labels)
        if b:
            conditional, kind, target = b
            if kind.startswith("BRA.DIV"):
                take = False
            elif not conditional:
                take = True
            else:
                key = next((k for k in ((place(where), address), (place(where), None)) if k in rules), None)
                if key is None:
                    raise Undecided(i)
                if used is not None:
                    used.add(key)
                take = rules[key] == "T"
            decisions.append(f"{address:x}{'T' if take else 'N'}@{len(path)}")
            if take:
                if target == stop:
                    return len(path), "back at the start" if stop == start else f"at {stop:x}", decisions, path
                i = index[target]
                continue
        i += 1
        if i >= len(instrs):
            return len(path), "at the function's end", decisions, path
        if instrs[i][0] == stop:
            return len(path), "back at the start" if stop == start else f"at {stop:x}", decisions, path
    raise WalkError(f"the walk did not end within {LIMIT} instructions (a rule that loops?)")


def parse_rules(arg):
    """{(file:line, address or None): "T" / "N"} from inline JSON or a JSON file."""
    if arg.lstrip()[:1] in ("{", "["):
        raw = json.loads(arg)
    else:
        with open(arg, encoding="utf-8") as f:
            raw = json.load(f)
    if not isinstance(raw, dict):
        raise WalkError("the rules are not a JSON object")
    rules = {}
    for key, value in raw.items():
        parts = key.split(":")
        if value not in ("T", "N") or len(parts) not in (2, 3) or not parts[1].isdigit():
            raise WalkError(f"bad rule {key!r}: {value!r} (file:line[:hex address] to \"T\" or \"N\")")
        rules[(":".join(parts[:2]), int(parts[2], 16) if len(parts) == 3 else None)] = value
    return rules


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
            if len(found) != 1:
                raise OSError(f"{len(found)} cubins in {path}: give one cubin")
            cubin = found[0]
        done = subprocess.run([_ncu.tool("nvdisasm"), "-g", "-c", cubin], capture_output=True, text=True)
        if done.returncode != 0:
            raise OSError(f"nvdisasm -g -c {cubin}: {done.stderr.strip()}")
        return done.stdout.split("\n")


def source_lines(folder, name, cache):
    if name not in cache:
        path = os.path.join(folder, name)
        cache[name] = open(path, encoding="utf-8").read().split("\n") if folder and os.path.isfile(path) else []
    return cache[name]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("object", help="cubin / object built with -lineinfo, or nvdisasm -g -c output")
    ap.add_argument("--kernel", required=True, help="a substring of the function's mangled name")
    ap.add_argument("--rules", default="{}", help="JSON object (inline or a file) from file:line[:addr] to T / N")
    ap.add_argument("--minus", help="rules of a second path: print this path's instructions that it does not execute")
    ap.add_argument("--start", help="hex address to start at (default: the main loop's head)")
    ap.add_argument("--stop", help="hex address to stop at (default: back at --start)")
    ap.add_argument("--lines", action="store_true", help="print the path's instructions per source line")
    ap.add_argument("--sources", default="", help="folder to print the source text of --lines from")
    args = ap.parse_args(argv)
    try:
        text = disassembly(args.object)
        rules = parse_rules(args.rules)
        minus = parse_rules(args.minus) if args.minus else None
        instrs, labels = function(text, args.kernel)
        if not instrs:
            raise WalkError(f"no function contains {args.kernel!r} (is it nvdisasm -g -c output?)")
        addresses = {a for a, _, _ in instrs}
        start = int(args.start, 16) if args.start else loop_head(instrs, labels)
        stop = int(args.stop, 16) if args.stop else None
        if start is None:
            raise WalkError("no conditional backward branch (no loop): give --start")
        for name, value in (("start", start), ("stop", stop)):
            if value is not None and value not in addresses:
                raise WalkError(f"no instruction at the {name} address {value:x}")
        used = set()
        count, end, decisions, path = walk(instrs, labels, rules, start, stop, used)
        other = walk(instrs, labels, minus, start, stop)[3] if minus is not None else None
    except Undecided as u:
        address, text_, where = instrs[u.args[0]]
        print(f"undecided branch at {address:x} ({place(where)}): {text_}", file=sys.stderr)
        for a, t, w in instrs[max(0, u.args[0] - 8):u.args[0] + 3]:
            print(f"    {a:6x}  {t:60s} {place(w)}", file=sys.stderr)
        return 3
    except WalkError as e:
        print(f"sass_path.py: {e}", file=sys.stderr)
        return 4 if "did not end" in str(e) else 2
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"sass_path.py: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # ncu_source_lines.tool: nvdisasm or cuobjdump not found
        print(f"sass_path.py: {e}", file=sys.stderr)
        return 2
    print(f"start {start:x}: {count} instructions, ended {end}")
    print(" ".join(decisions))
    unused = sorted(f"{k[0]}:{k[1]:x}" if k[1] is not None else k[0] for k in set(rules) - used)
    if unused:
        print("rules that decided no branch: " + " ".join(unused), file=sys.stderr)
    if other is not None:
        print(f"not on the --minus path: {len({a for a, _, _ in path} - {a for a, _, _ in other})} instructions")
    if args.lines:
        cache = {}
        for where, c in sorted(collections.Counter(w for _, _, w in path).items(), key=lambda kv: kv[0] or ("", 0)):
            src = source_lines(args.sources, where[0], cache) if where else []
            text_ = src[where[1] - 1].strip()[:90] if where and 0 < where[1] <= len(src) else ""
            print(f"{c:5d}  {place(where)}  {text_}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

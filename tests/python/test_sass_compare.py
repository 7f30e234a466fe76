"""bench/sass_compare.py (issue 27): two builds' SASS compared function by function, on synthetic cuobjdump text."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sass_compare", REPO / "bench" / "sass_compare.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

# Mangled names as two checkouts of one tree give them: only the anonymous-namespace hash differs.
K_OLD = "_ZN8augmentd4cuda8internal43_GLOBAL__N__a650d327_10_spatial_cu_5075cda413SpatialKernelILi1EEEvv"
K_NEW = "_ZN8augmentd4cuda8internal43_GLOBAL__N__0b1c2d3e_10_spatial_cu_9f8e7d6c13SpatialKernelILi1EEEvv"


def sass(functions):
    lines = []
    for name, instrs in functions:
        lines.append(f"\t\tFunction : {name}")
        for i, text in enumerate(instrs):
            lines.append(f"        /*{16 * i:04x}*/                   {text} ;")
            lines.append("                                                                 /* 0x000fe20000000f00 */")
    return lines


LOOP = ["MOV R1, c[0x0][0x28]",
        "LDG.E R4, desc[UR4][R2.64]",          # 0x20: the loop's first instruction
        "FADD R5, R4, R5",
        "@P0 BRA 0x10",                         # back to 0x10: a loop of 3 instructions
        "STL [R1], R5",
        "EXIT"]


def write(tmp_path, name, functions):
    path = tmp_path / name
    path.write_text("\n".join(sass(functions)) + "\n")
    return str(path)


def test_same_code_under_another_anonymous_hash_is_same(tmp_path, capsys):
    old = write(tmp_path, "old.sass", [(K_OLD, LOOP), ("_Z5otherv", ["EXIT"])])
    new = write(tmp_path, "new.sass", [(K_NEW, LOOP), ("_Z5otherv", ["EXIT"])])
    assert tool.main([old, new, "--require-same"]) == 0
    out = capsys.readouterr().out
    assert "2 functions, 2 same, 0 not" in out
    row = next(line for line in out.splitlines() if "ANON" in line)
    assert row.split()[:9] == ["same", "6", "6", "loop", "3", "3", "local", "1", "1"]


def test_register_renaming_and_changed_code_are_told_apart(tmp_path, capsys):
    renamed = [t.replace("R4", "R7").replace("R5", "R9").replace("P0", "P2") for t in LOOP]
    changed = LOOP[:2] + ["FMUL R5, R4, R5"] + LOOP[3:]
    old = write(tmp_path, "old.sass", [(K_OLD, LOOP), ("_Z1bv", LOOP)])
    new = write(tmp_path, "new.sass", [(K_NEW, renamed), ("_Z1bv", changed)])
    assert tool.main([old, new, "--diff-only", "--require-same"]) == 1
    out = capsys.readouterr().out.splitlines()
    verdicts = {line.split()[-1]: line.split()[0] for line in out if line.startswith(("regs", "DIFF", "same"))}
    assert verdicts == {"_Z1bv": "DIFF", tool.ANON.sub("ANON", K_OLD): "regs"}
    assert out[-1] == "2 functions, 0 same, 2 not"


def test_a_function_missing_on_one_side_is_reported(tmp_path, capsys):
    old = write(tmp_path, "old.sass", [(K_OLD, LOOP), ("_Z4gonev", ["EXIT"])])
    new = write(tmp_path, "new.sass", [(K_NEW, LOOP), ("_Z3newv", ["EXIT"])])
    assert tool.main([old, new, "--require-same"]) == 1
    out = capsys.readouterr().out
    assert "only-old" in out and "_Z4gonev" in out
    assert "only-new" in out and "_Z3newv" in out


def test_no_matching_function_is_an_error(tmp_path, capsys):
    old = write(tmp_path, "old.sass", [(K_OLD, LOOP)])
    assert tool.main([old, old, "--kernel", "BlurKernel"]) == 2
    assert "no function contains 'BlurKernel'" in capsys.readouterr().err


def test_largest_loop_counts_the_longest_backward_span():
    instrs = ["NOP", "NOP", "@P0 BRA 0x0", "NOP", "NOP", "NOP", "@P1 BRA 0x10", "BRA 0x90", "EXIT", "NOP"]
    # 0x10 → index 6: 6 instructions; 0x0 → index 2: 3; BRA 0x90 (index 9) is forward.
    assert tool.largest_loop(instrs) == 6
    assert tool.largest_loop(["EXIT"]) == 0

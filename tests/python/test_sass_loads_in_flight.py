"""bench/sass_loads_in_flight.py (issue 27): loads in flight per global load, on synthetic cuobjdump -sass text."""
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sass_loads_in_flight", REPO / "bench" / "sass_loads_in_flight.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def sass(name, *instrs):
    lines = [f"\t\tFunction : {name}"]
    for i, text in enumerate(instrs):
        lines.append(f"        /*{16 * i:04x}*/                   {text} ;")
        lines.append("                                                                 /* 0x000fe20000000f00 */")
    return lines


def test_back_to_back_and_serial_gathers():
    text = sass("_Z1kv",
                "LDG.E.CONSTANT R4, desc[UR4][R2.64]",
                "LDG.E.CONSTANT R5, desc[UR4][R6.64]",
                "@P0 LDG.E.S16.CONSTANT R7, desc[UR4][R8.64]",
                "FMUL R4, R4, R10",       # first use of R4: two later loads in flight
                "FADD R11, R5, R4",       # R5: one (R7) still in flight after it
                "SEL R7, R7, 0x8000, P1",  # R7: none
                "BRA 0x100",
                "LDG.E.CONSTANT R4, desc[UR4][R2.64]",
                "FMUL R12, R4, R10",
                "LDG.E.CONSTANT R4, desc[UR4][R6.64]",
                "FMUL R13, R4, R10",
                "EXIT") + sass("_Z5otherv", "LDG.E R1, desc[UR4][R2.64]", "EXIT")
    funcs = tool.functions(text)
    assert list(funcs) == ["_Z1kv", "_Z5otherv"]
    groups = tool.load_groups(funcs["_Z1kv"])
    assert groups == [[("F", 2), ("F", 1), ("S16", 0)], [("F", 0), ("F", 0)]]


def test_a_store_reads_its_address_and_a_missing_kernel_is_an_error(tmp_path, capsys):
    text = sass("_Z1kv", "LDG.E.64 R4, desc[UR4][R2.64]", "STG.E desc[UR4][R4.64], R9", "EXIT")
    assert tool.load_groups(tool.functions(text)["_Z1kv"]) == [[("64", 0)]]
    f = tmp_path / "k.sass"
    f.write_text("\n".join(text) + "\n")
    assert tool.main([str(f), "--kernel", "_Z1k", "--min-loads", "1"]) == 0
    assert "64:+0" in capsys.readouterr().out
    assert tool.main([str(f), "--kernel", "Missing"]) == 2
    assert "no function" in capsys.readouterr().err


CASES = {
    # A is outstanding while B is issued and consumed: A had one later load in flight.
    "a load consumed later still counts the loads issued meanwhile": (
        ["LDG.E R4, desc[UR4][R2.64]", "LDG.E R5, desc[UR4][R6.64]", "FADD R7, R5, R5", "FADD R8, R4, R4", "EXIT"],
        [[("F", 1), ("F", 0)]]),
    # R5 is the upper half of the 64-bit load.
    "a vector load is used through any of its registers": (
        ["LDG.E.64 R4, desc[UR4][R2.64]", "LDG.E R8, desc[UR4][R6.64]", "FADD R9, R5, R5", "FADD R10, R8, R8", "EXIT"],
        [[("64", 1), ("F", 0)]]),
    # Both used after the branch: R4 was issued in the first block and stays in its group.
    "a load belongs to the block it is issued in": (
        ["LDG.E R4, desc[UR4][R2.64]", "@P0 BRA 0x40", "LDG.E R5, desc[UR4][R6.64]", "FADD R7, R5, R4", "EXIT"],
        [[("F", 1)], [("F", 0)]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_counting_rules(case):
    instrs, groups = CASES[case]
    assert tool.load_groups(tool.functions(sass("_Z1kv", *instrs))["_Z1kv"]) == groups


def test_an_object_file_goes_through_cuobjdump(tmp_path, monkeypatch, capsys):
    # A stub cuobjdump (found through CUDA_BIN, as the real one is) prints the SASS of a binary "object".
    listing = tmp_path / "listing.sass"
    listing.write_text("\n".join(sass("_Z1kv", "LDG.E R4, desc[UR4][R2.64]", "FADD R5, R4, R4", "EXIT")) + "\n")
    stub = tmp_path / "bin" / "cuobjdump"
    stub.parent.mkdir()
    stub.write_text(f"#!/bin/sh\n[ \"$1\" = -sass ] && cat {listing}\n")
    stub.chmod(0o755)
    obj = tmp_path / "k.o"
    obj.write_bytes(b"\x7fELF\0\0binary")
    monkeypatch.setenv("CUDA_BIN", str(stub.parent))
    assert tool.main([str(obj), "--min-loads", "1"]) == 0
    assert "F:+0" in capsys.readouterr().out

"""bench/sass_path.py (issue 27): one loop pass's instructions along a chosen path, on synthetic nvdisasm -g text."""
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sass_path", REPO / "bench" / "sass_path.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

# A loop (.L_x_1 … the @!P1 back-edge) with a skippable block, a warp intrinsic's divergent fallback out of line (an
# unconditional branch back into the loop body, from further away than the back-edge: not the loop), a second
# function, and a non-code section after it.
NVDISASM = """\
//--------------------- .text._Z5otherv --------------------------
\t.section\t.text._Z5otherv,"ax",@progbits
.L_x_9:
        /*0000*/                   BRA `(.L_x_9) ;
//--------------------- .text._Z6kernelv --------------------------
\t.section\t.text._Z6kernelv,"ax",@progbits
_Z6kernelv:
.text._Z6kernelv:
\t//## File "/src/k.cu", line 10
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
\t//## File "/src/k.cu", line 11
        /*0010*/                   ISETP.NE.AND P0, PT, R2, RZ, PT ;
        /*0020*/               @P0 BRA `(.L_x_2) ;
\t//## File "/src/k.cu", line 12
        /*0030*/                   FADD R3, R3, R3 ;
        /*0040*/                   FADD R3, R3, R3 ;
.L_x_2:
\t//## File "/src/k.cu", line 13
        /*0050*/                   IADD3 R2, R2, -0x1, RZ ;
        /*0060*/                   BRA.DIV UR4, `(.L_x_3) ;
.L_x_5:
        /*0070*/                   VOTE.ANY R5, PT, P0 ;
        /*0080*/              @!P1 BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
.L_x_3:
        /*00a0*/                   WARPSYNC.COLLECTIVE R4, `(.L_x_4) ;
.L_x_4:
        /*00b0*/                   BRA `(.L_x_5) ;
//--------------------- .nv.info._Z6kernelv --------------------------
"""


def run(tmp_path, capsys, *args, text=NVDISASM):
    path = tmp_path / "k.sass"
    path.write_text(text)
    rc = tool.main([str(path), "--kernel", "_Z6kernelv", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_loop_head_is_the_longest_conditional_backward_branch_target():
    instrs, labels = tool.function(NVDISASM.split("\n"), "_Z6kernelv")
    assert [a for a, _, _ in instrs] == list(range(0, 0xc0, 0x10))
    assert labels == {".L_x_1": 0x10, ".L_x_2": 0x50, ".L_x_5": 0x70, ".L_x_3": 0xa0, ".L_x_4": 0xb0}
    # The fallback's BRA at 0xb0 jumps back 0x40 (to 0x70), the back-edge at 0x80 only 0x70: the head is still 0x10.
    assert tool.loop_head(instrs, labels) == 0x10


@pytest.mark.parametrize("text, expected", [
    ("@P6 BRA P5, `(.L_x_1)", (True, "BRA", 0x10)),
    ("BRA.DIV UR42, `(.L_x_2)", (True, "BRA.DIV", 0x50)),
    ("@!P1 BRA `(.L_x_1)", (True, "BRA", 0x10)),
    ("BRA 0x1230", (False, "BRA", 0x1230)),
    ("BRA `(.L_x_2)", (False, "BRA", 0x50)),
    ("@!UP0 BRA.U `(.L_x_2)", (True, "BRA.U", 0x50)),
    ("FADD R3, R3, R3", None),
])
def test_branch_forms(text, expected):
    assert tool.branch(text, {".L_x_1": 0x10, ".L_x_2": 0x50}) == expected


@pytest.mark.parametrize("text", ["BRX R4 -0x10", "@P0 BRA `(.L_x_7)"])
def test_jumps_it_cannot_follow_are_errors(text):
    with pytest.raises(tool.WalkError):
        tool.branch(text, {".L_x_1": 0x10})


def test_a_taken_branch_skips_its_block_and_the_divergent_fallback_is_not_taken(tmp_path, capsys):
    rc, out, err = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T", "k.cu:13": "T"}')
    assert rc == 0 and err == ""
    assert out.splitlines() == ["start 10: 6 instructions, ended back at the start", "20T@2 60N@4 80T@6"]


def test_a_block_not_skipped_is_counted_and_an_address_rule_wins_over_its_line(tmp_path, capsys):
    # The address as the listing prints it (leading zeros) and a line rule for the other branch of line 11's address.
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T", "k.cu:11:0020": "N", "k.cu:13": "T"}', "--lines")
    assert rc == 0
    lines = out.splitlines()
    assert lines[:2] == ["start 10: 8 instructions, ended back at the start", "20N@2 60N@6 80T@8"]
    assert lines[2:] == ["    2  k.cu:11  ", "    2  k.cu:12  ", "    4  k.cu:13  "]


def test_minus_counts_what_the_second_path_does_not_execute_and_unused_rules_are_listed(tmp_path, capsys):
    rc, out, err = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N", "k.cu:13": "T", "k.cu:99": "T"}',
                       "--minus", '{"k.cu:11": "T", "k.cu:13": "T"}')
    assert rc == 0
    assert out.splitlines()[-1] == "not on the --minus path: 2 instructions"  # the two FADDs at 0x30, 0x40
    assert "rules that decided no branch: k.cu:99" in err


def test_the_walk_ends_at_an_exit_or_at_stop(tmp_path, capsys):
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N", "k.cu:13": "N"}')
    assert rc == 0 and out.splitlines()[0] == "start 10: 9 instructions, ended EXIT at 90"
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N"}', "--start", "30", "--stop", "70")
    assert rc == 0 and out.splitlines()[0] == "start 30: 4 instructions, ended at 70"
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T"}', "--start", "0", "--stop", "50")
    assert rc == 0 and out.splitlines()[0] == "start 0: 3 instructions, ended at 50"  # a taken branch to --stop


def test_a_branch_without_a_rule_stops_the_walk_with_its_context(tmp_path, capsys):
    rc, out, err = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N"}')
    assert rc == 3 and out == ""
    assert "undecided branch at 80 (k.cu:13): @!P1 BRA" in err
    assert "VOTE.ANY" in err
    no_lines = "\n".join(line for line in NVDISASM.split("\n") if "//##" not in line)
    rc, _, err = run(tmp_path, capsys, text=no_lines)  # built without -lineinfo: still exit 3, place "?"
    assert rc == 3 and "undecided branch at 20 (?)" in err


def test_a_walk_that_never_ends_exits_4(tmp_path, capsys):
    # From 0x30 with the back-edge never taken back to 0x30: a start inside a loop the rules keep going round.
    rc, _, err = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T", "k.cu:13": "T"}', "--start", "30")
    assert rc == 4 and "did not end" in err


@pytest.mark.parametrize("args, message", [
    (["--start", "38"], "no instruction at the start address 38"),
    (["--stop", "zz"], "invalid literal"),
    (["--rules", "{not json"], "Expecting property name"),
    (["--rules", "[1]"], "not a JSON object"),
    (["--rules", '{"k.cu": "T"}'], "bad rule"),
    (["--rules", '{"k.cu:11": "yes"}'], "bad rule"),
    (["--rules", "missing.json"], "No such file"),
])
def test_bad_input_exits_2(tmp_path, capsys, args, message):
    rc, _, err = run(tmp_path, capsys, *args)
    assert rc == 2 and message in err


def test_missing_or_ambiguous_functions_exit_2(tmp_path, capsys):
    assert tool.main([str(tmp_path / "none.cubin"), "--kernel", "k"]) == 2
    assert "no such file" in capsys.readouterr().err
    path = tmp_path / "k.sass"
    path.write_text(NVDISASM)
    assert tool.main([str(path), "--kernel", "_Z7missingv"]) == 2
    assert "no function contains" in capsys.readouterr().err
    assert tool.main([str(path), "--kernel", "_Z"]) == 2
    assert "2 functions contain '_Z'" in capsys.readouterr().err

"""bench/sass_path.py (issue 27): one loop pass's instructions along a chosen path, on synthetic nvdisasm -g text."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sass_path", REPO / "bench" / "sass_path.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)

# A loop (.L_x_1 … the @!P1 back-edge) with a skippable block, a warp intrinsic's divergent fallback out of line (an
# unconditional branch back into the loop, longer than the back-edge: not the loop), and a second function.
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
        /*0070*/                   VOTE.ANY R5, PT, P0 ;
        /*0080*/              @!P1 BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
.L_x_3:
        /*00a0*/                   WARPSYNC.COLLECTIVE R4, `(.L_x_4) ;
.L_x_4:
        /*00b0*/                   BRA `(.L_x_1) ;
//--------------------- .nv.info._Z6kernelv --------------------------
"""


def run(tmp_path, capsys, *args):
    path = tmp_path / "k.sass"
    path.write_text(NVDISASM)
    rc = tool.main([str(path), "--kernel", "_Z6kernelv", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_loop_head_is_the_longest_conditional_backward_branch_target():
    instrs, labels = tool.function(NVDISASM.split("\n"), "_Z6kernelv")
    assert [a for a, _, _ in instrs] == list(range(0, 0xc0, 0x10))
    assert labels == {".L_x_1": 0x10, ".L_x_2": 0x50, ".L_x_3": 0xa0, ".L_x_4": 0xb0}
    assert tool.loop_head(instrs, labels) == 0x10


def test_a_taken_branch_skips_its_block_and_the_divergent_fallback_is_not_taken(tmp_path, capsys):
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T", "k.cu:13": "T"}')
    assert rc == 0
    assert out.splitlines() == ["start 10: 6 instructions", "20T@2 60N@4 80T@6"]


def test_a_block_not_skipped_is_counted_and_an_address_rule_wins_over_its_line(tmp_path, capsys):
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "T", "k.cu:11:20": "N", "k.cu:13": "T"}', "--lines")
    assert rc == 0
    lines = out.splitlines()
    assert lines[:2] == ["start 10: 8 instructions", "20N@2 60N@6 80T@8"]
    assert lines[2:] == ["    2  k.cu:11  ", "    2  k.cu:12  ", "    4  k.cu:13  "]


def test_a_branch_without_a_rule_stops_the_walk_with_its_context(tmp_path, capsys):
    rc, out, err = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N"}')
    assert rc == 3 and out == ""
    assert "undecided branch at 80 (k.cu:13): @!P1 BRA" in err
    assert "VOTE.ANY" in err


def test_stop_and_start_addresses(tmp_path, capsys):
    rc, out, _ = run(tmp_path, capsys, "--rules", '{"k.cu:11": "N"}', "--start", "30", "--stop", "70")
    assert rc == 0
    assert out.splitlines()[0] == "start 30: 4 instructions"
    rc, _, err = run(tmp_path, capsys, "--start", "38")
    assert rc == 2 and "no instruction at the start address 38" in err


def test_missing_inputs_exit_2(tmp_path, capsys):
    assert tool.main([str(tmp_path / "none.cubin"), "--kernel", "k"]) == 2
    assert "no such file" in capsys.readouterr().err
    rc, _, err = run(tmp_path, capsys, "--rules", "{not json")
    assert rc == 2
    path = tmp_path / "k.sass"
    assert tool.main([str(path), "--kernel", "_Z7missingv"]) == 2
    assert "no function contains" in capsys.readouterr().err

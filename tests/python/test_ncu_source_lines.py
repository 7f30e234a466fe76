"""bench/ncu_source_lines.py (issue 27): parsing `nvdisasm -g` output and joining it with ncu's per-SASS counts
(synthetic inputs: no CUDA tools needed)."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ncu_source_lines", REPO / "bench" / "ncu_source_lines.py")
ncu_source_lines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ncu_source_lines)

DISASM = """\
.text._Z5OtherPf:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.text._Z6KernelPf:
	//## File "/src/k.cu", line 10
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/src/k.cu", line 12
        /*0010*/               @!P0 BRA `(.L_x_1) ;
        /*0020*/                   FADD.FTZ R2, R2, R3 ;
	//## File "/src/math.h", line 3
        /*0030*/                   ISETP.NE.AND P1, PT, R2, RZ, PT ;
.text._Z5LaterPf:
        /*0000*/                   EXIT ;
""".split("\n")

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"]


def rows(*sass):
    """The source page's CSV rows (kernel-name line, header, one row per (text, executed, samples))."""
    return [["Kernel Name", "Kernel(float*)"], HEADER] + [
        [hex(0x7f0000 + 16 * i), "      " + text, str(samples), str(n)] for i, (text, n, samples) in enumerate(sass)]


def test_parse_takes_the_named_function_with_its_lines_and_opcodes():
    sass = ncu_source_lines.parse_disassembly(DISASM, "Kernel")
    assert sass == [("LDC", ("k.cu", 10)), ("BRA", ("k.cu", 12)), ("FADD", ("k.cu", 12)), ("ISETP", ("math.h", 3))]
    assert ncu_source_lines.parse_disassembly(DISASM, "Missing") == []


def test_counts_sum_per_source_line():
    sass = ncu_source_lines.parse_disassembly(DISASM, "Kernel")
    executed, samples, total_n, total_s, lost_at = ncu_source_lines.attribute(
        rows(("LDC R1, c[0x0][0x28]", 4, 1), ("@!P0 BRA `(.L_x_1)", 8, 2), ("FADD.FTZ R2, R2, R3", 8, 5),
             ("ISETP.NE.AND P1, PT, R2, RZ, PT", 6, 0)), sass)
    assert lost_at is None
    assert executed == {("k.cu", 10): 4, ("k.cu", 12): 16, ("math.h", 3): 6}
    assert samples[("k.cu", 12)] == 7
    assert (total_n, total_s) == (26, 8)


def test_a_differing_opcode_stops_the_attribution():
    sass = ncu_source_lines.parse_disassembly(DISASM, "Kernel")
    executed, _, total_n, _, lost_at = ncu_source_lines.attribute(
        rows(("LDC R1, c[0x0][0x28]", 4, 0), ("IMAD R2, R2, R3, RZ", 8, 0), ("FADD R2, R2, R3", 8, 0),
             ("ISETP.NE.AND P1, PT, R2, RZ, PT", 6, 0), ("EXIT", 1, 0)), sass)
    assert lost_at == 1
    assert executed == {("k.cu", 10): 4, ncu_source_lines.UNATTRIBUTED: 23}
    assert total_n == 27

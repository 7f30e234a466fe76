"""bench/vote_divergence.py (issue 27): how often the spatial kernel's vote needs its triangular path."""
import importlib.util
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("vote_divergence", REPO / "bench" / "vote_divergence.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)


def test_one_label_never_votes_three_and_has_no_boundary():
    seg = np.full((24, 24, 24), 3, dtype=np.int32)
    assert tool.rates(seg, np.eye(3), 16) == (0.0, 0.0, 0.0)


def test_three_regions_meeting_on_an_edge_need_the_triangular_vote_there_only():
    # Labels 0 | 1 split along axis 2, the half y >= 12 of label 1's side relabelled 2: the three meet on one edge
    # (x = 11.5, y = 11.5), so only the corners straddling both planes see three labels.
    seg = np.zeros((24, 24, 24), dtype=np.int32)
    seg[:, :, 12:] = 1
    seg[:, 12:, 12:] = 2
    tri, tri_steps, boundary_steps = tool.rates(seg, np.eye(3), 16)
    # Identity resampling of the centred 16^3 patch samples input voxel j + 4 exactly: its 8 corners (zero weights
    # included, as in the kernel's vote) are input j + 4 and j + 5 per axis. Three labels where they hold x = 11, 12
    # and y = 11, 12: patch column (j1, j2) = (7, 7), 1 voxel in 256.
    assert tri == 1 / 256
    assert tri_steps == 1 / 8  # in each plane, 1 of the 8 warps (4 x 8 lanes) holds that column
    # Boundaries: column j2 = 7 (labels 0 | 1, 2: the 4 warps of warp column 0) and row j1 = 7 for j2 >= 7 (1 | 2:
    # one more warp, in warp column 1): 5 of 8.
    assert boundary_steps == 5 / 8


def test_an_out_of_bounds_corner_is_one_more_label_unless_raw():
    # Identity sampling of a 16^3 input into a 16^3 patch: voxel j's corners are j and j + 1, so j = 15 has its far
    # corners out of bounds on that axis. Labels 0 | 1 split at x = 8: the x boundary column j2 = 7 holds two labels,
    # three where j0 = 15 or j1 = 15 adds the out-of-bounds label (16 + 16 - 1 of 4096 voxels); with raw labels the
    # clamped corner repeats an in-bounds label.
    seg = np.zeros((16, 16, 16), dtype=np.int32)
    seg[:, :, 8:] = 1
    assert tool.rates(seg, np.eye(3), 16)[0] == 31 / 4096
    # Raw: no triangular voxel; the boundary steps are the x boundary's alone (warp column 0 of 2).
    assert tool.rates(seg, np.eye(3), 16, raw_oob=True) == (0.0, 0.0, 0.5)


def test_rotated_samples_of_the_bench_seg_and_bad_sizes(capsys):
    assert tool.main(["--sets", "1", "--in", "40", "--out", "16"]) == 0
    out = capsys.readouterr().out.splitlines()
    values = [float(line.split()[-1]) for line in out]
    assert len(values) == 3 and all(0.0 <= v <= 1.0 for v in values)
    assert values[0] <= values[1] <= values[2]
    assert tool.main(["--out", "12"]) == 2
    assert "multiple of 8" in capsys.readouterr().err

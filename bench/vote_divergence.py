#!/usr/bin/env python3
"""How often the spatial kernel's label vote needs its triangular path, per voxel and per warp step (no GPU).

  bench/vote_divergence.py [--sets 16] [--seed 1] [--in 205] [--out 128] [--block 8] [--labels 4] [--raw-oob]

The branch-free 0.3.5 vote (augment/kernels/cuda/spatial_math.h, LabelVote035BranchFree) votes one or two corner
labels inline and takes TriangularVoteCore when the 8 trilinear corners carry three or more distinct labels, zero
weights included: an out-of-bounds corner counts as one more label (kVoteOutOfBounds, the kernels before session 27),
or with --raw-oob (the kernel since session 27: kRawOutLabels in spatial.cu) carries the label at its clamped index. A
warp (4 × 8 output voxels of one plane a step, spatial.cu) waits for the triangular path whenever one of its lanes
takes it. This script samples bench/cuda_pipeline_bench's inputs as its all-on rows draw them -- a seg of `--block`³
blocks of `--labels` random labels with a −1 slab (z < 2), rotation uniform in ±0.5236 rad per axis, scaling 0.7–1.4,
centred -- and prints three fractions over `--sets` parameter sets: voxels that take the triangular path, warp steps
with at least one such lane, and warp steps with at least one voxel whose corners carry two labels or more (a label
boundary, or the volume's edge without --raw-oob). Coordinates are float64 (the kernel's float32 roundings move a few
voxels across a boundary: these are rates, not the kernel's labels).
"""
import argparse
import sys

import numpy as np


def rotation(a):
    c, s = np.cos(a), np.sin(a)
    rz = np.array([[c[2], -s[2], 0], [s[2], c[2], 0], [0, 0, 1]])
    ry = np.array([[c[1], 0, s[1]], [0, 1, 0], [-s[1], 0, c[1]]])
    rx = np.array([[1, 0, 0], [0, c[0], -s[0]], [0, s[0], c[0]]])
    return rz @ ry @ rx  # A = Rz(a2) Ry(a1) Rx(a0), as bench/cuda_pipeline_bench.cc's Draw


OUT_OF_BOUNDS = 32768  # kVoteOutOfBounds: above every int16 label


def rates(seg, matrix, out, raw_oob=False):
    """(triangular voxels, warp steps with one, warp steps with a boundary voxel) of one sample."""
    S = np.array(seg.shape)
    g = np.arange(out) - (out - 1) / 2
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), 0).reshape(3, -1)
    n = (matrix @ grid) / (S[:, None] / 2)
    ix = ((n + 1) * S[:, None] - 1) / 2  # grid_sample, align_corners=False
    low = np.floor(ix).astype(np.int64)
    labels = []
    for m in range(8):  # corner m: bit 0 = axis 2, bit 1 = axis 1, bit 2 = axis 0
        c = [low[0] + ((m >> 2) & 1), low[1] + ((m >> 1) & 1), low[2] + (m & 1)]
        inside = np.all([(c[d] >= 0) & (c[d] < S[d]) for d in range(3)], axis=0)
        clamped = [np.clip(c[d], 0, S[d] - 1) for d in range(3)]
        raw = seg[clamped[0], clamped[1], clamped[2]]
        labels.append(raw if raw_oob else np.where(inside, raw, OUT_OF_BOUNDS))
    lab = np.stack(labels, 0)
    lo, hi = lab.min(0), lab.max(0)
    three = ~np.all((lab == lo) | (lab == hi), 0)
    steps = (out, out // 4, 4, out // 8, 8)  # (j0, warp row, 4 lanes, warp column, 8 lanes)
    return (three.mean(), three.reshape(steps).any(axis=(2, 4)).mean(),
            (lo != hi).reshape(steps).any(axis=(2, 4)).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=int, default=16, help="parameter sets (samples) to average (default 16)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--in", dest="size_in", type=int, default=205, help="input edge (default 205)")
    ap.add_argument("--out", type=int, default=128, help="patch edge, a multiple of 8 (default 128)")
    ap.add_argument("--block", type=int, default=8, help="edge of the seg's label blocks (default 8)")
    ap.add_argument("--labels", type=int, default=4, help="labels drawn per block (default 4)")
    ap.add_argument("--raw-oob", action="store_true", help="out-of-bounds corners carry their clamped label")
    args = ap.parse_args(argv)
    if args.out % 8 or args.out <= 0 or args.size_in <= 0 or args.block <= 0 or args.labels <= 0 or args.sets <= 0:
        print("vote_divergence.py: --out must be a positive multiple of 8, and --in, --block, --labels and --sets "
              "positive", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    S, k = args.size_in, -(-args.size_in // args.block)
    blk = np.arange(S) // args.block  # each voxel's block index, along any axis
    coarse = rng.integers(0, args.labels, size=(k, k, k))
    seg = coarse[blk[:, None, None], blk[None, :, None], blk[None, None, :]].astype(np.int32)
    seg[:2] = -1
    got = []
    for _ in range(args.sets):
        matrix = rotation(-0.5236 + 1.0472 * rng.random(3)) * (0.7 + 0.7 * rng.random())
        got.append(rates(seg, matrix, args.out, args.raw_oob))
    tri, tri_steps, boundary_steps = np.mean(got, axis=0)
    print(f"voxels taking the triangular vote      {tri:.4f}")
    print(f"warp steps with such a lane            {tri_steps:.4f}")
    print(f"warp steps with a label-boundary voxel {boundary_steps:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

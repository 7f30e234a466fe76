#!/usr/bin/env python3
"""batchgeneratorsv2 0.3.5 on all cores of the GPU machine: the CPU column of the CUDA benchmark (issues 4, 10).

    python3 bench/cuda_bgv2_16cores.py [--workers 16] [--samples 3] [--json out.jsonl] [--quick]

nnU-Net 2.8.1's training pipelines rebuilt from bgv2 classes (no nnunetv2 import: the GPU image lacks its
dependencies): nnUNetTrainer.get_training_transforms (reference §3) and nnUNetTrainerDA5's (§5.1), 3D, no cascade,
no regions, deep supervision 1, 1/2, 1/4, 1/8, 1/16. Modes as bench/cuda_pipeline_bench.cc:
  default-p  nnU-Net's probabilities;
  all-on     every RandomTransform applied (p = 1), rotation and scaling drawn, p_per_channel 1;
  da5        nnUNetTrainerDA5's probabilities (OneOf groups included).
Each of `--workers` processes (torch and BLAS limited to one thread, as nnU-Net's data-loader workers) augments
`--samples` samples after one warm-up sample, from its own copy of a random input (N(0.3, 1) image, blobby labels
0..3 with a -1 slab); throughput = workers / mean time per sample (steady state; the slowest-worker figure of this
run is recorded too). ms per batch of B = B / throughput.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import time

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_v] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROT = (-30.0 / 360 * 2 * math.pi, 30.0 / 360 * 2 * math.pi)
DS = [[1, 1, 1], [.5, .5, .5], [.25, .25, .25], [.125, .125, .125], [.0625, .0625, .0625]]


def _rand(p, all_on):
    return 1.0 if all_on else p


def default_pipeline(patch, all_on):
    from batchgeneratorsv2.transforms.intensity.brightness import MultiplicativeBrightnessTransform
    from batchgeneratorsv2.transforms.intensity.contrast import BGContrast, ContrastTransform
    from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform
    from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform
    from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
    from batchgeneratorsv2.transforms.spatial.low_resolution import SimulateLowResolutionTransform
    from batchgeneratorsv2.transforms.spatial.mirroring import MirrorTransform
    from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform
    from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms
    from batchgeneratorsv2.transforms.utils.deep_supervision_downsampling import DownsampleSegForDSTransform
    from batchgeneratorsv2.transforms.utils.random import RandomTransform
    from batchgeneratorsv2.transforms.utils.remove_label import RemoveLabelTansform

    pc = 1 if all_on else 0.5
    t = [
        SpatialTransform(patch, patch_center_dist_from_border=0, random_crop=False, p_elastic_deform=0,
                         p_rotation=_rand(0.2, all_on), rotation=ROT, p_scaling=_rand(0.2, all_on), scaling=(0.7, 1.4),
                         p_synchronize_scaling_across_axes=1, bg_style_seg_sampling=False, mode_seg="bilinear",
                         border_mode_seg="constant", padding_value_seg=-1),
        RandomTransform(GaussianNoiseTransform(noise_variance=(0, 0.1), p_per_channel=1, synchronize_channels=True),
                        apply_probability=_rand(0.1, all_on)),
        RandomTransform(GaussianBlurTransform(blur_sigma=(0.5, 1.), synchronize_channels=False, synchronize_axes=False,
                                              p_per_channel=pc, benchmark=True), apply_probability=_rand(0.2, all_on)),
        RandomTransform(MultiplicativeBrightnessTransform(multiplier_range=BGContrast((0.75, 1.25)),
                                                          synchronize_channels=False, p_per_channel=1),
                        apply_probability=_rand(0.15, all_on)),
        RandomTransform(ContrastTransform(contrast_range=BGContrast((0.75, 1.25)), preserve_range=True,
                                          synchronize_channels=False, p_per_channel=1),
                        apply_probability=_rand(0.15, all_on)),
        RandomTransform(SimulateLowResolutionTransform(scale=(0.5, 1), synchronize_channels=False,
                                                       synchronize_axes=True, ignore_axes=None, allowed_channels=None,
                                                       p_per_channel=pc),
                        apply_probability=_rand(0.25, all_on)),
        RandomTransform(GammaTransform(gamma=BGContrast((0.7, 1.5)), p_invert_image=1, synchronize_channels=False,
                                       p_per_channel=1, p_retain_stats=1), apply_probability=_rand(0.1, all_on)),
        RandomTransform(GammaTransform(gamma=BGContrast((0.7, 1.5)), p_invert_image=0, synchronize_channels=False,
                                       p_per_channel=1, p_retain_stats=1), apply_probability=_rand(0.3, all_on)),
        MirrorTransform(allowed_axes=(0, 1, 2)),
        RemoveLabelTansform(-1, 0),
        DownsampleSegForDSTransform(ds_scales=DS),
    ]
    return ComposeTransforms(t)


def da5_pipeline(patch):
    from batchgeneratorsv2.transforms.intensity.brightness import BrightnessAdditiveTransform
    from batchgeneratorsv2.transforms.intensity.contrast import BGContrast, ContrastTransform
    from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform
    from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform
    from batchgeneratorsv2.transforms.local.brightness_gradient import BrightnessGradientAdditiveTransform
    from batchgeneratorsv2.transforms.local.local_gamma import LocalGammaTransform
    from batchgeneratorsv2.transforms.noise.blank_rectangle import BlankRectangleTransform
    from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform
    from batchgeneratorsv2.transforms.noise.median_filter import MedianFilterTransform
    from batchgeneratorsv2.transforms.noise.sharpen import SharpeningTransform
    from batchgeneratorsv2.transforms.spatial.low_resolution import SimulateLowResolutionTransform
    from batchgeneratorsv2.transforms.spatial.mirroring import MirrorTransform
    from batchgeneratorsv2.transforms.spatial.rot90 import Rot90Transform
    from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform
    from batchgeneratorsv2.transforms.spatial.transpose import TransposeAxesTransform
    from batchgeneratorsv2.transforms.utils.compose import ComposeTransforms
    from batchgeneratorsv2.transforms.utils.deep_supervision_downsampling import DownsampleSegForDSTransform
    from batchgeneratorsv2.transforms.utils.random import OneOfTransform, RandomTransform
    from batchgeneratorsv2.transforms.utils.remove_label import RemoveLabelTansform

    def local_scale(x, y):  # nnUNetTrainerDA5 _brightnessadditive_localgamma_transform_scale
        return np.exp(np.random.uniform(np.log(x[y] // 6), np.log(x[y])))

    def gradient_strength(_, __):
        return np.random.uniform(-5, -1) if np.random.uniform() < 0.5 else np.random.uniform(1, 5)

    def local_gamma(*_):
        return np.random.uniform(0.01, 0.8) if np.random.uniform() < 0.5 else np.random.uniform(1.5, 4)

    counts = np.array([sum(i == j for j in patch) for i in patch])
    axes = set(int(a) for a in np.where(counts == counts.max())[0])
    t = [SpatialTransform(patch, patch_center_dist_from_border=0, random_crop=False, p_elastic_deform=0, p_rotation=0.4,
                          rotation=ROT, p_rot_per_axis=0.5, p_scaling=0.2, scaling=(0.7, 1.43),
                          p_synchronize_scaling_across_axes=0, bg_style_seg_sampling=False,
                          border_mode_seg="constant", padding_value_seg=-1)]
    if counts.max() > 1:
        t.append(RandomTransform(Rot90Transform(num_axis_combinations=1, num_rot_per_combination=(0, 1, 2, 3),
                                                allowed_axes=axes), apply_probability=0.5))
        t.append(RandomTransform(TransposeAxesTransform(allowed_axes=axes), apply_probability=0.5))
    t += [
        OneOfTransform([
            RandomTransform(MedianFilterTransform((2, 8), p_same_for_each_channel=0, p_per_channel=0.5),
                            apply_probability=0.2),
            RandomTransform(GaussianBlurTransform((0.3, 1.5), synchronize_channels=False, synchronize_axes=True,
                                                  p_per_channel=0.5), apply_probability=0.2)]),
        RandomTransform(GaussianNoiseTransform(noise_variance=(0, 0.1), p_per_channel=1, synchronize_channels=True),
                        apply_probability=0.1),
        RandomTransform(BrightnessAdditiveTransform(mu=0, sigma=0.5, synchronize_channels=False, p_per_channel=0.5),
                        apply_probability=0.1),
        OneOfTransform([
            RandomTransform(ContrastTransform(contrast_range=BGContrast((0.5, 2)), preserve_range=pr,
                                              synchronize_channels=False, p_per_channel=0.5), apply_probability=0.2)
            for pr in (True, False)]),
        RandomTransform(SimulateLowResolutionTransform(scale=(0.25, 1), synchronize_channels=False,
                                                       synchronize_axes=True, ignore_axes=None, p_per_channel=0.5),
                        apply_probability=0.15),
    ]
    t += [RandomTransform(GammaTransform(gamma=BGContrast((0.7, 1.5)), p_invert_image=1, synchronize_channels=False,
                                         p_per_channel=1, p_retain_stats=1), apply_probability=0.1) for _ in range(2)]
    t += [
        MirrorTransform(allowed_axes=(0, 1, 2)),
        RandomTransform(BlankRectangleTransform(rectangle_size=[[max(1, p // 10), p // 3] for p in patch],
                                                rectangle_value=torch.mean, num_rectangles=(1, 5), force_square=False,
                                                p_per_channel=0.5), apply_probability=0.4),
        RandomTransform(BrightnessGradientAdditiveTransform(scale=local_scale, loc=(-0.5, 1.5),
                                                            max_strength=gradient_strength, mean_centered=False,
                                                            same_for_all_channels=False, p_per_channel=0.5),
                        apply_probability=0.3),
        RandomTransform(LocalGammaTransform(scale=local_scale, loc=(-0.5, 1.5), gamma=local_gamma,
                                            same_for_all_channels=False, p_per_channel=0.5), apply_probability=0.3),
        RandomTransform(SharpeningTransform(strength=(0.1, 1), p_same_for_each_channel=0, p_per_channel=0.5),
                        apply_probability=0.2),
        RemoveLabelTansform(-1, 0),
        DownsampleSegForDSTransform(ds_scales=DS),
    ]
    return ComposeTransforms(t)


def _inputs(C, S, seed):
    g = np.random.default_rng(seed)
    img = g.normal(0.3, 1.0, size=(C, *S)).astype(np.float32)
    coarse = g.integers(0, 4, size=[(s + 7) // 8 for s in S]).astype(np.int16)
    seg = coarse.repeat(8, 0).repeat(8, 1).repeat(8, 2)[: S[0], : S[1], : S[2]].copy()
    seg[:2] = -1
    return torch.from_numpy(img), torch.from_numpy(seg[None])


def _worker(args):
    mode, C, S, P, samples, wid = args
    torch.set_num_threads(1)
    np.random.seed(1000 + wid)
    torch.manual_seed(1000 + wid)
    pipe = da5_pipeline(P) if mode == "da5" else default_pipeline(P, mode == "all-on")
    img, seg = _inputs(C, S, wid)
    times = []
    for i in range(samples + 1):
        d = {"image": img.clone(), "segmentation": seg.clone()}
        t0 = time.perf_counter()
        pipe(**d)
        if i > 0:
            times.append(time.perf_counter() - t0)
    return sum(times), times


def run(mode, C, S, P, workers, samples, pool):
    t0 = time.perf_counter()
    res = pool.map(_worker, [(mode, C, S, P, samples, w) for w in range(workers)])
    wall = time.perf_counter() - t0
    busy = max(r[0] for r in res)  # slowest worker's augmenting time (warm-up excluded)
    per = sorted(t for r in res for t in r[1])
    mean = sum(per) / len(per)
    # Steady state of `workers` independent loaders: workers / mean time per sample (a few samples per worker make
    # the slowest-worker figure depend on which worker drew the expensive samples).
    return dict(impl="bgv2_16cores", mode=mode, C=C, shape="x".join(map(str, P)) + "<-" + "x".join(map(str, S)),
                workers=workers, samples_per_s=workers / mean, samples_per_s_slowest=workers * samples / busy,
                mean_sample_s=mean, median_sample_s=per[len(per) // 2], wall_s=wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 16)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--modes", default="default-p,all-on,da5")
    ap.add_argument("--shapes", default="0,1", help="0: 128^3 <- 205^3, 1: 80x160x160 <- 175x257x210")
    ap.add_argument("--channels", default="1,4")
    args = ap.parse_args()
    shapes = (((205, 205, 205), (128, 128, 128)), ((175, 257, 210), (80, 160, 160)))
    rows = []
    ctx = mp.get_context("fork")
    with ctx.Pool(args.workers) as pool:
        for mode in args.modes.split(","):
            for S, P in [shapes[int(i)] for i in args.shapes.split(",")]:
                for C in [int(c) for c in args.channels.split(",")]:
                    if mode == "da5" and C == 4:
                        continue
                    r = run(mode, C, S, P, args.workers, args.samples, pool)
                    rows.append(r)
                    print(f"bgv2 {args.workers} workers {mode:9s} C={C} {r['shape']:22s} {r['samples_per_s']:.1f} "
                          f"samples/s (slowest worker {r['samples_per_s_slowest']:.1f}; mean "
                          f"{r['mean_sample_s'] * 1e3:.0f} ms/sample/core; B=2 "
                          f"{2 / r['samples_per_s'] * 1e3:.1f} ms, B=8 {8 / r['samples_per_s'] * 1e3:.1f} ms per "
                          f"batch)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()

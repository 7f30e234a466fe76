"""CPU engine benchmark: augmentd (C ABI, one thread) vs batchgeneratorsv2 0.3.5 (torch.set_num_threads(1)),
per transform (every transform forced on) and for nnU-Net's whole default pipeline, measured in the same run.

    AUGMENTD_BUILD_DIR=build-eng .venv/bin/python bench/engine_cpu_vs_bgv2.py [--reps 3] [--samples 16]

Writes bench/results/engine_cpu_vs_bgv2.md. Timings of augmentd include the C ABI (JSON, copying the input into
the engine and the outputs back); bgv2 timings are the bare transform calls on torch tensors. bgv2's blur runs
with benchmark=True as in nnU-Net and is warmed up first.
"""
import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import augment_capi as ac  # noqa: E402

from batchgeneratorsv2.transforms.intensity.brightness import MultiplicativeBrightnessTransform  # noqa: E402
from batchgeneratorsv2.transforms.intensity.contrast import BGContrast, ContrastTransform  # noqa: E402
from batchgeneratorsv2.transforms.intensity.gamma import GammaTransform  # noqa: E402
from batchgeneratorsv2.transforms.intensity.gaussian_noise import GaussianNoiseTransform  # noqa: E402
from batchgeneratorsv2.transforms.noise.gaussian_blur import GaussianBlurTransform  # noqa: E402
from batchgeneratorsv2.transforms.spatial.low_resolution import SimulateLowResolutionTransform  # noqa: E402
from batchgeneratorsv2.transforms.spatial.mirroring import MirrorTransform  # noqa: E402
from batchgeneratorsv2.transforms.spatial.spatial import SpatialTransform  # noqa: E402
from batchgeneratorsv2.transforms.utils.deep_supervision_downsampling import DownsampleSegForDSTransform  # noqa: E402
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer  # noqa: E402

PS = [128, 128, 128]
DS = [[1, 1, 1], [.5, .5, .5], [.25, .25, .25], [.125, .125, .125], [.0625, .0625, .0625]]


def transforms(initial):
    sp = dict(patch_size=PS, patch_center_dist_from_border=0, random_crop=False, p_rotation=1,
              rotation=(-0.5236, 0.5236), p_scaling=1, scaling=(0.7, 1.4), p_synchronize_scaling_across_axes=1,
              bg_style_seg_sampling=False, border_mode_seg="constant", padding_value_seg=-1)
    return [
        ("spatial (rotate+scale, 3 labels)", "spatial", {**sp, "rotation": [-0.5236, 0.5236], "scaling": [0.7, 1.4]},
         SpatialTransform(**sp), True),
        ("gaussian_noise", "gaussian_noise", {"noise_variance": [0, 0.1], "synchronize_channels": True},
         GaussianNoiseTransform((0, 0.1), 1, True), False),
        ("gaussian_blur", "gaussian_blur", {"blur_sigma": [0.5, 1.0], "p_per_channel": 1.0, "benchmark": True},
         GaussianBlurTransform((0.5, 1.0), False, False, 1.0, benchmark=True), False),
        ("multiplicative_brightness", "multiplicative_brightness",
         {"multiplier_range": {"bg_contrast": [0.75, 1.25]}, "synchronize_channels": False},
         MultiplicativeBrightnessTransform(BGContrast((0.75, 1.25)), False, 1), False),
        ("contrast", "contrast", {"contrast_range": {"bg_contrast": [0.75, 1.25]}, "preserve_range": True,
                                  "synchronize_channels": False},
         ContrastTransform(BGContrast((0.75, 1.25)), True, False, 1), False),
        ("simulate_low_resolution", "simulate_low_resolution",
         {"scale": [0.5, 1], "synchronize_channels": False, "synchronize_axes": True, "p_per_channel": 1.0},
         SimulateLowResolutionTransform((0.5, 1), False, True, None, None, 1.0), False),
        ("gamma (retain stats)", "gamma", {"gamma": {"bg_contrast": [0.7, 1.5]}, "p_invert_image": 0,
                                           "synchronize_channels": False, "p_per_channel": 1, "p_retain_stats": 1},
         GammaTransform(BGContrast((0.7, 1.5)), 0, False, 1, 1), False),
        ("mirror", "mirror", {"allowed_axes": [0, 1, 2]}, MirrorTransform((0, 1, 2)), False),
        ("downsample_seg_for_ds", "downsample_seg_for_ds", {"ds_scales": DS}, DownsampleSegForDSTransform(DS), False),
    ]


def best(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--samples", type=int, default=16)
    args = ap.parse_args()
    torch.set_num_threads(1)
    g, _ = ac.run({"op": "initial_patch_size", "trainer_config": {"patch_size": PS}})
    initial = g["initial_patch_size"]
    rng = np.random.default_rng(0)

    def make(shape, n=1):
        img = rng.standard_normal((n, 1, *shape)).astype(np.float32)
        seg = np.zeros((n, 1, *shape), np.int16)
        c = [s // 2 for s in shape]
        seg[:, :, c[0] - 30:c[0] + 30, c[1] - 40:c[1] + 40, c[2] - 35:c[2] + 35] = 1
        seg[:, :, c[0] - 10:c[0] + 10, c[1] - 10:c[1] + 10, :] = 2
        seg[:, :, :4] = -1
        return img, seg

    rows = []
    for label, kind, cfg, bg, is_spatial in transforms(initial):
        img, seg = make(initial if is_spatial else PS)
        pipe = {"transforms": [{"kind": kind, "apply_probability": 1, "config": cfg}]}
        bg(image=torch.from_numpy(img[0].copy()), segmentation=torch.from_numpy(seg[0].copy()))  # warm-up
        tb = best(lambda: bg(image=torch.from_numpy(img[0].copy()), segmentation=torch.from_numpy(seg[0].copy())),
                  args.reps)
        ta = best(lambda: ac.run({"op": "run_pipeline", "pipeline": pipe, "seed": 1, "threads": 1},
                                 image=img, seg=seg), args.reps)
        rows.append((label, tb, ta))
        print(f"{label:36s} bgv2 {tb * 1e3:8.1f} ms  augmentd {ta * 1e3:8.1f} ms  ratio {tb / ta:5.2f}", flush=True)

    n = args.samples
    img, seg = make(initial, n)
    tr = nnUNetTrainer.get_training_transforms(PS, (-0.5236, 0.5236), DS, (0, 1, 2), False, None, False, None, None,
                                               None)
    for i in range(min(n, 6)):
        tr(image=torch.from_numpy(img[i].copy()), segmentation=torch.from_numpy(seg[i].copy()))
    t0 = time.perf_counter()
    for i in range(n):
        tr(image=torch.from_numpy(img[i].copy()), segmentation=torch.from_numpy(seg[i].copy()))
    tb = (time.perf_counter() - t0) / n
    t0 = time.perf_counter()
    ac.run({"op": "run_pipeline", "preset": "nnunet_default",
            "trainer_config": {"patch_size": PS, "deep_supervision_scales": DS}, "seed": 1, "threads": 1},
           image=img, seg=seg)
    ta = (time.perf_counter() - t0) / n
    rows.append((f"whole nnunet_default pipeline, per sample ({n} samples)", tb, ta))
    print(f"pipeline per sample: bgv2 {tb * 1e3:.1f} ms  augmentd {ta * 1e3:.1f} ms  ratio {tb / ta:.2f}")

    out = ROOT / "bench" / "results" / "engine_cpu_vs_bgv2.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        f.write(f"# augmentd CPU engine vs batchgeneratorsv2 0.3.5, one core each\n\n")
        f.write(f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, host `{os.uname().nodename}`, "
                f"{os.cpu_count()} CPUs (shared), patch {PS}, input {initial} (1 channel, int16 labels -1..2), "
                f"best of {args.reps}. augmentd includes the C ABI copies; ratio = bgv2 time / augmentd time "
                f"(> 1: augmentd faster).\n\n")
        f.write("| what | bgv2 ms | augmentd ms | ratio |\n| --- | ---: | ---: | ---: |\n")
        for label, tb, ta in rows:
            f.write(f"| {label} | {tb * 1e3:.1f} | {ta * 1e3:.1f} | {tb / ta:.2f} |\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

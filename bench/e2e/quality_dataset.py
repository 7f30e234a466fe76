"""Synthetic dataset of the ``quality`` stage (issue 26): hard enough that augmentation matters, with a held-out test
set whose acquisition is shifted in ways nnU-Net's augmentation covers. Planned and preprocessed by nnU-Net.

    python bench/e2e/quality_dataset.py --work /tmp/e2eq --train 24 --test 8 --np 16 [--patch 32,64,64 --batch 2]

A case (single channel, NIfTI through nibabel, ``NibabelIO``; arrays here are nnU-Net's (z, y, x)):

* anisotropic spacing: ``--spacing`` 2.5 × 0.8 × 0.8 mm (z × y × x) by default, so thin in-plane structures span
  about one slice;
* tissue everywhere: a smooth texture field (Gaussian-filtered noise, ``--texture`` σ units) plus white noise of
  σ = 1 (``--noise``), blurred by a small point-spread function; intensities ``100 + 20 * value``;
* label 1, "vessels": ``--tubes`` thin tubes (radius ``--tube-radius`` mm, ~2–3 voxels across in-plane, one or two
  slices thick) running in-plane along a direction close to x (within ±``--train-angle`` degrees) and meandering
  in-plane and in z, at ``+--contrast`` σ;
* label 2, "lesions": ``--lesions`` small spheres (radius 1.5–3 mm, 2–4 voxels in-plane), at ``-1.25 * --contrast``;
* unlabelled distractors: ``--distractors`` spheres as bright as the vessels (shape, not intensity, tells them
  apart).

The held-out test set (``imagesTs`` / ``labelsTs``, never seen in training or validation) draws the same anatomy but
shifts the acquisition, each shift inside what nnU-Net's default augmentation samples:

==================  ======================================================  ==========================================
shift (knob)        test set                                                covered by (nnUNetTrainer's augmentation)
==================  ======================================================  ==========================================
orientation         tube direction rotated in-plane by ±(``--test-angle``    rotation ±30° about each axis; mirroring
                    ± 5)°; each axis flipped with probability 1/2           of every axis
intensity (gamma)   gamma ``--test-gamma`` (or its inverse) on the           gamma 0.7–1.5 (also on the inverted
                    min–max normalised image                                 image)
contrast / noise    white noise × ``--test-noise``, a wider PSF              Gaussian noise (variance ≤ 0.1),
                    (``--test-blur`` voxels in-plane)                        Gaussian blur σ 0.5–1, simulated low
                                                                            resolution
global scale        intensities × 0.7 + 30                                  (z-score normalisation removes it)
==================  ======================================================  ==========================================

Without augmentation a network learns "vessels run along x, at gamma 1, with this noise"; the test set breaks each
of those. DA5 adds stronger versions of the same (and more) transforms.

Writes ``<work>/raw/Dataset991_E2EQuality``, runs ``nnUNetv2_plan_and_preprocess -c 3d_fullres``, sets the patch
size (rounded up to the planned network's total stride) and batch size, writes splits_final.json (5 folds, nnU-Net's
``generate_crossval_split``), optionally narrows the network (``--shrink-network``: CPU dry runs), and prints one JSON
line. A finished dataset with the same parameters (``<work>/quality-dataset.json``) is reused.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from multiprocessing import Pool
from pathlib import Path

import numpy as np

DATASET_ID = 991
DATASET_NAME = f"Dataset{DATASET_ID:03d}_E2EQuality"
LABELS = {"background": 0, "vessel": 1, "lesion": 2}


@dataclass(frozen=True)
class Knobs:
    """Every difficulty knob of the generator (defaults: the stage's dataset)."""
    shape: tuple = (40, 96, 96)          # z, y, x voxels
    spacing: tuple = (2.5, 0.8, 0.8)     # z, y, x mm
    noise: float = 1.0                   # white noise σ (the unit of every contrast)
    texture: float = 0.6                 # smooth background texture amplitude, σ units
    psf: float = 0.5                     # point-spread blur (voxels, in-plane; z: a third of it)
    contrast: float = 1.5                # vessel contrast, σ units (lesions: -1.25 ×)
    tubes: int = 4
    tube_radius: float = 1.0             # mm
    lesions: int = 4
    distractors: int = 3
    train_angle: float = 5.0             # degrees: training tubes within ± this of the x axis
    test_angle: float = 25.0             # degrees: test tubes at ±(this ± 5)
    test_gamma: float = 1.4              # test gamma γ or 1/γ
    test_noise: float = 1.3              # test white noise factor
    test_blur: float = 0.9               # test PSF (voxels, in-plane)


def _rotation_angle(rng, k: Knobs, test: bool) -> float:
    if test:
        return math.radians(rng.choice([-1, 1]) * (k.test_angle + rng.uniform(-5, 5)))
    return math.radians(rng.uniform(-k.train_angle, k.train_angle))


def make_case(seed: int, k: Knobs, test: bool = False):
    """One case: (image float32 (z, y, x), labels uint8 (z, y, x), parameters drawn). Deterministic in seed."""
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in k.shape)
    sz, sy, sx = k.spacing
    z, y, x = np.meshgrid(*(np.arange(n, dtype=np.float32) * s for n, s in zip(shape, k.spacing)), indexing="ij")
    extent = [n * s for n, s in zip(shape, k.spacing)]
    seg = np.zeros(shape, np.uint8)
    signal = np.zeros(shape, np.float32)

    theta = _rotation_angle(rng, k, test)
    # tube coordinates: u along the direction, v across it (in-plane), through the in-plane centre
    cy, cx = extent[1] / 2, extent[2] / 2
    u = (x - cx) * math.cos(theta) + (y - cy) * math.sin(theta)
    v = -(x - cx) * math.sin(theta) + (y - cy) * math.cos(theta)
    for _ in range(k.tubes):
        v0 = rng.uniform(-0.35, 0.35) * extent[1]
        z0 = rng.uniform(0.25, 0.75) * extent[0]
        amp_v, amp_z = rng.uniform(2, 6), rng.uniform(1, 4)  # mm
        lam_v, lam_z = rng.uniform(25, 60), rng.uniform(30, 80)
        ph_v, ph_z = rng.uniform(0, 2 * math.pi, size=2)
        dv = v - (v0 + amp_v * np.sin(2 * math.pi * u / lam_v + ph_v))
        dz = z - (z0 + amp_z * np.sin(2 * math.pi * u / lam_z + ph_z))
        rz = max(k.tube_radius, 0.6 * sz)  # at least one slice thick: no gaps along an anisotropic tube
        tube = (dv / k.tube_radius) ** 2 + (dz / rz) ** 2 <= 1.0
        seg[tube] = LABELS["vessel"]
        signal[tube] = k.contrast

    def sphere(radius):
        c = [rng.uniform(0.15, 0.85) * e for e in extent]
        return (z - c[0]) ** 2 + (y - c[1]) ** 2 + (x - c[2]) ** 2 <= radius ** 2

    for _ in range(k.distractors):  # before the lesions: a lesion drawn over a distractor keeps its label
        blob = sphere(rng.uniform(1.5, 2.5)) & (seg == 0)
        signal[blob] = k.contrast
    for _ in range(k.lesions):
        blob = sphere(rng.uniform(1.5, 3.0))
        seg[blob] = LABELS["lesion"]
        signal[blob] = -1.25 * k.contrast

    psf = k.test_blur if test else k.psf
    sigma_vox = (psf * sy / sz / 3, psf, psf)  # z: the slice is thicker, the in-plane PSF barely reaches across
    texture = gaussian_filter(rng.standard_normal(shape).astype(np.float32), sigma=(1.5, 5, 5))
    texture *= k.texture / max(float(texture.std()), 1e-6)
    value = gaussian_filter(signal, sigma=sigma_vox) + texture
    value += rng.standard_normal(shape).astype(np.float32) * k.noise * (k.test_noise if test else 1.0)
    img = 100 + 20 * value
    params = {"theta_deg": round(math.degrees(theta), 2), "gamma": 1.0, "flips": [], "test": test}
    if test:
        lo, hi = float(img.min()), float(img.max())
        gamma = k.test_gamma if rng.random() < 0.5 else 1 / k.test_gamma
        img = lo + (hi - lo) * ((img - lo) / (hi - lo)) ** gamma
        img = img * 0.7 + 30
        params["gamma"] = round(gamma, 4)
        for axis in range(3):
            if rng.random() < 0.5:
                img, seg = np.flip(img, axis), np.flip(seg, axis)
                params["flips"].append(axis)
    return np.ascontiguousarray(img, dtype=np.float32), np.ascontiguousarray(seg), params


def _write(job) -> dict:
    import nibabel as nib

    folder, split, i, seed, knobs = job
    k = Knobs(**knobs)
    img, seg, params = make_case(seed, k, test=split == "Ts")
    # nibabel arrays are (x, y, z): NibabelIO transposes them to nnU-Net's (z, y, x) and reverses the zooms
    affine = np.diag([k.spacing[2], k.spacing[1], k.spacing[0], 1.0])
    name = f"case_{i:03d}"
    nib.save(nib.Nifti1Image(img.transpose(2, 1, 0), affine), folder / f"images{split}" / f"{name}_0000.nii")
    nib.save(nib.Nifti1Image(seg.transpose(2, 1, 0), affine), folder / f"labels{split}" / f"{name}.nii")
    return dict(case=name, split=split, seed=seed, **params)


def write_raw(raw: Path, train: int, test: int, knobs: Knobs, processes: int, seed: int = 0) -> tuple[Path, list]:
    """Raw nnU-Net dataset: imagesTr/labelsTr (``train`` cases), imagesTs/labelsTs (``test`` shifted cases)."""
    ds = raw / DATASET_NAME
    for sub in ("imagesTr", "labelsTr", "imagesTs", "labelsTs"):
        (ds / sub).mkdir(parents=True, exist_ok=True)
    jobs = [(ds, "Tr", i, seed * 100003 + i, asdict(knobs)) for i in range(train)]
    jobs += [(ds, "Ts", train + i, seed * 100003 + 50000 + i, asdict(knobs)) for i in range(test)]
    with Pool(max(1, min(processes, len(jobs)))) as pool:
        cases = pool.map(_write, jobs)
    meta = {"channel_names": {"0": "MR"}, "labels": LABELS, "numTraining": train, "file_ending": ".nii",
            "overwrite_image_reader_writer": "NibabelIO"}
    (ds / "dataset.json").write_text(json.dumps(meta, indent=2))
    return ds, cases


def fit_patch(patch, strides) -> list:
    """``patch`` rounded up per axis to a multiple of the network's total stride (product of its strides)."""
    total = np.prod(np.array(strides, dtype=np.int64), axis=0)
    return [int(math.ceil(p / t) * t) for p, t in zip(patch, total)]


def adjust_plans(plans_file: Path, patch=None, batch=0, shrink=False) -> dict:
    plans = json.loads(plans_file.read_text())
    cfg = plans["configurations"]["3d_fullres"]
    if patch:
        cfg["patch_size"] = fit_patch(patch, cfg["architecture"]["arch_kwargs"]["strides"])
    if batch:
        cfg["batch_size"] = int(batch)
    if shrink:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "client" / "python" / "src"))
        from augmentd.nnunet.timing import shrink_network

        plans = shrink_network(plans, "3d_fullres")
    plans_file.write_text(json.dumps(plans, indent=2))
    return plans["configurations"]["3d_fullres"]


def _ints(text: str) -> list:
    return [int(v) for v in text.split(",") if v]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--train", type=int, default=24, help="training cases (5-fold split: fold 0 trains on 4/5)")
    p.add_argument("--test", type=int, default=8, help="held-out test cases (shifted acquisition)")
    p.add_argument("--np", type=int, default=os.cpu_count(), help="processes for writing and preprocessing")
    p.add_argument("--patch", default="", help="3d_fullres patch size (z,y,x), rounded up to the network's stride")
    p.add_argument("--batch", type=int, default=0, help="3d_fullres batch size (0: nnU-Net's plan)")
    p.add_argument("--shrink-network", action="store_true", help="narrow network (CPU dry runs)")
    p.add_argument("--seed", type=int, default=0)
    defaults = Knobs()
    for field, value in asdict(defaults).items():
        flag = "--" + field.replace("_", "-")
        if isinstance(value, tuple):
            p.add_argument(flag, default=",".join(map(str, value)), help=f"z,y,x (default {value})")
        else:
            p.add_argument(flag, type=type(value), default=value, help=f"default {value}")
    args = p.parse_args(argv)
    knobs = Knobs(**{f: tuple(float(v) if f == "spacing" else int(v) for v in getattr(args, f).split(","))
                     if isinstance(d, tuple) else getattr(args, f) for f, d in asdict(defaults).items()})
    if len(knobs.shape) != 3 or len(knobs.spacing) != 3 or min(knobs.shape) < 8:
        p.error(f"--shape {knobs.shape} / --spacing {knobs.spacing}: three values, every edge ≥ 8 voxels")

    work = args.work.resolve()
    raw, pre, res = work / "raw", work / "preprocessed", work / "results"
    for d in (raw, pre, res):
        d.mkdir(parents=True, exist_ok=True)
    os.environ.update(nnUNet_raw=str(raw), nnUNet_preprocessed=str(pre), nnUNet_results=str(res))
    params = {"train": args.train, "test": args.test, "patch": args.patch, "batch": args.batch,
              "shrink": args.shrink_network, "seed": args.seed, "knobs": asdict(knobs)}
    params = json.loads(json.dumps(params))  # tuples as lists, as read back
    stamp = work / "quality-dataset.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("params") == params:
        print(stamp.read_text().strip(), flush=True)
        return 0

    t0 = time.monotonic()
    ds, cases = write_raw(raw, args.train, args.test, knobs, args.np, args.seed)
    (ds / "cases.json").write_text(json.dumps(cases, indent=1))
    from nnunetv2.experiment_planning.plan_and_preprocess_entrypoints import plan_and_preprocess_entry

    sys.argv = ["nnUNetv2_plan_and_preprocess", "-d", str(DATASET_ID), "-c", "3d_fullres",
                "-np", str(args.np), "-npfp", str(args.np)]
    plan_and_preprocess_entry()
    out = pre / DATASET_NAME
    cfg = adjust_plans(out / "nnUNetPlans.json", _ints(args.patch), args.batch, args.shrink_network)

    from nnunetv2.utilities.crossval_split import generate_crossval_split

    ids = sorted(f.name[:-len(".pkl")] for f in (out / "nnUNetPlans_3d_fullres").glob("*.pkl"))
    splits = generate_crossval_split(ids, seed=12345, n_splits=min(5, len(ids)))
    (out / "splits_final.json").write_text(json.dumps([{k: list(map(str, v)) for k, v in s.items()}
                                                       for s in splits], indent=2))
    result = {"params": params, "raw": str(ds), "preprocessed": str(out), "dataset_id": DATASET_ID,
              "train_cases": len(ids), "fold0_train": len(splits[0]["train"]), "fold0_val": len(splits[0]["val"]),
              "test_cases": args.test, "patch_size": cfg["patch_size"], "batch_size": cfg["batch_size"],
              "spacing": cfg["spacing"], "median_shape": cfg["median_image_size_in_voxels"],
              "seconds": round(time.monotonic() - t0, 1)}
    stamp.write_text(json.dumps(result))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

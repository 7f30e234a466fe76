"""Synthetic nnU-Net raw dataset for the end-to-end benchmark, planned and preprocessed by nnU-Net itself.

    python bench/e2e/make_dataset.py --work /tmp/e2e --cases 32 --shape 160 --np 16 [--patch 128,128,128]

1. writes ``--cases`` single-channel 3D cases (uncompressed NIfTI through nibabel; ``dataset.json`` names
   ``NibabelIO`` so nnU-Net never touches SimpleITK) into ``<work>/raw/Dataset<ID>_E2E``: an ellipsoid body
   of noisy tissue, zero outside, with two labelled blobs (sizes vary per case around ``--shape``³ voxels,
   1 mm isotropic);
2. runs nnU-Net's own ``plan_and_preprocess_entry`` (``nnUNetv2_plan_and_preprocess -c 3d_fullres``);
3. writes ``splits_final.json`` with nnU-Net's ``generate_crossval_split`` (so concurrent trainers never race
   to create it), and, with ``--patch``, sets the 3d_fullres patch size of the plans (keeping the planned
   network, whose strides divide the new size; checked);
4. prints one JSON line ``{"preprocessed": ..., "patch_size": ..., "batch_size": ..., "seconds": ...}``.

A finished dataset with the same parameters (``<work>/e2e-dataset.json``) is reused.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

DATASET_ID = 990
DATASET_NAME = f"Dataset{DATASET_ID:03d}_E2E"


def _case(args) -> None:
    import nibabel as nib

    out, i, base, seed = args
    rng = np.random.default_rng(seed + i)
    shape = tuple(int(base + d) for d in rng.integers(-base // 10, base // 10 + 1, size=3))
    idx = np.ogrid[tuple(slice(0, s) for s in shape)]
    r2 = sum(((ix - (s - 1) / 2) / (s / 2)) ** 2 for ix, s in zip(idx, shape))
    inside = r2 < 0.9
    img = rng.standard_normal(shape, dtype=np.float32) * 10 + 100
    img *= inside
    seg = np.zeros(shape, np.uint8)
    for label, radius in ((1, base // 8), (2, base // 14)):
        c = [rng.integers(s // 3, 2 * s // 3) for s in shape]
        blob = sum((ix - ci) ** 2 for ix, ci in zip(idx, c)) <= max(radius, 2) ** 2
        seg[blob & inside] = label
        img[blob & inside] += 40 * label
    nib.save(nib.Nifti1Image(img, np.eye(4)), out / "imagesTr" / f"case_{i:03d}_0000.nii")
    nib.save(nib.Nifti1Image(seg, np.eye(4)), out / "labelsTr" / f"case_{i:03d}.nii")


def write_raw(raw: Path, cases: int, shape: int, processes: int, seed: int = 0) -> Path:
    ds = raw / DATASET_NAME
    (ds / "imagesTr").mkdir(parents=True, exist_ok=True)
    (ds / "labelsTr").mkdir(parents=True, exist_ok=True)
    with Pool(max(1, min(processes, cases))) as pool:
        pool.map(_case, [(ds, i, shape, seed) for i in range(cases)])
    meta = {"channel_names": {"0": "MR"}, "labels": {"background": 0, "a": 1, "b": 2}, "numTraining": cases,
            "file_ending": ".nii", "overwrite_image_reader_writer": "NibabelIO"}
    (ds / "dataset.json").write_text(json.dumps(meta, indent=2))
    return ds


def set_patch_size(plans_file: Path, patch) -> None:
    plans = json.loads(plans_file.read_text())
    cfg = plans["configurations"]["3d_fullres"]
    strides = cfg["architecture"]["arch_kwargs"]["strides"]
    total = np.prod(np.array(strides, dtype=np.int64), axis=0)
    if any(p % t for p, t in zip(patch, total)):
        raise SystemExit(f"--patch {patch}: not divisible by the planned network's total stride {total.tolist()}")
    cfg["patch_size"] = [int(p) for p in patch]
    plans_file.write_text(json.dumps(plans, indent=2))


def add_cascade(out: Path, work: Path) -> None:
    """A cascade without training its first stage: the plans get ``3d_lowres`` (3d_fullres's network and data,
    next_stage 3d_cascade_fullres) and ``3d_cascade_fullres`` (inherits 3d_fullres, previous_stage 3d_lowres), and
    ``<work>/cascade_predictions/3d_cascade_fullres`` one previous-stage prediction per case: the ground truth with
    5 % of the voxels relabelled at random, written by nnU-Net's own nnUNetDatasetBlosc2.save_seg (what its final
    validation of 3d_lowres writes to predicted_next_stage). train_driver.py links nnU-Net's
    folder_with_segs_from_previous_stage of its trainer to it."""
    from nnunetv2.training.dataloading.nnunet_dataset import nnUNetDatasetBlosc2

    plans_file = out / "nnUNetPlans.json"
    plans = json.loads(plans_file.read_text())
    cfg = plans["configurations"]
    cfg["3d_lowres"] = dict(cfg["3d_fullres"], next_stage="3d_cascade_fullres")
    cfg["3d_cascade_fullres"] = {"inherits_from": "3d_fullres", "previous_stage": "3d_lowres"}
    plans_file.write_text(json.dumps(plans, indent=2))
    ds = nnUNetDatasetBlosc2(str(out / cfg["3d_fullres"]["data_identifier"]))
    labels = [int(v) for v in json.loads((out / "dataset.json").read_text())["labels"].values()]
    rng = np.random.default_rng(7)
    folder = work / "cascade_predictions" / "3d_cascade_fullres"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for k in ds.identifiers:
        _, seg, _, _ = ds.load_case(k)
        s = np.clip(np.asarray(seg[0]), 0, None).astype(np.uint8)
        flip = rng.random(s.shape) < 0.05
        s[flip] = rng.choice(labels, int(flip.sum())).astype(np.uint8)
        nnUNetDatasetBlosc2.save_seg(s, str(folder / k))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--cases", type=int, default=32)
    p.add_argument("--shape", type=int, default=160, help="mean edge length of a case, voxels")
    p.add_argument("--np", type=int, default=os.cpu_count(), help="processes for writing and preprocessing")
    p.add_argument("--patch", default="", help="3d_fullres patch size to set after planning, e.g. 128,128,128")
    p.add_argument("--configurations", default="3d_fullres",
                   help="configurations to preprocess (comma-separated, e.g. 3d_fullres,2d)")
    p.add_argument("--cascade", action="store_true",
                   help="also a 3d_lowres → 3d_cascade_fullres cascade in the plans, with the previous stage's "
                        "predictions faked (add_cascade)")
    args = p.parse_args(argv)

    work = args.work.resolve()
    raw, pre, res = work / "raw", work / "preprocessed", work / "results"
    for d in (raw, pre, res):
        d.mkdir(parents=True, exist_ok=True)
    os.environ.update(nnUNet_raw=str(raw), nnUNet_preprocessed=str(pre), nnUNet_results=str(res))
    configurations = [c for c in args.configurations.split(",") if c]
    params = {"cases": args.cases, "shape": args.shape, "patch": args.patch}
    if configurations != ["3d_fullres"] or args.cascade:  # the stamp of older caches stays valid
        params.update(configurations=configurations, cascade=args.cascade)
    stamp = work / "e2e-dataset.json"
    if stamp.exists() and json.loads(stamp.read_text()).get("params") == params:
        print(stamp.read_text().strip(), flush=True)
        return 0

    t0 = time.monotonic()
    write_raw(raw, args.cases, args.shape, args.np)
    t_raw = time.monotonic() - t0
    from nnunetv2.experiment_planning.plan_and_preprocess_entrypoints import plan_and_preprocess_entry

    sys.argv = ["nnUNetv2_plan_and_preprocess", "-d", str(DATASET_ID), "-c", *configurations,
                "-np", *[str(args.np)] * len(configurations), "-npfp", str(args.np)]
    plan_and_preprocess_entry()
    out = pre / DATASET_NAME
    if args.patch:
        set_patch_size(out / "nnUNetPlans.json", [int(v) for v in args.patch.split(",")])

    from nnunetv2.utilities.crossval_split import generate_crossval_split

    ids = sorted(f.name[:-len(".pkl")] for f in (out / "nnUNetPlans_3d_fullres").glob("*.pkl"))
    splits = generate_crossval_split(ids, seed=12345, n_splits=min(5, len(ids)))
    (out / "splits_final.json").write_text(json.dumps([{k: list(map(str, v)) for k, v in s.items()}
                                                       for s in splits], indent=2))
    if args.cascade:
        add_cascade(out, work)
    cfg = json.loads((out / "nnUNetPlans.json").read_text())["configurations"]["3d_fullres"]
    result = {"params": params, "preprocessed": str(out), "dataset_id": DATASET_ID, "cases": len(ids),
              "patch_size": cfg["patch_size"], "batch_size": cfg["batch_size"],
              "median_shape": cfg["median_image_size_in_voxels"], "raw_seconds": round(t_raw, 1),
              "seconds": round(time.monotonic() - t0, 1)}
    stamp.write_text(json.dumps(result))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

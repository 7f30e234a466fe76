"""Builds a tiny synthetic nnU-Net raw dataset and preprocesses it with the real ``nnUNetv2_plan_and_preprocess``.

Used by the dataset-mode parity tests (``test_sampler_parity.py``) and runnable on its own::

    python tests/python/dataset/synth_nnunet.py /tmp/nnunet_work

The raw dataset has ``NUM_CASES`` 3D cases (NIfTI via nibabel), one channel, labels {background, a, b}. Each
image is zero outside an ellipsoid (so the preprocessed segmentation holds −1 outside the non-zero mask) and
holds two blobs of different labels at random positions. Image sizes differ per case and are small, so
preprocessing takes a few seconds and the planned patch size is close to the image size (the training patch
`initial_patch_size` is then larger than some images, which exercises padding).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

DATASET_ID = 987
DATASET_NAME = f"Dataset{DATASET_ID:03d}_AugmentdSynth"
# Second dataset: region training (a region spanning labels 1 and 2, plus label 2) and an ignore label (3).
REGIONS_ID = 988
REGIONS_NAME = f"Dataset{REGIONS_ID:03d}_AugmentdRegions"
NUM_CASES = 6

LABELS = {"background": 0, "a": 1, "b": 2}
REGION_LABELS = {"background": 0, "ab": [1, 2], "b": 2, "ignore": 3}


def write_raw_dataset(raw_root: Path, seed: int = 0, num_cases: int = NUM_CASES, name: str = DATASET_NAME,
                      labels: dict = LABELS) -> Path:
    import nibabel as nib

    rng = np.random.RandomState(seed)
    ignore = labels.get("ignore")
    ds = raw_root / name
    (ds / "imagesTr").mkdir(parents=True, exist_ok=True)
    (ds / "labelsTr").mkdir(parents=True, exist_ok=True)
    for i in range(num_cases):
        shape = (36 + 4 * (i % 3), 40 + 3 * (i % 2), 44 + 2 * i)
        grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, s) for s in shape], indexing="ij"))
        inside = (grid ** 2).sum(0) < 0.95
        img = np.where(inside, 100 + 10 * rng.randn(*shape), 0).astype(np.float32)
        seg = np.zeros(shape, np.uint8)
        for label, radius in ((1, 5), (2, 3)):
            c = [rng.randint(s // 4, 3 * s // 4) for s in shape]
            idx = np.ogrid[tuple(slice(0, s) for s in shape)]
            blob = sum((ix - ci) ** 2 for ix, ci in zip(idx, c)) <= radius ** 2
            seg[blob & inside] = label
            img[blob & inside] += 60 * label
        if ignore is not None:  # mark everything but a central slab "not annotated"
            x0, x1 = shape[0] // 3, 2 * shape[0] // 3
            keep = np.zeros(shape, bool)
            keep[x0:x1] = True
            seg[~keep & (seg == 0)] = ignore
        affine = np.diag([1.0, 1.0, 1.0, 1.0])
        nib.save(nib.Nifti1Image(img, affine), ds / "imagesTr" / f"case_{i:03d}_0000.nii.gz")
        nib.save(nib.Nifti1Image(seg, affine), ds / "labelsTr" / f"case_{i:03d}.nii.gz")
    meta = {"channel_names": {"0": "MR"}, "labels": labels, "numTraining": num_cases, "file_ending": ".nii.gz"}
    if any(isinstance(v, list) for v in labels.values()):
        meta["regions_class_order"] = list(range(1, sum(1 for k, v in labels.items()
                                                        if k not in ("background", "ignore")) + 1))
    (ds / "dataset.json").write_text(json.dumps(meta, indent=2))
    return ds


def preprocess(work: Path) -> dict:
    """Writes both raw datasets under ``work/raw`` and runs nnU-Net's planning + 3d_fullres preprocessing
    (one ``nnUNetv2_plan_and_preprocess`` call for both).

    Returns {"labels": <preprocessed folder>, "regions": <preprocessed folder>}. Also writes
    ``splits_final.json`` with nnU-Net's own ``generate_crossval_split`` (normally created on the first
    training run).
    """
    raw, pre, res = work / "raw", work / "preprocessed", work / "results"
    for p in (raw, pre, res):
        p.mkdir(parents=True, exist_ok=True)
    write_raw_dataset(raw)
    write_raw_dataset(raw, seed=1, name=REGIONS_NAME, labels=REGION_LABELS)
    env = dict(os.environ, nnUNet_raw=str(raw), nnUNet_preprocessed=str(pre), nnUNet_results=str(res),
               OMP_NUM_THREADS="1")
    exe = Path(sys.executable).parent / "nnUNetv2_plan_and_preprocess"
    proc = subprocess.run([str(exe), "-d", str(DATASET_ID), str(REGIONS_ID), "-c", "3d_fullres", "--verify_dataset_integrity",
                    "-np", "1", "-npfp", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stdout.decode(errors="replace")[-4000:])
    from nnunetv2.utilities.crossval_split import generate_crossval_split

    result = {}
    for key, name in (("labels", DATASET_NAME), ("regions", REGIONS_NAME)):
        out = pre / name
        ids = sorted(p.name[:-len(".pkl")] for p in (out / "nnUNetPlans_3d_fullres").glob("*.pkl"))
        splits = generate_crossval_split(ids, seed=12345, n_splits=5)
        (out / "splits_final.json").write_text(json.dumps([{k: list(map(str, v)) for k, v in s.items()}
                                                           for s in splits], indent=2))
        result[key] = out
    return result


if __name__ == "__main__":
    print(preprocess(Path(sys.argv[1])))

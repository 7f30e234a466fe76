"""Fixtures for the dataset-mode parity tests.

* ``ad``: the ``augmentd_dataset`` C ABI wrapper; skips (naming the path searched) only when the library file
  does not exist — build it with ``ninja -C build-ds augment_dataset_capi``.
* ``nnunet_datasets``: a real nnU-Net preprocessed tree built once per session with
  ``nnUNetv2_plan_and_preprocess`` from synthetic raw data (see ``synth_nnunet.py``), plus copies of both
  datasets in nnU-Net's old formats: ``.npz`` archives (``np.savez_compressed``, seg as int8 like
  ``run_case_npy`` returned it) and the same with unpacked ``.npy`` files. Returns
  {(dataset, format): folder} for dataset in {"labels", "regions"} and format in {"b2nd", "npz", "npy"}.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import augmentd_dataset  # noqa: E402
import synth_nnunet  # noqa: E402


@pytest.fixture(scope="session")
def ad():
    path = augmentd_dataset.library_path()
    if not path.is_file():
        pytest.skip(f"dataset C ABI library not built: {path} does not exist "
                    f"(ninja -C build-ds augment_dataset_capi, or set AUGMENTD_DATASET_CAPI_LIB)")
    augmentd_dataset._load()
    return augmentd_dataset


def _write_old_format(src: Path, dst: Path, unpack: bool) -> None:
    import blosc2

    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("nnUNetPlans_3d_fullres", "gt_segmentations"))
    sd, dd = src / "nnUNetPlans_3d_fullres", dst / "nnUNetPlans_3d_fullres"
    dd.mkdir()
    for pkl in sorted(sd.glob("*.pkl")):
        cid = pkl.name[:-4]
        data = blosc2.open(str(sd / f"{cid}.b2nd"), mode="r")[:]
        seg = blosc2.open(str(sd / f"{cid}_seg.b2nd"), mode="r")[:]
        seg = seg.astype(np.int8) if seg.max() <= 127 else seg
        np.savez_compressed(dd / f"{cid}.npz", data=data, seg=seg)
        shutil.copy(pkl, dd / pkl.name)
        if unpack:  # what nnU-Net < 2.6 unpack_dataset wrote
            np.save(dd / f"{cid}.npy", data)
            np.save(dd / f"{cid}_seg.npy", seg)


@pytest.fixture(scope="session")
def nnunet_datasets(tmp_path_factory):
    work = tmp_path_factory.mktemp("nnunet")
    built = synth_nnunet.preprocess(work)
    out = {}
    for key, folder in built.items():
        out[(key, "b2nd")] = folder
        for fmt, unpack in (("npz", False), ("npy", True)):
            dst = work / f"preprocessed_{fmt}" / folder.name
            dst.parent.mkdir(exist_ok=True)
            _write_old_format(folder, dst, unpack)
            out[(key, fmt)] = dst
    return out

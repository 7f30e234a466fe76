"""Fixtures of the nnU-Net integration tests (tests/python/nnunet).

* ``nnunet_env`` (session): nnU-Net's three folders in a temporary directory with the synthetic datasets of
  ``synth_nnunet.preprocess`` (tests/python/dataset: labels Dataset987 and regions + ignore label Dataset988, the
  real ``nnUNetv2_plan_and_preprocess`` for 3d_fullres, splits_final.json), exported as ``nnUNet_raw`` /
  ``nnUNet_preprocessed`` / ``nnUNet_results`` for the session (and ``nnUNet_compile=false``).
  Returns a dict with ``work``, ``preprocessed`` (Dataset987's folder), ``regions`` (Dataset988's), ``results``,
  ``dataset_id``.
  ``$AUGMENTD_TEST_NNUNET_DATA`` names a folder to keep the preprocessed data in between runs (default: a new
  temporary folder per session).
* ``augmentd_bin`` (session): the server binary (``$AUGMENTD_BIN``, see ``augmentd_server.augmentd_bin``), also
  exported as ``AUGMENTD_BIN`` so that the trainer starts it as its local server.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from augmentd_server import augmentd_bin as _augmentd_bin  # tests/python (the package import set-up too)


@pytest.fixture(scope="session")
def augmentd_bin():
    path = _augmentd_bin()
    old = os.environ.get("AUGMENTD_BIN")
    os.environ["AUGMENTD_BIN"] = path
    yield path
    if old is None:
        os.environ.pop("AUGMENTD_BIN", None)
    else:
        os.environ["AUGMENTD_BIN"] = old


@pytest.fixture(scope="session")
def nnunet_env(tmp_path_factory):
    import synth_nnunet  # tests/python/dataset

    cached = os.environ.get("AUGMENTD_TEST_NNUNET_DATA")
    work = Path(cached) if cached else tmp_path_factory.mktemp("nnunet_train")
    names = {"labels": synth_nnunet.DATASET_NAME, "regions": synth_nnunet.REGIONS_NAME}
    if all((work / "preprocessed" / n / "splits_final.json").is_file() for n in names.values()):
        folders = {k: work / "preprocessed" / n for k, n in names.items()}
    else:
        folders = synth_nnunet.preprocess(work)
    env = {"nnUNet_raw": str(work / "raw"), "nnUNet_preprocessed": str(work / "preprocessed"),
           "nnUNet_results": str(work / "results"), "nnUNet_compile": "false"}  # no torch.compile on CPU tests
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield {"work": work, "preprocessed": folders["labels"], "regions": folders["regions"],
           "results": work / "results", "dataset_id": synth_nnunet.DATASET_ID}
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v

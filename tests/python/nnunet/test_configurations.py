"""nnU-Net configurations and plans through augmentd, with the real nnunetv2 and a real augmentd (CPU).

* ``2d`` and ``3d_lowres``: real trainings (``augmentd-nnunet-train`` = ``python -m augmentd.nnunet.train``, nnU-Net's
  own entry point) of a user trainer class from ``nnUNet_extTrainer`` (nnUNetTrainerNoMirroring with 1 epoch × 4
  iterations), served as ``<Trainer>__augmentd``, on plans ``augmentdTestPlans`` (-p: a plans identifier of its own
  with 2d and 3d_lowres configurations and a narrow network, preprocessed by nnUNetv2_preprocess): training, final
  validation, checkpoints that name the class itself (so inference is its own);
* ResEnc plans: a real 3d_fullres training on nnUNetPlannerResEncM's plans (ResidualEncoderUNet, narrowed);
  nnUNetResEncUNet{M,XL}Plans: the check command translates the trainers' pipelines for them.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nnunetv2")
import torch  # noqa: E402

from augmentd.nnunet.timing import shrink_network  # noqa: E402
from augmentd_server import client_env  # noqa: E402

PLANS = "augmentdTestPlans"
TRAINER = "nnUNetTrainerTinyRun"
TRAINER_SOURCE = '''import torch
from nnunetv2.training.nnUNetTrainer.variants.data_augmentation.nnUNetTrainerNoMirroring import \\
    nnUNetTrainerNoMirroring


class nnUNetTrainerTinyRun(nnUNetTrainerNoMirroring):
    def __init__(self, plans: dict, configuration: str, fold: int, dataset_json: dict,
                 device: torch.device = torch.device("cuda")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs, self.num_iterations_per_epoch, self.num_val_iterations_per_epoch = 1, 4, 2
'''


def _env(nnunet_env, ext: Path) -> dict:
    env = client_env()
    env.update({k: os.environ[k] for k in ("nnUNet_raw", "nnUNet_preprocessed", "nnUNet_results")},
               nnUNet_extTrainer=str(ext), OMP_NUM_THREADS="1", nnUNet_n_proc_DA="0")
    env.pop("AUGMENTD_ADDRESS", None)
    return env


@pytest.fixture(scope="module")
def test_plans(nnunet_env, tmp_path_factory):
    """Plans ``augmentdTestPlans``: nnU-Net's own 2d plan and a 3d_lowres (spacing 2, patch 24³) next to 3d_fullres,
    narrow networks; 2d and 3d_lowres preprocessed (kept with $AUGMENTD_TEST_NNUNET_DATA)."""
    pre = Path(nnunet_env["preprocessed"])
    ext = tmp_path_factory.mktemp("ext_trainers")
    (ext / "tiny_trainers.py").write_text(TRAINER_SOURCE)
    env = _env(nnunet_env, ext)
    if not all((pre / f"{PLANS}_{c}").is_dir() for c in ("2d", "3d_lowres")):
        plans = json.loads((pre / "nnUNetPlans.json").read_text())
        plans["plans_name"] = PLANS
        full = plans["configurations"]["3d_fullres"]
        low = copy.deepcopy(full)
        low.update(data_identifier=f"{PLANS}_3d_lowres", spacing=[2.0, 2.0, 2.0], patch_size=[24, 24, 24],
                   median_image_size_in_voxels=[23.5, 20.0, 19.0], batch_size=2)
        two_d = dict(plans["configurations"]["2d"], data_identifier=f"{PLANS}_2d", batch_size=4)
        full = dict(full, data_identifier=f"{PLANS}_3d_fullres")
        plans["configurations"] = {"2d": two_d, "3d_fullres": full, "3d_lowres": low}
        for c in plans["configurations"]:
            shrink_network(plans, c)
        (pre / f"{PLANS}.json").write_text(json.dumps(plans, indent=1))
        exe = Path(sys.executable).parent / "nnUNetv2_preprocess"
        out = subprocess.run([str(exe), "-d", str(nnunet_env["dataset_id"]), "-plans_name", PLANS, "-c", "2d",
                              "3d_lowres", "-np", "1", "1"], env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return {"env": env, "preprocessed": pre}


def _resenc_plans(nnunet_env, env) -> str:
    """``augmentdResEncPlans``: nnUNetPlannerResEncM's plans (ResidualEncoderUNet) with a narrow network (features
    ≤ 16, one block per stage). Same data identifier as nnUNetPlans: the 3d_fullres data is reused."""
    pre = Path(nnunet_env["preprocessed"])
    if not (pre / "nnUNetResEncUNetMPlans.json").is_file():
        exe = Path(sys.executable).parent / "nnUNetv2_plan_experiment"
        out = subprocess.run([str(exe), "-d", str(nnunet_env["dataset_id"]), "-pl", "nnUNetPlannerResEncM"],
                             env={k: v for k, v in env.items() if k != "nnUNet_n_proc_DA"}, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    plans = json.loads((pre / "nnUNetResEncUNetMPlans.json").read_text())
    plans["plans_name"] = "augmentdResEncPlans"
    plans["configurations"] = {"3d_fullres": plans["configurations"]["3d_fullres"]}
    arch = plans["configurations"]["3d_fullres"]["architecture"]
    assert arch["network_class_name"].endswith("ResidualEncoderUNet")
    n = arch["arch_kwargs"]["n_stages"]
    arch["arch_kwargs"].update(features_per_stage=[min(16, 4 * 2 ** i) for i in range(n)], n_blocks_per_stage=[1] * n,
                               n_conv_per_stage_decoder=[1] * (n - 1))
    (pre / "augmentdResEncPlans.json").write_text(json.dumps(plans, indent=1))
    return "augmentdResEncPlans"


@pytest.mark.parametrize("configuration, plans", [("2d", PLANS), ("3d_lowres", PLANS), ("3d_fullres", "resenc")])
def test_real_training_of_a_configuration_through_augmentd(nnunet_env, augmentd_bin, test_plans, configuration,
                                                           plans):
    env = dict(test_plans["env"], AUGMENTD_BIN=augmentd_bin)
    if plans == "resenc":
        plans = _resenc_plans(nnunet_env, env)
    cmd = [sys.executable, "-m", "augmentd.nnunet.train", str(nnunet_env["dataset_id"]), configuration, "0", "-tr",
           TRAINER, "-p", plans, "-device", "cpu"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    folder = Path(env["nnUNet_results"]) / nnunet_env["preprocessed"].name / f"{TRAINER}__{plans}__{configuration}"
    fold = folder / "fold_0"
    log = "\n".join(p.read_text() for p in fold.glob("training_log_*.txt"))
    assert f"{configuration} fold 0 train session" in log and "delivery DELIVERY_KIND_HOST_SHM" in log, log[-3000:]
    assert "augmentd: train pipeline of nnUNetTrainerTinyRun translated" in log and "mirror" not in \
        log.split("augmentd: train pipeline", 1)[1].split("\n", 1)[0]  # NoMirroring's own pipeline
    assert f"{configuration} fold 0 train: 8 batches" in log and "local server stopped (exit status 0)" in log
    ckpt = torch.load(fold / "checkpoint_final.pth", map_location="cpu", weights_only=False)
    assert ckpt["trainer_name"] == TRAINER  # the class's own name: nnUNetv2_predict -tr nnUNetTrainerTinyRun
    assert (fold / "validation" / "summary.json").is_file()  # nnU-Net's final validation ran (its own inference)
    patch = json.loads((test_plans["preprocessed"] / f"{plans}.json").read_text())["configurations"][configuration][
        "patch_size"]
    assert f"crop {patch}" in log  # the validation loader's unaugmented patch_size crops


@pytest.mark.parametrize("planner, plans_name", [("nnUNetPlannerResEncM", "nnUNetResEncUNetMPlans"),
                                                  ("nnUNetPlannerResEncXL", "nnUNetResEncUNetXLPlans")])
def test_resenc_plans_translate(nnunet_env, test_plans, planner, plans_name):
    env = {k: v for k, v in test_plans["env"].items() if k != "nnUNet_n_proc_DA"}  # the planner sets torch threads
    if not (test_plans["preprocessed"] / f"{plans_name}.json").is_file():
        exe = Path(sys.executable).parent / "nnUNetv2_plan_experiment"
        out = subprocess.run([str(exe), "-d", str(nnunet_env["dataset_id"]), "-pl", planner], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    plans = json.loads((test_plans["preprocessed"] / f"{plans_name}.json").read_text())
    assert "ResidualEncoderUNet" in plans["configurations"]["3d_fullres"]["architecture"]["network_class_name"]
    for trainer, preset in (("nnUNetTrainerDA5", "nnunet_da5"), ("nnUNetTrainer_DASegOrd0", None)):
        out = subprocess.run([sys.executable, "-m", "augmentd", "nnunet", "check", "-tr", trainer, "-d",
                              str(nnunet_env["dataset_id"]), "-p", plans_name], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"{trainer}: translated" in out.stdout
        assert (f"sent as preset {preset}" if preset else "sent as explicit list") in out.stdout, out.stdout


CASCADE_PLANS = "augmentdCascadePlans"


def _cascade_plans(nnunet_env, test_plans) -> str:
    """``augmentdCascadePlans``: augmentdTestPlans' 3d_lowres (next_stage 3d_cascade_fullres) and 3d_fullres on
    nnUNetPlans' preprocessed 3d_fullres data, plus ``3d_cascade_fullres`` (inherits 3d_fullres, previous_stage
    3d_lowres) — the layout nnUNetv2_plan_experiment writes for a cascade. Same data identifiers as those plans: no
    preprocessing of its own."""
    pre = test_plans["preprocessed"]
    plans = json.loads((pre / f"{PLANS}.json").read_text())
    plans["plans_name"] = CASCADE_PLANS
    cfg = plans["configurations"]
    cfg["3d_fullres"]["data_identifier"] = "nnUNetPlans_3d_fullres"
    cfg["3d_lowres"]["next_stage"] = "3d_cascade_fullres"
    cfg["3d_cascade_fullres"] = {"inherits_from": "3d_fullres", "previous_stage": "3d_lowres"}
    del cfg["2d"]
    (pre / f"{CASCADE_PLANS}.json").write_text(json.dumps(plans, indent=1))
    return CASCADE_PLANS


def _fake_lowres_predictions(nnunet_env, plans: str) -> Path:
    """The previous stage's output as nnU-Net's final validation of 3d_lowres writes it (predicted_next_stage/
    3d_cascade_fullres/<id>.b2nd, uint8 labels at the 3d_fullres data's shape, written by nnU-Net's own
    nnUNetDatasetBlosc2.save_seg): the ground truth with 5 % of the voxels relabelled at random, so it is a plausible
    but imperfect prediction."""
    import numpy as np
    from nnunetv2.training.dataloading.nnunet_dataset import nnUNetDatasetBlosc2

    pre = Path(nnunet_env["preprocessed"])
    out = Path(nnunet_env["results"]) / pre.name / f"{TRAINER}__{plans}__3d_lowres" / "predicted_next_stage" / \
        "3d_cascade_fullres"
    out.mkdir(parents=True, exist_ok=True)
    ds = nnUNetDatasetBlosc2(str(pre / "nnUNetPlans_3d_fullres"))
    rng = np.random.default_rng(7)
    labels = [int(v) for v in json.loads((pre / "dataset.json").read_text())["labels"].values() if int(v) >= 0]
    for k in ds.identifiers:
        _, seg, _, _ = ds.load_case(k)
        s = np.clip(np.asarray(seg[0]), 0, None).astype(np.uint8)
        flip = rng.random(s.shape) < 0.05
        s[flip] = rng.choice(labels, int(flip.sum())).astype(np.uint8)
        nnUNetDatasetBlosc2.save_seg(s, str(out / k))
    return out


def test_real_cascade_training_through_augmentd(nnunet_env, augmentd_bin, test_plans):
    """3d_cascade_fullres: the server reads the previous stage's predictions (dataset mode's
    previous_stage_segs_path, nnU-Net's folder_with_segs_from_previous_stage) as seg channel 1 and runs the
    translated cascade pipeline (move_seg_as_one_hot_to_data, apply_random_binary_operator,
    remove_random_connected_component): the network gets C + K input channels; nnU-Net's own final validation of
    the cascade (which reads the same folder) runs."""
    env = dict(test_plans["env"], AUGMENTD_BIN=augmentd_bin)
    plans = _cascade_plans(nnunet_env, test_plans)
    prev = _fake_lowres_predictions(nnunet_env, plans)
    cmd = [sys.executable, "-m", "augmentd.nnunet.train", str(nnunet_env["dataset_id"]), "3d_cascade_fullres", "0",
           "-tr", TRAINER, "-p", plans, "-device", "cpu"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    folder = Path(env["nnUNet_results"]) / nnunet_env["preprocessed"].name / f"{TRAINER}__{plans}__3d_cascade_fullres"
    fold = folder / "fold_0"
    log = "\n".join(p.read_text() for p in fold.glob("training_log_*.txt"))
    line = log.split("augmentd: train pipeline", 1)[1].split("\n", 1)[0]
    for kind in ("move_seg_as_one_hot_to_data", "apply_random_binary_operator", "remove_random_connected_component"):
        assert kind in line, line
    assert "3d_cascade_fullres fold 0 train: 8 batches" in log and "local server stopped (exit status 0)" in log
    ckpt = torch.load(fold / "checkpoint_final.pth", map_location="cpu", weights_only=False)
    assert ckpt["trainer_name"] == TRAINER
    dataset_json = json.loads((nnunet_env["preprocessed"] / "dataset.json").read_text())
    n_fg = len([v for v in dataset_json["labels"].values() if int(v) > 0])
    first = next(v for k, v in ckpt["network_weights"].items() if k.endswith("weight") and v.dim() == 5)
    assert first.shape[1] == len(dataset_json["channel_names"]) + n_fg  # image channels + the one-hot prediction
    assert (fold / "validation" / "summary.json").is_file()
    assert any(prev.iterdir())

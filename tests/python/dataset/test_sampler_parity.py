"""augmentd's dataset mode (C++ readers + sampler, through the C ABI) against nnU-Net 2.8.1's own data loader,
on a real preprocessed dataset built by ``nnUNetv2_plan_and_preprocess`` (fixture ``nnunet_datasets``), in the
current ``.b2nd`` format and the old ``.npz`` / unpacked ``.npy`` formats.

What is compared:
* get_bbox bounds — exactly: nnU-Net's ``np.random.randint(lb, ub + 1)`` arguments are captured and compared with
  augmentd's bounds, for training (initial_patch_size) and validation (patch_size) loaders;
* forced-foreground boxes follow nnU-Net's rule (lower = max(lb, voxel − patch//2)) on both sides;
* the oversampling slot rule for B = 1..24, and the foreground fraction per batch position (statistically);
* crop contents and padding (0 for data, −1 for seg) — exactly, against ``acvl_utils.crop_and_pad_nd`` on the
  arrays nnU-Net's dataset class loads;
* foreground locations: same keys and counts as the ``class_locations`` in nnU-Net's ``.pkl`` files;
* bad input (missing folder, wrong configuration, corrupt file, path escapes).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest

FORMATS = ["b2nd", "npz", "npy"]
CFG = "3d_fullres"


# ---- nnU-Net side ----------------------------------------------------------------------------------------------

def _plans(folder: Path):
    from nnunetv2.utilities.plans_handling.plans_handler import PlansManager

    pm = PlansManager(str(folder / "nnUNetPlans.json"))
    cm = pm.get_configuration(CFG)
    lm = pm.get_label_manager(json.loads((folder / "dataset.json").read_text()))
    return pm, cm, lm


def _initial_patch_size(patch_size):
    """What nnUNetTrainer computes (its own method, called on a stub trainer)."""
    from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer

    stub = SimpleNamespace(configuration_manager=SimpleNamespace(patch_size=list(patch_size)),
                           print_to_log_file=lambda *a, **k: None)
    _, _, ips, _ = nnUNetTrainer.configure_rotation_dummyDA_mirroring_and_inital_patch_size(stub)
    return [int(i) for i in ips]


def _nnunet_loader(folder: Path, ids, split: str, batch_size: int):
    from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader
    from nnunetv2.training.dataloading.nnunet_dataset import infer_dataset_class

    _, cm, lm = _plans(folder)
    data_folder = str(folder / cm.data_identifier)
    ds = infer_dataset_class(data_folder)(data_folder, identifiers=list(ids))
    patch = _initial_patch_size(cm.patch_size) if split == "train" else list(cm.patch_size)
    return nnUNetDataLoader(ds, batch_size, patch, cm.patch_size, lm, oversample_foreground_percent=0.33,
                            transforms=None)


def _fold0(folder: Path):
    s = json.loads((folder / "splits_final.json").read_text())[0]
    return sorted(s["train"]), sorted(s["val"])


def _dataset(folder: Path, **kw):
    return {"dir": str(folder), "configuration": CFG, **kw}


def _fg(seg: np.ndarray, labels) -> bool:
    return bool(np.isin(seg, labels).any())


def _fg_labels(lm):
    return [l for l in lm.all_labels if l > 0]


# ---- tests ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["labels", "regions"])
def test_info_matches_plans_and_trainer(ad, nnunet_datasets, which):
    folder = nnunet_datasets[(which, "b2nd")]
    _, cm, lm = _plans(folder)
    info, _ = ad.call({"op": "info", "dataset": _dataset(folder)})
    assert info["format"] == "b2nd"
    assert info["patch_size"] == list(cm.patch_size)
    assert info["batch_size"] == cm.batch_size
    assert info["initial_patch_size"] == _initial_patch_size(cm.patch_size)
    assert info["all_labels"] == list(lm.all_labels)
    assert info["has_regions"] == lm.has_regions
    assert info["ignore_label"] == lm.ignore_label
    scales = [list(map(float, s)) for s in 1 / np.cumprod(np.vstack(cm.pool_op_kernel_sizes), axis=0)][:-1]
    assert info["ds_scales"] == scales
    assert info["case_ids"] == sorted(p.name[:-4] for p in (folder / cm.data_identifier).glob("*.pkl"))
    for fmt in ("npz", "npy"):
        other, _ = ad.call({"op": "info", "dataset": _dataset(nnunet_datasets[(which, fmt)])})
        assert other["format"] == "numpy" and other["case_ids"] == info["case_ids"]


def test_forced_slot_rule_matches_nnunet(ad):
    from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader

    for b in range(1, 25):
        stub = SimpleNamespace(batch_size=b, oversample_foreground_percent=0.33)
        want = [bool(nnUNetDataLoader._oversample_last_XX_percent(stub, j)) for j in range(b)]
        got, _ = ad.call({"op": "forced_slots", "batch_size": b, "oversample_foreground_percent": 0.33})
        assert got["forced"] == want, b


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("split", ["train", "val"])
def test_box_bounds_equal_nnunet_get_bbox(ad, nnunet_datasets, fmt, split):
    """Capture nnU-Net's randint(lb, ub + 1) for every case and compare with augmentd's bounds."""
    import nnunetv2.training.dataloading.data_loader as dlmod

    folder = nnunet_datasets[("labels", fmt)]
    train, val = _fold0(folder)
    ids = train if split == "train" else val
    dl = _nnunet_loader(folder, ids, split, 2)
    # augmentd's boxes for the same split: every random (non-forced) lower corner must lie in the bounds, and
    # over many batches reach both ends.
    got_lbs = {}
    for bi in range(300):
        meta, _ = ad.call({"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "split": split,
                           "seed": 3, "batch_index": bi, "plan_only": True})
        assert meta["patch_size"] == list(dl.patch_size)
        assert meta["need_to_pad"] == [int(x) for x in dl.need_to_pad]
        for s in meta["samples"]:
            assert [u - l for l, u in zip(s["lb"], s["ub"])] == list(dl.patch_size)
            if not s["force_fg"]:
                got_lbs.setdefault(s["case_id"], []).append(s["lb"])
    for cid in ids:
        data, seg, _, props = dl._data.load_case(cid)
        shape = data.shape[1:]
        calls = []
        real = np.random.randint

        def capture(lo, hi, *a, **k):
            calls.append((int(lo), int(hi) - 1))
            return real(lo, hi, *a, **k)

        with mock.patch.object(dlmod.np.random, "randint", side_effect=capture):
            lbs, ubs = dl.get_bbox(shape, False, props["class_locations"])
        want_lb, want_ub = [c[0] for c in calls], [c[1] for c in calls]
        ours, _ = ad.call({"op": "box_range", "shape": list(shape), "patch_size": list(dl.patch_size),
                           "need_to_pad": [int(x) for x in dl.need_to_pad]})
        assert ours["lb"] == want_lb and ours["ub"] == want_ub, cid
        if cid in got_lbs:
            arr = np.array(got_lbs[cid])
            assert (arr >= np.array(want_lb)).all() and (arr <= np.array(want_ub)).all(), cid
            if len(arr) > 60:  # enough draws to hit both ends of small ranges
                small = np.array(want_ub) - np.array(want_lb) <= 3
                assert (arr.min(0)[small] == np.array(want_lb)[small]).all()
                assert (arr.max(0)[small] == np.array(want_ub)[small]).all()


@pytest.mark.parametrize("which", ["labels", "regions"])
def test_forced_boxes_follow_nnunet_rule(ad, nnunet_datasets, which):
    folder = nnunet_datasets[(which, "b2nd")]
    train, _ = _fold0(folder)
    dl = _nnunet_loader(folder, train, "train", 2)
    half = np.array(dl.patch_size) // 2
    locs = {}
    nnunet_keys, our_keys = set(), set()
    for bi in range(80):
        meta, _ = ad.call({"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "seed": 5,
                           "batch_index": bi, "plan_only": True})
        s = meta["samples"][1]  # B=2: slot 1 is forced
        assert s["force_fg"] and s["key"] is not None
        our_keys.add(s["key"])
        if s["case_id"] not in locs:
            locs[s["case_id"]] = ad.call({"op": "class_locations", "dataset": _dataset(folder),
                                          "case_id": s["case_id"]})
        km, kt = locs[s["case_id"]]
        idx = [k["name"] for k in km["keys"]].index(s["key"])
        rng = ad.call({"op": "box_range", "shape": s["case_shape"][1:], "patch_size": meta["patch_size"],
                       "need_to_pad": meta["need_to_pad"]})[0]
        cand = np.maximum(np.array(rng["lb"]), kt[f"key{idx}"] - half)
        assert (cand == np.array(s["lb"])).all(1).any(), s
    # nnU-Net's forced boxes obey the same rule with its pickled locations, and pick the same kind of keys.
    for cid in train:
        data, _, _, props = dl._data.load_case(cid)
        for _ in range(20):
            lbs, _ = dl.get_bbox(data.shape[1:], True, props["class_locations"])
            ok = False
            for k, v in props["class_locations"].items():
                if len(v):
                    need = np.maximum(dl.need_to_pad, np.array(dl.patch_size) - np.array(data.shape[1:]))
                    cand = np.maximum((-need) // 2, v[:, 1:] - half)
                    ok |= bool((cand == np.array(lbs)).all(1).any())
            assert ok
        nnunet_keys |= {str(k) for k, v in props["class_locations"].items() if len(v)}
    annotated = [k for k in nnunet_keys if k.startswith("(-1")]
    assert our_keys <= nnunet_keys - set(annotated)  # the annotated key is never used when others exist


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # raised inside nnU-Net's loader
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("which", ["labels", "regions"])
def test_foreground_fraction_per_position(ad, nnunet_datasets, fmt, which):
    """B=5 (slots 3, 4 forced). The planned patch covers these small images whole, so both loaders sample
    20³ boxes (final 14³) here — overridden identically on both sides — to make random patches miss the
    foreground often enough for the comparison to mean something."""
    from nnunetv2.training.dataloading.data_loader import nnUNetDataLoader
    from nnunetv2.training.dataloading.nnunet_dataset import infer_dataset_class

    folder = nnunet_datasets[(which, fmt)]
    train, _ = _fold0(folder)
    _, cm, lm = _plans(folder)
    fg_labels = [l for l in _fg_labels(lm) if l != lm.ignore_label]
    b, n, patch, final = 5, 240, [20, 20, 20], [14, 14, 14]
    data_folder = str(folder / cm.data_identifier)
    dl = nnUNetDataLoader(infer_dataset_class(data_folder)(data_folder, identifiers=list(train)), b, patch, final,
                          lm, oversample_foreground_percent=0.33, transforms=None)
    np.random.seed(1234)
    theirs = np.zeros((n, b), bool)
    their_cases = {}
    for i in range(n):
        batch = dl.generate_train_batch()
        for j in range(b):
            theirs[i, j] = _fg(batch["target"][j].numpy(), fg_labels)
            their_cases[batch["keys"][j]] = their_cases.get(batch["keys"][j], 0) + 1
    ours = np.zeros((n, b), bool)
    our_cases = {}
    for i in range(n):
        meta, t = ad.call({"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "seed": 77,
                           "batch_index": i, "batch_size": b, "patch_size": patch, "final_patch_size": final})
        assert [s["force_fg"] for s in meta["samples"]] == [False, False, False, True, True]
        for j in range(b):
            ours[i, j] = _fg(t["seg"][j], fg_labels)
            cid = meta["samples"][j]["case_id"]
            our_cases[cid] = our_cases.get(cid, 0) + 1
    ft, fo = theirs.mean(0), ours.mean(0)
    # Forced slots always hold foreground, on both sides.
    assert (ft[3:] == 1).all() and (fo[3:] == 1).all(), (ft, fo)
    # Random slots: same foreground probability (per slot and pooled), and it is not trivially 1.
    assert ft[:3].mean() < 0.97 and fo[:3].mean() < 0.97, (ft, fo)
    for a, c, m in [(ft[j], fo[j], n) for j in range(3)] + [(ft[:3].mean(), fo[:3].mean(), 3 * n)]:
        p = (a + c) / 2
        assert abs(a - c) <= 4.5 * np.sqrt(max(2 * p * (1 - p) / m, 1e-4)), (ft, fo)
    # Uniform case choice with replacement on both sides.
    for cases in (their_cases, our_cases):
        assert set(cases) == set(train)
        expect = n * b / len(train)
        assert all(abs(c - expect) < 5 * np.sqrt(expect) for c in cases.values()), cases


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("split", ["train", "val"])
def test_crops_equal_crop_and_pad_nd(ad, nnunet_datasets, fmt, split):
    from acvl_utils.cropping_and_padding.bounding_boxes import crop_and_pad_nd

    folder = nnunet_datasets[("labels", fmt)]
    train, val = _fold0(folder)
    dl = _nnunet_loader(folder, train if split == "train" else val, split, 2)
    padded_seg = padded_data = 0
    for bi in range(12):
        meta, t = ad.call({"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "split": split,
                           "seed": 9, "batch_index": bi})
        assert t["data"].dtype == np.float32 and t["seg"].dtype == np.int16
        assert list(t["data"].shape[2:]) == list(dl.patch_size)
        for j, s in enumerate(meta["samples"]):
            data, seg, _, _ = dl._data.load_case(s["case_id"])
            bbox = [[l, u] for l, u in zip(s["lb"], s["ub"])]
            want_d = crop_and_pad_nd(data, bbox, 0).astype(np.float32)
            want_s = crop_and_pad_nd(seg, bbox, -1, cast_cropped_to=np.int16).astype(np.int16)
            np.testing.assert_array_equal(t["data"][j], want_d)
            np.testing.assert_array_equal(t["seg"][j], want_s)
            shape = data.shape[1:]
            coords = np.ogrid[tuple(slice(l, u) for l, u in zip(s["lb"], s["ub"]))]
            outside = np.zeros(t["seg"][j].shape[1:], bool)
            for d, c in enumerate(coords):
                outside |= (c < 0) | (c >= shape[d])
            assert (t["seg"][j][:, outside] == -1).all() and (t["data"][j][:, outside] == 0).all()
            padded_seg += int(outside.sum())
            padded_data += int(outside.sum())
    if split == "train":  # initial_patch_size exceeds these small images: padding must have been exercised
        assert padded_seg > 0 and padded_data > 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("which", ["labels", "regions"])
def test_class_locations_match_pkl(ad, nnunet_datasets, fmt, which):
    import pickle

    folder = nnunet_datasets[(which, fmt)]
    data_dir = folder / "nnUNetPlans_3d_fullres"
    ids = sorted(p.name[:-4] for p in data_dir.glob("*.pkl"))
    _, cm, _ = _plans(folder)
    dl = _nnunet_loader(folder, ids, "val", 2)
    for cid in ids:
        props = pickle.loads((data_dir / f"{cid}.pkl").read_bytes())
        meta, t = ad.call({"op": "class_locations", "dataset": _dataset(folder), "case_id": cid})
        names = [k["name"] for k in meta["keys"]]
        assert names == [str(k) for k in props["class_locations"].keys()]
        _, seg, _, _ = dl._data.load_case(cid)
        seg = np.asarray(seg[:])
        for i, (k, v) in enumerate(props["class_locations"].items()):
            ours = t[f"key{i}"]
            assert len(ours) == len(v), (cid, k)
            if len(ours):
                labels = meta["keys"][i]["labels"]
                assert np.isin(seg[0][tuple(ours.T)], labels).all()
                assert len({tuple(r) for r in ours}) == len(ours)  # without replacement


def test_ignore_label_centres_unforced_boxes(ad, nnunet_datasets):
    """With an ignore label, nnU-Net centres unforced boxes on the annotated key (-1, *all_labels) instead of
    drawing them with randint; augmentd does the same."""
    import nnunetv2.training.dataloading.data_loader as dlmod

    folder = nnunet_datasets[("regions", "b2nd")]
    train, _ = _fold0(folder)
    dl = _nnunet_loader(folder, train, "train", 2)
    data, _, _, props = dl._data.load_case(train[0])
    with mock.patch.object(dlmod.np.random, "randint", side_effect=AssertionError("randint used")):
        dl.get_bbox(data.shape[1:], False, props["class_locations"])
    half = np.array(dl.patch_size) // 2
    for bi in range(30):
        meta, _ = ad.call({"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "seed": 2,
                           "batch_index": bi, "plan_only": True})
        s = meta["samples"][0]
        assert not s["force_fg"] and s["key"] == "(-1, 0, 1, 2)"
        km, kt = ad.call({"op": "class_locations", "dataset": _dataset(folder), "case_id": s["case_id"]})
        idx = [k["name"] for k in km["keys"]].index(s["key"])
        rng = ad.call({"op": "box_range", "shape": s["case_shape"][1:], "patch_size": meta["patch_size"],
                       "need_to_pad": meta["need_to_pad"]})[0]
        assert (np.maximum(np.array(rng["lb"]), kt[f"key{idx}"] - half) == np.array(s["lb"])).all(1).any()


def test_same_batches_from_every_format(ad, nnunet_datasets):
    """The sampler depends only on (seed, batch index) and the array contents, not on the file format."""
    reqs = {fmt: {"op": "sample_batch", "dataset": _dataset(nnunet_datasets[("labels", fmt)]), "fold": 0,
                  "seed": 4, "batch_index": 11} for fmt in FORMATS}
    out = {fmt: ad.call(r) for fmt, r in reqs.items()}
    for fmt in ("npz", "npy"):
        assert out[fmt][0]["samples"] == out["b2nd"][0]["samples"]
        np.testing.assert_array_equal(out[fmt][1]["data"], out["b2nd"][1]["data"])
        np.testing.assert_array_equal(out[fmt][1]["seg"], out["b2nd"][1]["seg"])


def test_determinism(ad, nnunet_datasets):
    folder = nnunet_datasets[("labels", "b2nd")]
    req = {"op": "sample_batch", "dataset": _dataset(folder), "fold": 0, "seed": 42, "batch_index": 7}
    m1, t1 = ad.call(req)
    m2, t2 = ad.call(req)
    assert m1["samples"] == m2["samples"]
    np.testing.assert_array_equal(t1["data"], t2["data"])
    np.testing.assert_array_equal(t1["seg"], t2["seg"])
    m3, _ = ad.call({**req, "batch_index": 8})
    m4, _ = ad.call({**req, "seed": 43})
    assert m3["samples"] != m1["samples"] and m4["samples"] != m1["samples"]


def test_reads_python_written_b2nd_variants(ad, tmp_path):
    """ZSTD/clevel 8/SHUFFLE with chunks spanning all channels (nnU-Net 2.6–2.7) and LZ4HC/NOFILTER (2.8)."""
    import blosc2

    rng = np.random.RandomState(0)
    data = rng.randn(2, 23, 17, 29).astype(np.float32)
    for name, cparams, chunks, blocks in (
            ("zstd", {"codec": blosc2.Codec.ZSTD, "clevel": 8, "filters": [blosc2.Filter.SHUFFLE]},
             (2, 12, 9, 15), (2, 4, 3, 5)),
            ("lz4hc", {"codec": blosc2.Codec.LZ4HC, "clevel": 5, "filters": [blosc2.Filter.NOFILTER]},
             (1, 16, 8, 16), (1, 8, 4, 8))):
        path = tmp_path / f"{name}.b2nd"
        blosc2.asarray(np.ascontiguousarray(data), urlpath=str(path), chunks=chunks, blocks=blocks,
                       cparams=cparams, mode="w")
        for lb, ub in (([0, 0, 0], [23, 17, 29]), ([-5, 3, 20], [10, 25, 40]), ([22, -9, -1], [30, 1, 2])):
            meta, t = ad.call({"op": "read_box", "path": str(path), "lb": lb, "ub": ub, "pad_value": -3.5})
            from acvl_utils.cropping_and_padding.bounding_boxes import crop_and_pad_nd

            want = crop_and_pad_nd(data, [[l, u] for l, u in zip(lb, ub)], -3.5)
            np.testing.assert_array_equal(t["box"], want)
            assert meta["array_shape"] == list(data.shape)


def test_bad_input(ad, nnunet_datasets, tmp_path):
    folder = nnunet_datasets[("labels", "b2nd")]
    root = folder.parent

    def code(req):
        with pytest.raises(ad.DatasetError) as e:
            ad.call(req)
        return e.value.code, e.value.message

    c, m = code({"op": "info", "dataset": _dataset(root / "Dataset999_Nope")})
    assert c == "NOT_FOUND" and "Dataset999_Nope" in m
    c, m = code({"op": "info", "dataset": _dataset(folder, configuration="3d_lowres")})
    assert c == "NOT_FOUND" and "3d_fullres" in m
    c, _ = code({"op": "info", "dataset": _dataset(folder, plans="nnUNetResEncUNetMPlans")})
    assert c == "NOT_FOUND"
    c, _ = code({"op": "sample_batch", "dataset": _dataset(folder), "fold": 3, "case_ids": ["nope"]})
    assert c == "NOT_FOUND"

    # Path confinement.
    roots = [str(root)]
    c, m = code({"op": "info", "dataset": _dataset(Path(str(root) + "/../" + root.name) / folder.name,
                                                   allowed_roots=roots)})
    assert c == "INVALID_ARGUMENT" and ".." in m
    outside = tmp_path / "outside"
    shutil.copytree(folder, outside / folder.name)
    link = root / "Dataset977_Escape"
    os.symlink(outside / folder.name, link)
    try:
        c, m = code({"op": "info", "dataset": _dataset(link, allowed_roots=roots)})
        assert c == "PERMISSION_DENIED" and "Dataset977_Escape" in m
        ad.call({"op": "info", "dataset": _dataset(folder, allowed_roots=roots)})  # inside: fine
    finally:
        link.unlink()

    # Corrupt / truncated case files → DATA_LOSS naming the file (the other cases keep working).
    broken = tmp_path / "broken" / folder.name
    shutil.copytree(folder, broken)
    victim = sorted((broken / "nnUNetPlans_3d_fullres").glob("*_seg.b2nd"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 3])
    cid = victim.name[: -len("_seg.b2nd")]
    c, m = code({"op": "sample_batch", "dataset": _dataset(broken), "case_ids": [cid], "seed": 0,
                 "batch_index": 0})
    assert c == "DATA_LOSS" and victim.name in m
    others = [p.name[:-4] for p in (broken / "nnUNetPlans_3d_fullres").glob("*.pkl") if p.name[:-4] != cid]
    ad.call({"op": "sample_batch", "dataset": _dataset(broken), "case_ids": others, "seed": 0, "batch_index": 0})
    npz_dir = nnunet_datasets[("labels", "npz")]
    broken_npz = tmp_path / "broken_npz" / folder.name
    shutil.copytree(npz_dir, broken_npz)
    victim = sorted((broken_npz / "nnUNetPlans_3d_fullres").glob("*.npz"))[0]
    raw = bytearray(victim.read_bytes())
    raw[100:140] = bytes(40)
    victim.write_bytes(bytes(raw))
    c, m = code({"op": "sample_batch", "dataset": _dataset(broken_npz), "case_ids": [victim.name[:-4]],
                 "seed": 0, "batch_index": 0})
    assert c == "DATA_LOSS" and victim.name in m

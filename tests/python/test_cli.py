"""The client command line (`python -m augmentd ...`) against a real augmentd (a private local server it starts).

`preview` runs on a small hand-made preprocessed folder in nnU-Net's `.npy` layout (no nnunetv2 needed); the
PNG is decoded here (zlib + struct) and checked pixel by pixel against what was sent. `bench` runs in patch mode.
Dataset-mode runs of both on a real nnU-Net dataset are in tests/python/nnunet/test_cli_dataset.py.
"""
from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

from augmentd_server import augmentd_bin, client_env


def read_png(path) -> np.ndarray:
    """(H, W, 3) uint8 of an 8-bit RGB PNG without interlacing and with filter type 0 (what preview writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    w, h, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (8, 2, 0)
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)
    assert np.all(rows[:, 0] == 0)
    return rows[:, 1:].reshape(h, w, 3)


def run_cli(*args, timeout=120):
    env = dict(client_env(), AUGMENTD_BIN=augmentd_bin())
    return subprocess.run([sys.executable, "-m", "augmentd", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture(scope="module")
def npy_dataset(tmp_path_factory):
    """Dataset999_Cli: 3 cases (1, 24, 28, 32) float32 with a labelled cube, plans with patch (16, 16, 16)."""
    root = tmp_path_factory.mktemp("cli") / "Dataset999_Cli"
    cfg = root / "nnUNetPlans_3d_fullres"
    cfg.mkdir(parents=True)
    (root / "dataset.json").write_text(json.dumps({"channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1},
                                                   "numTraining": 3, "file_ending": ".nii.gz"}))
    (root / "nnUNetPlans.json").write_text(json.dumps({"configurations": {
        "3d_fullres": {"data_identifier": "nnUNetPlans_3d_fullres", "patch_size": [16, 16, 16], "batch_size": 2}}}))
    rng = np.random.RandomState(0)
    for i in range(3):
        data = rng.randn(1, 24, 28, 32).astype(np.float32)
        seg = np.zeros((1, 24, 28, 32), np.int8)
        seg[0, 8:16, 10:18, 12:20] = 1
        data[seg == 1] += 3
        np.save(cfg / f"case_{i}.npy", data)
        np.save(cfg / f"case_{i}_seg.npy", seg)
        (cfg / f"case_{i}.pkl").write_bytes(pickle.dumps({"class_locations": {}}))
    return root


def test_help_explains_every_command():
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("info", "preview", "bench", "nnunet"):
        assert command in out.stdout
    for command in ("preview", "bench"):
        sub = run_cli(command, "--help")
        assert sub.returncode == 0 and "--address" in sub.stdout and "--augmentd-bin" in sub.stdout


@pytest.mark.parametrize("preset", ["nnunet_validation", "nnunet_default"])
def test_preview_writes_a_montage_of_what_was_sent(npy_dataset, tmp_path, preset):
    out_png = tmp_path / "preview.png"
    out = run_cli("preview", str(npy_dataset), "--samples", "2", "--preset", preset, "--device", "cpu",
                  "--out", str(out_png))
    assert out.returncode == 0, out.stderr
    assert f"wrote {out_png}: 2 samples" in out.stdout
    img = read_png(out_png)
    scale, gap = 160 // 16, 3
    assert img.shape == (2 * 16 * scale + gap, 4 * 16 * scale + 3 * gap, 3)
    panel = 16 * scale + gap
    orig_plain, orig_labels = img[:16 * scale, :16 * scale], img[:16 * scale, panel:panel + 16 * scale]
    aug_labels = img[:16 * scale, 3 * panel:3 * panel + 16 * scale]
    assert np.all(orig_plain[..., 0] == orig_plain[..., 1])  # grey image panel
    coloured = orig_labels[..., 0] != orig_labels[..., 1]
    assert 0 < coloured.mean() < 1  # the crop is centred on the labelled cube: some voxels coloured, not all
    assert (aug_labels[..., 0] != aug_labels[..., 1]).any()
    if preset == "nnunet_validation":  # no augmentation: the augmented panels equal the original ones
        width = panel + 16 * scale
        assert np.array_equal(img[:, :width], img[:, 2 * panel:2 * panel + width])


def test_preview_reports_a_bad_dataset(tmp_path):
    out = run_cli("preview", str(tmp_path), "--device", "cpu", "--out", str(tmp_path / "x.png"))
    assert out.returncode == 1
    assert "neither an nnU-Net preprocessed dataset folder" in out.stderr
    assert not (tmp_path / "x.png").exists()


def test_bench_patch_mode_reports_throughput_and_progress():
    out = run_cli("bench", "--patch-size", "24,24,24", "--batches", "6", "--warmup", "1", "--device", "cpu", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["mode"] == "patch" and result["batches"] == 6 and result["device"] == "cpu"
    assert result["samples_per_s"] > 0
    lat = result["batch_latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert "6/6" in out.stderr  # progress shown

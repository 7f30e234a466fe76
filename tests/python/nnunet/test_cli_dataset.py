"""`python -m augmentd preview` / `bench` on a real nnU-Net preprocessed dataset (.b2nd), local server."""
from __future__ import annotations

import json
import subprocess
import sys

from augmentd_server import client_env


def _run(*args):
    return subprocess.run([sys.executable, "-m", "augmentd", *args], capture_output=True, text=True,
                          env=client_env(), timeout=120)


def test_bench_dataset_mode(nnunet_env, augmentd_bin):
    folder = nnunet_env["preprocessed"] / "nnUNetPlans_3d_fullres"
    out = _run("bench", "--dataset", str(folder), "--batches", "4", "--warmup", "1", "--device", "cpu", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["mode"] == "dataset" and result["batches"] == 4 and result["samples_per_s"] > 0
    assert "4/4" in out.stderr and "crop [" in out.stderr


def test_preview_of_a_b2nd_dataset(nnunet_env, augmentd_bin, tmp_path):
    png = tmp_path / "p.png"
    out = _run("preview", str(nnunet_env["preprocessed"]), "--samples", "2", "--device", "cpu", "--out", str(png))
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "patch [48, 40, 40]" in out.stdout

"""The main job's demo: a synthetic nnU-Net dataset, a real augmentd, augmented batches pulled over gRPC.

    python -m augmentd.demo --augmentd build/server/augmentd --data build/demo-data [--batches 20]

1. generates (once; cached under ``--data``) a tiny synthetic raw dataset and runs the real
   ``nnUNetv2_plan_and_preprocess -c 3d_fullres -np 1 -npfp 1`` on it;
2. starts ``augmentd`` (device ``auto``) on a unix socket in a temporary directory and a free TCP port, with
   ``--dataset_root`` the demo data folder;
3. opens a dataset-mode session with the ``nnunet_default`` preset configured from the dataset's plans,
   pulls ``--batches`` augmented batches over ``StreamBatches`` with progress shown, prints a short table;
4. closes the session, stops the server with SIGTERM. Exits non-zero on any failure.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DATASET_ID = 987
DATASET_NAME = f"Dataset{DATASET_ID:03d}_AugmentdSynth"


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[4]


def make_dataset(data: Path) -> Path:
    """The preprocessed dataset folder (generated on the first call, reused afterwards)."""
    out = data / "preprocessed" / DATASET_NAME
    if (out / "nnUNetPlans.json").exists() and (out / "nnUNetPlans_3d_fullres").is_dir() and \
            any((out / "nnUNetPlans_3d_fullres").glob("*_seg.b2nd")):
        print(f"[demo] dataset cached: {out}", flush=True)
        return out
    sys.path.insert(0, str(_repo_root() / "tests" / "python" / "dataset"))
    from synth_nnunet import write_raw_dataset  # the test suites' generator

    start = time.monotonic()
    raw, pre, res = data / "raw", data / "preprocessed", data / "results"
    shutil.rmtree(pre / DATASET_NAME, ignore_errors=True)
    for p in (raw, pre, res):
        p.mkdir(parents=True, exist_ok=True)
    write_raw_dataset(raw, seed=0, num_cases=6, name=DATASET_NAME)
    env = dict(os.environ, nnUNet_raw=str(raw), nnUNet_preprocessed=str(pre), nnUNet_results=str(res),
               OMP_NUM_THREADS="1")
    exe = Path(sys.executable).parent / "nnUNetv2_plan_and_preprocess"
    print(f"[demo] preprocessing a synthetic dataset with {exe.name} -d {DATASET_ID} -c 3d_fullres ...", flush=True)
    proc = subprocess.run([str(exe), "-d", str(DATASET_ID), "-c", "3d_fullres", "-np", "1", "-npfp", "1"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError("nnUNetv2_plan_and_preprocess failed:\n" + proc.stdout.decode(errors="replace")[-4000:])
    print(f"[demo] dataset ready in {time.monotonic() - start:.1f} s: {out}", flush=True)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary: str, data: Path, batches: int, batch_size: int) -> int:
    import augmentd
    from augmentd.local_server import LocalServer

    dataset = make_dataset(data)
    plans = json.loads((dataset / "nnUNetPlans.json").read_text())
    patch = plans["configurations"]["3d_fullres"]["patch_size"]
    tcp = f"127.0.0.1:{_free_port()}"
    # A private unix socket (LocalServer) plus a TCP listener, to show both transports.
    server = LocalServer(binary, device="auto", dataset_roots=[str(data)], extra_args=[f"--listen={tcp}"],
                         echo=True, log_prefix="  [augmentd] ")
    uds = server.address
    ok = False
    try:
        server.wait_serving()
        print(f"[demo] augmentd serving on {uds}, {tcp}", flush=True)
        with augmentd.Client(tcp) as c:
            assert c.health() == augmentd.HealthStatus.SERVING
        with augmentd.Client(uds) as client:
            info = client.server_info()
            print(f"[demo] server {info.version}, devices: {', '.join(d.name for d in info.devices)}, "
                  f"default {info.default_device}", flush=True)
            config = augmentd.dataset_session_config(str(dataset / "nnUNetPlans_3d_fullres"),
                                                     batch_size=batch_size, seed=1234, name="demo",
                                                     prefetch_depth=4)
            session = client.open_session(config)
            print(f"[demo] session {session.session_id} on {session.device}: nnunet_default for plan patch "
                  f"{patch}, initial patch {session.initial_patch_size}, "
                  f"{len(session.response.resolved_pipeline.transforms)} transforms", flush=True)
            if session.device != info.default_device:
                print(f"[demo] note: the server's default device is {info.default_device}; this pipeline runs on "
                      f"the {session.device} engine (the CUDA kernels do not cover it)", flush=True)
            start = time.monotonic()
            first_at = None
            shapes = dtypes = None
            labels: set = set()
            fg = []
            got = []
            with client.stream_batches(session, credits=4, max_batches=batches) as stream:
                for batch in stream:
                    first_at = first_at or time.monotonic()
                    image, targets = batch.image, batch.targets
                    assert batch.session_id == session.session_id
                    assert np.isfinite(image).all(), "non-finite image values"
                    got.append(batch.batch_index)
                    shapes = [tuple(image.shape)] + [tuple(t.shape) for t in targets]
                    dtypes = [str(image.dtype)] + sorted({str(t.dtype) for t in targets})
                    labels.update(np.unique(targets[0]).tolist())
                    fg.append(float((targets[0] > 0).mean()))
                    done = len(got)
                    bar = "#" * (30 * done // batches)
                    print(f"\r[demo] batches {done:3d}/{batches} [{bar:<30}] cases {','.join(batch.case_ids)}",
                          end="", flush=True)
            print(flush=True)
            elapsed = time.monotonic() - start
            if got != list(range(batches)):
                raise RuntimeError(f"expected batches 0..{batches - 1} in order, got {got}")
            stats = client.close_session(session)
        samples = batches * batch_size
        rows = [
            ("batches", f"{batches} (indices 0..{batches - 1}, in order)"),
            ("samples/s", f"{samples / elapsed:.1f} ({samples} samples in {elapsed:.2f} s; first batch after "
                          f"{(first_at - start) if first_at else 0:.2f} s)"),
            ("image shape", str(shapes[0])),
            ("target shapes (DS)", ", ".join(str(s) for s in shapes[1:])),
            ("dtypes", f"image {dtypes[0]}, targets {', '.join(dtypes[1:])}"),
            ("label values", str(sorted(int(v) for v in labels))),
            ("foreground fraction", f"mean {np.mean(fg):.3f} (min {np.min(fg):.3f}, max {np.max(fg):.3f})"),
            ("server stats", f"{stats.batches_produced} batches, {stats.bytes_delivered / 2**20:.1f} MiB delivered, "
                             f"p50 latency {stats.batch_latency.p50_us / 1000:.1f} ms"),
        ]
        width = max(len(k) for k, _ in rows)
        print("\n[demo] result")
        for k, v in rows:
            print(f"  {k:<{width}}  {v}")
        ok = True
    finally:
        rc = server.stop()
        print(f"[demo] augmentd stopped (exit {rc})", flush=True)
        if rc != 0:
            ok = False
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m augmentd.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--augmentd", default=str(_repo_root() / "build" / "server" / "augmentd"),
                        help="the augmentd binary")
    parser.add_argument("--data", default=str(_repo_root() / "build" / "demo-data"),
                        help="demo data folder (cached between runs)")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        return run(args.augmentd, Path(args.data), args.batches, args.batch_size)
    except Exception as err:  # noqa: BLE001 - the demo reports and exits non-zero
        print(f"\n[demo] FAILED: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Delivery benchmark (issue 5): how fast a Python trainer gets its batches from augmentd.

Measured against the real augmentd binary on a synthetic nnU-Net dataset written here (2 cases, 1 channel,
plans patch --patch, batch 2), all in one run:

  next()     time for the trainer's `next(stream)` + `batch.torch()` when the service keeps up (the consumer
             "trains" --step-ms between batches, so batches are already received): median / p99, per delivery.
             Target for IPC and shm: <= 50 us median.
  hand-off   full hand-off latency per batch: from the moment the trainer returns a credit (inside next()) to
             the moment the next, already produced batch has been received and decoded in the trainer process
             (credit message -> server write -> receive), plus building the tensors. Compared with
             torch.multiprocessing's hand-off of the same tensors (2 x 1 x P f32 image + int16 labels; CUDA
             tensors on a GPU, CPU tensors otherwise) through a torch.multiprocessing Queue, put -> get.
  inline     effective throughput of inline delivery with compact dtypes (fp16 image, int8 labels): batches
             produced ahead (prefetch 16), then granted at once; payload bytes / receive time. Target >= 1.5 GB/s.

    python bench/delivery_bench.py --out bench/results/DATE-delivery-gpu.md --device cuda:0          # GPU machine
    python bench/delivery_bench.py --out bench/results/DATE-delivery-cpu.md --device cpu --parts shm,inline,mp

The preset is nnU-Net's validation pipeline on the CPU (so 2 cores keep up with 128^3) and the default training
pipeline on a GPU; --preset overrides. Writes a markdown table (date, machine, command) to --out.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "client", "python", "src"))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

import augmentd  # noqa: E402
from augmentd.sessions import BatchStream  # noqa: E402
from augmentd.v1 import batch_pb2, pipeline_pb2, tensor_pb2  # noqa: E402
from augmentd_server import ServerProcess  # noqa: E402


def write_dataset(root: str, patch: int) -> str:
    ds = os.path.join(root, "Dataset900_Bench")
    data = os.path.join(ds, "nnUNetPlans_3d_fullres")
    os.makedirs(data)
    with open(os.path.join(ds, "nnUNetPlans.json"), "w") as f:
        json.dump({"plans_name": "nnUNetPlans", "transpose_forward": [0, 1, 2], "configurations": {"3d_fullres": {
            "data_identifier": "nnUNetPlans_3d_fullres", "batch_size": 2, "patch_size": [patch] * 3,
            "spacing": [1.0, 1.0, 1.0], "normalization_schemes": ["ZScoreNormalization"], "use_mask_for_norm": [False],
            "architecture": {"arch_kwargs": {"strides": [[1, 1, 1], [2, 2, 2], [2, 2, 2], [2, 2, 2]]}}}}}, f)
    with open(os.path.join(ds, "dataset.json"), "w") as f:
        json.dump({"channel_names": {"0": "CT"}, "labels": {"background": 0, "a": 1}, "numTraining": 2,
                   "file_ending": ".nii.gz"}, f)
    rng = np.random.default_rng(0)
    for i in range(2):
        shape = (patch + 16 + 8 * i,) * 3
        np.save(os.path.join(data, f"c{i}.npy"), rng.standard_normal((1, *shape), dtype=np.float32))
        seg = np.zeros((1, *shape), np.int16)
        seg[0, 10:40, 10:40, 10:40] = 1
        np.save(os.path.join(data, f"c{i}_seg.npy"), seg)
    return data


def summary(us):
    us = sorted(us)
    return statistics.median(us), us[min(len(us) - 1, int(len(us) * 0.99))]


def bench_delivery(client, path, args, delivery):
    """next() and hand-off latencies of one delivery."""
    preset = args.preset_value
    config = augmentd.dataset_session_config(path, batch_size=2, seed=1, prefetch_depth=4, device=args.device,
                                             delivery=delivery, preset=preset)
    session = client.open_session(config)
    next_us, handoff_us = [], []
    try:
        with client.stream_batches(session, credits=2) as stream:
            cuda = args.device.startswith("cuda")
            for i in range(args.warmup + args.iters):
                # "Training": the service has time to produce and send the next batches.
                time.sleep(args.step_ms / 1e3)
                t0 = time.perf_counter()
                batch = next(stream)  # returns a credit for the batch after the one already buffered
                image, targets = batch.torch()
                t1 = time.perf_counter()
                if cuda:
                    assert image.is_cuda or delivery != "cuda_ipc"
                if i >= args.warmup:
                    next_us.append((t1 - t0) * 1e6)
        # Hand-off: manual credits, one at a time, the next batch already produced on the server.
        with BatchStream(client.stub, session.session_id, credits=1, slots=session.slots, hold=1,
                         auto_credit=False) as stream:
            first = next(stream)
            ahead = (first.proto.timing.load_us + first.proto.timing.compute_us) / 1e6
            for i in range(args.warmup + args.iters):
                time.sleep(max(args.step_ms / 1e3, 1.5 * ahead))  # the next batch is produced meanwhile
                t0 = time.perf_counter()
                stream.grant(1)
                batch = next(stream)
                image, targets = batch.torch()
                if image.is_cuda:
                    torch.cuda.current_stream().synchronize()
                t1 = time.perf_counter()
                if i >= args.warmup:
                    handoff_us.append((t1 - t0) * 1e6)
    finally:
        client.close_session(session)
    return next_us, handoff_us


def bench_inline_throughput(client, path, args):
    config = augmentd.dataset_session_config(path, batch_size=2, seed=2, prefetch_depth=16, device=args.device,
                                             image_dtype=tensor_pb2.DTYPE_FLOAT16, label_dtype=tensor_pb2.DTYPE_INT8,
                                             preset=args.preset_value)
    session = client.open_session(config)
    rates = []
    try:
        with BatchStream(client.stub, session.session_id, credits=1, auto_credit=False) as stream:
            first = next(stream)
            per_batch = (first.proto.timing.load_us + first.proto.timing.compute_us) / 1e6
            for _ in range(args.rounds):
                n = 16
                # The server produces up to 16 batches ahead (prefetch_depth) on its workers: wait them out.
                time.sleep(max(2.0, 1.5 * n * per_batch / max(1, args.workers)))
                t0 = time.perf_counter()
                stream.grant(n)
                total = 0
                for _ in range(n):
                    b = next(stream)
                    total += b.image.nbytes + sum(t.nbytes for t in b.targets)
                rates.append(total / (time.perf_counter() - t0) / 1e9)
            total //= n
    finally:
        client.close_session(session)
    return rates, total


def _mp_producer(queue, done, iters, patch, device):
    import torch as t
    for _ in range(iters):
        image = t.randn(2, 1, patch, patch, patch, device=device)
        seg = t.zeros(2, 1, patch, patch, patch, dtype=t.int16, device=device)
        if device != "cpu":
            t.cuda.synchronize()
        queue.put((time.perf_counter(), image, seg))
        done.wait()
        done.clear()


def bench_torch_mp(args):
    """put -> get latency of torch.multiprocessing for the same tensors."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Event()
    device = args.device if args.device.startswith("cuda") else "cpu"
    n = args.warmup + args.iters
    proc = ctx.Process(target=_mp_producer, args=(queue, done, n, args.patch, device))
    proc.start()
    lat = []
    for i in range(n):
        sent, image, seg = queue.get()
        if device != "cpu":
            image.sum()  # touch it on the consumer side
        got = time.perf_counter()
        if i >= args.warmup:
            lat.append((got - sent) * 1e6)
        del image, seg
        done.set()
    proc.join(timeout=60)
    return lat


def machine(args):
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end"
    if args.device.startswith("cuda"):
        out += f", {torch.cuda.get_device_name(0)}"
    return out


def main():
    global torch
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="markdown file to write")
    p.add_argument("--device", default="cpu", help="session device: cpu or cuda:N")
    p.add_argument("--parts", default="", help="comma list of ipc,shm,inline,throughput,mp (default: all that apply)")
    p.add_argument("--bin", default=os.environ.get("AUGMENTD_BIN", os.path.join(REPO, "build", "server", "augmentd")))
    p.add_argument("--patch", type=int, default=128)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3, help="throughput rounds of 16 batches")
    p.add_argument("--step-ms", type=float, default=None, help="simulated training step (default: cpu 400, gpu 30)")
    p.add_argument("--preset", default=None, help="nnunet_default or nnunet_validation (default: by device)")
    p.add_argument("--workers", type=int, default=2, help="--batch_workers of the server")
    p.add_argument("--note", default="", help="a line about the machine (e.g. '2-core shared CPU machine')")
    args = p.parse_args()
    import torch as _torch
    torch = _torch
    cuda = args.device.startswith("cuda")
    parts = set(filter(None, args.parts.split(","))) or ({"ipc", "shm", "inline", "throughput", "mp"} if cuda
                                                        else {"shm", "inline", "throughput", "mp"})
    if args.step_ms is None:
        args.step_ms = 30.0 if cuda else 400.0
    preset = args.preset or ("nnunet_default" if cuda else "nnunet_validation")
    args.preset_value = pipeline_pb2.Preset.Value("PRESET_" + preset.upper())
    os.environ["AUGMENTD_BIN"] = os.path.abspath(args.bin)

    rows, notes = [], []
    with tempfile.TemporaryDirectory() as root:
        path = write_dataset(root, args.patch)
        server = ServerProcess(["--listen=127.0.0.1:0", f"--device={args.device}", f"--dataset_root={root}",
                                "--max_batch_size=4", "--max_response_bytes=512MiB", f"--batch_workers={args.workers}"])
        try:
            addr = server.wait_for_serving()[0]
            with augmentd.Client(addr) as client:
                for kind in ("ipc", "shm", "inline"):
                    if kind not in parts:
                        continue
                    delivery = {"ipc": "cuda_ipc", "shm": "host_shm", "inline": "inline"}[kind]
                    nxt, hand = bench_delivery(client, path, args, delivery)
                    rows.append((delivery, *summary(nxt), *(v / 1e3 for v in summary(hand))))
                    print(rows[-1], flush=True)
                if "throughput" in parts:
                    rates, batch_bytes = bench_inline_throughput(client, path, args)
                    notes.append(f"inline effective throughput, fp16 image + int8 labels, {batch_bytes / 1e6:.1f} MB "
                                 f"per batch, 16 batches produced ahead per round: median "
                                 f"**{statistics.median(rates):.2f} GB/s** (rounds: "
                                 + ", ".join(f"{r:.2f}" for r in rates) + "; target >= 1.5 GB/s)")
                    print(notes[-1], flush=True)
        finally:
            server.stop()
    if "mp" in parts:
        lat = bench_torch_mp(args)
        med, p99 = summary(lat)
        kind = "CUDA" if cuda else "CPU"
        rows.append((f"torch.multiprocessing Queue ({kind} tensors, baseline)", float("nan"), float("nan"),
                     med / 1e3, p99 / 1e3))
        print(rows[-1], flush=True)

    p3 = f"{args.patch}^3"
    lines = [f"# Delivery benchmark ({'GPU' if cuda else 'CPU'})", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {machine(args)}" + (f" — {args.note}" if args.note else ""),
             f"- command: `python {' '.join(sys.argv)}`",
             f"- batch: 2 x 1 x {p3} image + deep-supervision int16 labels (float32 image for next()/hand-off), "
             f"preset {preset}, device {args.device}, {args.iters} measured iterations after {args.warmup} warm-up, "
             f"simulated training step {args.step_ms:.0f} ms", "",
             "| delivery | next() median (us) | next() p99 (us) | hand-off median (ms) | hand-off p99 (ms) |",
             "|---|---:|---:|---:|---:|"]
    for name, nm, n99, hm, h99 in rows:
        f = (lambda v: "—" if v != v else f"{v:.1f}")
        g = (lambda v: "—" if v != v else f"{v:.3f}")
        lines.append(f"| {name} | {f(nm)} | {f(n99)} | {g(hm)} | {g(h99)} |")
    lines += [""] + [f"- {n}" for n in notes]
    lines += ["", "next(): `next(stream)` + `batch.torch()` with the batch already received (targets <= 50 us for "
              "IPC / shm). hand-off: credit sent -> next batch received, decoded and wrapped as tensors (the batch was "
              "already produced); torch.multiprocessing: producer `put` -> consumer `get` of fresh tensors."]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


torch = None

if __name__ == "__main__":
    main()

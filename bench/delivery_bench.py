#!/usr/bin/env python3
"""Delivery benchmark (issue 5): how fast a Python trainer gets its batches from augmentd.

Measured against the real augmentd binary on a synthetic nnU-Net dataset written here (2 cases, 1 channel,
plans patch --patch, batch 2), all in one run:

  next()     time for the trainer's `next(stream)` + `batch.torch()` when the service keeps up: the consumer
             "trains" for a step longer than producing a batch (max(--step-ms, 1.25 x the production time the
             server reports for the first batches)), with credits 8, hold 1 and prefetch_depth 11 slots, so the
             batch has been received (and, for slot deliveries, wrapped as tensors) by the client's reader thread
             before next() asks for it; the table counts how many calls found it there. Median / p99, per
             delivery. Target for IPC and shm: <= 50 us median.
  hand-off   the analogue of torch.multiprocessing's put -> get: from the moment the batch is ready to go on the
             server (produced and credited; the server stamps timing.sent_unix_ns when it starts the write) to the
             moment the trainer thread, waiting in next(), has its tensors (host wall clock, same machine). Also
             the older credit -> tensors: the trainer grants one credit for a batch already produced -> tensors.
             Compared with torch.multiprocessing's hand-off of the same tensors (2 x 1 x P f32 image + int16
             labels; CUDA tensors on a GPU, CPU tensors otherwise) through a torch.multiprocessing Queue, put -> get.
  inline     effective throughput of inline delivery with compact dtypes (fp16 image, int8 labels): batches
             produced ahead (prefetch 16, a stream of 1 + 16 batches per round, so production has stopped),
             then granted at once; payload bytes / receive time, and the client's CPU time per batch. Target
             >= 1.5 GB/s.

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


def production_s(stream, n=3):
    """Median seconds the server spent producing (load + compute) the next ``n`` batches of ``stream``."""
    t = []
    for _ in range(n):
        b = next(stream)
        t.append((b.proto.timing.load_us + b.proto.timing.compute_us) / 1e6)
    return statistics.median(t)


def bench_delivery(client, path, args, delivery):
    """next() and hand-off latencies of one delivery (see the module docstring)."""
    credits, hold = 8, 1  # one credit message per 4 batches (BatchStream sends credits in chunks of credits // 2)
    config = augmentd.dataset_session_config(path, batch_size=2, seed=1, prefetch_depth=credits + hold + 2,
                                             device=args.device, delivery=delivery, preset=args.preset_value)
    session = client.open_session(config)
    out = {"next": [], "ahead": 0, "handoff": [], "credit": [], "to_reader": [], "reader_to_main": [], "sent": [],
           "quiet": []}
    cuda = args.device.startswith("cuda")
    try:
        with client.stream_batches(session, credits=credits, hold=hold) as stream:
            # The service keeps up when a training step is longer than producing a batch; production runs on
            # --workers executor threads, but take one batch at a time as the bound (conservative).
            per_batch = production_s(stream)
            step = max(args.step_ms / 1e3, 1.25 * per_batch)
            out["step_ms"], out["production_ms"] = step * 1e3, per_batch * 1e3
            for i in range(args.warmup + args.iters):
                time.sleep(step)  # "training"
                ahead = stream.buffered > 0
                messages = stream.messages_sent
                t0 = time.perf_counter()
                batch = next(stream)
                image, targets = batch.torch()
                t1 = time.perf_counter()
                if cuda and delivery == "cuda_ipc":
                    assert image.is_cuda
                if i >= args.warmup:
                    out["next"].append((t1 - t0) * 1e6)
                    out["ahead"] += ahead
                    # calls that sent the credit (+ release) message vs the others
                    out["sent" if stream.messages_sent != messages else "quiet"].append((t1 - t0) * 1e6)
        # Hand-off: one credit at a time, granted while the trainer waits in next(); the batch was produced
        # ahead, so the server writes it when the credit arrives (timing.sent_unix_ns = batch ready to go).
        with BatchStream(client.stub, session.session_id, session_token=session.session_token, credits=1, slots=session.slots, hold=1,
                         auto_credit=False) as stream:
            per_batch = production_s(stream, 1)
            for i in range(args.warmup + args.iters):
                time.sleep(max(args.step_ms / 1e3, 1.5 * per_batch))  # the next batch is produced meanwhile
                t0 = time.perf_counter()
                stream.grant(1)
                batch = next(stream)
                image, targets = batch.torch()
                if image.is_cuda:
                    torch.cuda.current_stream().synchronize()
                t1 = time.perf_counter()
                t1_ns = time.time_ns()
                if i >= args.warmup:
                    sent = batch.sent_unix_ns
                    out["credit"].append((t1 - t0) * 1e6)
                    out["handoff"].append((t1_ns - sent) / 1e3 if sent else float("nan"))
                    out["to_reader"].append((batch.received_unix_ns - sent) / 1e3 if sent else float("nan"))
                    out["reader_to_main"].append((t1 - batch.received_at) * 1e6)
    finally:
        client.close_session(session)
    return out


def bench_inline_throughput(client, path, args):
    """Payload GB/s of inline batches (fp16 image, int8 labels) produced ahead, then granted at once; also the
    client's CPU milliseconds per batch (gRPC receive + decode + numpy views)."""
    config = augmentd.dataset_session_config(path, batch_size=2, seed=2, prefetch_depth=16, device=args.device,
                                             image_dtype=tensor_pb2.DTYPE_FLOAT16, label_dtype=tensor_pb2.DTYPE_INT8,
                                             preset=args.preset_value)
    session = client.open_session(config)
    rates, cpu_ms = [], []
    n = 16
    try:
        for _ in range(args.rounds):
            # One stream per round, limited to 1 + n batches: the server produces n ahead (prefetch_depth 16) and
            # then stops, so the measured transfer does not share the CPU with producing the next batches.
            with BatchStream(client.stub, session.session_id, session_token=session.session_token, credits=1, max_batches=n + 1, auto_credit=False) as stream:
                per_batch = production_s(stream, 1)
                time.sleep(max(2.0, 1.5 * n * per_batch / max(1, args.workers)))  # wait the n batches out
                c0, t0 = time.process_time(), time.perf_counter()
                stream.grant(n)
                total = 0
                for _ in range(n):
                    b = next(stream)
                    total += b.image.nbytes + sum(t.nbytes for t in b.targets)
                rates.append(total / (time.perf_counter() - t0) / 1e9)
                cpu_ms.append((time.process_time() - c0) / n * 1e3)
            total //= n
    finally:
        client.close_session(session)
    return rates, total, cpu_ms


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
    p.add_argument("--transport", default="tcp", choices=("unix", "tcp"),
                   help="how the co-located trainer reaches the server for ipc / shm (inline always uses TCP "
                        "loopback, standing in for a remote client)")
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

    rows, notes, steps = [], [], []
    nan = float("nan")
    with tempfile.TemporaryDirectory() as root:
        path = write_dataset(root, args.patch)
        sock = os.path.join(root, "augmentd.sock")
        server = ServerProcess([f"--listen=127.0.0.1:0,unix://{sock}", f"--device={args.device}", f"--dataset_root={root}",
                                "--max_batch_size=4", "--max_response_bytes=512MiB", f"--batch_workers={args.workers}"])
        try:
            tcp = next(a for a in server.wait_for_serving() if not a.startswith("unix:"))
            local = f"unix://{sock}" if args.transport == "unix" else tcp
            with augmentd.Client(tcp) as client, augmentd.Client(local) as local_client:
                for kind in ("ipc", "shm", "inline"):
                    if kind not in parts:
                        continue
                    delivery = {"ipc": "cuda_ipc", "shm": "host_shm", "inline": "inline"}[kind]
                    r = bench_delivery(client if kind == "inline" else local_client, path, args, delivery)
                    rows.append((delivery, *summary(r["next"]), f"{r['ahead']}/{len(r['next'])}",
                                 *(v / 1e3 for v in summary(r["handoff"])), *(v / 1e3 for v in summary(r["credit"]))))
                    steps.append(f"{delivery}: step {r['step_ms']:.0f} ms, production {r['production_ms']:.0f} ms/batch; "
                                 f"hand-off parts (median): server write -> reader thread has the tensors "
                                 f"{statistics.median(r['to_reader']) / 1e3:.3f} ms, reader -> trainer thread "
                                 f"{statistics.median(r['reader_to_main']) / 1e3:.3f} ms; next() median of the "
                                 f"{len(r['sent'])} calls that sent a credit message "
                                 f"{statistics.median(r['sent'] or [nan]):.1f} us, of the other {len(r['quiet'])} "
                                 f"{statistics.median(r['quiet'] or [nan]):.1f} us")
                    print(rows[-1], steps[-1], flush=True)
                if "throughput" in parts:
                    rates, batch_bytes, cpu_ms = bench_inline_throughput(client, path, args)
                    notes.append(f"inline effective throughput, fp16 image + int8 labels, {batch_bytes / 1e6:.1f} MB "
                                 f"per batch, 16 batches produced ahead per round: median "
                                 f"**{statistics.median(rates):.2f} GB/s** (rounds: "
                                 + ", ".join(f"{r:.2f}" for r in rates) + "; target >= 1.5 GB/s); client CPU "
                                 f"{statistics.median(cpu_ms):.1f} ms per batch")
                    print(notes[-1], flush=True)
        finally:
            server.stop()
    if "mp" in parts:
        lat = bench_torch_mp(args)
        med, p99 = summary(lat)
        kind = "CUDA" if cuda else "CPU"
        rows.append((f"torch.multiprocessing Queue ({kind} tensors, baseline)", nan, nan, "—", med / 1e3, p99 / 1e3,
                     nan, nan))
        print(rows[-1], flush=True)

    p3 = f"{args.patch}^3"
    lines = [f"# Delivery benchmark ({'GPU' if cuda else 'CPU'})", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {machine(args)}" + (f" — {args.note}" if args.note else ""),
             f"- command: `python {' '.join(sys.argv)}`",
             f"- batch: 2 x 1 x {p3} image + deep-supervision int16 labels (float32 image for next()/hand-off), "
             f"preset {preset}, device {args.device}, {args.iters} measured iterations after {args.warmup} warm-up, "
             f"simulated training step >= {args.step_ms:.0f} ms (>= 1.25 x the measured production time); "
             f"ipc / shm over {'a unix socket' if args.transport == 'unix' else 'TCP loopback'}, inline over TCP "
             "loopback", "",
             "| delivery | next() median (us) | next() p99 (us) | batch already received | hand-off median (ms) | "
             "hand-off p99 (ms) | credit -> tensors median (ms) | credit -> tensors p99 (ms) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    f = (lambda v: "—" if v != v else f"{v:.1f}")
    g = (lambda v: "—" if v != v else f"{v:.3f}")
    for name, nm, n99, ahead, hm, h99, cm, c99 in rows:
        lines.append(f"| {name} | {f(nm)} | {f(n99)} | {ahead} | {g(hm)} | {g(h99)} | {g(cm)} | {g(c99)} |")
    lines += [""] + [f"- {n}" for n in steps + notes]
    lines += ["", "next(): `next(stream)` + `batch.torch()` after a simulated training step longer than producing a "
              "batch (credits 8, hold 1, prefetch_depth 11 slots), so the service keeps up; 'batch already received' "
              "counts the calls that found the batch in the client (target <= 50 us median for IPC / shm). "
              "hand-off (the analogue of torch.multiprocessing's put -> get): batch ready to go on the server "
              "(produced and credited: the server stamps timing.sent_unix_ns when it starts the write) -> tensors in "
              "the trainer thread, on the host's wall clock; the trainer waits in next() meanwhile. credit -> "
              "tensors: the trainer sends one credit for a batch already produced -> tensors in the trainer (adds "
              "the client's credit send and the server's read). torch.multiprocessing: producer `put` -> consumer "
              "`get` of fresh tensors (the consumer waits in get)."]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


torch = None

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Patch-mode benchmark (issue 22): how long a co-located trainer's `image, targets = aug(image, seg)` takes through
augmentd's StreamPatches, per delivery, against today's unary Augment call in the same run.

All against the real augmentd binary started here (--bin), nnunet_default (--preset), random patches of the session's
initial (enlarged) patch size:

  cuda_ipc     CUDA session, server CUDA input slots + CUDA IPC output slots: torch CUDA tensors in and out, no host
               copy (PatchAugmenter). B=2 at --patch and B=1 at --big-patch.
  overlapped   the same, as a trainer uses it: the next batch is submitted before the step, the step is simulated
               (sleep 1.25 x the server's compute p50), and the time the trainer spends in submit + result is counted.
  host_shm     host shared-memory input slots and output slots (host tensors in and out; on a GPU server the session
               still augments on the GPU).
  inline       StreamPatches with inline bytes both ways (a remote client); effective GB/s = (bytes in + bytes out)
               / call time.
  baseline     today's unary Augment with inline numpy (client.augment), the path issue 22 replaces.

--inline-baseline adds the inline case once more, first, in a child process of this script with
AUGMENTD_MALLOC_TUNING=0 in its environment and its server's (glibc's default allocator behaviour: a fresh mmap per
message of > 32 MB, augmentd.wire.tune_malloc) — the before of the inline figure, measured in the same call.
Inline is measurable on a CPU session too (the transport does not need a GPU):

    python3 bench/patch_bench.py --device cpu --cases inline --inline-baseline --iters 20 --out /tmp/inline-cpu.md

For each: call median / p99 (ms) over --iters calls after --warmup, and the server's compute p50 (SessionStats), so
the rest of the call is hand-over overhead. Writes a markdown table (date, machine, command) to --out and, with
--figures, one JSON line per headline figure (issue 22's metric names; only for the standard configuration
--patch 128 --big-patch 256 on a CUDA device).

    python3 bench/patch_bench.py --device cuda:0 --out $OUT/patch-gpu.md --figures $OUT/figures.jsonl   # GPU machine
    python3 bench/patch_bench.py --device cpu --patch 16 --big-patch 0 --iters 30 --out /tmp/patch-cpu.md  # CPU, tiny
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
from augmentd.v1 import pipeline_pb2, server_info_pb2  # noqa: E402
from augmentd_server import ServerProcess  # noqa: E402

SHM = server_info_pb2.DELIVERY_KIND_HOST_SHM
INLINE = server_info_pb2.DELIVERY_KIND_INLINE


def ds_scales(patch: int):
    """nnU-Net's deep-supervision scales for an isotropic 3d_fullres patch (stride 2 until 4 voxels, capped at 5)."""
    levels = 1
    while patch // (2 ** levels) >= 8 and levels < 5:
        levels += 1
    return [[1.0 / 2 ** k] * 3 for k in range(levels)]


def summary(ms):
    ms = sorted(ms)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


PHASES = ("submit", "request", "queue", "compute", "delivery", "response", "result", "sync")


def phase_medians(per_call):
    """Median of each phase (ms) over the calls that reported it (PatchFuture.phases() + the bench's "sync": result()
    returned → the call's end, the synchronisation after it); {} when no call did."""
    out = {}
    for name in PHASES:
        values = [p[name] for p in per_call if name in p]
        if values:
            out[name] = statistics.median(values)
    return out


def config(args, patch, batch, device, delivery=None, input_slot_kind=None):
    cfg = augmentd.patch_session_config([patch] * 3, batch_size=batch, seed=1, preset=args.preset,
                                        deep_supervision_scales=ds_scales(patch), device=device)
    if delivery is not None:
        cfg.delivery = delivery
    if input_slot_kind is not None:
        cfg.patch.input_slot_kind = input_slot_kind
    return cfg


def patches(initial, batch, torch_device=None):
    rng = np.random.default_rng(0)
    image = rng.standard_normal((batch, 1, *initial), dtype=np.float32)
    seg = (rng.random((batch, 1, *initial)) * 3).astype(np.int16)
    if torch_device is None:
        return image, seg
    import torch

    return torch.from_numpy(image).to(torch_device), torch.from_numpy(seg).to(torch_device)


def nbytes(x) -> int:
    return int(x.nelement() * x.element_size()) if hasattr(x, "element_size") else int(x.nbytes)


def compute_p50_ms(client, session) -> float:
    st = client.stats(session).sessions[0]
    return st.compute_latency.p50_us / 1e3


def with_iters(args, iters, warmup):
    out = argparse.Namespace(**vars(args))
    out.iters, out.warmup = iters, warmup
    return out


def run_augmenter(client, args, name, cfg, inline=False, torch_inputs=False, overlapped=False):
    with augmentd.PatchAugmenter(client, cfg, depth=2, hold=1, inline=inline) as aug:
        dev = aug.device if torch_inputs else None
        image, seg = patches(aug.patch_size, cfg.batch_size, dev)
        sync = None
        if dev is not None and dev.startswith("cuda"):
            import torch

            sync = lambda: torch.cuda.synchronize(dev)  # noqa: E731
        out_bytes = 0
        for _ in range(args.warmup):
            out, targets = aug(image, seg)
            out_bytes = nbytes(out) + sum(nbytes(t) for t in targets)
        step = 1.25 * compute_p50_ms(client, aug.session) / 1e3
        times, phases = [], []
        if overlapped:
            future = aug.submit(image, seg)
            for _ in range(args.iters):
                time.sleep(step)  # the trainer's step, while the server augments the submitted batch
                t0 = time.perf_counter()
                out, targets = aug.result(future)
                future = aug.submit(image, seg)
                if sync:
                    sync()
                times.append((time.perf_counter() - t0) * 1e3)
            aug.result(future)
        else:
            for _ in range(args.iters):
                if sync:
                    sync()
                t0 = time.perf_counter()
                future = aug.submit(image, seg)
                out, targets = aug.result(future)
                if sync:
                    sync()
                times.append((time.perf_counter() - t0) * 1e3)
                phase = future.phases()
                if phase:
                    phase["sync"] = (time.time_ns() - future.returned_ns) / 1e6
                    phases.append(phase)
        med, p99 = summary(times)
        moved = nbytes(image) + nbytes(seg) + out_bytes
        return {"case": name, "batch": cfg.batch_size, "patch": cfg.pipeline.trainer.patch_size[0],
                "initial": list(aug.patch_size), "median_ms": med, "p99_ms": p99,
                "compute_p50_ms": compute_p50_ms(client, aug.session), "gbps": moved / (med / 1e3) / 1e9,
                "out_device": str(out.device), "session_device": aug.device,
                "step_ms": step * 1e3 if overlapped else 0.0, "phases": phase_medians(phases)}


def run_baseline(client, args, cfg):
    session = client.open_session(cfg)
    try:
        image, seg = patches(session.initial_patch_size, cfg.batch_size)
        for i in range(args.warmup):
            client.augment(session, image, seg, batch_index=i)
        times = []
        out_bytes = 0
        for i in range(args.iters):
            t0 = time.perf_counter()
            b = client.augment(session, image, seg, batch_index=i)
            out_bytes = b.image.nbytes + sum(t.nbytes for t in b.targets)
            times.append((time.perf_counter() - t0) * 1e3)
        med, p99 = summary(times)
        return {"case": "baseline: unary Augment, inline numpy", "batch": cfg.batch_size,
                "patch": cfg.pipeline.trainer.patch_size[0], "initial": list(session.initial_patch_size),
                "median_ms": med, "p99_ms": p99, "compute_p50_ms": compute_p50_ms(client, session),
                "gbps": (image.nbytes + seg.nbytes + out_bytes) / (med / 1e3) / 1e9, "out_device": "cpu",
                "session_device": session.response.device.name or cfg.device, "step_ms": 0.0, "phases": {}}
    finally:
        client.close_session(session)


def phase_table(rows):
    """Markdown lines: where each StreamPatches case's call goes, per phase (median ms over the calls)."""
    rows = [r for r in rows if r["phases"]]
    if not rows:
        return []
    lines = ["", "Where the call goes (median ms per phase, wall clocks of client and server on the same host): "
             "submit = submit() until its request is queued (copies into the input slot, message building); "
             "request = queued → the server read it; queue = read → engine start; compute = the engine; "
             "delivery = engine done → the batch written to the stream; response = written → the client's reader "
             "thread has it; result = reader → result() returned (wake-up, views, the release); sync = the "
             "synchronisation after the call (CUDA). The phases' medians need not add up to the call's median.", "",
             "| case | B | patch | " + " | ".join(PHASES) + " | sum |", "|---|---|---|" + "---|" * (len(PHASES) + 1)]
    for r in rows:
        ph = r["phases"]
        cells = [f"{ph[n]:.3f}" if n in ph else "—" for n in PHASES]
        lines.append(f"| {r['case']} | {r['batch']} | {r['patch']}³ | " + " | ".join(cells) +
                     f" | {sum(ph.values()):.3f} |")
    return lines


def inline_untuned(args):
    """The inline case's rows from a child process and server without augmentd's malloc tuning."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--bin", args.bin, "--device", args.device, "--patch",
               str(args.patch), "--big-patch", "0", "--iters", str(args.iters), "--warmup", str(args.warmup),
               "--slow-iters", str(args.slow_iters), "--preset", str(args.preset), "--cases", "inline",
               "--out", os.path.join(tmp, "table.md"), "--json", out]
        env = dict(os.environ, AUGMENTD_MALLOC_TUNING="0")
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            rows = json.load(f)
    for r in rows:
        r["case"] = "before (AUGMENTD_MALLOC_TUNING=0): inline both ways"
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("AUGMENTD_BIN", os.path.join(REPO, "build", "server", "augmentd")))
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--big-patch", type=int, default=256, help="B=1 CUDA IPC case (0: skip)")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--slow-iters", type=int, default=20, help="calls of the inline cases (about 1 s each at 128³)")
    ap.add_argument("--preset", type=int, default=pipeline_pb2.PRESET_NNUNET_DEFAULT)
    ap.add_argument("--cases", default="cuda_ipc,big,overlapped,host_shm,inline,baseline")
    ap.add_argument("--out", required=True)
    ap.add_argument("--figures", default="")
    ap.add_argument("--machine", default="")
    ap.add_argument("--inline-baseline", action="store_true",
                    help="also run the inline case with AUGMENTD_MALLOC_TUNING=0 (client and server), first")
    ap.add_argument("--json", default="", help="write the rows as JSON here too")
    args = ap.parse_args()
    untuned = []
    if args.inline_baseline:
        untuned = inline_untuned(args)
    os.environ["AUGMENTD_BIN"] = args.bin
    cases = set(args.cases.split(","))
    cuda = args.device.startswith("cuda")
    proc = ServerProcess(["--listen=unix:///tmp/augmentd-patch-bench.sock", f"--device={args.device}",
                          "--max_batch_size=4", "--batch_workers=2", "--max_request_bytes=1GiB",
                          "--max_response_bytes=1GiB"])
    rows = []
    try:
        proc.wait_for_serving(timeout=60)
        with augmentd.Client("unix:///tmp/augmentd-patch-bench.sock") as client:
            info = client.server_info()
            machine = args.machine or f"{platform.node()}: " + ", ".join(d.model or d.name for d in info.devices)
            if cuda and "cuda_ipc" in cases:
                rows.append(run_augmenter(client, args, "cuda_ipc in + out (torch CUDA tensors)",
                                          config(args, args.patch, 2, args.device), torch_inputs=True))
            if cuda and "big" in cases and args.big_patch > 0:
                rows.append(run_augmenter(client, args, "cuda_ipc in + out (torch CUDA tensors)",
                                          config(args, args.big_patch, 1, args.device), torch_inputs=True))
            if cuda and "overlapped" in cases:
                rows.append(run_augmenter(client, args, "cuda_ipc, overlapped with a simulated step",
                                          config(args, args.patch, 2, args.device), torch_inputs=True,
                                          overlapped=True))
            if "host_shm" in cases:
                rows.append(run_augmenter(client, args, "host_shm in + out (host tensors)",
                                          config(args, args.patch, 2, args.device, SHM, SHM), torch_inputs=False))
            if "inline" in cases:
                slow = with_iters(args, min(args.iters, args.slow_iters), min(args.warmup, 3))
                rows.append(run_augmenter(client, slow, "inline both ways (StreamPatches)",
                                          config(args, args.patch, 2, args.device, INLINE), inline=True))
            if "baseline" in cases:
                slow = with_iters(args, min(args.iters, args.slow_iters), min(args.warmup, 3))
                rows.append(run_baseline(client, slow, config(args, args.patch, 2, args.device, INLINE)))
    finally:
        rc = proc.stop()
    rows = untuned + rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f)
    if rc != 0:
        print(proc.output[-3000:], file=sys.stderr)
    today = datetime.date.today().isoformat()
    lines = [f"# Patch mode (issue 22): `aug(image, seg)` per delivery — {machine}", "",
             f"Date {today}. Command: `python3 {' '.join(sys.argv)}`. Preset {args.preset} (nnunet_default = 1), "
             f"session device {args.device}, {args.iters} calls after {args.warmup} warm-up calls each "
             f"(inline cases: {min(args.iters, args.slow_iters)} after {min(args.warmup, 3)}). "
             "Call = submit + result as the trainer sees it (CUDA: synchronised before and after). "
             "Server compute p50 from SessionStats; the rest of the call is hand-over.", "",
             "| case | B | patch | initial patch | call median ms | call p99 ms | server compute p50 ms | "
             "in + out GB/s | session on | output on |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        step = f" (step {r['step_ms']:.1f} ms)" if r["step_ms"] else ""
        lines.append(f"| {r['case']}{step} | {r['batch']} | {r['patch']}³ | {'×'.join(map(str, r['initial']))} | "
                     f"{r['median_ms']:.3f} | {r['p99_ms']:.3f} | {r['compute_p50_ms']:.3f} | {r['gbps']:.2f} | "
                     f"{r['session_device']} | {r['out_device']} |")
    lines += phase_table(rows)
    base = next((r for r in rows if r["case"].startswith("baseline")), None)
    if base:
        lines += ["", "Speed-up over the baseline (same run, same B and patch): " + ", ".join(
            f"{r['case'].split(' (')[0]} {base['median_ms'] / r['median_ms']:.1f}×" for r in rows
            if r is not base and r["batch"] == base["batch"] and r["patch"] == base["patch"])]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    if args.figures and cuda and args.patch == 128:
        figs = []

        def find(case_prefix, batch, patch):
            return next((r for r in rows if r["case"].startswith(case_prefix) and r["batch"] == batch
                         and r["patch"] == patch), None)

        b = base["median_ms"] if base else None
        for metric, r, key, unit in [
            ("patch_call_ms_cuda_ipc_b2_128", find("cuda_ipc in", 2, 128), "median_ms", "ms"),
            ("patch_call_p99_ms_cuda_ipc_b2_128", find("cuda_ipc in", 2, 128), "p99_ms", "ms"),
            ("patch_call_ms_cuda_ipc_b1_256", find("cuda_ipc in", 1, args.big_patch), "median_ms", "ms"),
            ("patch_call_ms_host_shm_b2_128", find("host_shm", 2, 128), "median_ms", "ms"),
            ("patch_inline_gbps", find("inline", 2, 128), "gbps", "GB/s"),
        ]:
            if r is None:
                continue
            figs.append({"issue": 22, "metric": metric, "value": round(r[key], 4), "unit": unit, "date": today,
                         "machine": machine,
                         "baseline": None if b is None else (round(base["gbps"], 4) if unit == "GB/s" else round(b, 4))})
        with open(args.figures, "a") as f:
            for fig in figs:
                f.write(json.dumps(fig) + "\n")
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""AugLab's extensive augmentation, three ways, on the same batch (issue 23): ms per batch of

  daext_gpu_ms_per_batch    augmentd's auglab_daext_gpu pipeline (augmentd.nnunet.auglab_daext, from the AugLab GPU
                            JSON, per_batch=True as AugLab's same_on_batch) in a patch-mode session of a local augmentd
                            server on --device (cuda:0): a PatchAugmenter call on torch CUDA tensors (CUDA IPC slots
                            in and out), synchronised, as AugLab's row. Also daext_gpu_inline_compute_ms_per_batch
                            (the server's compute_us for inline host input) and its client round trip. A session
                            the server ran on the CPU gives daext_server_cpu_ms_per_batch (said so on stderr).
  auglab_gpu_ms_per_batch   AugLab's own AugTransformsGPU(json) (kornia, same_on_batch=True) on the GPU, data and
                            target already on the device, torch.cuda.synchronize around each call.
  daext_cpu16_ms_per_batch  nnUNetTrainerDAExt's CPU pipeline (nnUNetTrainerDAExt.get_training_transforms with the
                            AugLab CPU JSON) on --workers processes (one thread each, as nnU-Net's DA workers):
                            ms per batch = B / (workers / mean seconds per sample). (auglab 20260109's method
                            omits four AugTransforms arguments — a TypeError as installed — filled as its Hybrid
                            trainer passes them.)

    AUGLAB_PARAMS_GPU_JSON=gpu.json AUGLAB_PARAMS_CPU_JSON=cpu.json AUGMENTD_BIN=build/server/augmentd \\
        python3 bench/daext_bench.py [--batch 2] [--patch 128 128 128] [--iters 20] [--workers 15] [--cores 16] \\
        [--out bench/results/figures.jsonl] [--out-dir $OUT] [--skip augmentd,auglab,cpu16]

  On the GPU machine: scripts/gpu-daext.sh (wheels and JSONs from .whl/auglab/, filled by scripts/daext-kit.sh).
  CPU dry run here (every code path, small sizes; AugLab's "GPU" pipeline on CPU tensors, figure renamed):
    AUGLAB_PARAMS_GPU_JSON=.whl/auglab/transform_params_gpu.json \\
    AUGLAB_PARAMS_CPU_JSON=.whl/auglab/transform_params.json \\
    AUGMENTD_BIN=build/server/augmentd AUGMENTD_BUILD_DIR=build .venv/bin/python bench/daext_bench.py --device cpu \\
        --patch 32 32 32 --iters 2 --workers 2 --cores 2 --samples 1

Figures: augmentd's headline is the CUDA-IPC call (device tensors both ways, like AugLab's); the inline rows add the
server's compute_us (host input staged to the device + pipeline + batch back on the host) and the client round trip
(inline input transfer included); AugLab's and the CPU pipeline's are wall times.
Written to stdout, and with --out-dir ($OUT): daext_table.md, daext_figures.jsonl, <metric>.json. Exit 1 when a
part failed (the others' figures are still written; the table says FAILED with the error).

The input: N(0.3, 1) image, one channel, blobby labels 0..3, at nnU-Net's initial_patch_size for --patch (default
rotation ±30°, scale (0.85, 1.25)); AugLab's GPU pipeline gets the centre crop at --patch (its CPU loader's spatial
step). auglab 20260109's wheel ships no JSON: both variables are required (AugLab's trainers need them too).
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "client" / "python" / "src", ROOT / ".venv" / "auglab"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import numpy as np  # noqa: E402


def _input(batch, size, seed=0):
    rng = np.random.default_rng(seed)
    image = (rng.standard_normal((batch, 1, *size)) + 0.3).astype(np.float32)
    seg = np.zeros((batch, 1, *size), np.int16)
    for b in range(batch):
        for lab in (1, 2, 3):
            c = [int(rng.integers(s // 4, 3 * s // 4)) for s in size]
            r = max(2, min(size) // 6)
            sl = tuple(slice(max(0, ci - r), ci + r) for ci in c)
            seg[(b, 0) + sl] = lab
    return image, seg


def _initial_patch_size(patch):
    """nnU-Net's initial_patch_size for `patch` (3D: rotation ±30° on every axis, scale (0.85, 1.25)): nnunetv2's
    get_patch_size when nnunetv2 is importable (the GPU machine installs it from .whl), else augmentd's engine
    (the same rule; build/augment/libaugment_capi.so or $AUGMENTD_BUILD_DIR)."""
    try:
        from nnunetv2.training.data_augmentation.compute_initial_patch_size import get_patch_size
    except ImportError:
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        import augment_capi
        out, _ = augment_capi.run({"op": "initial_patch_size", "trainer_config": {"patch_size": list(patch)}})
        return [int(v) for v in out["initial_patch_size"]]
    rot = (-30.0 / 360 * 2 * math.pi, 30.0 / 360 * 2 * math.pi)
    return [int(v) for v in get_patch_size(tuple(patch), rot, rot, rot, (0.85, 1.25))]


def _centre(a, patch):
    sl = tuple(slice((s - p) // 2, (s - p) // 2 + p) for s, p in zip(a.shape[2:], patch))
    return a[(slice(None), slice(None)) + sl]


def bench_augmentd(args, params, image, seg, initial):
    from augmentd.local_server import connect_or_start
    from augmentd.nnunet.auglab_daext import daext_gpu_pipeline
    from augmentd.v1 import pipeline_pb2, session_pb2
    from augmentd.sessions import trainer_config

    ds = [[1, 1, 1], [.5, .5, .5], [.25, .25, .25], [.125, .125, .125], [.0625, .0625, .0625]]
    pipe = daext_gpu_pipeline(params, patch_size=args.patch, acq_axis=1, deep_supervision_scales=ds, per_batch=True)
    tc = trainer_config(args.patch, ds, 1)
    tc.initial_patch_size.extend(int(v) for v in initial)  # the crop the patches come at (explicit list)
    config = session_pb2.SessionConfig(
        name="daext_bench", pipeline=pipeline_pb2.PipelineSpec(transforms=pipe.protos(), trainer=tc),
        patch=session_pb2.PatchModeConfig(num_image_channels=1, input_patch_size=[int(v) for v in initial]), batch_size=args.batch, seed=1, device=args.device)
    from augmentd.sessions import AugmentdError

    client, server = connect_or_start(None, device=args.device, start_local="always")
    refused = ""
    try:
        try:
            session = client.open_session(config)
        except AugmentdError as err:  # the CUDA engine refuses kinds it has no stage for: say so, run on the CPU
            refused = f"; {args.device} session refused: {str(err)[:200]}"
            print(f"[augmentd] {args.device} session refused ({err}); timing the server's CPU engine instead",
                  file=sys.stderr, flush=True)
            config.device = "cpu"
            session = client.open_session(config)
        print(f"[augmentd] session on {session.device}; {len(pipe.entries)} entries; not reproduced: "
              f"{'; '.join(pipe.folded) or 'nothing listed'}", file=sys.stderr, flush=True)
        for i in range(3):
            client.augment(session, image, seg, batch_index=i)
        wall, compute = [], []
        for i in range(args.iters):
            t0 = time.perf_counter()
            batch = client.augment(session, image, seg, batch_index=3 + i)  # synchronous: the batch is back
            wall.append(time.perf_counter() - t0)
            compute.append(batch.proto.timing.compute_us / 1e6)
        client.close_session(session)
        on_gpu = session.device.startswith("cuda")
        rows = []
        if on_gpu:  # like AugLab's row: torch CUDA tensors in and out (patch mode through CUDA IPC slots)
            rows.append(("daext_gpu_ms_per_batch", _cuda_ipc_call_ms(client, config, image, seg, args.iters),
                         session.device, "PatchAugmenter call, torch CUDA tensors in and out (CUDA IPC input and "
                         "output slots), synchronised before and after; median"))
        name = "daext_gpu_inline_compute_ms_per_batch" if on_gpu else "daext_server_cpu_ms_per_batch"
        rows.append((name, float(np.median(compute)) * 1e3, session.device,
                     "server compute_us: inline host input staged to the device, the pipeline, the batch back on "
                     "the host; median" + refused))
        rows.append((name.replace("_ms_per_batch", "_roundtrip_ms_per_batch").replace("_compute", ""),
                     float(np.median(wall)) * 1e3, session.device,
                     "client.augment wall time, inline gRPC transfer of the input included, median"))
        return rows
    finally:
        if server is not None:
            server.stop()
        client.close()


def _cuda_ipc_call_ms(client, config, image, seg, iters):
    """Median ms of a PatchAugmenter call on torch CUDA tensors (the session's GPU; CUDA IPC slots both ways),
    synchronised before and after, after 3 warm-up calls."""
    import torch

    from augmentd import PatchAugmenter

    ti, ts = torch.from_numpy(image).cuda(), torch.from_numpy(seg).cuda()
    times = []
    with PatchAugmenter(client, config) as aug:
        for i in range(3 + iters):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out, targets = aug(ti, ts, batch_index=i)
            torch.cuda.synchronize()
            if i >= 3:
                times.append(time.perf_counter() - t0)
            del out, targets
    return float(np.median(times)) * 1e3


def bench_auglab_gpu(args, image, seg):
    import torch
    from auglab.transforms.gpu.transforms import AugTransformsGPU

    dev = torch.device(args.device)  # "cpu" only for a dry run of this code path (kornia runs on CPU tensors)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda _d: None)
    aug = AugTransformsGPU(os.environ["AUGLAB_PARAMS_GPU_JSON"]).to(dev)
    data = torch.from_numpy(_centre(image, args.patch).copy()).to(dev)
    target = torch.from_numpy(_centre(seg, args.patch).astype(np.float32)).to(dev)
    for _ in range(3):
        aug(data.clone(), target.clone())
    sync(dev)
    times = []
    for _ in range(args.iters):
        d, t = data.clone(), target.clone()
        sync(dev)
        t0 = time.perf_counter()
        aug(d, t)
        sync(dev)
        times.append(time.perf_counter() - t0)
    name = "auglab_gpu_ms_per_batch" if dev.type == "cuda" else "auglab_on_cpu_dryrun_ms_per_batch"
    return [(name, float(np.median(times)) * 1e3, str(dev),
             "AugTransformsGPU forward, synchronised wall time, median")]


def _cpu_worker(q, patch, initial, samples, seed):
    try:
        q.put(_cpu_samples(patch, initial, samples, seed))
    except BaseException as err:  # noqa: BLE001 - reported by the parent
        q.put(f"{type(err).__name__}: {err}")


def _cpu_samples(patch, initial, samples, seed):
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[v] = "1"
    import torch
    torch.set_num_threads(1)
    import functools

    import auglab.trainers.nnUNetTrainerDAExt as daext
    rot = (-30.0 / 360 * 2 * math.pi, 30.0 / 360 * 2 * math.pi)
    # auglab 20260109's nnUNetTrainerDAExt.get_training_transforms calls AugTransforms(json_path=...) without the
    # four arguments AugTransforms requires (a TypeError as installed); they are filled as nnUNetTrainerDAExtHybrid
    # passes them (no dummy 2D, the patch, the rotation, no mirroring).
    daext.AugTransforms = functools.partial(daext.AugTransforms, do_dummy_2d_data_aug=False, patch_size=patch,
                                            rotation_for_DA=rot, mirror_axes=(0, 1, 2))
    nnUNetTrainerDAExt = daext.nnUNetTrainerDAExt
    ds = [[1, 1, 1], [.5, .5, .5], [.25, .25, .25], [.125, .125, .125], [.0625, .0625, .0625]]
    t = nnUNetTrainerDAExt.get_training_transforms(patch, rot, ds, None, False, use_mask_for_norm=[False])
    image, seg = _input(1, initial, seed)
    torch.manual_seed(seed)
    t(image=torch.from_numpy(image[0].copy()), segmentation=torch.from_numpy(seg[0].copy()))  # warm-up
    t0 = time.perf_counter()
    for _ in range(samples):
        t(image=torch.from_numpy(image[0].copy()), segmentation=torch.from_numpy(seg[0].copy()))
    return (time.perf_counter() - t0) / samples


def bench_cpu16(args, initial):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_cpu_worker, args=(q, args.patch, initial, args.samples, 100 + w))
             for w in range(args.workers)]
    for p in procs:
        p.start()
    try:
        per = [q.get(timeout=args.cpu_timeout) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
    errors = [v for v in per if isinstance(v, str)]
    if errors:
        raise RuntimeError(f"{len(errors)} CPU worker(s) failed: {errors[0]}")
    throughput = args.workers / float(np.mean(per))  # samples per second
    return [(f"daext_cpu{args.cores}_ms_per_batch", args.batch / throughput * 1e3,
             f"{args.workers} CPU worker processes on {args.cores} cores (machine: {os.cpu_count()})",
             f"B / (workers / mean s per sample); slowest worker {max(per) * 1e3:.0f} ms per sample")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--patch", type=int, nargs=3, default=[128, 128, 128])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--workers", type=int, default=15, help="CPU worker processes (nnU-Net: cores - 1)")
    ap.add_argument("--cores", type=int, default=16, help="the cores those workers run on (the figure's name)")
    ap.add_argument("--samples", type=int, default=3, help="samples per CPU worker after one warm-up")
    ap.add_argument("--cpu-timeout", type=float, default=300, help="seconds to wait for each CPU worker")
    ap.add_argument("--device", default="cuda:0", help="augmentd's session and AugLab's tensors (cpu: dry run)")
    ap.add_argument("--skip", default="", help="comma list of augmentd,auglab,cpu16")
    ap.add_argument("--out", default="", help="append one JSON line per figure (bench/results/figures.jsonl)")
    ap.add_argument("--out-dir", default=os.environ.get("OUT", ""),
                    help="write daext_table.md, daext_figures.jsonl and one <metric>.json per figure there "
                         "(default $OUT)")
    args = ap.parse_args()
    for var in ("AUGLAB_PARAMS_GPU_JSON", "AUGLAB_PARAMS_CPU_JSON"):
        if not os.path.isfile(os.environ.get(var, "")):
            print(f"{var} must name AugLab's JSON (see scripts/daext-kit.sh); got {os.environ.get(var)!r}",
                  file=sys.stderr)
            return 2
    from augmentd.nnunet.auglab_daext import load_auglab_params

    params = load_auglab_params(os.environ["AUGLAB_PARAMS_GPU_JSON"])
    initial = _initial_patch_size(args.patch)
    image, seg = _input(args.batch, initial)
    skip = set(filter(None, args.skip.split(",")))
    rows, failed = [], []
    parts = [("augmentd", lambda: bench_augmentd(args, params, image, seg, initial)),
             ("auglab", lambda: bench_auglab_gpu(args, image, seg)),
             ("cpu16", lambda: bench_cpu16(args, initial))]
    for part, fn in parts:
        if part in skip:
            continue
        t0 = time.perf_counter()
        try:  # one part failing (a missing package on the machine) keeps the others' figures
            rows.extend(fn())
        except Exception as err:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            failed.append((part, f"{type(err).__name__}: {err}"))
        print(f"[daext_bench] {part}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    lines = []
    for name, ms, where, how in rows:
        line = {"issue": 23, "metric": name, "value": round(ms, 3), "unit": "ms per batch",
                "date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": where, "how": how,
                "batch": args.batch, "patch": args.patch, "initial_patch_size": initial,
                "bench": "bench/daext_bench.py"}
        lines.append(line)
        print(json.dumps(line))
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(line) + "\n")
    table = [f"DAExt on one batch: B={args.batch}, patch {'x'.join(map(str, args.patch))} "
             f"(input at initial_patch_size {'x'.join(map(str, initial))}), {args.iters} iterations", "",
             "| figure | ms per batch | where | how |", "|---|---:|---|---|"]
    table += [f"| {n} | {ms:.1f} | {w} | {h} |" for n, ms, w, h in rows]
    table += [f"| {part} | FAILED | | {why[:300]} |" for part, why in failed]
    print("\n".join(table))
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "daext_table.md").write_text("\n".join(table) + "\n")
        with open(out / "daext_figures.jsonl", "a") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        for line in lines:
            (out / f"{line['metric']}.json").write_text(json.dumps(line) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

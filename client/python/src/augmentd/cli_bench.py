"""python -m augmentd bench: throughput and batch latency of an augmentd server, with progress shown.

Dataset mode (--dataset PATH, a preprocessed configuration folder the server may read): one session streams
--batches batches over StreamBatches with --credits requested ahead; the latency of a batch is the time
since the previous one arrived (what a training loop waits when it is faster than the server).
Patch mode (no --dataset): random (B, C, *patch) patches of --patch-size are sent with Augment, one call
at a time; the latency is the round trip. The first --warmup batches are excluded from the statistics.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, List

import numpy as np

from .local_server import connect_or_start


def _progress(done: int, total: int, samples: int, elapsed: float, latencies: List[float], tty: bool) -> None:
    if not tty and done != total and done % max(1, total // 10):
        return
    rate = samples / elapsed if elapsed > 0 else 0.0
    p50 = f"{np.percentile(latencies, 50) * 1e3:.1f} ms" if latencies else "-"
    bar = "#" * (30 * done // total)
    line = f"[bench] {done:4d}/{total} [{bar:<30}] {rate:7.1f} samples/s  p50 {p50}"
    print(("\r" + line) if tty else line, end="" if tty and done != total else "\n", file=sys.stderr, flush=True)


def measure(batches: Iterator, total: int, warmup: int, batch_size: int, show: Callable = _progress) -> dict:
    """Consumes ``warmup + total`` items of ``batches``; returns samples/s and latency percentiles (ms)."""
    tty = sys.stderr.isatty()
    start = time.monotonic()
    first_at = None
    for _ in range(warmup):
        next(batches)
        first_at = first_at or time.monotonic() - start
    t0 = last = time.monotonic()
    latencies: List[float] = []
    for i in range(total):
        next(batches)
        now = time.monotonic()
        first_at = first_at or now - start
        latencies.append(now - last)
        last = now
        show(i + 1, total, (i + 1) * batch_size, now - t0, latencies, tty)
    elapsed = last - t0
    lat = np.array(latencies) * 1e3
    return {"batches": total, "batch_size": batch_size, "samples_per_s": total * batch_size / elapsed,
            "batch_latency_ms": {"p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99)),
                                 "mean": float(lat.mean()), "max": float(lat.max())},
            "first_batch_s": first_at, "elapsed_s": elapsed}


def _patch_batches(client, session, batch_size: int, channels: int, size: List[int], seed: int) -> Iterator:
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((batch_size, channels, *size), dtype=np.float32)
    seg = rng.integers(0, 3, (batch_size, 1, *size)).astype(np.int16)
    index = 0
    while True:
        yield client.augment(session, image, seg, batch_index=index)
        index += 1


def run(args) -> int:
    import augmentd
    from .cli import PRESETS

    roots = [str(Path(args.dataset).resolve().parent.parent)] if args.dataset else []
    client, server = connect_or_start(args.address, device=args.device, dataset_roots=roots,
                                      binary=args.augmentd_bin, start_local="never" if args.address else "always")
    device = "" if args.device == "auto" else args.device
    stream = None
    try:
        if args.dataset:
            config = augmentd.dataset_session_config(str(Path(args.dataset).resolve()), batch_size=args.batch_size,
                                                     seed=args.seed, preset=PRESETS[args.preset], device=device,
                                                     prefetch_depth=args.prefetch_depth, name="bench")
            session = client.open_session(config)
            stream = client.stream_batches(session, credits=args.credits)
            batches = iter(stream)
        else:
            size = [int(v) for v in args.patch_size.split(",")]
            config = augmentd.patch_session_config(size, batch_size=args.batch_size, seed=args.seed,
                                                   preset=PRESETS[args.preset], num_image_channels=args.channels,
                                                   device=device, name="bench")
            session = client.open_session(config)
            batches = _patch_batches(client, session, args.batch_size, args.channels,
                                     session.initial_patch_size or size, args.seed)
        mode = "dataset" if args.dataset else "patch"
        print(f"[bench] {mode} mode, session {session.session_id} on {session.device} via "
              f"{server.address + ' (local server)' if server else args.address}: preset {args.preset}, batch "
              f"{args.batch_size}, crop {session.initial_patch_size}", file=sys.stderr, flush=True)
        result = measure(batches, args.batches, args.warmup, args.batch_size)
        if stream is not None:
            stream.close()
        stats = client.close_session(session)
    finally:  # server first (see LocalServer.stop)
        if server is not None:
            server.stop()
        client.close()
    result.update(mode=mode, device=session.device, preset=args.preset,
                  server_p50_ms=stats.batch_latency.p50_us / 1e3)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lat = result["batch_latency_ms"]
        print(f"{result['samples_per_s']:.1f} samples/s ({args.batches} batches of {args.batch_size} in "
              f"{result['elapsed_s']:.2f} s, first batch after {result['first_batch_s']:.2f} s); batch latency "
              f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms, max {lat['max']:.1f} ms; server-side p50 "
              f"{result['server_p50_ms']:.1f} ms")
    return 0


def add_parser(sub) -> None:
    from .cli import PRESETS, add_subcommand

    p = add_subcommand(sub, "bench", "measure a server: samples/s and batch latency p50/p99, with progress",
                       __doc__)
    p.add_argument("--dataset", default=None,
                   help="preprocessed configuration folder (dataset mode); default: patch mode with random data")
    p.add_argument("--patch-size", default="64,64,64", help="patch mode: the plan patch size (default 64,64,64)")
    p.add_argument("--channels", type=int, default=1, help="patch mode: image channels (default 1)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="nnunet_default")
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--batches", type=int, default=50, help="batches measured (default 50)")
    p.add_argument("--warmup", type=int, default=2, help="batches taken before measuring (default 2)")
    p.add_argument("--credits", type=int, default=4, help="dataset mode: batches requested ahead (default 4)")
    p.add_argument("--prefetch-depth", type=int, default=0, help="dataset mode: server-side prefetch (0: default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=run)

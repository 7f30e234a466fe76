#!/usr/bin/env python3
"""Patch mode's fixed costs on a CPU machine (issue 22): the parts of a `PatchAugmenter` call and of
`AugmentdPatchLoader.__next__` that do not depend on the GPU — Python on the client, thread hand-offs, the gRPC
stream — measured against the real augmentd binary on a CPU session (host shm input and output slots: the same
client code path as CUDA IPC except the copies, which are tiny here).

  hops     the CPython thread hand-off alone on this machine: threading.Event set → a waiting thread running
           (one way, median µs), and queue.SimpleQueue put → get.
  call     `aug(image, seg)` (submit + result, B=1, --patch³, ``--preset`` default 3 = nnunet_validation: a crop,
           so the server's compute is nearly nothing): call median, the server's compute p50 and each phase
           (PatchFuture.phases()); "fixed" = call - compute. Also submit() alone and result() of a batch that is
           already there (the Python of taking it).
  loader   `AugmentdPatchLoader` fed by an in-memory batch source, driven by a fake train step of --gil-ms of Python
           (holding the GIL, like the forward / backward launches) + --wait-ms asleep (the GPU, GIL free): the
           training thread's time per iteration in `next()` and the iteration against the step alone (measured
           after the loader closed); the difference is the loader's cost on the training thread's critical path
           (on a 2-core machine mostly next() itself: the GIL contention of a 16-core trainer is not reproduced).

--compare DIR runs each case in child processes with the client package from DIR/client/python/src as well
("before"; e.g. `git archive <base> client/python/src proto | tar -x -C DIR`), alternating before / after --rounds
times, and writes both to the table (same run, same server binary).

    python3 bench/patch_fixed_costs.py --compare /tmp/base --out bench/results/<date>-patch-fixed-costs-cpu.md
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
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _client_path(src: str) -> None:
    sys.path.insert(0, os.path.join(REPO, "tests", "python"))
    sys.path.insert(0, src)


def hops(n: int) -> dict:
    ev_a, ev_b = threading.Event(), threading.Event()
    stamps = []

    def other():
        for _ in range(n):
            ev_a.wait()
            ev_a.clear()
            stamps.append(time.perf_counter_ns())
            ev_b.set()

    t = threading.Thread(target=other)
    t.start()
    one_way = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        ev_a.set()
        ev_b.wait()
        ev_b.clear()
        one_way.append(stamps[-1] - t0)
    t.join()
    import queue

    q1, q2 = queue.SimpleQueue(), queue.SimpleQueue()

    def echo():
        for _ in range(n):
            q2.put((q1.get(), time.perf_counter_ns()))

    t = threading.Thread(target=echo)
    t.start()
    q_one = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        q1.put(t0)
        _, t1 = q2.get()
        q_one.append(t1 - t0)
    t.join()
    return {"event_us": statistics.median(one_way) / 1e3, "simplequeue_us": statistics.median(q_one) / 1e3}


def call(args, client) -> dict:
    import numpy as np

    import augmentd

    cfg = augmentd.patch_session_config([args.patch] * 3, batch_size=1, seed=1, preset=args.preset, device="cpu")
    with augmentd.PatchAugmenter(client, cfg, depth=2, hold=1) as aug:
        image = np.zeros((1, 1, *aug.patch_size), np.float32)
        seg = np.zeros((1, 1, *aug.patch_size), np.int16)
        for _ in range(50):
            aug(image, seg)
        times, phases, submit_py, result_py = [], [], [], []
        for _ in range(args.iters):
            t0 = time.perf_counter_ns()
            future = aug.submit(image, seg)
            t1 = time.perf_counter_ns()
            aug.result(future)
            t2 = time.perf_counter_ns()
            times.append((t2 - t0) / 1e6)
            submit_py.append((t1 - t0) / 1e6)
            p = future.phases()
            if p:
                phases.append(p)
        # result() of a batch that is already there: the Python of taking it, without any wait
        for _ in range(args.iters // 4):
            future = aug.submit(image, seg)
            while not future.done():
                time.sleep(0.0005)
            t0 = time.perf_counter_ns()
            aug.result(future)
            result_py.append((time.perf_counter_ns() - t0) / 1e6)
        st = client.stats(aug.session).sessions[0]
        compute = st.compute_latency.p50_us / 1e3
    out = {"call_ms": statistics.median(times), "p99_ms": sorted(times)[int(len(times) * 0.99)],
           "compute_ms": compute, "submit_py_ms": statistics.median(submit_py),
           "result_ready_py_ms": statistics.median(result_py)}
    out["fixed_ms"] = out["call_ms"] - compute
    for name in ("submit", "request", "queue", "compute", "delivery", "response", "result"):
        vals = [p[name] for p in phases if name in p]
        if vals:
            out["phase_" + name] = statistics.median(vals)
    return out


class _Batches:
    """In-memory batch source with ThreadedBatches' interface (the crop's cost is not what is measured here)."""

    def __init__(self, shape):
        import numpy as np

        self.image = np.zeros(shape, np.float32)
        self.seg = np.zeros(shape, np.int16)

    def __next__(self):
        return self.image, self.seg, ["case"]

    def recycle(self, pair) -> None:
        pass

    def close(self) -> None:
        pass


def _busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += 1


def loader(args, client) -> dict:
    import augmentd
    from augmentd.nnunet.patch_trainer import AugmentdPatchLoader

    def step():
        _busy(args.gil_ms)
        time.sleep(args.wait_ms / 1e3)

    def steps_alone(n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            step()
            out.append((time.perf_counter_ns() - t0) / 1e6)
        return out

    alone = steps_alone(5)  # warm-up
    cfg = augmentd.patch_session_config([args.patch] * 3, batch_size=2, seed=1, preset=args.preset, device="cpu",
                                        deep_supervision_scales=[[1, 1, 1], [.5, .5, .5]])
    aug = augmentd.PatchAugmenter(client, cfg, depth=2, hold=1)
    ld = AugmentdPatchLoader(_Batches((2, 1, *aug.patch_size)), aug, True, "bench", ahead=2)
    try:
        for _ in range(10):
            next(ld)
            step()
        in_next, step_ms, iters = [], [], []
        for _ in range(args.loader_iters):
            t0 = time.perf_counter_ns()
            next(ld)
            t1 = time.perf_counter_ns()
            step()
            t2 = time.perf_counter_ns()
            in_next.append((t1 - t0) / 1e6)
            step_ms.append((t2 - t1) / 1e6)
            iters.append((t2 - t0) / 1e6)
    finally:
        ld.close()
    alone = steps_alone(args.loader_iters // 2)  # the step alone, after the loader is gone (same process, warm)
    base = statistics.median(alone)
    return {"step_alone_ms": base, "next_ms": statistics.median(in_next), "next_mean_ms": statistics.mean(in_next),
            "step_ms": statistics.median(step_ms), "iter_ms": statistics.median(iters),
            "iter_mean_ms": statistics.mean(iters), "overhead_ms": statistics.median(iters) - base}


def child(args) -> None:
    _client_path(args.src)
    import augmentd

    out = {"src": args.src, "hops": hops(2000)}
    with augmentd.Client(args.address) as client:
        out["call"] = call(args, client)
        out["loader"] = loader(args, client)
    print("RESULT " + json.dumps(out), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("AUGMENTD_BIN", os.path.join(REPO, "build", "server", "augmentd")))
    ap.add_argument("--patch", type=int, default=16)
    ap.add_argument("--preset", type=int, default=3,
                    help="default 3: nnunet_validation (a crop: the server's compute is ~0)")
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--loader-iters", type=int, default=150)
    ap.add_argument("--gil-ms", type=float, default=3.0)
    ap.add_argument("--wait-ms", type=float, default=7.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", default="", help="a tree whose client/python/src is the 'before'")
    ap.add_argument("--out", default="")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--src", default=os.path.join(REPO, "client", "python", "src"), help=argparse.SUPPRESS)
    ap.add_argument("--address", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    _client_path(os.path.join(REPO, "client", "python", "src"))
    os.environ["AUGMENTD_BIN"] = args.bin
    from augmentd_server import ServerProcess

    server = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", "--max_batch_size=2", "--batch_workers=1"])
    address = server.wait_for_serving()[0]
    srcs = [("after", os.path.join(REPO, "client", "python", "src"))]
    if args.compare:
        srcs.insert(0, ("before", os.path.join(args.compare, "client", "python", "src")))
    results = {name: [] for name, _ in srcs}
    try:
        for _ in range(args.rounds):
            for name, src in srcs:
                cmd = [sys.executable, os.path.abspath(__file__), "--child", "--src", src, "--address", address,
                       "--patch", str(args.patch), "--preset", str(args.preset), "--iters", str(args.iters),
                       "--loader-iters", str(args.loader_iters), "--gil-ms", str(args.gil_ms),
                       "--wait-ms", str(args.wait_ms)]
                env = dict(os.environ, PYTHONPATH="")
                out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
                if not line:
                    raise RuntimeError(f"{name} child failed:\n{out.stdout}\n{out.stderr}")
                results[name].append(json.loads(line[0][7:]))
                print(name, json.dumps(results[name][-1]), flush=True)
    finally:
        server.stop()

    def med(name, *path):
        vals = []
        for r in results[name]:
            v = r
            for k in path:
                v = v.get(k) if isinstance(v, dict) else None
            if v is not None:
                vals.append(v)
        return statistics.median(vals) if vals else float("nan")

    rows = [("hand-off: Event set → waiter runs (µs)", ("hops", "event_us")),
            ("hand-off: SimpleQueue put → get (µs)", ("hops", "simplequeue_us")),
            ("call median (ms)", ("call", "call_ms")), ("call p99 (ms)", ("call", "p99_ms")),
            ("server compute p50 (ms)", ("call", "compute_ms")), ("fixed = call - compute (ms)", ("call", "fixed_ms")),
            ("submit() Python (ms)", ("call", "submit_py_ms")),
            ("result() of a ready batch, Python (ms)", ("call", "result_ready_py_ms"))] + \
        [(f"phase {p} (ms)", ("call", "phase_" + p)) for p in
         ("submit", "request", "queue", "compute", "delivery", "response", "result")] + \
        [("loader: fake step alone (ms)", ("loader", "step_alone_ms")),
         ("loader: next() on the training thread, median (ms)", ("loader", "next_ms")),
         ("loader: next() mean (ms)", ("loader", "next_mean_ms")),
         ("loader: step with the loader running, median (ms)", ("loader", "step_ms")),
         ("loader: iteration mean (ms)", ("loader", "iter_mean_ms")),
         ("loader: overhead per iteration = iteration - step alone, medians (ms)", ("loader", "overhead_ms"))]
    names = [n for n, _ in srcs]
    lines = [f"# Patch mode's fixed costs on the CPU (issue 22) — {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores", "",
             f"Date {datetime.date.today()}. Command: `python3 {' '.join(sys.argv)}`. augmentd CPU session, "
             f"B=1 {args.patch}³ (loader: B=2), preset {args.preset}, host shm in + out slots; medians of "
             f"{args.rounds} rounds (children alternating {' / '.join(names)}), each {args.iters} calls, "
             f"{args.loader_iters} loader iterations (fake step {args.gil_ms} ms Python + {args.wait_ms} ms asleep).",
             "", "| figure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, path in rows:
        lines.append(f"| {label} | " + " | ".join(f"{med(n, *path):.3f}" for n in names) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

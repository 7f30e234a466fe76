"""One nnU-Net training process of the end-to-end benchmark: times every iteration of a real nnU-Net trainer.

    python bench/e2e/train_driver.py --work /tmp/e2e --trainer nnUNetTrainer --mode loader --n-proc-da 12 \
        --device cuda:0 --warmup 20 --iters 150 --max-seconds 40 --json /tmp/e2e/run.json

The trainer is created as ``nnunetv2.run.run_training`` does (``get_trainer_from_args``: class looked up by name,
plans and dataset.json of the preprocessed dataset, fold 0; cudnn.benchmark on CUDA, one torch thread) and
started with its own ``on_train_start`` (network, optimizer, loss, data loaders). Then ``--warmup`` untimed and up
to ``--iters`` timed iterations (stopping early after ``--max-seconds``) of::

    batch = next(trainer.dataloader_train)     # wait-for-data time
    trainer.train_step(batch)                  # step time (ends with loss.cpu(): the GPU work is done)

Modes: ``loader`` (the trainer's own data loaders: nnU-Net's NonDetMultiThreadedAugmenter with
``nnUNet_n_proc_DA=--n-proc-da`` workers, or augmentd's for an augmentd trainer) and ``compute`` (one batch taken
once, moved to the device, reused for every step: no data loading at all) and ``paired`` (an augmentd trainer only:
``--pairs`` pairs of a compute-only phase on one cloned augmentd batch and a loader phase, ``--iters`` timed
iterations each after ``--settle`` untimed ones; ``paired.py`` says why and how the figure is formed).

Multi-tenant runs (``--ready-file``/``--go-file``): after the warm-up the driver creates ``--ready-file``, waits
for ``--go-file`` (written by the orchestrator once every process is ready; its content is the common start time,
``time.time()``), then iterates until ``start + --max-seconds``, so all tenants are timed over the same window.

Writes one JSON object (``--json``, and a line ``E2E-RESULT {...}`` on stdout): per-iteration wait and step times,
their summary, GPU utilisation sampled every 50 ms over the timed window (NVML through torch), memory, delivery.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DATASET_ID = 990


def _percentile(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(q / 100 * (len(s) - 1)))))
    return s[k]


def summarize(wait_s, step_s, batch_size, window_s):
    it = [w + s for w, s in zip(wait_s, step_s)]
    n = len(it)
    ms = lambda v: round(v * 1000, 3)  # noqa: E731
    return {
        "iters": n,
        "window_s": round(window_s, 3),
        "ms_per_iter_median": ms(_percentile(it, 50)),
        "ms_per_iter_mean": ms(sum(it) / n) if n else None,
        "wait_ms_median": ms(_percentile(wait_s, 50)),
        "wait_ms_mean": ms(sum(wait_s) / n) if n else None,
        "wait_ms_p99": ms(_percentile(wait_s, 99)),
        "wait_fraction": round(sum(wait_s) / max(sum(it), 1e-9), 4),
        "step_ms_median": ms(_percentile(step_s, 50)),
        "samples_per_s": round(n * batch_size / window_s, 3) if window_s > 0 else None,
    }


class GpuSampler:
    """Samples GPU utilisation (%) of one device every ``period`` s through torch.cuda.utilization (NVML)."""

    def __init__(self, device, period=0.05):
        self.device, self.period = device, period
        self.samples = []
        self.error = None
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        import torch

        if self.device.type != "cuda":
            self.error = "not a CUDA device"
            return self
        try:
            torch.cuda.utilization(self.device)
        except Exception as err:  # noqa: BLE001 - NVML missing: report, do not fail the run
            self.error = f"{type(err).__name__}: {err}"
            return self

        def loop():
            while not self._stop.wait(self.period):
                try:
                    self.samples.append(torch.cuda.utilization(self.device))
                except Exception as err:  # noqa: BLE001
                    self.error = str(err)
                    return

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        return {"gpu_util_mean": round(sum(self.samples) / len(self.samples), 1) if self.samples else None,
                "gpu_util_samples": len(self.samples), "gpu_util_error": self.error}


def setup_env(args):
    work = Path(args.work).resolve()
    os.environ.update(nnUNet_raw=str(work / "raw"), nnUNet_preprocessed=str(work / "preprocessed"),
                      nnUNet_results=str(work / "results" / (args.label or "run")))
    os.environ.setdefault("nnUNet_compile", "False")
    predictions = work / "cascade_predictions" / args.configuration
    if predictions.is_dir():
        # make_dataset.py --cascade: the faked previous stage, where nnU-Net looks for this trainer's (its
        # folder_with_segs_from_previous_stage: <results>/<dataset>/<trainer>__nnUNetPlans__3d_lowres/...)
        for ds in (work / "preprocessed").iterdir():
            link = work / "results" / (args.label or "run") / ds.name / f"{args.trainer}__nnUNetPlans__3d_lowres" / \
                "predicted_next_stage" / args.configuration
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(predictions, target_is_directory=True)
    # compute mode never uses the loaders: 0 makes nnU-Net build single-threaded ones (no worker processes).
    os.environ["nnUNet_n_proc_DA"] = str(0 if args.mode == "compute" else args.n_proc_da)
    sys.path.insert(0, str(REPO / "client" / "python" / "src"))
    from augmentd.nnunet.registration import ext_trainer_dir

    ext = [str(ext_trainer_dir()), str(HERE / "trainers")]
    os.environ["nnUNet_extTrainer"] = os.pathsep.join(ext + [p for p in os.environ.get("nnUNet_extTrainer", "")
                                                             .split(os.pathsep) if p and p not in ext])


def make_trainer(args, device):
    import torch
    from nnunetv2.run.run_training import get_trainer_from_args

    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.deterministic = False
        torch.backends.cudnn.benchmark = True
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    else:
        torch.set_num_threads(args.cpu_threads or os.cpu_count())
    return get_trainer_from_args(str(DATASET_ID), args.configuration, 0, args.trainer, "nnUNetPlans", False, device)


def start_trainer(trainer, deliveries):
    """on_train_start; for an augmentd trainer, tries the deliveries in order. Returns (delivery used, why the
    ones before it failed)."""
    is_augmentd = hasattr(trainer, "_augmentd_close")
    if not is_augmentd:
        trainer.on_train_start()
        return "nnunet", ""
    errors = []
    for delivery in deliveries:
        os.environ["AUGMENTD_DELIVERY"] = delivery
        try:
            trainer.on_train_start()
        except Exception as err:  # noqa: BLE001 - try the next delivery, report all failures if none works
            errors.append(f"{delivery}: {type(err).__name__}: {err}")
            print(f"[driver] delivery {delivery} failed: {errors[-1]}", flush=True)
            continue
        from augmentd.v1 import server_info_pb2

        used = trainer._augmentd_loaders[0].session.response.delivery
        name = server_info_pb2.DeliveryKind.Name(used).replace("DELIVERY_KIND_", "").lower()
        return name, "; ".join(errors)
    raise RuntimeError("no delivery worked: " + " | ".join(errors))


def shutdown(trainer):
    from batchgenerators.dataloading.nondet_multi_threaded_augmenter import NonDetMultiThreadedAugmenter

    if hasattr(trainer, "_augmentd_close"):
        trainer._augmentd_close()
        return
    for loader in (trainer.dataloader_train, trainer.dataloader_val):
        if isinstance(loader, NonDetMultiThreadedAugmenter):
            loader._finish()


def profile(one, iters, device):
    """torch.profiler over ``iters`` more iterations: the ops that take the most time, as printable tables."""
    import torch
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(iters):
            with torch.profiler.record_function("e2e_iteration"):
                one()
    tables = {"cpu": prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)}
    if device.type == "cuda":
        tables["cuda"] = prof.key_averages().table(sort_by="self_device_time_total", row_limit=15)
    for name, table in tables.items():
        print(f"E2E-PROFILE {name} ({iters} iterations)\n{table}", flush=True)
    return tables


def wait_for_go(ready_file, go_file, timeout):
    Path(ready_file).write_text(str(os.getpid()))
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(go_file):
            text = Path(go_file).read_text().strip()
            if text:
                return float(text)
        time.sleep(0.01)
    raise TimeoutError(f"no go file {go_file} within {timeout} s")


def run_paired(args, trainer, device, result, one_b):
    """``--mode paired`` (paired.py): c / b phases alternating in this process; returns the result object."""
    import numpy as np
    import torch
    from paired import clone_batch, run_phases, summarize_pairs

    fixed = clone_batch(next(trainer.dataloader_train))

    def one_c():
        a = time.perf_counter()
        out = trainer.train_step(fixed)
        return 0.0, time.perf_counter() - a, float(out["loss"])

    util = {"c": [], "b": []}
    samplers = {}

    def on_phase(kind, k):
        samplers[kind] = GpuSampler(device).start()

    def after_phase(kind, k):
        mean = samplers.pop(kind).stop()["gpu_util_mean"]
        if mean is not None:
            util[kind].append(mean)

    w0 = time.perf_counter()
    phases = run_phases(one_c, one_b, args.pairs, args.iters, args.settle, on_phase, after_phase)
    window = time.perf_counter() - w0
    b_iters = [t for p in phases["b"] for t in p]
    b_waits = [w for p in phases["b_wait"] for w in p]
    # samples/s over the b phases' own time (the whole window also holds c phases and untimed iterations)
    result.update(summarize(b_waits, [t - w for t, w in zip(b_iters, b_waits)], result["batch_size"], sum(b_iters)))
    paired = summarize_pairs(phases)
    paired.update({"gpu_util_c": round(sum(util["c"]) / len(util["c"]), 1) if util["c"] else None,
                   "gpu_util_b": round(sum(util["b"]) / len(util["b"]), 1) if util["b"] else None,
                   "settle": args.settle, "window_s": round(window, 2)})
    result.update({
        "paired": paired, "gpu_util_mean": paired["gpu_util_b"],
        "loss_finite": bool(np.all(np.isfinite(phases["losses"]))),
        "max_mem_allocated_mib": round(torch.cuda.max_memory_allocated(device) / 2 ** 20) if device.type == "cuda"
        else None,
        "c_ms": [[round(1000 * v, 3) for v in p] for p in phases["c"]],
        "b_ms": [[round(1000 * v, 3) for v in p] for p in phases["b"]],
    })
    return result


def run(args):
    setup_env(args)
    import numpy as np
    import torch

    device = torch.device(args.device)
    if args.switch_interval:
        # How long a Python thread may hold the GIL before another may take it: the trainer's loop, its loader
        # threads and gRPC's all contend for it (a diagnostic of the patch stages).
        sys.setswitchinterval(args.switch_interval)
    t0 = time.monotonic()
    trainer = make_trainer(args, device)
    delivery, delivery_errors = start_trainer(trainer, args.delivery.split(","))
    if args.mode == "paired" and delivery == "nnunet":
        raise SystemExit(f"--mode paired measures an augmentd trainer; {args.trainer} is not one")
    trainer.on_train_epoch_start()
    startup_s = time.monotonic() - t0
    result = {"label": args.label, "trainer": args.trainer, "mode": args.mode, "device": str(device),
              "n_proc_da": args.n_proc_da if args.mode == "loader" and delivery == "nnunet" else None,
              "delivery": delivery if args.mode != "compute" else "none (fixed GPU batch)" if device.type == "cuda"
              else "none (fixed batch)",
              "batch_size": int(trainer.batch_size), "patch_size": [int(p) for p in
                                                                      trainer.configuration_manager.patch_size],
              "delivery_errors": delivery_errors, "startup_s": round(startup_s, 2), "pid": os.getpid(),
              "switch_interval_s": sys.getswitchinterval()}
    losses, wait_s, step_s, stamps = [], [], [], []
    try:
        fixed = None
        if args.mode == "compute":
            batch = next(trainer.dataloader_train)
            shutdown(trainer)  # no loader runs while timing
            target = batch["target"]
            fixed = {"data": batch["data"].to(device),
                     "target": [t.to(device) for t in target] if isinstance(target, list) else target.to(device),
                     "keys": batch["keys"]}

        def one():
            a = time.perf_counter()
            b = fixed if fixed is not None else next(trainer.dataloader_train)
            m = time.perf_counter()
            out = trainer.train_step(b)
            e = time.perf_counter()
            return m - a, e - m, float(out["loss"])

        for _ in range(args.warmup):
            one()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        if args.mode == "paired":
            return run_paired(args, trainer, device, result, one), trainer
        if args.go_file:
            start = wait_for_go(args.ready_file, args.go_file, args.go_timeout)
            while time.time() < start:
                time.sleep(0.001)
            deadline = start + args.max_seconds
        else:
            deadline = time.time() + args.max_seconds
        sampler = GpuSampler(device).start()
        w0 = time.perf_counter()
        for i in range(args.iters):
            w, s, loss = one()
            wait_s.append(w)
            step_s.append(s)
            losses.append(loss)
            stamps.append(time.perf_counter() - w0)
            if time.time() >= deadline:
                break
        window = time.perf_counter() - w0
        result.update(sampler.stop())
        if args.profile:
            try:
                result["profile"] = profile(one, args.profile, device)
            except Exception as err:  # noqa: BLE001 - the timing stands without the profile
                result["profile"] = {"error": f"{type(err).__name__}: {err}"}
    except BaseException:
        if args.mode != "compute":
            shutdown(trainer)
        raise
    result.update(summarize(wait_s, step_s, result["batch_size"], window))
    result.update({
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "loss_finite": bool(np.all(np.isfinite(losses))),
        "max_mem_allocated_mib": round(torch.cuda.max_memory_allocated(device) / 2 ** 20) if device.type == "cuda"
        else None,
        "max_mem_reserved_mib": round(torch.cuda.max_memory_reserved(device) / 2 ** 20) if device.type == "cuda"
        else None,
        "wait_ms": [round(v * 1000, 3) for v in wait_s], "step_ms": [round(v * 1000, 3) for v in step_s],
        "t_s": [round(v, 4) for v in stamps],
    })
    return result, trainer


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True, help="folder holding raw/ preprocessed/ results/ (make_dataset.py)")
    p.add_argument("--trainer", default="nnUNetTrainer", help="trainer class name, looked up like nnUNetv2_train")
    p.add_argument("--mode", choices=("loader", "compute", "paired"), default="loader",
                   help="paired: an augmentd trainer's compute-only and loader phases alternating (paired.py)")
    p.add_argument("--pairs", type=int, default=6, help="paired: c / b phase pairs")
    p.add_argument("--settle", type=int, default=5, help="paired: untimed iterations at the start of each phase")
    p.add_argument("--configuration", default="3d_fullres",
                   help="nnU-Net configuration (2d, 3d_cascade_fullres: make_dataset.py --configurations / --cascade)")
    p.add_argument("--n-proc-da", type=int, default=12, help="nnUNet_n_proc_DA for nnU-Net's own loader")
    p.add_argument("--delivery", default="cuda_ipc,auto",
                   help="augmentd trainers: AUGMENTD_DELIVERY values to try in order")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--cpu-threads", type=int, default=0)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--iters", type=int, default=150)
    p.add_argument("--max-seconds", type=float, default=60.0, help="timed window cap (multi-tenant: the window)")
    p.add_argument("--ready-file", default="")
    p.add_argument("--go-file", default="")
    p.add_argument("--go-timeout", type=float, default=300.0)
    p.add_argument("--profile", type=int, default=0, help="profile this many extra iterations (torch.profiler)")
    p.add_argument("--switch-interval", type=float, default=float(os.environ.get("E2E_SWITCH_INTERVAL") or 0),
                   help="sys.setswitchinterval(S) before the trainer is created (0: Python's default, 5 ms; env "
                        "E2E_SWITCH_INTERVAL; run_e2e.py's patch variant switch50 sets 0.05)")
    p.add_argument("--label", default="")
    p.add_argument("--json", default="")
    args = p.parse_args(argv)
    if args.switch_interval < 0:
        p.error(f"--switch-interval {args.switch_interval}: not negative")
    if args.go_file and not args.ready_file:
        p.error("--go-file needs --ready-file")
    result, trainer = run(args)
    text = json.dumps(result)
    if args.json:
        Path(args.json).write_text(text)
    brief = {k: v for k, v in result.items() if k not in ("wait_ms", "step_ms", "t_s", "profile", "c_ms", "b_ms")}
    print("E2E-RESULT " + json.dumps(brief), flush=True)
    # The result is written: shut the loaders down (closes augmentd sessions, stops nnU-Net's workers), bounded in
    # time, then leave without waiting for gRPC / loader threads at interpreter exit.
    threading.Timer(30.0, lambda: os._exit(0)).start()
    if args.mode != "compute":
        shutdown(trainer)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

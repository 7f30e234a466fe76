"""CPU engine benchmark: augmentd (engine-internal, C++ harness bench/engine_cpu_bench, one thread) vs
batchgeneratorsv2 0.3.5 (torch.set_num_threads(1) + threadpoolctl limits of 1), interleaved in one run.

    AUGMENTD_BUILD_DIR=build-perf .venv/bin/python bench/engine_cpu_vs_bgv2.py [--reps 7] [--samples 12]
        [--before-build DIR] [--out bench/results/<date>-cpu-engine-vs-bgv2.md]

* Per transform (nnU-Net's default configuration, forced on; patch 128³, 1 channel, int16 labels −1..3; spatial
  from the 205³ initial_patch_size): for each rep bgv2 draws its parameters (numpy/torch seeded with the rep) and
  runs the transform (get_parameters + apply, as in training, on fresh input copies made before the clock starts),
  and the harness applies *the same parameters* (bgv2's get_parameters() dict, injected) with Transform::Apply —
  identical work on both sides. Blur runs with benchmark=True as in nnU-Net, warmed up first.
* Whole pipeline, per sample: bgv2's real nnUNetTrainer.get_training_transforms vs the engine's nnunet_default
  preset (AugmentBatch, B = 1, one thread, includes packing the output tensors), both drawing their own random
  parameters for `--samples` samples per rep (fixed seeds, so every rep does the same work); with the default
  probabilities and with every transform on (apply_probability, spatial p_rotation / p_scaling and p_per_channel
  set to 1 on both sides).
* Interleaving: every rep runs bgv2 and augmentd back to back (order alternating between reps) and the table
  reports medians over reps, so load changes on the shared host hit both sides alike. `--before-build` adds a
  third contender: the harness of another build (e.g. the code before an optimisation) in the same rotation.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python" / "parity"))
from bgv2_ref import build_bgv2, params_to_json, seed_all  # noqa: E402
from batchgeneratorsv2.transforms.utils.random import RandomTransform  # noqa: E402
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer  # noqa: E402

PS = [128, 128, 128]
DS = [[1, 1, 1], [.5, .5, .5], [.25, .25, .25], [.125, .125, .125], [.0625, .0625, .0625]]
ROT = [-30.0 / 360 * 2.0 * np.pi, 30.0 / 360 * 2.0 * np.pi]

# Same cases (labels, kinds, configs) as bench/engine_cpu_bench.cc.
CASES = [
    ("spatial (rotate+scale, labels -1..3)", "spatial",
     dict(patch_size=PS, patch_center_dist_from_border=0, random_crop=False, p_elastic_deform=0, p_rotation=1,
          rotation=ROT, p_scaling=1, scaling=[0.7, 1.4], p_synchronize_scaling_across_axes=1,
          bg_style_seg_sampling=False, border_mode_seg="constant", padding_value_seg=-1), True),
    ("gaussian_noise", "gaussian_noise", dict(noise_variance=[0, 0.1], p_per_channel=1, synchronize_channels=True),
     False),
    ("gaussian_blur", "gaussian_blur", dict(blur_sigma=[0.5, 1.0], synchronize_channels=False, synchronize_axes=False,
                                            p_per_channel=1, benchmark=True), False),
    ("multiplicative_brightness", "multiplicative_brightness",
     dict(multiplier_range={"bg_contrast": [0.75, 1.25]}, synchronize_channels=False, p_per_channel=1), False),
    ("contrast", "contrast", dict(contrast_range={"bg_contrast": [0.75, 1.25]}, preserve_range=True,
                                  synchronize_channels=False, p_per_channel=1), False),
    ("simulate_low_resolution", "simulate_low_resolution",
     dict(scale=[0.5, 1], synchronize_channels=False, synchronize_axes=True, ignore_axes=None, allowed_channels=None,
          p_per_channel=1), False),
    ("gamma (retain stats)", "gamma", dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=0,
                                           synchronize_channels=False, p_per_channel=1, p_retain_stats=1), False),
    ("gamma (inverted, retain stats)", "gamma", dict(gamma={"bg_contrast": [0.7, 1.5]}, p_invert_image=1,
                                                     synchronize_channels=False, p_per_channel=1, p_retain_stats=1),
     False),
    ("mirror", "mirror", dict(allowed_axes=[0, 1, 2]), False),
    ("remove_label (-1 -> 0)", "remove_label", dict(label_value=-1, set_to=0, segmentation_channels=None), False),
    ("downsample_seg_for_ds", "downsample_seg_for_ds", dict(ds_scales=DS), False),
]


def make_volume(shape, seed):
    """Same recipe as MakeVolume in bench/engine_cpu_bench.cc (values differ: different generators)."""
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((1, *shape), dtype=np.float32)
    seg = np.zeros((1, *shape), np.int16)
    c = [s // 2 for s in shape]
    seg[0, max(c[0] - 30, 0):c[0] + 30, max(c[1] - 40, 0):c[1] + 40, max(c[2] - 35, 0):c[2] + 35] = 1
    seg[0, max(c[0] - 10, 0):c[0] + 10, max(c[1] - 10, 0):c[1] + 10, :] = 2
    seg[0, c[0] + 12:c[0] + 20, c[1] + 15:c[1] + 25, max(c[2] - 5, 0):c[2] + 5] = 3
    seg[0, :4] = -1
    return img, seg


class Harness:
    """bench/engine_cpu_bench --serve: one JSON request per line."""

    def __init__(self, build_dir: Path):
        exe = build_dir / "bench" / "engine_cpu_bench"
        if not exe.exists():
            sys.exit(f"{exe} not found: ninja -C {build_dir} engine_cpu_bench")
        self.proc = subprocess.Popen([str(exe), "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1)

    def __call__(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"engine_cpu_bench: {reply['error']} (request {req['op']})")
        return reply

    def close(self):
        self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def bgv2_pipeline(all_on: bool):
    tr = nnUNetTrainer.get_training_transforms(PS, tuple(ROT), DS, (0, 1, 2), False, None, False, None, None, None)
    if all_on:  # the same edits the harness makes to the preset's JSON
        for t in tr.transforms:
            inner = t
            if isinstance(t, RandomTransform):
                t.apply_probability = 1
                inner = t.transform
            for attr in ("p_rotation", "p_scaling", "p_per_channel"):
                if hasattr(inner, attr):
                    setattr(inner, attr, 1.0)
    return tr


class Stopwatch:
    """Wall time and this process's CPU time (user + system) in ms; bgv2 runs on this one thread."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def elapsed(self):
        return (time.perf_counter() - self.wall) * 1e3, (time.process_time() - self.cpu) * 1e3


def median(pairs, which=1):
    """Median of the wall (0) or CPU (1) times of (wall, cpu) pairs."""
    return statistics.median(p[which] for p in pairs)


def summary(label, times):
    return (f"{label:44s} cpu " + "  ".join(f"{k} {median(v):8.2f}" for k, v in times.items())
            + f"  ratio {median(times['bgv2']) / median(times['augmentd']):5.2f} | wall "
            + "  ".join(f"{k} {median(v, 0):8.2f}" for k, v in times.items())
            + f"  ratio {median(times['bgv2'], 0) / median(times['augmentd'], 0):5.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7, help="interleaved repetitions per row (medians), >= 5")
    ap.add_argument("--samples", type=int, default=12, help="pipeline samples per rep")
    ap.add_argument("--before-build", type=Path, default=None, help="build dir of a baseline engine_cpu_bench")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="", help="substring filter on row labels")
    args = ap.parse_args()
    build = Path(os.environ.get("AUGMENTD_BUILD_DIR", "build"))
    if not build.is_absolute():
        build = ROOT / build
    torch.set_num_threads(1)
    limits = threadpool_limits(1)  # noqa: F841 (kept for the whole run)

    contenders = {"augmentd": Harness(build)}
    if args.before_build is not None:
        contenders["before"] = Harness(args.before_build.resolve())
    setup = {name: h(op="setup", patch_size=PS) for name, h in contenders.items()}
    initial = setup["augmentd"]["initial_patch_size"]
    big_img, big_seg = make_volume(initial, 1)
    small_img, small_seg = make_volume(PS, 2)
    load_start = os.getloadavg()
    t_start = datetime.datetime.now(datetime.timezone.utc)

    rows = []  # (label, {contender: [ms...]})
    for label, kind, cfg, use_initial in CASES:
        if args.only and args.only not in label:
            continue
        img, seg = (big_img, big_seg) if use_initial else (small_img, small_seg)
        bg = build_bgv2(kind, cfg)
        if kind == "gaussian_blur":
            bg.benchmark = True  # nnU-Net's setting (the parity reference switches it off)

        def fresh():
            return {"image": torch.from_numpy(img.copy()), "segmentation": torch.from_numpy(seg.copy())}

        for w in range(8 if kind == "gaussian_blur" else 1):  # warm-up (blur: fill bgv2's FFT-vs-conv cache)
            seed_all(10_000 + w)
            bg(**fresh())
        times = {"bgv2": []}
        times.update({name: [] for name in contenders})
        for r in range(args.reps):
            seed_all(r)
            params = params_to_json(kind, bg.get_parameters(**fresh()))
            order = ["bgv2", *contenders] if r % 2 == 0 else [*contenders, "bgv2"]
            for who in order:
                if who == "bgv2":
                    dd = fresh()
                    seed_all(r)  # the same draws as `params`
                    with torch.no_grad():
                        w = Stopwatch()
                        bg(**dd)
                        times["bgv2"].append(w.elapsed())
                else:
                    rep = contenders[who](op="transform", kind=kind, config=cfg, params=params,
                                          input="initial" if use_initial else "patch", seed=1, sample_index=r)
                    times[who].append((rep["ms"], rep["cpu_ms"]))
        rows.append((label, times))
        print(summary(label, times), flush=True)

    n = args.samples
    for all_on in (False, True):
        label = ("whole pipeline, every transform on" if all_on else "whole nnunet_default pipeline") + \
            f" (per sample, {n} samples/rep)"
        if args.only and args.only not in label:
            continue
        tr = bgv2_pipeline(all_on)
        seed_all(12345)
        for _ in range(4):  # warm-up (blur benchmark cache, allocator)
            tr(image=torch.from_numpy(big_img.copy()), segmentation=torch.from_numpy(big_seg.copy()))
        times = {"bgv2": []}
        times.update({name: [] for name in contenders})
        for r in range(args.reps):
            order = ["bgv2", *contenders] if r % 2 == 0 else [*contenders, "bgv2"]
            for who in order:
                if who == "bgv2":
                    inputs = [(torch.from_numpy(big_img.copy()), torch.from_numpy(big_seg.copy())) for _ in range(n)]
                    seed_all(777)
                    with torch.no_grad():
                        w = Stopwatch()
                        for im, sg in inputs:
                            tr(image=im, segmentation=sg)
                        wall, cpu = w.elapsed()
                        times["bgv2"].append((wall / n, cpu / n))
                    del inputs
                else:
                    rep = contenders[who](op="pipeline", all_on=all_on, samples=n, first_sample_index=0, seed=777)
                    times[who].append((rep["ms_per_sample"], rep["cpu_ms_per_sample"]))
        rows.append((label, times))
        print(summary(label, times), flush=True)

    load_end = os.getloadavg()
    for h in contenders.values():
        h.close()
    write_report(args, rows, initial, t_start, load_start, load_end, list(contenders))


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except Exception:  # noqa: BLE001
        pass
    return "unknown"


def write_report(args, rows, initial, t_start, load_start, load_end, contenders):
    out = args.out or ROOT / "bench" / "results" / f"{t_start:%Y-%m-%d}-cpu-engine-vs-bgv2.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    before = "before" in contenders
    import batchgeneratorsv2  # noqa: F401
    from importlib.metadata import version
    with open(out, "w") as f:
        f.write("# augmentd CPU engine vs batchgeneratorsv2, one core each (engine-internal)\n\n")
        f.write(f"* Run: {t_start:%Y-%m-%d %H:%M} UTC, host `{os.uname().nodename}`, CPU `{cpu_model()}`, "
                f"{os.cpu_count()} vCPUs shared with other users; load average (1/5/15 min) "
                f"{load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f} at the start, "
                f"{load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f} at the end.\n")
        f.write(f"* Baseline: batchgeneratorsv2 {version('batchgeneratorsv2')}, torch {torch.__version__} "
                f"(`torch.set_num_threads(1)`, threadpoolctl limit 1); augmentd: `bench/engine_cpu_bench --serve` "
                f"(one thread, engine-internal: no C ABI, no copies on the clock).\n")
        f.write(f"* Data: patch {PS}, input {initial} (initial_patch_size), 1 image channel (standard normal), int16 "
                f"labels -1..3. Per-transform rows: every transform forced on, both sides run bgv2's drawn "
                f"parameters (injected into augmentd); pipeline rows: {args.samples} samples per rep, each side "
                f"draws its own parameters.\n")
        f.write(f"* Medians over {args.reps} interleaved reps (bgv2 and augmentd back to back, order alternating). "
                f"Ratio = bgv2 time / augmentd time: > 1 means augmentd is faster per core. CPU time (user + "
                f"system of the timing process, one working thread on each side) is the per-core cost and is not "
                f"inflated when the shared host's scheduler runs other work; wall time is shown too.\n\n")
        for which, title in ((1, "CPU time per call (process CPU time: the per-core cost)"),
                             (0, "Wall time per call")):
            f.write(f"## {title}, median ms\n\n")
            head = "| what | bgv2 | augmentd | ratio |"
            sep = "| --- | ---: | ---: | ---: |"
            if before:
                head += " augmentd before | ratio before |"
                sep += " ---: | ---: |"
            f.write(head + "\n" + sep + "\n")
            for label, t in rows:
                b, a = median(t["bgv2"], which), median(t["augmentd"], which)
                line = f"| {label} | {b:.2f} | {a:.2f} | {b / a:.2f} |"
                if before:
                    o = median(t["before"], which)
                    line += f" {o:.2f} | {b / o:.2f} |"
                f.write(line + "\n")
            f.write("\n")
        f.write("## Raw per-rep times, ms (wall/cpu)\n\n")
        for label, t in rows:
            f.write(f"* {label}: " + "; ".join(f"{k} " + ", ".join(f"{w:.1f}/{c:.1f}" for w, c in v)
                                                for k, v in t.items()) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

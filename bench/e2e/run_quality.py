"""The ``quality`` stage (issue 26): real nnU-Net trainings with nnU-Net's loaders and with augmentd's, same schedule,
to nnU-Net's own final validation, then test-set prediction and Dice.

    python bench/e2e/run_quality.py --work /tmp/e2eq --out $OUT [--device cuda]

1. the dataset (quality_dataset.py: generated, planned and preprocessed by nnU-Net; cached in --work);
2. for each trainer of ``--trainers`` and each seed of ``--seeds``: ``nnUNetv2_train 991 3d_fullres 0 -tr
   <trainer>_e2eq`` (the schedule of trainers/quality_trainers.py, from E2E_Q_EPOCHS / E2E_Q_ITERS /
   E2E_Q_VAL_ITERS), each seed with its own ``nnUNet_results``; up to ``--parallel`` at once (one GPU is shared);
3. as each training ends: its final validation Dice (``fold_0/validation/summary.json``), ``nnUNetv2_predict`` of
   ``imagesTs`` with ``checkpoint_final.pth``, and nnU-Net's ``compute_metrics_on_folder`` against ``labelsTs``;
4. ``quality-table.md``, ``quality-results.jsonl`` (one object per run), ``figures-quality.jsonl`` in --out, and
   every log under ``--out/logs``.

Everything is bounded by ``--deadline`` seconds: a training still running then is stopped and reported with the
epoch it reached (the schedule did not fit: fewer epochs or iterations next time).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from quality_dataset import DATASET_ID, DATASET_NAME  # noqa: E402
from quality_table import PAIRS, quality_figures, render_quality  # noqa: E402

T0 = time.monotonic()
PREDICT = ("import sys; sys.argv[0] = 'nnUNetv2_predict'; "
           "from nnunetv2.inference.predict_from_raw_data import predict_entry_point; predict_entry_point()")
LOADER = {t: ("augmentd" if "Augmentd" in t else "nnunet") for pair in PAIRS.values() for t in pair}
AUG = {t: aug for aug, pair in PAIRS.items() for t in pair}


def log(msg: str) -> None:
    print(f"[quality {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def remaining(args) -> float:
    return args.deadline - (time.monotonic() - T0)


def progress(logfile: Path) -> dict:
    """The last epoch nnU-Net started, its last pseudo Dice and mean epoch time, from a training's log."""
    text = logfile.read_text(errors="replace") if logfile.exists() else ""
    epochs = re.findall(r"^.*Epoch (\d+)\s*$", text, re.M)
    dice = re.findall(r"Pseudo dice \[([^\]]*)\]", text)
    times = [float(v) for v in re.findall(r"Epoch time: ([\d.]+) s", text)]
    last = re.sub(r"np\.float\d+\(|\)", "", dice[-1]) if dice else ""  # "[np.float32(0.41), ...]" or "[0.41, ...]"
    return {"epochs": int(epochs[-1]) + 1 if epochs else 0,
            "pseudo_dice_last": [float(v) for v in last.replace(",", " ").split()] if dice else None,
            "epoch_s_mean": round(sum(times) / len(times), 2) if times else None}


def summary_dice(path: Path):
    """(foreground mean Dice, {label: mean Dice}) of an nnU-Net summary.json."""
    s = json.loads(path.read_text())
    return s["foreground_mean"]["Dice"], {str(k): v["Dice"] for k, v in s["mean"].items()}


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_bounded(cmd, env, logfile: Path, timeout: float):
    """Runs cmd in its own process group with output to logfile; returns the exit status or "timeout"."""
    with open(logfile, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
            rc = "timeout"
        _kill(proc)  # loader workers, export pools and local servers left in the group
    return rc


def _tail_error(logfile: Path) -> str:
    lines = logfile.read_text(errors="replace").splitlines() if logfile.exists() else []
    cause = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception)\b.*:", ln)), "")
    return cause[:300]


class Runner:
    def __init__(self, args, dataset: dict):
        self.args, self.dataset = args, dataset
        self.work = Path(args.work).resolve()
        self.out = Path(args.out).resolve()
        self.logs = self.out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.runs, self.lock = [], threading.Lock()
        self.meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "machine": os.environ.get("E2E_MACHINE", ""), "dataset": dataset, "tta": args.tta,
                     "command": os.environ.get("E2E_COMMAND", ""),
                     "schedule": {"epochs": args.epochs, "iters": args.iters, "val_iters": args.val_iters}}
        (self.out / "quality-results.jsonl").unlink(missing_ok=True)

    def env(self, seed: int) -> dict:
        a = self.args
        ext = [str(HERE / "trainers")]  # quality_trainers.py (it imports the augmentd trainers itself)
        env = dict(os.environ, nnUNet_raw=str(self.work / "raw"),
                   nnUNet_preprocessed=str(self.work / "preprocessed"),
                   nnUNet_results=str(self.work / "results" / f"seed{seed}"), nnUNet_n_proc_DA=str(a.n_proc_da),
                   nnUNet_def_n_proc=str(a.export_processes), nnUNet_compile="False", OMP_NUM_THREADS="1",
                   E2E_Q_EPOCHS=str(a.epochs), E2E_Q_ITERS=str(a.iters), E2E_Q_VAL_ITERS=str(a.val_iters),
                   E2E_Q_SEED=str(seed), AUGMENTD_SEED=str(1000 * seed + 7),
                   nnUNet_extTrainer=os.pathsep.join(ext),
                   PYTHONPATH=os.pathsep.join([str(REPO / "client" / "python" / "src"),
                                               os.environ.get("PYTHONPATH", "")]))
        env.pop("AUGMENTD_ADDRESS", None)  # every augmentd trainer starts its own local server, as for a user
        return env

    def record(self, run: dict) -> None:
        with self.lock:
            self.runs.append(run)
            with open(self.out / "quality-results.jsonl", "a") as f:
                f.write(json.dumps(run) + "\n")
            self.write()

    def write(self) -> str:
        table = render_quality(self.runs, self.meta)
        (self.out / "quality-table.md").write_text(table)
        figures = quality_figures(self.runs, self.meta)
        (self.out / "figures-quality.jsonl").write_text("".join(json.dumps(f) + "\n" for f in figures))
        return table

    def job(self, trainer: str, seed: int) -> None:
        a = self.args
        cls = f"{trainer}_e2eq"
        label = f"{trainer}-s{seed}"
        run = {"label": label, "trainer": trainer, "loader": LOADER[trainer], "aug": AUG[trainer], "seed": seed}
        env = self.env(seed)
        budget = remaining(a) - a.predict_reserve
        if budget < a.min_train_seconds:
            self.record(dict(run, skipped=f"not enough time left ({remaining(a):.0f} s)"))
            log(f"{label}: skipped (time)")
            return
        train_log = self.logs / f"train-{label}.log"
        fold = Path(env["nnUNet_results"]) / DATASET_NAME / f"{cls}__nnUNetPlans__3d_fullres" / "fold_0"
        val_summary = fold / "validation" / "summary.json"
        val_summary.unlink(missing_ok=True)  # a warm machine's earlier run must not stand in for this one
        t0 = time.monotonic()
        cmd = [sys.executable, "-m", "nnunetv2.run.run_training", str(DATASET_ID), "3d_fullres", "0", "-tr", cls,
               "-device", a.device]
        log(f"{label}: nnUNetv2_train {' '.join(cmd[3:])} (timeout {budget:.0f} s)")
        rc = run_bounded(cmd, env, train_log, budget)
        run["train_s"] = round(time.monotonic() - t0, 1)
        run.update(progress(train_log))
        if rc != 0 or not val_summary.is_file():
            why = "timeout" if rc == "timeout" else f"exit {rc}"
            run["error"] = (f"training {why} at epoch {run['epochs']}/{a.epochs}"
                            + (f": {_tail_error(train_log)}" if rc != "timeout" else ""))
            self.record(run)
            log(f"{label}: FAILED ({run['error']}); see logs/{train_log.name}")
            return
        run["val_dice"], run["val_dice_labels"] = summary_dice(val_summary)
        log(f"{label}: trained in {run['train_s']:.0f} s, validation Dice {run['val_dice']:.4f}")

        pred = self.work / "predictions" / label
        pred.mkdir(parents=True, exist_ok=True)
        for old in pred.glob("*"):
            if old.is_file():
                old.unlink()
        raw = self.work / "raw" / DATASET_NAME
        cmd = [sys.executable, "-c", PREDICT, "-i", str(raw / "imagesTs"), "-o", str(pred), "-d", str(DATASET_ID),
               "-c", "3d_fullres", "-f", "0", "-tr", cls, "-chk", "checkpoint_final.pth", "-npp", "1", "-nps", "1",
               "-device", a.device] + ([] if a.tta else ["--disable_tta"])
        t1 = time.monotonic()
        predict_log = self.logs / f"predict-{label}.log"
        rc = run_bounded(cmd, env, predict_log, remaining(a) - 5)
        run["predict_s"] = round(time.monotonic() - t1, 1)
        if rc != 0:
            run["error"] = f"nnUNetv2_predict exit {rc}: {_tail_error(predict_log)}"
            self.record(run)
            log(f"{label}: prediction FAILED; see logs/{predict_log.name}")
            return
        try:
            run["test_dice"], run["test_dice_labels"] = self.test_dice(pred)
        except Exception as err:  # noqa: BLE001 - record it, the other runs go on
            run["error"] = f"test Dice: {type(err).__name__}: {err}"
        self.record(run)
        log(f"{label}: test Dice {run.get('test_dice', float('nan')):.4f} (prediction {run['predict_s']:.0f} s)")

    def test_dice(self, pred: Path):
        from nnunetv2.evaluation.evaluate_predictions import compute_metrics_on_folder
        from nnunetv2.imageio.nibabel_reader_writer import NibabelIO

        raw = self.work / "raw" / DATASET_NAME
        n_ref = len(list((raw / "labelsTs").glob("*.nii")))
        n_pred = len(list(pred.glob("*.nii")))
        if n_pred != n_ref:
            raise RuntimeError(f"{n_pred} predictions for {n_ref} test cases in {pred}")
        compute_metrics_on_folder(str(raw / "labelsTs"), str(pred), str(pred / "summary.json"), NibabelIO(), ".nii",
                                  [1, 2], None, num_processes=1, chill=False)
        return summary_dice(pred / "summary.json")

    def run_all(self) -> None:
        a = self.args
        jobs = [(t, s) for s in a.seeds for t in a.trainers]  # seed-major: a cut-off keeps whole seeds
        slots = threading.Semaphore(a.parallel)

        def one(trainer, seed):
            with slots:
                try:
                    self.job(trainer, seed)
                except Exception as err:  # noqa: BLE001 - one broken run must not stop the others
                    self.record({"label": f"{trainer}-s{seed}", "trainer": trainer, "loader": LOADER[trainer],
                                 "aug": AUG[trainer], "seed": seed, "error": f"{type(err).__name__}: {err}"})

        threads = [threading.Thread(target=one, args=j, daemon=True) for j in jobs]
        for t in threads:
            t.start()
            time.sleep(a.stagger)  # the first ones import and start while the next are launched
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=a.report_every)
                if t.is_alive():
                    break
            status = [f"{p.name[6:-4]} epoch {progress(p)['epochs']}" for p in sorted(self.logs.glob("train-*.log"))]
            log("progress: " + ", ".join(status))


def prepare(args) -> dict:
    """quality_dataset.py in a subprocess (its own nnU-Net environment); its JSON line."""
    cmd = [sys.executable, str(HERE / "quality_dataset.py"), "--work", args.work, "--train", str(args.train_cases),
           "--test", str(args.test_cases), "--np", str(args.prep_processes), "--patch", args.patch,
           "--batch", str(args.batch)] + (["--shrink-network"] if args.shrink_network else []) + args.dataset_args
    logfile = Path(args.out) / "logs" / "quality-prep.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    rc = run_bounded(cmd, dict(os.environ), logfile, min(args.prep_timeout, remaining(args)))
    lines = logfile.read_text(errors="replace").splitlines()
    if rc != 0 or not lines or not lines[-1].startswith("{"):
        raise SystemExit(f"quality dataset preparation failed (exit {rc}):\n" + "\n".join(lines[-30:]))
    return json.loads(lines[-1])


def main(argv=None) -> int:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default=env("E2E_Q_DEVICE", "cuda"), choices=("cuda", "cpu"))
    p.add_argument("--trainers", default=env("E2E_Q_TRAINERS", ",".join(t for pair in PAIRS.values() for t in pair)))
    p.add_argument("--seeds", default=env("E2E_Q_SEEDS", "1,2"))
    p.add_argument("--epochs", type=int, default=int(env("E2E_Q_EPOCHS", "20")))
    p.add_argument("--iters", type=int, default=int(env("E2E_Q_ITERS", "50")))
    p.add_argument("--val-iters", type=int, default=int(env("E2E_Q_VAL_ITERS", "10")))
    p.add_argument("--parallel", type=int, default=int(env("E2E_Q_PARALLEL", "8")),
                   help="trainings at once (they share the one GPU)")
    p.add_argument("--n-proc-da", type=int, default=int(env("E2E_Q_N_PROC_DA", "2")),
                   help="nnUNet_n_proc_DA of each nnU-Net-loader training")
    p.add_argument("--export-processes", type=int, default=int(env("E2E_Q_EXPORT_PROCESSES", "2")),
                   help="nnUNet_def_n_proc (nnU-Net's validation export pool)")
    p.add_argument("--train-cases", type=int, default=int(env("E2E_Q_CASES", "24")))
    p.add_argument("--test-cases", type=int, default=int(env("E2E_Q_TEST_CASES", "8")))
    p.add_argument("--patch", default=env("E2E_Q_PATCH", "32,64,64"))
    p.add_argument("--batch", type=int, default=int(env("E2E_Q_BATCH", "2")))
    p.add_argument("--shrink-network", action="store_true", default=env("E2E_Q_SHRINK", "0") == "1")
    p.add_argument("--dataset-args", default=env("E2E_Q_DATASET_ARGS", ""),
                   help="more quality_dataset.py flags (difficulty knobs), e.g. '--contrast 1.0 --shape 24,64,64'")
    p.add_argument("--tta", type=int, default=int(env("E2E_Q_TTA", "1")), help="test prediction with mirroring")
    p.add_argument("--prep-processes", type=int, default=int(env("E2E_PREP_PROCESSES", str(os.cpu_count()))))
    p.add_argument("--prep-timeout", type=float, default=300)
    p.add_argument("--predict-reserve", type=float, default=float(env("E2E_Q_PREDICT_RESERVE", "45")),
                   help="seconds kept for prediction and Dice after the trainings' timeout")
    p.add_argument("--min-train-seconds", type=float, default=30)
    p.add_argument("--stagger", type=float, default=1.0)
    p.add_argument("--report-every", type=float, default=30.0)
    p.add_argument("--quiet", action="store_true", help="do not print the table at the end (quality-table.md only)")
    p.add_argument("--deadline", type=float, default=float(env("E2E_Q_DEADLINE", env("E2E_DEADLINE", "480"))))
    args = p.parse_args(argv)
    args.trainers = [t for t in args.trainers.split(",") if t]
    args.seeds = [int(v) for v in args.seeds.split(",") if v]
    args.dataset_args = args.dataset_args.split()
    bad = [t for t in args.trainers if t not in LOADER]
    if bad or not args.seeds:
        p.error(f"--trainers {bad}: not among {sorted(LOADER)}; --seeds: at least one")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    log(f"dataset in {args.work} ({remaining(args):.0f} s left)")
    dataset = prepare(args)
    log(f"dataset: {json.dumps({k: dataset[k] for k in ('patch_size', 'batch_size', 'spacing', 'seconds')})}")
    runner = Runner(args, dataset)
    runner.run_all()
    table = runner.write()
    if not args.quiet:
        print("\n" + table, flush=True)
    return 0 if runner.runs and all("error" not in r and "skipped" not in r for r in runner.runs) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Orchestrates the end-to-end benchmark (issue 11) over train_driver.py processes; writes the tables.

    python bench/e2e/run_e2e.py --work /tmp/e2e --out $OUT --stages single,da5,multi [--gpus 2]

Stages (each run is a separate training process, bounded by a timeout; the whole is bounded by --deadline):

* ``single``: default augmentation — (a) nnUNetTrainer with nnU-Net's own loader for each ``--n-proc-da``,
  (b) nnUNetTrainerAugmentd (deliveries tried in ``--delivery`` order), (c) compute only (fixed GPU batch).
* ``da5``: the same with nnUNetTrainerDA5 / nnUNetTrainerAugmentdDA5 (preset nnunet_da5).
* ``2d`` / ``cascade`` (issue 24): configuration ``2d`` / ``3d_cascade_fullres`` (make_dataset.py
  ``--configurations 3d_fullres,2d`` / ``--cascade``): compute only vs nnUNetTrainerAugmentd (the trainer's own
  pipeline translated; the cascade's is an explicit list with the previous stage's predictions read by the server),
  like ``single``; figures ``e2e_2d_pct`` / ``e2e_cascade_pct`` (augmentd over compute only, ms/iter median) in
  ``figures-configurations.jsonl``.
* ``cores`` (issue 26): for each N in ``--cores`` (``E2E_CORES``), the whole run pinned to N cores with
  ``taskset -c`` (the trainer and everything it starts: nnU-Net's ``nnUNet_n_proc_DA = N - 1`` workers, or
  augmentd's local server), for each augmentation of ``--cores-aug``: compute only, the augmentd trainer and
  nnU-Net's own loader. ``--cores-compute once`` measures compute only once per augmentation (pinned to the
  smallest N) instead of at every N. Table and figures (``figures-cores.jsonl``): ``cores_table.py``.
* ``patch`` / ``patch_da5`` (issue 22): nnUNetTrainerAugmentdPatch(DA5) against compute only, each run pinned to
  N cores of ``--patch-cores`` (``E2E_PATCH_CORES``, default 4,16) with ``taskset -c`` and nnUNet_n_proc_DA = N - 1
  (so many loader threads). Table and figures (``figures-patch.jsonl``, ``e2e_patch_pct_{aug}_{N}c``):
  ``patch_table.py``.
* ``paired`` (issues 22, 24): one process per entry of ``--paired-runs`` (``E2E_PAIRED_RUNS``: patch, patch_da5,
  default, da5, cascade, 2d) whose compute-only phases (one cloned augmentd batch) and augmentd phases alternate
  (``train_driver.py --mode paired``, ``paired.py``: why, and how the figure is formed), pinned to
  ``--paired-cores`` like the patch stages. Figures ``figures-paired.jsonl`` under the issues' metric names.
* ``multi``: for each N in ``--tenants``: one augmentd serves N concurrent nnUNetTrainerAugmentd processes (on
  cuda:i mod --gpus), all timed over the same ``--multi-seconds`` window; with ``--multi-baseline`` also N
  concurrent compute-only processes (the GPU's share without any data loading) for the largest N. With
  ``--placements every,one`` (issue 12's question) the augmentd runs repeat with every session placed on GPU 0
  (``AUGMENTD_DEVICE`` = GPU 0's UUID for every trainer; a trainer that cannot see GPU 0 falls back from CUDA IPC
  to the next of ``--one-gpu-delivery``) — variant ``augmentd-one-gpu``.

Repeats (``--repeats N``, ``E2E_REPEATS``; stages ``patch``, ``patch_da5``, ``2d``, ``cascade``): two compute-only
processes differ by 1.5–1.7 % on the H200, so one pair cannot resolve a 3 % target. The runs of each N / configuration
go c, b, c, b, … (with ``--patch-variants``: c, b, b-<variant>…, c, b, …), each record with ``rep`` and, for N > 1,
labels ending in ``-r<rep>``; a repeat starts only if all of its runs fit the time left, else it and the later ones
are recorded as skipped. Figures and tables: per kind the median over repeats of the per-run ms/iter medians
(repeats.py), every run listed (``runs_c``, ``runs_b``). ``--patch-variants switch50,threads2,ahead1``: the patch
trainer again after each of its runs with ``sys.setswitchinterval(0.05)`` / ``AUGMENTD_PATCH_THREADS=2`` /
``AUGMENTD_PATCH_AHEAD=1`` (kind ``b-<variant>``, extra table columns, no figure).

Outputs in --out: ``results.jsonl`` (one object per run, per-iteration times included), ``table.md`` (rewritten
after every run, so a timeout still leaves a table), ``key-lines.txt`` (the raw result/error lines), and
``logs/`` (every process's full log). The table is printed last.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from cores_table import cores_figures, render_cores  # noqa: E402
from e2e_table import multi_row, render  # noqa: E402
from patch_table import patch_figures, render_patch  # noqa: E402
from paired import RUNS as PAIRED_RUNS, paired_figures, parse_runs, render_paired  # noqa: E402
from repeats import HOW, aggregate  # noqa: E402

T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[e2e {time.monotonic() - T0:6.1f}s] {msg}", flush=True)


class Ctx:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work).resolve()
        self.out = Path(args.out).resolve()
        self.logs = self.out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.results = []
        self.meta = {}

    def remaining(self) -> float:
        return self.args.deadline - (time.monotonic() - T0)

    def record(self, result: dict) -> None:
        self.results.append(result)
        with open(self.out / "results.jsonl", "a") as f:
            f.write(json.dumps(result) + "\n")
        brief = {k: v for k, v in result.items()
                 if k not in ("wait_ms", "step_ms", "t_s", "sessions", "profile", "c_ms", "b_ms")}
        self.key(f"E2E-RESULT {json.dumps(brief)}")
        for name, table in (result.get("profile") or {}).items():
            self.key(f"E2E-PROFILE {result['label']} {name}\n{table}")
        self.write_tables()

    def write_tables(self) -> str:
        others = [r for r in self.results if r.get("stage") not in ("cores", "patch", "paired")]
        table = (render(others, self.meta) if others or not self.results else "") + \
            render_cores(self.results, self.meta) + render_patch(self.results, self.meta) + \
            render_paired(self.results, self.meta)
        (self.out / "table.md").write_text(table)
        for name, figures in (("cores", cores_figures(self.results, self.meta)),
                              ("patch", patch_figures(self.results, self.meta)),
                              ("paired", paired_figures(self.results, self.meta)),
                              ("configurations", configuration_figures(self.results, self.meta))):
            if figures:
                (self.out / f"figures-{name}.jsonl").write_text("".join(json.dumps(f) + "\n" for f in figures))
        return table

    def key(self, line: str) -> None:
        with open(self.out / "key-lines.txt", "a") as f:
            f.write(line.rstrip() + "\n")


def driver_cmd(ctx: Ctx, label: str, trainer: str, mode: str, device: str, n_proc_da: int = 0,
               max_seconds: float = 0, extra=(), delivery: str = "", configuration: str = "3d_fullres"):
    a = ctx.args
    cmd = [sys.executable, str(HERE / "train_driver.py"), "--work", str(ctx.work), "--trainer", trainer,
           "--configuration", configuration,
           "--mode", mode, "--device", device, "--warmup", str(a.warmup), "--iters", str(a.iters),
           "--max-seconds", str(max_seconds or a.run_seconds), "--delivery", delivery or a.delivery, "--label", label,
           "--json", str(ctx.logs / f"{label}.json")]
    if n_proc_da:
        cmd += ["--n-proc-da", str(n_proc_da)]
    if a.cpu_threads:
        cmd += ["--cpu-threads", str(a.cpu_threads)]
    if a.profile and not extra:  # single-process runs only
        cmd += ["--profile", str(a.profile)]
    return cmd + list(extra)


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _failure(label: str, why: str, logfile: Path, **fields) -> dict:
    lines = logfile.read_text(errors="replace").splitlines() if logfile.exists() else []
    # The exception line ("SomeError: message") says more than the exit status.
    cause = next((ln for ln in reversed(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception|Exit)\b.*:", ln)), "")
    return dict(label=label, error=f"{why}: {cause[:400]}" if cause else why, log_tail=lines[-15:], **fields)


def run_one(ctx: Ctx, label: str, cmd, env=None, **fields) -> dict:
    """Runs one driver command (``cmd``, possibly behind a ``taskset`` prefix), records its result and returns it."""
    budget = min(ctx.args.run_timeout, ctx.remaining() - 5)
    if budget < ctx.args.min_run_seconds:
        ctx.record(dict(label=label, skipped=f"not enough time left ({ctx.remaining():.0f} s)", **fields))
        log(f"{label}: skipped (time)")
        return ctx.results[-1]
    logfile = ctx.logs / f"{label}.log"
    result_file = ctx.logs / f"{label}.json"
    result_file.unlink(missing_ok=True)
    shown = [c for c in cmd if c not in (sys.executable, str(HERE / "train_driver.py"))]
    log(f"{label}: {' '.join(shown)} (timeout {budget:.0f} s)")
    with open(logfile, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=budget)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
            rc = "timeout"
        _kill(proc)  # leftover loader workers of the process group
    if result_file.exists():  # written before the loaders are shut down: a hang there does not lose it
        result = json.loads(result_file.read_text())
        result.update(fields)
        if rc != 0:
            result["exit"] = rc
        ctx.record(result)
        log(f"{label}: {result['ms_per_iter_median']:.1f} ms/iter (wait {result['wait_ms_median']:.2f} ms median), "
            f"{result['iters']} iters, delivery {result['delivery']}")
    else:
        ctx.record(_failure(label, f"exit {rc}", logfile, **fields))
        log(f"{label}: FAILED (exit {rc}); see logs/{label}.log")
        for line in ctx.results[-1]["log_tail"]:
            ctx.key(f"  {label}| {line}")
    return ctx.results[-1]


def run_repeats(ctx: Ctx, repeats: int, plan) -> None:
    """Runs ``plan(rep, tag)`` — the runs of one repeat, a list of (label, cmd, env, fields), e.g. compute only then
    augmentd, each label ending in ``tag`` — for rep = 0 … repeats − 1, one repeat after the other (c, b, c, b, …:
    drift hits both kinds). ``tag`` is "" with one repeat (today's labels), else ``-r<rep>``; every record gets
    ``rep``. Time: with one repeat each run is bounded as before (run_one); with several, a repeat starts only if the
    whole of it fits the time left (each run taken as long as the longest run so far here, at least
    --min-run-seconds); otherwise it and every later repeat are recorded as skipped, so no compute only is left
    without its augmentd run by the budget."""
    longest = 0.0
    for rep in range(repeats):
        tag = f"-r{rep}" if repeats > 1 else ""
        runs = plan(rep, tag)
        need = len(runs) * max(ctx.args.min_run_seconds, longest) + 5
        if repeats > 1 and ctx.remaining() < need:
            why = (f"not enough time left for repeat {rep + 1} of {repeats} ({ctx.remaining():.0f} s left, "
                   f"~{need:.0f} s needed)")
            for r in range(rep, repeats):
                for label, _, _, fields in plan(r, f"-r{r}"):
                    ctx.record(dict(label=label, skipped=why, rep=r, **fields))
            log(f"repeats {rep + 1}-{repeats} of {repeats}: skipped (time)")
            return
        for label, cmd, env, fields in runs:
            t = time.monotonic()
            run_one(ctx, label, cmd, env, rep=rep, **fields)
            longest = max(longest, time.monotonic() - t)


def stage_single(ctx: Ctx, da: str) -> None:
    a = ctx.args
    nn, aug = ("nnUNetTrainer", "nnUNetTrainerAugmentd") if da == "default" else \
        ("nnUNetTrainerDA5", "nnUNetTrainerAugmentdDA5")
    dev = a.device
    env = dict(os.environ, AUGMENTD_SEED="1234")
    env.pop("AUGMENTD_ADDRESS", None)  # the augmentd trainer starts its own server, as for a user
    # (c) and (b) first: their ratio is the headline; if time runs out, the nnU-Net loader runs are skipped.
    run_one(ctx, f"{da}-compute", driver_cmd(ctx, f"{da}-compute", nn, "compute", dev), env, stage=da, kind="c")
    run_one(ctx, f"{da}-augmentd", driver_cmd(ctx, f"{da}-augmentd", aug, "loader", dev), env, stage=da, kind="b")
    for n in a.n_proc_da:
        run_one(ctx, f"{da}-nnunet-{n}", driver_cmd(ctx, f"{da}-nnunet-{n}", nn, "loader", dev, n), env,
                stage=da, kind="a")


# Stage name → (nnU-Net configuration, figure metric).
CONFIGURATION_STAGES = {"2d": ("2d", "e2e_2d_pct"), "cascade": ("3d_cascade_fullres", "e2e_cascade_pct")}


def stage_configuration(ctx: Ctx, stage: str) -> None:
    """Compute only (c) and nnUNetTrainerAugmentd (b) on another configuration (issue 24)."""
    configuration, _ = CONFIGURATION_STAGES[stage]
    dev = ctx.args.device
    env = dict(os.environ, AUGMENTD_SEED="1234")
    env.pop("AUGMENTD_ADDRESS", None)
    # Diagnostic variants (where the overhead over compute only comes from): the augmentd trainer again with its
    # session elsewhere. cpu_session: the session on the CPU engine, batches through host shared memory (no server
    # work on the GPU, so no context switching between the server's and the trainer's GPU work); host_shm: the
    # GPU session delivering through host shared memory (the trainer copies the batch to the GPU).
    variants = {"cpu_session": {"AUGMENTD_DEVICE": "cpu", "AUGMENTD_DELIVERY": "host_shm"},
                "host_shm": {"AUGMENTD_DELIVERY": "host_shm"}}
    for v in ctx.args.config_variants:
        if v not in variants:
            raise SystemExit(f"--config-variants: unknown variant {v!r} ({', '.join(variants)})")

    def plan(rep, tag):
        runs = []
        for kind, trainer, mode in (("c", "nnUNetTrainer", "compute"), ("b", "nnUNetTrainerAugmentd", "loader")):
            label = f"{stage}-{'compute' if kind == 'c' else 'augmentd'}{tag}"
            runs.append((label, driver_cmd(ctx, label, trainer, mode, dev, configuration=configuration), env,
                         dict(stage=stage, kind=kind, configuration=configuration)))
        if rep == 0:  # the variants once, after the first pair (they are not part of the aggregate)
            for v in ctx.args.config_variants:
                label = f"{stage}-augmentd-{v}{tag}"
                runs.append((label, driver_cmd(ctx, label, "nnUNetTrainerAugmentd", "loader", dev,
                                               configuration=configuration,
                                               delivery=variants[v]["AUGMENTD_DELIVERY"]),
                             dict(env, **variants[v]), dict(stage=stage, kind=f"b-{v}", configuration=configuration)))
        return runs

    run_repeats(ctx, ctx.args.repeats, plan)


def configuration_figures(results, meta, issue=24):
    """figures.jsonl objects of the configuration stages: augmentd's ms/iter median over compute only's, in %; with
    repeats each kind's value is the median over repeats of the per-run medians (``runs_c`` / ``runs_b`` list them)."""
    date = str(meta.get("date", ""))[:10]
    machine = meta.get("machine") or meta.get("device", "")
    out = []
    for stage, (configuration, metric) in CONFIGURATION_STAGES.items():
        mine = [r for r in results if r.get("stage") == stage]
        c, b = (aggregate([r for r in mine if r.get("kind") == k]) for k in ("c", "b"))
        if b is None or c is None or not c["ms_per_iter_median"]:
            continue
        out.append({"issue": issue, "metric": metric,
                    "value": round(100.0 * (b["ms_per_iter_median"] / c["ms_per_iter_median"] - 1.0), 2), "unit": "%",
                    "date": date, "machine": machine, "configuration": configuration,
                    "baseline": {"what": "compute only, ms/iter median, same run" + (f"; {HOW}" if c["n"] > 1 else ""),
                                 "value": c["ms_per_iter_median"]},
                    "ms_per_iter_median": b["ms_per_iter_median"], "delivery": b.get("delivery"),
                    "gpu_busy_pct": b.get("gpu_util_mean"), "aggregate": HOW,
                    "repeats": {"c": c["n"], "b": b["n"]}, "runs_c": c["runs"], "runs_b": b["runs"]})
    return out


def pinned_cpus(n: int) -> list[int] | None:
    """The first n cores this process may run on (its affinity mask), None if it has fewer."""
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[:n] if n <= len(allowed) else None


def cpu_list(cpus) -> str:
    """``taskset -c`` form of a core list: ranges where contiguous, e.g. [0, 1, 2, 5] → "0-2,5"."""
    parts, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            parts.append(f"{start}-{c}" if c != start else str(c))
            start = None
    return ",".join(parts)


def pin_to(n: int):
    """(``taskset -c`` prefix, core list text, None) to pin a run to this process's first n cores, or
    (None, None, why not) when taskset is missing or fewer cores are available."""
    cpus, taskset = pinned_cpus(n), shutil.which("taskset")
    if cpus is None or taskset is None:
        return None, None, "no taskset on PATH" if taskset is None else \
            f"only {len(os.sched_getaffinity(0))} cores available"
    return [taskset, "-c", cpu_list(cpus)], cpu_list(cpus), None


def crop_workers(n: int) -> int:
    """Patch trainers' crop workers (AUGMENTD_PATCH_THREADS) on n cores: min(n − 1, E2E_PATCH_WORKERS_MAX = 4), at least
    1; n = 0 (unpinned): the cap."""
    cap = int(os.environ.get("E2E_PATCH_WORKERS_MAX", "4"))
    return max(1, min(n - 1 if n else cap, cap))


def stage_cores(ctx: Ctx) -> None:
    """Issue 26: each run pinned to N cores (``taskset -c``) with nnUNet_n_proc_DA = N - 1. Smallest N first (a
    run out of time drops the largest N, the case nnU-Net's maintainers already cover), both augmentations per N."""
    a = ctx.args
    env = dict(os.environ, AUGMENTD_SEED="1234")
    env.pop("AUGMENTD_ADDRESS", None)  # the augmentd trainer starts its own server, inside the same core set
    have_compute = set()
    for n in sorted(a.cores):
        pin, cpus, why = pin_to(n)
        for da in a.cores_aug:
            nn, aug = ("nnUNetTrainer", "nnUNetTrainerAugmentd") if da == "default" else \
                ("nnUNetTrainerDA5", "nnUNetTrainerAugmentdDA5")
            fields = dict(stage="cores", aug=da, cores=n, n_proc_da=n - 1)
            if why:
                for kind in ("c", "b", "a"):
                    ctx.record(dict(label=f"cores{n}-{da}-{kind}", kind=kind, skipped=why, **fields))
                log(f"cores {n} {da}: skipped ({why})")
                continue
            fields["cpus"] = cpus
            runs = [("b", aug, "loader"), ("a", nn, "loader")]
            if a.cores_compute == "each" or da not in have_compute:
                runs.insert(0, ("c", nn, "compute"))
                have_compute.add(da)
            for kind, trainer, mode in runs:
                label = f"cores{n}-{da}-" + {"c": "compute", "b": "augmentd", "a": "nnunet"}[kind]
                # N - 1 workers (0 for N = 1: nnU-Net's single-threaded loader inside the trainer process)
                cmd = pin + driver_cmd(ctx, label, trainer, mode, a.device) + ["--n-proc-da", str(n - 1)]
                run_one(ctx, label, cmd, env, kind=kind, **fields)


# --patch-variants: the patch trainer run again after each of its runs, with this environment (diagnostics).
PATCH_VARIANTS = {
    "switch50": {"E2E_SWITCH_INTERVAL": "0.05"},  # train_driver.py: sys.setswitchinterval(0.05) (Python: 0.005)
    "threads2": {"AUGMENTD_PATCH_THREADS": "2"},  # two crop-and-pad workers whatever N
    "ahead1": {"AUGMENTD_PATCH_AHEAD": "1"},      # one batch submitted ahead of the trainer (default 2)
}


def stage_patch(ctx: Ctx, da: str) -> None:
    """Issue 22: nnUNetTrainerAugmentdPatch (nnU-Net's loader, crop and pad in threads → augmentd patch mode on the
    trainer's GPU) against compute only, each run pinned to N cores (``--patch-cores``) with ``taskset -c`` as in the
    ``cores`` stage: nnUNet_n_proc_DA = N - 1 and min(N - 1, E2E_PATCH_WORKERS_MAX = 4) crop workers
    (AUGMENTD_PATCH_THREADS, at least 1; processes or threads as AUGMENTD_PATCH_WORKERS says); the
    trainer's local augmentd starts inside the same cores. Largest N first (the 16-core figures are the headline);
    compute only at every N, or (``--patch-compute once``) at the largest N only. Per N, ``--repeats`` repeats of
    compute only, the patch trainer and then each ``--patch-variants`` variant of it (kind ``b-<variant>``), in that
    order (run_repeats). Records: stage "patch"."""
    a = ctx.args
    nn, aug = ("nnUNetTrainer", "nnUNetTrainerAugmentdPatch") if da == "default" else \
        ("nnUNetTrainerDA5", "nnUNetTrainerAugmentdPatchDA5")
    have_compute = False
    for n in sorted(a.patch_cores, reverse=True):
        pin, cpus, why = pin_to(n)
        fields = dict(stage="patch", aug=da, cores=n, n_proc_da=n - 1)
        if why:
            for kind in ("c", "b"):
                ctx.record(dict(label=f"patch{n}-{da}-{kind}", kind=kind, skipped=why, **fields))
            log(f"patch {n} {da}: skipped ({why})")
            continue
        fields["cpus"] = cpus
        env = dict(os.environ, AUGMENTD_SEED="1234", AUGMENTD_PATCH_THREADS=str(crop_workers(n)))
        env.pop("AUGMENTD_ADDRESS", None)  # the trainer starts its own server, inside the same core set
        with_compute = a.patch_compute == "each" or not have_compute
        have_compute = True

        def plan(rep, tag, n=n, pin=pin, env=env, fields=fields, with_compute=with_compute):
            runs = [("c", nn, "compute", "compute", env)] if with_compute else []
            runs.append(("b", aug, "loader", "augmentd-patch", env))
            runs += [(f"b-{v}", aug, "loader", f"augmentd-patch-{v}", dict(env, **PATCH_VARIANTS[v]))
                     for v in a.patch_variants]
            out = []
            for kind, trainer, mode, what, run_env in runs:
                label = f"patch{n}-{da}-{what}{tag}"
                cmd = pin + driver_cmd(ctx, label, trainer, mode, a.device) + ["--n-proc-da", str(n - 1)]
                out.append((label, cmd, run_env, dict(fields, kind=kind)))
            return out

        run_repeats(ctx, a.repeats, plan)


def stage_paired(ctx: Ctx) -> None:
    """One process per entry of ``--paired-runs`` (paired.py): the augmentd trainer's compute-only and loader phases
    alternating, ``--paired-pairs`` × ``--paired-iters``. With ``--paired-cores N`` every run is pinned to N cores
    (``taskset -c``; nnUNet_n_proc_DA = N − 1, patch runs with min(N − 1, E2E_PATCH_WORKERS_MAX = 4) crop workers, as
    stage ``patch``), 0: unpinned. Records: stage "paired"."""
    a = ctx.args
    n = a.paired_cores
    pin, fields = [], {}
    if n:
        pin, cpus, why = pin_to(n)
        if why:
            for name in a.paired_runs:
                ctx.record(dict(label=f"paired-{name}", stage="paired", run=name, cores=n, skipped=why))
            return
        fields = {"cpus": cpus}
    for name in a.paired_runs:
        trainer, configuration, patch_mode, _, _ = PAIRED_RUNS[name]
        env = dict(os.environ, AUGMENTD_SEED="1234")
        env.pop("AUGMENTD_ADDRESS", None)  # the trainer starts its own server, inside the same core set
        if patch_mode:
            env["AUGMENTD_PATCH_THREADS"] = str(crop_workers(n))
        label = f"paired-{name}" + (f"-{n}c" if n else "")
        extra = ["--pairs", str(a.paired_pairs), "--settle", str(a.paired_settle), "--iters", str(a.paired_iters)]
        cmd = pin + driver_cmd(ctx, label, trainer, "paired", a.device, extra=extra, configuration=configuration) + \
            (["--n-proc-da", str(n - 1)] if n else [])
        run_one(ctx, label, cmd, env, stage="paired", run=name, trainer=trainer, configuration=configuration,
                cores=n or None, **fields)


def start_server(ctx: Ctx):
    """One augmentd for all tenants (augmentd.local_server: private unix socket, stopped with SIGTERM)."""
    sys.path.insert(0, str(REPO / "client" / "python" / "src"))
    from augmentd.local_server import LocalServer

    server = LocalServer(binary=ctx.args.augmentd_bin, device=ctx.args.server_device,
                         dataset_roots=[str(ctx.work / "preprocessed")], extra_args=ctx.args.server_args.split())
    server.wait_serving()
    return server


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far (all its threads; /proc/<pid>/stat), None if unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3, utime 14, stime 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuWindow:
    """The CPU cores process `pid` used on average over the wall-clock window [t_from, t_to] (a background thread
    reads its CPU time at both ends); ``cores()`` waits for the end, None if the process could not be read."""

    def __init__(self, pid: int, t_from: float, t_to: float):
        self._pid, self._from, self._to, self._cores = pid, t_from, t_to, None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        time.sleep(max(0.0, self._from - time.time()))
        c0, w0 = proc_cpu_seconds(self._pid), time.time()
        time.sleep(max(0.0, self._to - time.time()))
        c1, w1 = proc_cpu_seconds(self._pid), time.time()
        if c0 is not None and c1 is not None and w1 > w0:
            self._cores = (c1 - c0) / (w1 - w0)

    def cores(self) -> float | None:
        self._thread.join(timeout=max(1.0, self._to - time.time() + 5))
        return None if self._cores is None else round(self._cores, 2)


class SmiSampler:
    """nvidia-smi utilisation and memory of every GPU every 250 ms, into a CSV file (no-op without nvidia-smi)."""

    def __init__(self, path: Path):
        self.path = path
        self.proc = None
        try:
            self.f = open(path, "w")
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,index,utilization.gpu,memory.used",
                                          "--format=csv,noheader,nounits", "-lms", "250"], stdout=self.f,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        except FileNotFoundError:
            self.proc = None

    def stop(self, t_from: float, t_to: float) -> dict:
        if self.proc is None:
            return {}
        self.proc.terminate()
        self.proc.wait()
        self.f.close()
        return parse_smi(self.path.read_text(), t_from, t_to)


def parse_smi(text: str, t_from: float, t_to: float) -> dict:
    """Per GPU: the largest memory.used over the whole sampling, the mean utilisation within [t_from, t_to]
    (``time.time()`` seconds; nvidia-smi stamps local time to the millisecond)."""
    per_gpu = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            stamp, _, frac = parts[0].partition(".")
            ts = time.mktime(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + (frac or "0"))
            idx, util, mem = int(parts[1]), float(parts[2]), float(parts[3])
        except ValueError:
            continue
        g = per_gpu.setdefault(idx, {"util": [], "mem": []})
        g["mem"].append(mem)
        if t_from <= ts <= t_to:
            g["util"].append(util)
    return {"gpu_mem_mib_max": {i: max(g["mem"]) for i, g in per_gpu.items() if g["mem"]},
            "gpu_util_smi_mean": {i: round(sum(g["util"]) / len(g["util"]), 1) for i, g in per_gpu.items()
                                  if g["util"]}}


def run_tenants(ctx: Ctx, n: int, variant: str) -> None:
    a = ctx.args
    label = f"multi-{n}-{variant}"
    need = a.multi_seconds + a.multi_startup
    if ctx.remaining() - 10 < need:
        ctx.record(dict(label=label, stage="multi", tenants=n, variant=variant,
                        skipped=f"not enough time left ({ctx.remaining():.0f} s)"))
        log(f"{label}: skipped (time)")
        return
    sync = ctx.work / f"sync-{label}"
    sync.mkdir(parents=True, exist_ok=True)
    for p in sync.iterdir():
        p.unlink()
    go = sync / "go"
    server = None
    smi = SmiSampler(ctx.logs / f"{label}-smi.csv")
    procs = []
    try:
        one_gpu = variant == "augmentd-one-gpu"
        gpu0 = gpu_uuid(0) if one_gpu else ""
        if one_gpu and not gpu0:
            raise RuntimeError("no UUID for GPU 0 (nvidia-smi)")
        if variant.startswith("augmentd"):
            server = start_server(ctx)
        for i in range(n):
            (ctx.logs / f"{label}-{i}.json").unlink(missing_ok=True)
            env = dict(os.environ, AUGMENTD_SEED=str(1000 + 10 * i))
            dev = a.device
            if a.device.startswith("cuda") and a.gpus > 1:
                # as nnU-Net is run on a multi-GPU node: one GPU per process by CUDA_VISIBLE_DEVICES (nnU-Net's
                # trainer always uses cuda:0); the trainer names its GPU to the shared server by UUID
                env["CUDA_VISIBLE_DEVICES"] = str(i % a.gpus)
                dev = "cuda:0"
            if server:
                env.update(AUGMENTD_ADDRESS=server.address, AUGMENTD_LOCAL_SERVER="never")
            if one_gpu:
                env["AUGMENTD_DEVICE"] = gpu0
            trainer = "nnUNetTrainerAugmentd" if server else "nnUNetTrainer"
            mode = "loader" if server else "compute"
            cmd = driver_cmd(ctx, f"{label}-{i}", trainer, mode, dev, max_seconds=a.multi_seconds,
                             extra=["--iters", "1000000", "--warmup", str(a.multi_warmup),
                                    "--ready-file", str(sync / f"ready-{i}"), "--go-file", str(go),
                                    "--go-timeout", str(a.multi_startup + 30)],
                             delivery=a.one_gpu_delivery if one_gpu else "")
            f = open(ctx.logs / f"{label}-{i}.log", "w")
            procs.append((subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                                           start_new_session=True), f))
        log(f"{label}: {n} trainers started" + (f", augmentd at {server.address}" if server else ""))
        deadline = time.monotonic() + a.multi_startup
        while time.monotonic() < deadline:
            ready = sum((sync / f"ready-{i}").exists() for i in range(n))
            dead = [i for i, (p, _) in enumerate(procs) if p.poll() is not None]
            if ready == n or dead:
                break
            time.sleep(0.2)
        ready = sum((sync / f"ready-{i}").exists() for i in range(n))
        if ready < n:
            raise RuntimeError(f"only {ready}/{n} trainers ready (exited: "
                               f"{[i for i, (p, _) in enumerate(procs) if p.poll() is not None]})")
        start = time.time() + 0.5
        tmp = go.with_suffix(".tmp")
        tmp.write_text(repr(start))
        tmp.rename(go)
        log(f"{label}: all {n} ready, window {a.multi_seconds:g} s")
        cpu = CpuWindow(server.proc.pid, start, start + a.multi_seconds) if server else None
        for p, _ in procs:
            try:
                p.wait(timeout=max(5.0, start + a.multi_seconds + 60 - time.time()))
            except subprocess.TimeoutExpired:
                _kill(p)
        gpu = smi.stop(start, start + a.multi_seconds)
        sessions = []
        for i in range(n):
            rf = ctx.logs / f"{label}-{i}.json"
            if rf.exists():
                sessions.append(json.loads(rf.read_text()))
        if len(sessions) < n:
            raise RuntimeError(f"only {len(sessions)}/{n} trainers reported a result")
        row = multi_row(label, n, variant, a.gpus, sessions, gpu)
        row["service_cpu_cores"] = cpu.cores() if cpu else None
        ctx.record(row)
        log(f"{label}: aggregate {row['aggregate_samples_per_s']:.2f} samples/s, fairness {row['fairness']:.3f}")
    except Exception as err:  # noqa: BLE001 - record and go on with the next configuration
        smi.stop(0, 0)
        tails = []
        for i in range(n):
            lf = ctx.logs / f"{label}-{i}.log"
            if lf.exists():
                tails += [f"[{i}] {t}" for t in lf.read_text(errors="replace").splitlines()[-4:]]
        ctx.record(dict(label=label, stage="multi", tenants=n, variant=variant, error=str(err), log_tail=tails))
        log(f"{label}: FAILED: {err}")
        for t in tails:
            ctx.key(f"  {label}| {t}")
    finally:
        for p, f in procs:
            if p.poll() is None:
                _kill(p)
                p.wait()
            _kill(p)
            f.close()
        if server:
            server.stop()
            (ctx.logs / f"{label}-augmentd.log").write_text(server.output)
            notable = [ln for ln in server.lines if re.search(r"serving on|error|warn|fail", ln, re.I)]
            for line in notable[:12] + ([f"... {len(notable) - 12} more in logs/{label}-augmentd.log"]
                                        if len(notable) > 12 else []):
                ctx.key(f"  {label}| augmentd: {line.rstrip()}")


def gpu_uuid(index: int) -> str:
    """GPU `index`'s UUID as nvidia-smi names it (the server resolves it whatever a trainer's CUDA_VISIBLE_DEVICES)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader", "-i", str(index)],
                             capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def stage_multi(ctx: Ctx) -> None:
    for n in sorted(ctx.args.tenants, reverse=True):  # the largest (the fairness target) first
        for placement in ctx.args.placements:
            run_tenants(ctx, n, "augmentd" if placement == "every" else "augmentd-one-gpu")
    if ctx.args.multi_baseline and ctx.args.tenants:
        run_tenants(ctx, max(ctx.args.tenants), "compute")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env = os.environ.get
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--stages", default=env("E2E_STAGES", "single,da5,multi"))
    p.add_argument("--device", default=env("E2E_DEVICE", "cuda:0"))
    p.add_argument("--gpus", type=int, default=int(env("E2E_GPUS", "1")))
    p.add_argument("--warmup", type=int, default=int(env("E2E_WARMUP", "20")))
    p.add_argument("--iters", type=int, default=int(env("E2E_ITERS", "150")))
    p.add_argument("--run-seconds", type=float, default=float(env("E2E_RUN_SECONDS", "25")),
                   help="cap of one run's timed loop")
    p.add_argument("--run-timeout", type=float, default=float(env("E2E_RUN_TIMEOUT", "150")))
    p.add_argument("--min-run-seconds", type=float, default=float(env("E2E_MIN_RUN_SECONDS", "40")))
    p.add_argument("--n-proc-da", default=env("E2E_N_PROC_DA", "12,16"))
    p.add_argument("--delivery", default=env("E2E_DELIVERY", "cuda_ipc,auto"))
    p.add_argument("--tenants", default=env("E2E_TENANTS", "4,8"))
    p.add_argument("--multi-seconds", type=float, default=float(env("E2E_MULTI_SECONDS", "30")))
    p.add_argument("--multi-warmup", type=int, default=int(env("E2E_MULTI_WARMUP", "5")))
    p.add_argument("--multi-startup", type=float, default=float(env("E2E_MULTI_STARTUP", "120")),
                   help="how long N trainers may take to start and warm up")
    p.add_argument("--multi-baseline", type=int, default=int(env("E2E_MULTI_BASELINE", "1")))
    p.add_argument("--augmentd-bin", default=env("AUGMENTD_BIN", str(REPO / "build" / "server" / "augmentd")))
    p.add_argument("--server-device", default=env("E2E_SERVER_DEVICE", "auto"))
    p.add_argument("--server-args", default=env("E2E_SERVER_ARGS", ""))
    p.add_argument("--placements", type=lambda v: [x for x in v.split(",") if x],
                   default=env("E2E_PLACEMENTS", "every"),
                   help="multi stage: where the sessions run — every (each training's own GPU), one (all on GPU 0)")
    p.add_argument("--one-gpu-delivery", default=env("E2E_ONE_GPU_DELIVERY", "cuda_ipc,host_shm,inline"),
                   help="deliveries tried in order by trainers whose sessions run on GPU 0 (placement one)")
    p.add_argument("--profile", type=int, default=int(env("E2E_PROFILE", "0")),
                   help="torch.profiler over this many extra iterations of each single-process run")
    p.add_argument("--cpu-threads", type=int, default=int(env("E2E_CPU_THREADS", "0")))
    p.add_argument("--deadline", type=float, default=float(env("E2E_DEADLINE", "480")),
                   help="seconds this orchestrator may run; later runs are skipped")
    p.add_argument("--cores", default=env("E2E_CORES", "2,4,8,16"),
                   help="cores stage: core counts N; each run pinned to N cores with nnUNet_n_proc_DA = N - 1")
    p.add_argument("--cores-aug", default=env("E2E_CORES_AUG", "default,da5"),
                   help="cores stage: augmentations (default, da5)")
    p.add_argument("--cores-compute", choices=("each", "once"), default=env("E2E_CORES_COMPUTE", "each"),
                   help="cores stage: compute only at every N, or once per augmentation (at the smallest N)")
    p.add_argument("--patch-cores", default=env("E2E_PATCH_CORES", "4,16"),
                   help="patch stages: core counts N; each run pinned to N cores, N - 1 loader threads / workers")
    p.add_argument("--patch-compute", choices=("each", "once"), default=env("E2E_PATCH_COMPUTE", "each"),
                   help="patch stages: compute only at every N, or once per augmentation (at the largest N)")
    p.add_argument("--config-variants", type=lambda v: [x for x in v.split(",") if x],
                   default=env("E2E_CONFIG_VARIANTS", ""),
                   help="2d / cascade stages: also run the augmentd trainer with its session on the CPU "
                        "(cpu_session) or delivering through host shared memory (host_shm), to place the overhead")
    p.add_argument("--repeats", type=int, default=int(env("E2E_REPEATS", "1")),
                   help="stages patch, patch_da5, 2d, cascade: run compute only and augmentd this many times, "
                        "alternately; figures: median over repeats of the per-run ms/iter medians")
    p.add_argument("--patch-variants", type=lambda v: [x for x in v.split(",") if x],
                   default=env("E2E_PATCH_VARIANTS", ""),
                   help="patch stages: after each patch trainer run, the same again with a variant's environment: "
                        + ", ".join(PATCH_VARIANTS) + " (kind b-<variant>, no figure)")
    p.add_argument("--paired-runs", default=env("E2E_PAIRED_RUNS", "patch,patch_da5,cascade"),
                   help=f"paired stage: runs among {', '.join(PAIRED_RUNS)} (paired.py)")
    p.add_argument("--paired-cores", type=int, default=int(env("E2E_PAIRED_CORES", "16")),
                   help="paired stage: pin each run to this many cores (0: unpinned)")
    p.add_argument("--paired-pairs", type=int, default=int(env("E2E_PAIRED_PAIRS", "6")),
                   help="paired stage: compute-only / augmentd phase pairs per run")
    p.add_argument("--paired-iters", type=int, default=int(env("E2E_PAIRED_ITERS", "20")),
                   help="paired stage: timed iterations per phase")
    p.add_argument("--paired-settle", type=int, default=int(env("E2E_PAIRED_SETTLE", "5")),
                   help="paired stage: untimed iterations at the start of each phase")
    p.add_argument("--quiet", action="store_true", help="do not print the table at the end (table.md only)")
    args = p.parse_args(argv)
    args.n_proc_da = [int(v) for v in args.n_proc_da.split(",") if v]
    args.tenants = [int(v) for v in args.tenants.split(",") if v]
    args.cores = [int(v) for v in args.cores.split(",") if v]
    args.cores_aug = [v for v in args.cores_aug.split(",") if v]
    args.patch_cores = [int(v) for v in args.patch_cores.split(",") if v]
    try:
        args.paired_runs = parse_runs(args.paired_runs)
    except ValueError as err:
        p.error(str(err))
    if args.paired_pairs < 1 or args.paired_iters < 1 or args.paired_settle < 0 or args.paired_cores < 0:
        p.error("--paired-pairs / --paired-iters: at least 1; --paired-settle / --paired-cores: at least 0")
    if args.repeats < 1:
        p.error(f"--repeats {args.repeats}: at least 1")
    unknown = [v for v in args.patch_variants if v not in PATCH_VARIANTS]
    if unknown or len(set(args.patch_variants)) != len(args.patch_variants):
        p.error(f"--patch-variants {','.join(args.patch_variants)}: unknown or repeated variant "
                f"({', '.join(unknown) or 'repeated'}); known: {', '.join(PATCH_VARIANTS)}")
    if any(n < 1 for n in args.patch_cores):
        p.error(f"--patch-cores {args.patch_cores}: positive counts")
    if any(n < 1 for n in args.cores) or any(v not in ("default", "da5") for v in args.cores_aug):
        p.error(f"--cores {args.cores}: positive counts; --cores-aug {args.cores_aug}: default, da5")
    os.environ["AUGMENTD_BIN"] = args.augmentd_bin
    ctx = Ctx(args)
    stamp = ctx.work / "e2e-dataset.json"
    ctx.meta = {"dataset": json.loads(stamp.read_text()) if stamp.exists() else {},
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": args.device,
                "gpus": args.gpus, "warmup": args.warmup, "iters": args.iters, "run_seconds": args.run_seconds,
                "multi_seconds": args.multi_seconds, "machine": os.environ.get("E2E_MACHINE", ""),
                "cores_compute": args.cores_compute, "command": os.environ.get("E2E_COMMAND", ""),
                "repeats": args.repeats, "patch_variants": args.patch_variants}
    stages = [s for s in args.stages.split(",") if s]
    for s in stages:
        if s not in ("single", "da5", "cores", "multi", "patch", "patch_da5", "paired", *CONFIGURATION_STAGES):
            p.error(f"unknown stage {s!r} (single, da5, cores, multi, patch, patch_da5, paired, 2d, cascade)")
    for pl in args.placements:
        if pl not in ("every", "one"):
            p.error(f"unknown placement {pl!r} (every, one)")
    for s in stages:
        log(f"stage {s} ({ctx.remaining():.0f} s left)")
        if s == "single":
            stage_single(ctx, "default")
        elif s == "da5":
            stage_single(ctx, "da5")
        elif s == "cores":
            stage_cores(ctx)
        elif s in CONFIGURATION_STAGES:
            stage_configuration(ctx, s)
        elif s in ("patch", "patch_da5"):
            stage_patch(ctx, "default" if s == "patch" else "da5")
        elif s == "paired":
            stage_paired(ctx)
        else:
            stage_multi(ctx)
    table = ctx.write_tables()
    if not args.quiet:
        print("\n" + table, flush=True)
    return 0 if all("error" not in r for r in ctx.results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""A private CUDA MPS daemon for a trainer and the augmentd it starts on the same GPU.

Without MPS, the trainer's and augmentd's CUDA contexts time-slice the GPU: while one has kernels in flight the
other's wait, and each switch idles the GPU. Under one MPS daemon both processes' kernels share the GPU as streams of
one context do. Measured on the H200 (``bench/results/2026-12-02-h200-s11-calls5-7.md``, the e2e harness's paired
stage with and without MPS, 16 cores): over compute only, the patch trainer +2.67 % → +1.40 %, its DA5 variant
+2.96 % → +1.96 %, the 3d_cascade_fullres training +3.17 % → +1.49 %.

    with MpsDaemon.for_training() as mps:   # before this process (or any child) touches CUDA
        ...                                 # the trainer; a local augmentd started now joins the same daemon

``augmentd-nnunet-train ... --mps`` does this. The daemon gets its own pipe and log directories (``$AUGMENTD_MPS_DIR``,
default a fresh temporary directory), so it serves exactly the processes that inherit this process's environment
(``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY``): the trainer, its DDP workers and the local server, nobody
else's. It is stopped (``quit``) on exit unless it was already running there. MPS needs the GPU in the DEFAULT or
EXCLUSIVE_PROCESS compute mode and ``nvidia-cuda-mps-control`` on PATH (part of the NVIDIA driver utilities).
Trainings that share one ``$AUGMENTD_MPS_DIR`` share its daemon, and the one that started it quits it when it ends
(the daemon then takes no new clients): give concurrent trainings their own directories (the default). The
directory, with the daemon's logs, is left in place. Not thread-safe: start and stop it from the main thread.
Verified against a stand-in control program (tests/python/test_mps.py); on the H200 the harness's own shell-started
daemon (``E2E_MPS=1``) measured the figures above, this class has not yet run against the real daemon.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, Optional

CONTROL = "nvidia-cuda-mps-control"
_ENV_KEYS = ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY")


class MpsError(RuntimeError):
    """MPS could not be started or stopped; the message says why and what to do."""


def _cuda_initialized() -> bool:
    torch = sys.modules.get("torch")  # only if the caller already imported it: importing torch here costs seconds
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 (a torch without CUDA)
        return False


class MpsDaemon:
    """One MPS control daemon with private pipe / log directories under ``root``.

    ``start()`` sets ``CUDA_MPS_PIPE_DIRECTORY`` and ``CUDA_MPS_LOG_DIRECTORY`` in ``os.environ`` (so this process and
    every child started afterwards use it) and starts the daemon unless one already answers there; ``stop()`` quits a
    daemon this object started and restores the two variables."""

    def __init__(self, root: str, control: Optional[str] = None, timeout: float = 10.0):
        self.root = root
        self.pipe_dir = os.path.join(root, "pipe")
        self.log_dir = os.path.join(root, "log")
        self.control = control or shutil.which(CONTROL)
        self.timeout = timeout
        self.started = False    # this object started the daemon (and will quit it)
        self.running = False
        self._saved: Dict[str, Optional[str]] = {}

    @classmethod
    def for_training(cls, root: Optional[str] = None) -> "MpsDaemon":
        """A daemon under ``root``, else ``$AUGMENTD_MPS_DIR``, else a new temporary directory."""
        root = root or os.environ.get("AUGMENTD_MPS_DIR") or tempfile.mkdtemp(prefix="augmentd-mps-")
        return cls(root)

    def env(self) -> Dict[str, str]:
        return {"CUDA_MPS_PIPE_DIRECTORY": self.pipe_dir, "CUDA_MPS_LOG_DIRECTORY": self.log_dir}

    def _run(self, args, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
        env = dict(os.environ, **self.env())
        return subprocess.run([self.control, *args], input=stdin, env=env, capture_output=True, text=True,
                              timeout=self.timeout, check=False)

    def answers(self) -> bool:
        """Whether a control daemon answers on this pipe directory (``get_server_list`` succeeds)."""
        if not os.path.exists(os.path.join(self.pipe_dir, "control")):
            return False
        try:
            return self._run([], stdin="get_server_list\n").returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def start(self) -> "MpsDaemon":
        """Starts (or joins) the daemon and points this process's environment at it. Raises MpsError, with the
        environment restored and no daemon left behind, when that is not possible. A second call is a no-op."""
        if self.running:
            return self
        if self.control is None:
            raise MpsError(f"--mps: {CONTROL} is not on PATH (it comes with the NVIDIA driver utilities); "
                           "run without --mps or install them")
        if _cuda_initialized():
            raise MpsError("--mps: CUDA is already initialized in this process; MPS must be set up before the first "
                           "CUDA call (start the daemon before importing the trainer)")
        os.makedirs(self.pipe_dir, exist_ok=True)
        os.makedirs(self.log_dir, exist_ok=True)
        self._saved = {k: os.environ.get(k) for k in _ENV_KEYS}
        os.environ.update(self.env())
        if self.answers():
            self.running = True  # someone else's daemon on this directory: use it, leave it running
            return self
        try:
            result = self._run(["-d"])
        except (OSError, subprocess.TimeoutExpired) as err:
            self._restore()
            raise MpsError(f"--mps: could not run '{self.control} -d': {err}") from err
        if result.returncode != 0:
            self._restore()
            raise MpsError(f"--mps: '{CONTROL} -d' failed (exit {result.returncode}): "
                           f"{(result.stderr or result.stdout).strip() or 'no message'}; the GPU's compute mode must be "
                           f"DEFAULT or EXCLUSIVE_PROCESS (nvidia-smi -q | grep 'Compute Mode'); log: {self.log_dir}")
        deadline = time.monotonic() + self.timeout
        while not self.answers():  # the control pipe exists AND the daemon behind it answers
            if time.monotonic() > deadline:
                self._quit()  # `-d` forked a daemon: do not leave it behind
                self._restore()
                raise MpsError(f"--mps: the daemon in {self.pipe_dir} did not answer within {self.timeout:.0f} s; "
                               f"log: {self.log_dir}")
            time.sleep(0.05)
        self.started = self.running = True
        return self

    def _quit(self) -> None:
        try:
            self._run([], stdin="quit\n")
        except (OSError, subprocess.TimeoutExpired) as err:
            print(f"augmentd: stopping the MPS daemon in {self.pipe_dir} failed: {err}", file=sys.stderr)

    def stop(self) -> None:
        """Quits the daemon if this object started it (its MPS server exits once its clients are gone); restores the
        environment. Idempotent."""
        if self.started:
            self._quit()
            self.started = False
        self.running = False
        self._restore()

    def _restore(self) -> None:
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved = {}

    def __enter__(self) -> "MpsDaemon":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

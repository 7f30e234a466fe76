"""Helpers of the server tests (test_server.py): the real augmentd binary as a subprocess.

The binary comes from $AUGMENTD_BIN (default: build/server/augmentd under the repository root). The augmentd
Python package is used installed (pip install client/python) or, failing that, from client/python/src, where
it generates its gRPC stubs from proto/ on first import.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT_SRC = os.path.join(REPO, "client", "python", "src")

try:
    import augmentd  # noqa: F401
except ImportError:
    sys.path.insert(0, CLIENT_SRC)
    import augmentd  # noqa: F401


def augmentd_bin() -> str:
    path = os.environ.get("AUGMENTD_BIN", os.path.join(REPO, "build", "server", "augmentd"))
    if not os.path.isabs(path):
        path = os.path.join(REPO, path)
    if not os.access(path, os.X_OK):
        pytest.fail(f"augmentd binary not found at {path}: build it (scripts/build.sh) or set AUGMENTD_BIN")
    return path


def wait_until(pred, timeout=10.0) -> bool:
    """Polls `pred` until it holds or `timeout` seconds pass (what the server does after an answer, such as counting
    a written batch or letting go of a session, may come a moment later); its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def client_env() -> dict:
    """Environment for `python -m augmentd` subprocesses (the package from the source tree if not installed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (CLIENT_SRC, env.get("PYTHONPATH", "")) if p)
    return env


class ServerProcess:
    """A running augmentd; output is captured line by line in a thread."""

    def __init__(self, args):
        self.args = [augmentd_bin(), *args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return "".join(self.lines)

    def wait_for_serving(self, timeout=30.0):
        """Returns the addresses of the 'serving on A, B (device ...)' line."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = re.search(r"serving on (.*?) \(device", "".join(self.lines))
                if m:
                    return m.group(1).split(", ")
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"augmentd exited with {self.proc.returncode}:\n{''.join(self.lines)}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"augmentd did not report serving in {timeout} s:\n{''.join(self.lines)}")
                self._cond.wait(min(remaining, 0.2))

    def stop(self, sig=signal.SIGTERM, timeout=30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"augmentd did not exit within {timeout} s of {sig!r}:\n{self.output}")
        self._reader.join(timeout=5)
        return rc


"""A private ``augmentd`` server process for one client process (nnU-Net trainer, ``preview``, ``bench``).

    with LocalServer(device="cpu", dataset_roots=["/data/nnUNet_preprocessed"]) as server:
        with augmentd.Client(server.address) as client:
            ...

The server listens on a unix socket in a fresh temporary directory (nothing is exposed on the network), is
stopped with SIGTERM by ``stop()`` (also at interpreter exit, and by the kernel if this process dies first, on
Linux), and its log lines are kept in ``lines`` (echoed with a prefix if ``echo``). ``stop()`` removes the directory;
the directory of a process that was killed before it could (SIGKILL, the OOM killer) is removed by the next
LocalServer this user starts (``remove_stale_dirs``): the owner holds a lock on the directory's ``owner.pid`` for as
long as it lives, and the kernel drops it when the process dies, whatever pid namespace the sweeping process is in.

The binary is found by ``find_binary``: an explicit path, ``$AUGMENTD_BIN``, the server packaged in the binary
wheel (``augmentd.packaged``), ``augmentd`` on ``$PATH``, then ``build/server/augmentd`` of the source checkout this
package lives in. ``$AUGMENTD_SERVER_ARGS`` adds flags to every server started here (shell syntax),
e.g. ``--dataset_gpu_cache=17179869184 --gpu_workers=4``.

The child is started without ``fork()`` (``subprocess`` takes ``posix_spawn``: no ``preexec_fn``, ``close_fds=False``;
Python's own descriptors are not inheritable). A forked child runs grpcio's fork handlers, and when other threads of
this process are inside gRPC (a live channel streaming), grpcio skips its prepare handler and the child can abort
(SIGABRT, "epoll_wait error: Bad file descriptor") before it execs — grpc/grpc#43055. The parent-death signal is
therefore set by ``setpriv --pdeathsig TERM`` (util-linux) in front of the binary where it exists, not by a Python
``preexec_fn``. A child that still dies by a signal before "serving on" is started once more.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import List, Optional, Sequence

from . import packaged

_SERVING = re.compile(r"serving on (.*?) \(device")
_DIR_PREFIX = "augmentd-local-"
_OWNER = "owner.pid"  # made, locked (flock, exclusive) and then given the owner's pid right after mkdtemp


def _take_ownership(directory: str) -> int:
    """Creates ``directory``/owner.pid, locks it and writes this process's pid; returns the descriptor, which holds the
    lock until it is closed or the process ends (not inherited by children: Python's descriptors are close-on-exec)."""
    fd = os.open(os.path.join(directory, _OWNER), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _owner_gone(owner_file: str) -> bool:
    """True when owner.pid holds a pid (the owner wrote it after locking) and nobody holds its lock any more."""
    with open(owner_file, "rb") as f:
        if not f.read().strip():
            return False  # being made: the owner locks it before it writes
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True  # closing the file releases the lock


def _serving(sock: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(sock)
        except OSError:
            return False
    return True


def remove_stale_dirs(tmpdir: Optional[str] = None) -> List[str]:
    """Removes this user's LocalServer directories in ``tmpdir`` (default: the temporary directory) whose owner is
    gone (its lock on owner.pid released) and whose socket no server answers on any more; returns their paths. A
    directory without an owner file or with an empty one (being made, or from a version before this) and one whose
    owner still holds the lock are left alone; so are links and other users' directories."""
    tmpdir = tmpdir or tempfile.gettempdir()
    removed = []
    try:
        entries = list(os.scandir(tmpdir))
    except OSError:
        return removed
    for e in entries:
        try:
            if not (e.name.startswith(_DIR_PREFIX) and e.is_dir(follow_symlinks=False)
                    and e.stat(follow_symlinks=False).st_uid == os.getuid()):
                continue
            if not _owner_gone(os.path.join(e.path, _OWNER)):
                continue
        except OSError:
            continue
        if _serving(os.path.join(e.path, "augmentd.sock")):  # an orphaned server (no parent-death signal) still lives
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        if not os.path.exists(e.path):
            removed.append(e.path)
    return removed


def find_binary(explicit: Optional[str] = None) -> str:
    """The augmentd server binary; raises FileNotFoundError naming every place searched."""
    searched: List[str] = []
    candidates = []
    if explicit:
        candidates.append(("given path", explicit))
    if os.environ.get("AUGMENTD_BIN"):
        candidates.append(("$AUGMENTD_BIN", os.environ["AUGMENTD_BIN"]))
    searched.append("the binary wheel's server")
    if packaged.binary():
        candidates.append(("binary wheel", packaged.binary()))
    on_path = shutil.which("augmentd")
    searched.append("augmentd on $PATH")
    if on_path:
        candidates.append(("$PATH", on_path))
    here = Path(__file__).resolve()
    if len(here.parents) > 4:  # client/python/src/augmentd/local_server.py → repository root (an install: maybe not)
        candidates.append(("source checkout", str(here.parents[4] / "build" / "server" / "augmentd")))
    for what, path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
        searched.append(f"{what}: {path}")
        if what in ("given path", "$AUGMENTD_BIN"):  # an explicit choice that is wrong is an error, not a fallback
            break
    raise FileNotFoundError("augmentd server binary not found (searched " + "; ".join(searched) +
                            "). Build it (scripts/build.sh) or set AUGMENTD_BIN=/path/to/augmentd")


def _die_with_parent_prefix() -> List[str]:
    """``setpriv --pdeathsig TERM --`` (Linux, util-linux): the server gets SIGTERM if the process that started it dies
    without stopping it. [] where setpriv is missing (the server then outlives a killed parent; ``stop`` and atexit
    still end it). setpriv execs the binary: the child's pid is the server's."""
    global _SETPRIV
    if _SETPRIV is None:
        _SETPRIV = []
        setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        if setpriv:
            try:  # util-linux >= 2.33 has --pdeathsig; an older setpriv would refuse the flag and the server not start
                out = subprocess.run([setpriv, "--help"], capture_output=True, text=True, timeout=10, close_fds=False)
                if "--pdeathsig" in out.stdout + out.stderr:
                    _SETPRIV = [setpriv, "--pdeathsig", "TERM", "--"]
            except (OSError, subprocess.SubprocessError):
                pass
    return list(_SETPRIV)


_SETPRIV: Optional[List[str]] = None


def _spawn(args: Sequence[str], env) -> subprocess.Popen:
    """The child without fork(): with no preexec_fn, close_fds=False and an absolute executable, CPython's subprocess
    starts it with os.posix_spawn (elsewhere with vfork), which runs no fork handlers (see the module docstring)."""
    return subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            close_fds=False)


class LocalServer:
    """An augmentd child process serving on a private unix socket (see the module docstring)."""

    def __init__(self, binary: Optional[str] = None, device: str = "auto", dataset_roots: Sequence[str] = (),
                 extra_args: Sequence[str] = (), echo: bool = False, log_prefix: str = "[augmentd] "):
        self.binary = find_binary(binary)
        try:
            remove_stale_dirs()
        except Exception:  # tidying up after others never stops a start
            pass
        self._dir = tempfile.mkdtemp(prefix=_DIR_PREFIX)
        self._owner_fd = _take_ownership(self._dir)
        self.address = f"unix://{self._dir}/augmentd.sock"
        args = [self.binary, f"--listen={self.address}", f"--device={device}"]
        roots = [os.path.realpath(r) for r in dataset_roots]
        if roots:
            args.append("--dataset_root=" + ",".join(roots))
        args.extend(extra_args)
        # Extra flags for every auto-started server, e.g. dataset caches: "--dataset_gpu_cache=17179869184".
        args.extend(shlex.split(os.environ.get("AUGMENTD_SERVER_ARGS", "")))
        self.args = args
        self.lines: List[str] = []
        self._echo, self._prefix = echo, log_prefix
        # The packaged server finds the CUDA wheels' libraries through LD_LIBRARY_PATH where they are not beside it.
        self._env = packaged.environ() if self.binary == packaged.binary() else None
        self.restarts = 0  # children started again after dying by a signal before serving
        self._start()
        atexit.register(self.stop)

    def _start(self) -> None:
        self._serving = threading.Event()
        self.proc = _spawn(_die_with_parent_prefix() + self.args, self._env)
        self._reader = threading.Thread(target=self._read, args=(self.proc, self._serving),
                                        name="augmentd-local-log", daemon=True)
        self._reader.start()

    def _read(self, proc: subprocess.Popen, serving: threading.Event) -> None:
        for line in proc.stdout:
            self.lines.append(line)
            if self._echo:
                print(f"{self._prefix}{line.rstrip()}", file=sys.stderr, flush=True)
            if _SERVING.search(line):
                serving.set()
        serving.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_serving(self, timeout: float = 60.0) -> str:
        """Blocks until the server logs 'serving on'; returns ``address``. RuntimeError (with the log) otherwise."""
        self._serving.wait(timeout)
        if not any(_SERVING.search(line) for line in self.lines):
            rc = self.proc.poll()
            if rc is None and not self._reader.is_alive():
                try:
                    rc = self.proc.wait(timeout=5)  # the log ended: the child is exiting
                except subprocess.TimeoutExpired:
                    pass
            if rc is not None and rc < 0 and self.restarts == 0:
                # Killed by a signal before serving (e.g. a fork-time abort of an older start, see the module
                # docstring): once more, its log kept above the new one's.
                self.restarts += 1
                self._reader.join(timeout=5)
                self.lines.append(f"[local_server] the child died by signal {-rc} before serving; starting it again\n")
                self._start()
                return self.wait_serving(timeout)
            self.stop()
            state = f"exited with status {rc}" if rc is not None else f"did not start within {timeout:g} s"
            raise RuntimeError(f"local augmentd ({' '.join(self.args)}) {state}:\n{self.output[-4000:]}")
        return self.address

    def stop(self, timeout: float = 30.0) -> Optional[int]:
        """SIGTERM, wait (SIGKILL after ``timeout``), remove the socket directory. Returns the exit status.

        Stop the server before closing a ``Client`` connected to it: in the other order, gRPC makes the
        interpreter wait about 10 s at exit when batches of that channel are still referenced."""
        atexit.unregister(self.stop)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)
        if self._owner_fd is not None:
            os.close(self._owner_fd)
            self._owner_fd = None
        return self.proc.returncode

    def __enter__(self) -> "LocalServer":
        self.wait_serving()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def connect_or_start(address: Optional[str], device: str = "auto", dataset_roots: Sequence[str] = (),
                     start_local: str = "auto", connect_timeout: float = 3.0, echo: bool = False,
                     binary: Optional[str] = None, extra_args: Sequence[str] = ()):
    """A connected ``augmentd.Client`` and the ``LocalServer`` started for it (None when one was reachable).

    ``binary``: the server binary (see ``find_binary``). ``start_local``: ``"auto"`` tries ``address`` first and
    starts a local server if nothing answers there within ``connect_timeout`` seconds (or if ``address`` is empty);
    ``"never"`` only connects; ``"always"`` ignores ``address``. A local server gets ``device``, may read
    ``dataset_roots`` and gets ``extra_args`` (before $AUGMENTD_SERVER_ARGS).
    """
    import grpc

    from .client import Client

    if start_local not in ("auto", "never", "always"):
        raise ValueError(f"start_local must be auto, never or always, got {start_local!r}")
    if start_local != "always" and address:
        try:
            return Client(address, connect_timeout=connect_timeout), None
        except grpc.FutureTimeoutError:
            if start_local == "never":
                raise ConnectionError(f"no augmentd server reachable at {address} within {connect_timeout:g} s") \
                    from None
    if start_local == "never":
        raise ConnectionError("no augmentd address given and starting a local server is not allowed")
    server = LocalServer(binary=binary, device=device, dataset_roots=dataset_roots, extra_args=extra_args, echo=echo)
    try:
        server.wait_serving()
        return Client(server.address, connect_timeout=30.0), server
    except BaseException:
        server.stop()
        raise

"""augmentd.LocalServer's child start (issue 22's CI flake): the child is spawned without fork(), so grpcio's fork
handlers never run — with another thread of this process streaming on a live gRPC channel, a forked child could
abort (SIGABRT, "epoll_wait error: Bad file descriptor") before it exec'd the server (grpc/grpc#43055)."""
import os
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest

from augmentd_server import ServerProcess, wait_until  # first: makes `augmentd` importable

import augmentd  # noqa: E402
from augmentd import local_server  # noqa: E402

PATCH = (16, 16, 16)


@pytest.fixture(scope="module")
def server():
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", "--max_batch_size=2", "--batch_workers=1"])
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc
    finally:
        rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output}"


@pytest.mark.skipif(not getattr(subprocess, "_USE_POSIX_SPAWN", False), reason="this Python's subprocess has no "
                    "posix_spawn path (it then uses vfork, also without fork handlers)")
def test_the_child_is_started_with_posix_spawn(monkeypatch):
    prefix = local_server._die_with_parent_prefix()  # found once per process (it runs `setpriv --help`)
    calls = []
    real = os.posix_spawn

    def spy(path, argv, env, **kwargs):
        calls.append(list(argv))
        return real(path, argv, env, **kwargs)

    monkeypatch.setattr(os, "posix_spawn", spy)
    forks = []
    monkeypatch.setattr(os, "register_at_fork", lambda **kw: forks.append(kw))  # nothing new registers either
    with local_server.LocalServer(device="cpu") as srv:
        assert srv.proc.poll() is None
        assert srv.restarts == 0
    assert len(calls) == 1, "LocalServer did not start its child through os.posix_spawn"
    assert calls[0][-len(srv.args):] == srv.args
    assert calls[0][:len(prefix)] == prefix


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return any(line.startswith("State:") and "Z" in line.split()[1] for line in f)  # a zombie is gone
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not local_server._die_with_parent_prefix(), reason="no setpriv with --pdeathsig on this host")
def test_the_server_dies_with_a_killed_parent():
    """The parent-death signal without a preexec_fn: a process that started a LocalServer and is SIGKILLed takes
    the server with it (SIGTERM from the kernel)."""
    import signal
    import sys

    from augmentd_server import client_env

    script = ("import sys, time\n"
              "from augmentd.local_server import LocalServer\n"
              "s = LocalServer(device='cpu'); s.wait_serving()\n"
              "print(s.proc.pid, s._dir, flush=True); time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=client_env())
    try:
        pid, socket_dir = parent.stdout.readline().split()
        pid = int(pid)
        assert not _gone(pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert wait_until(lambda: _gone(pid), timeout=20), f"the server {pid} outlived its killed parent"
        # The killed parent could not remove its socket directory; the next LocalServer's sweep does (another sweep
        # running at the same time may get there first). The server's leader thread reads as a zombie while its other
        # threads still exit, and until they have, its socket may still accept a connection and the sweep rightly
        # leaves the directory: sweep again until it is gone or the deadline passes.

        def swept():
            local_server.remove_stale_dirs(os.path.dirname(socket_dir))
            return not os.path.exists(socket_dir)

        assert wait_until(swept, timeout=20), f"the sweep left {socket_dir} for 20 s after the server was gone"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_remove_stale_dirs_removes_only_unlocked_unserved_dirs():
    """A LocalServer directory is removed only when nobody holds the lock on its owner.pid (the owner is gone, in
    whatever pid namespace) and no server answers on its socket; links, unowned and half-made directories stay."""
    base = tempfile.mkdtemp(prefix="asd-")  # short: a unix socket path has at most 107 bytes
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held = []
    try:
        def make(name, owner=None, locked=False):
            d = os.path.join(base, name)
            os.mkdir(d)
            if owner is not None:
                with open(os.path.join(d, "owner.pid"), "w") as f:
                    f.write(owner)
            if locked:
                held.append(local_server._take_ownership(d))
            return d

        stale = make("augmentd-local-stale", "4242\n")
        live = make("augmentd-local-live", locked=True)  # as LocalServer makes it: locked by this process
        unowned = make("augmentd-local-unowned")
        half_made = make("augmentd-local-half", "")  # created, not yet locked and written
        served = make("augmentd-local-served", "4242\n")
        listener.bind(os.path.join(served, "augmentd.sock"))
        listener.listen(1)
        other = make("other-stale", "4242\n")
        elsewhere = tempfile.mkdtemp(prefix="asd-target-")
        with open(os.path.join(elsewhere, "owner.pid"), "w") as f:
            f.write("4242\n")
        os.symlink(elsewhere, os.path.join(base, "augmentd-local-link"))
        assert local_server.remove_stale_dirs(base) == [stale]
        for kept in (live, unowned, half_made, served, other, elsewhere):
            assert os.path.isdir(kept), kept
        listener.close()  # nobody answers there now
        os.close(held.pop())  # the owner of `live` ends
        assert sorted(local_server.remove_stale_dirs(base)) == sorted([served, live])
        assert os.path.isdir(elsewhere) and os.path.islink(os.path.join(base, "augmentd-local-link"))
        shutil.rmtree(elsewhere, ignore_errors=True)
    finally:
        listener.close()
        for fd in held:
            os.close(fd)
        shutil.rmtree(base, ignore_errors=True)

def test_local_servers_start_while_another_thread_streams(server):
    """20 local servers started and stopped while a thread keeps a StreamPatches stream busy on another channel
    (grpcio's threads are inside gRPC at every spawn). Each serves on its first start: restarts == 0."""
    stop = threading.Event()
    calls = [0]
    errors = []

    def stream():
        try:
            with augmentd.Client(server.addresses[0]) as client:
                config = augmentd.patch_session_config(PATCH, batch_size=1, seed=3)
                with augmentd.PatchAugmenter(client, config, depth=2) as aug:
                    import numpy as np

                    image = np.zeros((1, 1, *aug.patch_size), np.float32)
                    seg = np.zeros((1, 1, *aug.patch_size), np.int16)
                    future = aug.submit(image, seg)
                    while not stop.is_set():
                        nxt = aug.submit(image, seg)
                        aug.result(future)
                        future = nxt
                        calls[0] += 1
                    aug.result(future)
        except BaseException as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    t = threading.Thread(target=stream, daemon=True)
    t.start()
    try:
        for i in range(20):
            with local_server.LocalServer(device="cpu") as srv:
                with augmentd.Client(srv.address) as c:
                    assert c.server_info().version
            assert srv.restarts == 0, f"start {i}: the child died before serving:\n{srv.output}"
            assert srv.proc.returncode == 0, f"start {i}: exit status {srv.proc.returncode}:\n{srv.output}"
            assert not errors, errors
            assert t.is_alive()
    finally:
        stop.set()
        t.join(timeout=30)
    assert not errors, errors
    assert calls[0] > 20  # the stream really ran during the starts


def test_a_child_killed_by_a_signal_before_serving_is_started_once_more(tmp_path):
    """The second line of defence: a child that dies by a signal before 'serving on' is started again (once)."""
    marker = tmp_path / "started-once"
    script = tmp_path / "fake-augmentd"
    real = local_server.find_binary()
    script.write_text(f"#!/bin/sh\nif [ ! -e {marker} ]; then touch {marker}; kill -ABRT $$; fi\n"
                      f"exec {real} \"$@\"\n")
    script.chmod(0o755)
    with local_server.LocalServer(binary=str(script), device="cpu") as srv:
        assert srv.restarts == 1
        assert "died by signal 6" in srv.output
        with augmentd.Client(srv.address) as c:
            assert c.server_info().version
    # A child that dies by a signal again is an error naming its status, not a loop.
    always = tmp_path / "always-abort"
    always.write_text("#!/bin/sh\nkill -ABRT $$\n")
    always.chmod(0o755)
    srv = local_server.LocalServer(binary=str(always), device="cpu")
    with pytest.raises(RuntimeError, match="exited with status -6"):
        srv.wait_serving(timeout=30)
    assert srv.restarts == 1

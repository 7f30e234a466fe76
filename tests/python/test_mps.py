"""augmentd.mps and ``augmentd-nnunet-train --mps``: the private MPS daemon's life cycle against a stand-in
``nvidia-cuda-mps-control`` (a shell script that keeps its state in the pipe directory, as the real one does). The
real daemon needs a GPU; on the H200 only the e2e harness's own shell-started one (E2E_MPS=1) has run so far."""
import os
import stat
import sys
import types

import pytest

from augmentd.mps import MpsDaemon, MpsError
from augmentd.nnunet.train import split_mps

FAKE = r"""#!/bin/sh
# stand-in for nvidia-cuda-mps-control: -d starts (FAKE_MPS_FAIL: refuses; FAKE_MPS_SILENT: starts but never answers),
# stdin commands otherwise; every call is logged
log="$FAKE_MPS_LOG"
if [ "$1" = "-d" ]; then
  if [ -n "$FAKE_MPS_FAIL" ]; then echo "An instance of this daemon is already running" >&2; exit 1; fi
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" && : > "$CUDA_MPS_PIPE_DIRECTORY/control"
  echo "start $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" >> "$log"; exit 0
fi
read cmd
[ "$cmd" = get_server_list ] || echo "cmd $cmd" >> "$log"
[ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ] || exit 1
case "$cmd" in
  get_server_list) [ -z "$FAKE_MPS_SILENT" ] && exit 0; exit 1 ;;
  quit) echo "quit $CUDA_MPS_PIPE_DIRECTORY" >> "$log"; rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"; exit 0 ;;
esac
exit 1
"""


@pytest.fixture
def fake_control(tmp_path, monkeypatch):
    path = tmp_path / "nvidia-cuda-mps-control"
    path.write_text(FAKE)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "calls.log"
    log.write_text("")
    monkeypatch.setenv("FAKE_MPS_LOG", str(log))
    monkeypatch.delenv("FAKE_MPS_FAIL", raising=False)
    monkeypatch.delenv("FAKE_MPS_SILENT", raising=False)
    for k in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"):
        monkeypatch.delenv(k, raising=False)
    return str(path), log


def test_start_sets_environment_and_stop_quits_and_restores(tmp_path, fake_control):
    control, log = fake_control
    d = MpsDaemon(str(tmp_path / "mps"), control=control)
    with d:
        assert d.started and d.running
        assert os.environ["CUDA_MPS_PIPE_DIRECTORY"] == str(tmp_path / "mps" / "pipe")
        assert os.environ["CUDA_MPS_LOG_DIRECTORY"] == str(tmp_path / "mps" / "log")
        assert d.answers()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and "CUDA_MPS_LOG_DIRECTORY" not in os.environ
    assert log.read_text().splitlines() == [f"start {d.pipe_dir} {d.log_dir}", "cmd quit", f"quit {d.pipe_dir}"]
    assert not d.answers()
    d.stop()  # idempotent: no second quit
    assert len(log.read_text().splitlines()) == 3


def test_a_running_daemon_is_used_and_left_running(tmp_path, fake_control):
    control, log = fake_control
    first = MpsDaemon(str(tmp_path / "mps"), control=control).start()
    # set directly, not with monkeypatch: its teardown would put back first's value; first.stop() removes it
    os.environ["CUDA_MPS_PIPE_DIRECTORY"] = "/elsewhere"  # restored to this value by the second's stop()
    second = MpsDaemon(str(tmp_path / "mps"), control=control).start()
    assert second.running and not second.started
    second.stop()
    assert os.environ["CUDA_MPS_PIPE_DIRECTORY"] == "/elsewhere"
    assert first.answers()  # the second did not quit the first's daemon
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["start"]
    first.stop()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ


def test_missing_control_program_is_a_clear_error(tmp_path, fake_control):
    d = MpsDaemon(str(tmp_path / "mps"), control=None)
    d.control = None
    with pytest.raises(MpsError, match="nvidia-cuda-mps-control is not on PATH"):
        d.start()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ


def test_a_failing_start_restores_the_environment(tmp_path, fake_control, monkeypatch):
    control, _ = fake_control
    monkeypatch.setenv("FAKE_MPS_FAIL", "1")
    d = MpsDaemon(str(tmp_path / "mps"), control=control)
    with pytest.raises(MpsError, match=r"-d' failed \(exit 1\): An instance of this daemon is already running"):
        d.start()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and not d.started


def test_refused_once_cuda_is_initialized(tmp_path, fake_control, monkeypatch):
    control, log = fake_control
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    with pytest.raises(MpsError, match="CUDA is already initialized"):
        MpsDaemon(str(tmp_path / "mps"), control=control).start()
    assert log.read_text() == ""


def test_for_training_uses_augmentd_mps_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AUGMENTD_MPS_DIR", str(tmp_path / "here"))
    d = MpsDaemon.for_training()
    assert d.pipe_dir == str(tmp_path / "here" / "pipe") and d.log_dir == str(tmp_path / "here" / "log")


def test_split_mps_strips_only_the_flag():
    assert split_mps(["1", "3d_fullres", "0", "--mps", "-tr", "X"]) == (["1", "3d_fullres", "0", "-tr", "X"], True)
    assert split_mps(["1", "2d", "0"]) == (["1", "2d", "0"], False)


def test_start_twice_is_a_no_op(tmp_path, fake_control):
    control, log = fake_control
    d = MpsDaemon(str(tmp_path / "mps"), control=control)
    d.start()
    d.start()  # must not save the MPS values as "the environment before"
    d.stop()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["start", "cmd", "quit"]


def test_a_control_program_that_cannot_run_is_a_clear_error(tmp_path, fake_control):
    control, _ = fake_control
    os.chmod(control, 0o644)  # not executable: PermissionError from subprocess
    d = MpsDaemon(str(tmp_path / "mps"), control=control)
    with pytest.raises(MpsError, match="could not run"):
        d.start()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and not d.running


def test_a_daemon_that_never_answers_is_quit_and_reported(tmp_path, fake_control, monkeypatch):
    control, log = fake_control
    monkeypatch.setenv("FAKE_MPS_SILENT", "1")
    d = MpsDaemon(str(tmp_path / "mps"), control=control, timeout=0.5)
    with pytest.raises(MpsError, match="did not answer"):
        d.start()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and not d.started
    assert log.read_text().splitlines()[-1] == f"quit {d.pipe_dir}"  # not left running


def test_train_main_runs_the_training_inside_the_daemon(monkeypatch):
    from augmentd import mps
    from augmentd.nnunet import train

    events = []

    class FakeDaemon:
        root, started = "/fake", True

        def start(self):
            events.append("start")
            return self

        def stop(self):
            events.append("stop")

    def failing_run():
        events.append("run")
        raise RuntimeError("training failed")

    monkeypatch.setattr(mps.MpsDaemon, "for_training", classmethod(lambda cls: FakeDaemon()))
    monkeypatch.setattr(train, "_run", failing_run)
    monkeypatch.setattr(sys, "argv", ["augmentd-nnunet-train", "1", "3d_fullres", "0", "--mps"])
    with pytest.raises(RuntimeError, match="training failed"):
        train.main()
    assert events == ["start", "run", "stop"]  # stopped although the training raised
    assert "--mps" not in sys.argv and sys.argv[-2:] == ["-tr", "nnUNetTrainer__augmentd"]

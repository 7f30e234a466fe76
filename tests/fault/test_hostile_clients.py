"""Hostile and careless clients against the real augmentd binary (issue 20), on loopback only, bounded in
count and time. Each test names the issue item it covers; bench/results/reliability.md has the table of
outcomes before / after.

  1. a client truncates its registered host shm input region, then calls Augment       -> a Status, server lives
  2. case files of an open dataset are truncated in place while a session streams      -> DATA_LOSS, server lives
  3. sessions have an owner credential and an idle lease (SIGKILLed clients)           -> slots come back
  4. the metrics/health endpoint answers with 64 idle / slow-drip connections open      -> < 100 ms
  5. two streams on one HOST_SHM session, one idle                                     -> the other gets batches
  6. a 5000-character dataset_path; the drain; HTTP pipelining and half-close

Run by ctest (tests/fault/CMakeLists.txt: fault_hostile_clients_py, label integration) with AUGMENTD_BIN set to
the build's binary, or directly: AUGMENTD_BIN=build/server/augmentd .venv/bin/python -m pytest tests/fault -q
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from augmentd_server import ServerProcess, client_env  # noqa: E402  (makes `augmentd` importable)
from test_sessions import _write_dataset  # noqa: E402

import augmentd  # noqa: E402
import grpc  # noqa: E402
from augmentd.v1 import batch_pb2, pipeline_pb2, session_pb2  # noqa: E402

C = grpc.StatusCode


def _serve(tmp_path, *extra):
    proc = ServerProcess(["--listen=127.0.0.1:0", "--device=cpu", f"--dataset_root={tmp_path}", "--batch_workers=2",
                          *extra])
    proc.addresses = proc.wait_for_serving()
    return proc


def _alive(proc, address):
    assert proc.proc.poll() is None, f"augmentd died (exit {proc.proc.returncode}):\n{proc.output[-4000:]}"
    with augmentd.Client(address) as client:
        assert client.health().name == "SERVING"


def _stop(proc):
    rc = proc.stop()
    assert rc == 0, f"augmentd exited with {rc}:\n{proc.output[-4000:]}"


# ---- 1. client shared memory truncated under the server ----------------------------------------------------

def test_truncated_client_shm_region_is_a_status(tmp_path):
    proc = _serve(tmp_path, "--allow_client_shm=true")
    try:
        address = proc.addresses[0]
        with augmentd.Client(address) as client:
            config = augmentd.patch_session_config([16, 16, 16], batch_size=2, seed=3)
            other = client.open_session(augmentd.patch_session_config([8, 8, 8], batch_size=1, seed=4))
            for round_ in range(3):  # bounded: three regions, each truncated once, fresh session each time
                region = augmentd.SharedInput("in", 1 << 20)
                session = client.open_session(config, input_regions=[region])
                shape = (2, 1, *session.initial_patch_size)
                n = int(np.prod(shape)) * 4
                image = region.array(0, shape, np.float32)
                seg = region.array(n, shape, np.int16)
                image[...] = np.random.RandomState(round_).randn(*shape)
                seg[...] = 1
                t_image, t_seg = region.tensor(image, "image"), region.tensor(seg, "segmentation")
                assert client.augment(session, t_image, t_seg, batch_index=0).image.shape == (2, 1, 16, 16, 16)
                del image, seg
                # The client shrinks its object: to 0 bytes, or to half of the image tensor.
                os.truncate(region._path, 0 if round_ % 2 == 0 else n // 2)
                with pytest.raises(augmentd.AugmentdError) as err:
                    client.augment(session, t_image, t_seg, batch_index=1)
                assert err.value.code in (C.FAILED_PRECONDITION, C.DATA_LOSS), err.value
                assert "host_shm_regions[0] 'in'" in err.value.details and "truncated" in err.value.details
                # Every other session keeps working; so does the server.
                x = np.zeros((1, 1, *other.initial_patch_size), np.float32)
                assert client.augment(other, x, x.astype(np.int16)).image.shape == (1, 1, 8, 8, 8)
                _alive(proc, address)
                client.close_session(session)
                region._base = None  # our own mapping of the shrunk object must not be touched either
                region.close()
            assert "Augment failed" in proc.output
    finally:
        _stop(proc)


# ---- 2. dataset case files truncated in place while a session streams ---------------------------------------

def _write_big_dataset(root, cases=3, shape=(96, 128, 128)):
    ds = _write_dataset(root)  # plans, dataset.json and 3 small cases; replace the cases by larger ones
    plans = json.loads((ds / "nnUNetPlans.json").read_text())
    plans["configurations"]["3d_fullres"]["patch_size"] = list(shape)  # every sample reads whole arrays
    (ds / "nnUNetPlans.json").write_text(json.dumps(plans))
    data = ds / "nnUNetPlans_3d_fullres"
    rng = np.random.RandomState(1)
    for i in range(cases):
        np.save(data / f"c{i}.npy", rng.randn(1, *shape).astype(np.float32))
        seg = np.zeros((1, *shape), np.int16)
        seg[0, 10:20, 10:20, 10:20] = 1
        seg[0, -8:, -8:, -8:] = 2
        np.save(data / f"c{i}_seg.npy", seg)
    return ds


def _toggle_truncation(paths, stop, counter):
    """Truncates each file to half (header intact) and writes the tail back, in place, until `stop` is set:
    what a re-run of nnUNetv2_preprocess over a dataset in use does to its readers."""
    contents = {p: p.read_bytes() for p in paths}
    while not stop.is_set():
        for p, full in contents.items():
            with open(p, "r+b") as f:
                f.truncate(len(full) // 2)
                time.sleep(0.0003)
                f.seek(len(full) // 2)
                f.write(full[len(full) // 2:])
            counter[0] += 1
            time.sleep(0.002)


def test_case_files_truncated_while_streaming_give_data_loss(tmp_path):
    dataset = _write_big_dataset(tmp_path)
    proc = _serve(tmp_path, "--max_batch_size=4")
    data_loss = 0
    try:
        address = proc.addresses[0]
        files = sorted((dataset / "nnUNetPlans_3d_fullres").glob("*.npy"))
        with augmentd.Client(address) as client:
            for round_ in range(12):  # bounded: 12 rounds of <= 40 batches
                session = client.open_session(augmentd.dataset_session_config(
                    str(dataset), batch_size=2, seed=round_, prefetch_depth=4,
                    preset=pipeline_pb2.PRESET_NNUNET_VALIDATION))
                stop, counter = threading.Event(), [0]
                toggler = threading.Thread(target=_toggle_truncation, args=(files, stop, counter), daemon=True)
                toggler.start()
                try:
                    for _ in range(6):  # a stream ends at its first error: start it again, 6 times per round
                        try:
                            with client.stream_batches(session, credits=4, max_batches=10, timeout=60) as stream:
                                for _ in stream:
                                    pass
                        except augmentd.AugmentdError as err:
                            assert err.code == C.DATA_LOSS, err
                            assert ".npy" in err.details, err
                            data_loss += 1
                finally:
                    stop.set()
                    toggler.join()
                _alive(proc, address)
                try:
                    client.close_session(session)
                except augmentd.AugmentdError:
                    pass
        assert data_loss > 0, "no read ever landed on a truncated file: the test did not exercise the fault"
        inside = proc.output.count("while being read")
        print(f"[truncation] {data_loss} streams ended with DATA_LOSS; {inside} log lines of faults inside a read")
    finally:
        _stop(proc)


# ---- 3. session credential and idle lease ---------------------------------------------------------------------

_KILLED_CLIENT = textwrap.dedent("""
    import sys, time, augmentd
    with augmentd.Client(sys.argv[1]) as client:
        s = client.open_session(augmentd.dataset_session_config(sys.argv[2], batch_size=1, seed=int(sys.argv[3]),
                                                                delivery="host_shm", prefetch_depth=2))
        stream = client.stream_batches(s, credits=2)
        next(stream)
        print("streaming", s.session_id, flush=True)
        time.sleep(600)
""")


def test_sessions_of_killed_clients_expire(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path, "--max_sessions=3", "--session_idle_timeout=2s", "--metrics_port=127.0.0.1:0")
    try:
        address = proc.addresses[0]
        for wave in range(2):  # bounded: two waves of three SIGKILLed trainers
            kids = [subprocess.Popen([sys.executable, "-c", _KILLED_CLIENT, address, str(dataset), str(10 * wave + i)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=client_env())
                    for i in range(3)]
            try:
                for k in kids:
                    line = k.stdout.readline()
                    assert line.startswith("streaming"), line + k.stdout.read()
                with augmentd.Client(address) as client:
                    with pytest.raises(augmentd.AugmentdError) as full:
                        client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1))
                    assert full.value.code == C.RESOURCE_EXHAUSTED and "max_sessions" in full.value.details
            finally:
                for k in kids:
                    k.send_signal(signal.SIGKILL)
                    k.wait()
            shm_before = [n for n in os.listdir("/dev/shm") if n.startswith(f"augmentd-{proc.proc.pid}-")]
            assert len(shm_before) >= 6, shm_before  # 3 sessions x 2 slots
            deadline = time.monotonic() + 15
            with augmentd.Client(address) as client:
                while True:
                    try:
                        s = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1))
                        break
                    except augmentd.AugmentdError as err:
                        assert err.code == C.RESOURCE_EXHAUSTED, err
                        assert time.monotonic() < deadline, "sessions of killed clients never expired"
                        time.sleep(0.25)
                client.close_session(s)
            deadline = time.monotonic() + 10
            while [n for n in os.listdir("/dev/shm") if n.startswith(f"augmentd-{proc.proc.pid}-")]:
                assert time.monotonic() < deadline, "slot segments of expired sessions were not unlinked"
                time.sleep(0.1)
        assert proc.output.count(" expired: no call and no open stream") == 6, proc.output[-3000:]
        metrics = _http_get(_metrics_address(proc), "/metrics")
        assert re.search(r"^augmentd_sessions_expired_total 6$", metrics, re.M), metrics[:2000]
    finally:
        _stop(proc)


def test_only_the_owner_of_a_session_can_use_it(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path)
    try:
        address = proc.addresses[0]
        # A client that knows only the id can neither stream, augment nor close the session.
        with augmentd.Client(address) as owner, augmentd.Client(address) as stranger:
            s = owner.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1))
            p = owner.open_session(augmentd.patch_session_config([8, 8, 8], batch_size=1))
            for token in ("", "0" * 32, p.session_token):
                with pytest.raises(grpc.RpcError) as err:
                    stranger.stub.CloseSession(session_pb2.CloseSessionRequest(session_id=s.session_id,
                                                                               session_token=token), timeout=10)
                assert err.value.code() == C.NOT_FOUND and "no session" in err.value.details()
                start = batch_pb2.StreamBatchesRequest(start=batch_pb2.StreamStart(
                    session_id=s.session_id, session_token=token, initial_credits=1, max_batches=1))
                with pytest.raises(grpc.RpcError) as err:
                    list(stranger.stub.StreamBatches(iter([start]), timeout=10))
                assert err.value.code() == C.NOT_FOUND, err.value
                x = np.zeros((1, 1, 8, 8, 8), np.float32)
                from augmentd.tensors import from_numpy
                wrong = s.session_token if token == p.session_token else token  # a token, not p's own
                req = batch_pb2.AugmentRequest(session_id=p.session_id, session_token=wrong,
                                               image=from_numpy(x, "image"),
                                               segmentation=from_numpy(x.astype(np.int16), "segmentation"))
                with pytest.raises(grpc.RpcError) as err:
                    stranger.stub.Augment(req, timeout=10)
                assert err.value.code() == C.NOT_FOUND, err.value
            assert len(s.session_token) == 32 and s.session_token != p.session_token
            # Unknown ids are answered in the same words: ids cannot be probed.
            with pytest.raises(grpc.RpcError) as unknown:
                stranger.stub.CloseSession(session_pb2.CloseSessionRequest(session_id="s999-0"), timeout=10)
            assert unknown.value.details().replace("s999-0", "ID") == err.value.details().replace(p.session_id, "ID")
            # The owner, which sends the credential transparently, is unaffected.
            with owner.stream_batches(s, credits=1, max_batches=1) as stream:
                assert len(list(stream)) == 1
            owner.close_session(s)
            owner.close_session(p.session_id)  # by id: the client remembers the credential of what it opened
    finally:
        _stop(proc)


# ---- 4. HTTP probes with idle and slow connections open -----------------------------------------------------

def _metrics_address(proc):
    m = re.search(r"metrics on http://([^/]+)/metrics", proc.output)
    assert m, proc.output
    host, port = m.group(1).rsplit(":", 1)
    return host, int(port)


def _http_get(addr, path, timeout=5.0):
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        return _read_all(s).decode(errors="replace")


def _read_all(s):
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return out
        out += chunk


def _probe_ms(addr):
    t0 = time.perf_counter()
    with socket.create_connection(addr, timeout=2.0) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while b"\r\n\r\nok\n" not in data:
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
    assert data.startswith(b"HTTP/1.1 200"), data
    return (time.perf_counter() - t0) * 1e3


def test_http_probes_answer_with_64_idle_and_slow_connections(tmp_path):
    proc = _serve(tmp_path, "--metrics_port=127.0.0.1:0")
    hogs = []
    try:
        addr = _metrics_address(proc)
        for i in range(64):  # 32 idle, 32 slow-drip (a byte every 100 ms, never finishing the request)
            s = socket.create_connection(addr, timeout=2.0)
            if i % 2:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHo")
            hogs.append(s)
        worst = 0.0
        for k in range(20):  # bounded: 20 probes over ~2 s while the drips continue
            for s in hogs[1::2]:
                try:
                    s.send(b"s")
                except OSError:
                    pass
            worst = max(worst, _probe_ms(addr))
            time.sleep(0.1)
        print(f"[http] slowest of 20 /healthz probes with 64 idle/slow connections open: {worst:.1f} ms")
        assert worst < 100.0, f"slowest /healthz probe took {worst:.1f} ms with 64 idle/slow connections open"
        for path, code in (("/readyz", "200"), ("/metrics", "200"), ("/nope", "404")):
            assert _http_get(addr, path).startswith(f"HTTP/1.1 {code}"), path
    finally:
        for s in hogs:
            s.close()
        _stop(proc)


def test_http_pipelined_and_half_closed_requests(tmp_path):
    proc = _serve(tmp_path, "--metrics_port=127.0.0.1:0")
    try:
        addr = _metrics_address(proc)
        # Three pipelined requests in one segment, then a half-close: three answers in order, then EOF.
        with socket.create_connection(addr, timeout=5.0) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            data = _read_all(s).decode()
        answers = re.findall(r"HTTP/1\.1 (\d+) [^\r]*\r\n", data)
        assert answers == ["200", "200", "200"], data
        assert data.index("ok\n") < data.index("ready\n"), data
        # One request and a half-close (no Connection: close): answered, then closed.
        with socket.create_connection(addr, timeout=5.0) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            s.shutdown(socket.SHUT_WR)
            data = _read_all(s).decode()
        assert data.startswith("HTTP/1.1 200") and data.endswith("ok\n"), data
        # Keep-alive: two requests on one connection, the second after the first answer.
        with socket.create_connection(addr, timeout=5.0) as s:
            for _ in range(2):
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                data = b""
                while not data.endswith(b"ok\n"):
                    chunk = s.recv(4096)
                    assert chunk, data
                    data += chunk
                assert data.startswith(b"HTTP/1.1 200"), data
    finally:
        _stop(proc)


# ---- 5. an idle stream must not starve another stream of the same HOST_SHM session -------------------------

def test_idle_stream_does_not_hold_every_slot_of_its_session(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path, "--max_prefetch_depth=8")
    try:
        with augmentd.Client(proc.addresses[0]) as client:
            for prefetch in (4, 6):  # bounded: two sessions
                session = client.open_session(augmentd.dataset_session_config(
                    str(dataset), batch_size=1, seed=prefetch, prefetch_depth=prefetch, delivery="host_shm"))
                # The idle stream: asks for one batch, never takes it; its prefetch fills the ring meanwhile.
                idle = client.stream_batches(session, credits=1)
                deadline = time.monotonic() + 10
                while client.stats(session).sessions[0].queued_batches + 1 < prefetch:
                    assert time.monotonic() < deadline, "the idle stream's prefetch did not fill the ring"
                    time.sleep(0.05)
                time.sleep(0.2)
                t0 = time.monotonic()
                with client.stream_batches(session, credits=2, max_batches=8, timeout=20) as reader:
                    got = [b.batch_index for b in reader]
                assert len(got) == 8, got
                assert time.monotonic() - t0 < 15
                idle.close()
                client.close_session(session)
        _alive(proc, proc.addresses[0])
    finally:
        _stop(proc)


# ---- 6. long strings; the drain -------------------------------------------------------------------------------

def test_overlong_strings_are_invalid_argument_naming_the_field(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path)
    try:
        with augmentd.Client(proc.addresses[0]) as client:
            config = augmentd.dataset_session_config(str(dataset), batch_size=1)
            config.dataset.dataset_path = str(tmp_path) + "/" + "a" * 5000
            with pytest.raises(augmentd.AugmentdError) as err:
                client.open_session(config)
            assert err.value.code == C.INVALID_ARGUMENT and "dataset_path" in err.value.details, err.value
            config = augmentd.dataset_session_config(str(dataset), batch_size=1)
            config.name = "n" * 5000
            with pytest.raises(augmentd.AugmentdError) as err:
                client.open_session(config)
            assert err.value.code == C.INVALID_ARGUMENT and "config.name" in err.value.details, err.value
            with pytest.raises(grpc.RpcError) as err:
                client.stub.CloseSession(session_pb2.CloseSessionRequest(session_id="s" * 5000), timeout=10)
            assert err.value.code() == C.INVALID_ARGUMENT and "session_id" in err.value.details()
            # A long but legal path component (NAME_MAX exceeded, below PATH_MAX): still the client's error.
            config = augmentd.dataset_session_config(str(tmp_path) + "/" + "b" * 300, batch_size=1)
            with pytest.raises(augmentd.AugmentdError) as err:
                client.open_session(config)
            assert err.value.code in (C.INVALID_ARGUMENT, C.NOT_FOUND), err.value
            assert "dataset_path" in err.value.details, err.value
        _alive(proc, proc.addresses[0])
    finally:
        _stop(proc)


def test_drain_reports_not_serving_and_refuses_new_sessions_by_name(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = _serve(tmp_path, "--drain_timeout=4s")
    address = proc.addresses[0]
    with augmentd.Client(address) as client:
        s = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1))
        stream = client.stream_batches(s, credits=1)
        next(stream)
        proc.proc.send_signal(signal.SIGTERM)
        seen_not_serving = refused_by_name = False
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (seen_not_serving and refused_by_name):
            try:
                if client.health(timeout=1).name == "NOT_SERVING":
                    seen_not_serving = True
                client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1), timeout=2)
            except augmentd.AugmentdError as err:
                if err.code == C.UNAVAILABLE and "draining" in err.details:
                    refused_by_name = True
                elif err.code == C.UNAVAILABLE:
                    break  # listeners closed
            except grpc.RpcError:
                break
            time.sleep(0.02)
        # The open stream ends cleanly (StreamEnd), not with an error.
        for _ in stream:
            pass
        assert stream.end is not None, "the stream did not end with StreamEnd"
    rc = proc.proc.wait(timeout=30)
    assert rc == 0, proc.output[-3000:]
    assert seen_not_serving, "grpc.health never reported NOT_SERVING during the drain"
    assert refused_by_name, "OpenSession during the drain was not UNAVAILABLE naming the drain"

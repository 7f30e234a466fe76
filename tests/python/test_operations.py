"""Operations of the real augmentd binary: the Prometheus /metrics endpoint (scraped, parsed as text exposition
format 0.0.4, counters checked against the batches actually streamed), /healthz and /readyz, per-batch log lines
with session id and batch index, and a graceful drain on SIGTERM while a stream is active."""
import re
import signal
import time
import urllib.error
import urllib.request

import pytest

from augmentd_server import ServerProcess  # first: makes `augmentd` importable
from test_sessions import _write_dataset

import augmentd  # noqa: E402
import grpc  # noqa: E402

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')


def parse_exposition(text):
    """{(name, frozenset(labels)): value} of a text-format 0.0.4 page; checks HELP/TYPE come before samples."""
    samples, types = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            types[name] = kind
            continue
        if line.startswith("#"):
            assert line.startswith("# HELP "), line
            continue
        m = _SAMPLE.match(line)
        assert m, f"not an exposition sample line: {line!r}"
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        assert family in types, f"sample {name} before its # TYPE line"
        parsed = _LABEL.findall(labels)
        assert ",".join(f'{k}="{v}"' for k, v in parsed) == labels, f"bad label set in {line!r}"
        key = (name, frozenset(parsed))
        assert key not in samples, f"duplicate sample {line!r}"
        samples[key] = float(value)
    return samples


def metric(samples, metric_name, **labels):
    return samples.get((metric_name, frozenset(labels.items())))


def scrape(address, path="/metrics"):
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()


def metrics_address(server):
    m = re.search(r"metrics on http://(\S+)/metrics", server.output)
    assert m, server.output
    return m.group(1)


@pytest.fixture
def served(tmp_path):
    dataset = _write_dataset(tmp_path)
    proc = ServerProcess(["--listen=127.0.0.1:0", f"--listen=unix://{tmp_path}/a.sock", "--device=cpu",
                          f"--dataset_root={tmp_path}", "--batch_workers=2", "--metrics_port=127.0.0.1:0",
                          "--drain_timeout=4s"])
    try:
        proc.addresses = proc.wait_for_serving()
        yield proc, dataset
    finally:
        if proc.proc.poll() is None:
            proc.stop()


def test_metrics_counters_move_by_the_batches_streamed(served):
    server, dataset = served
    address = metrics_address(server)
    assert re.fullmatch(r"127\.0\.0\.1:\d+", address) and not address.endswith(":0")
    status, content_type, text = scrape(address)
    assert status == 200 and "version=0.0.4" in content_type
    before = parse_exposition(text)
    assert metric(before, "augmentd_up") == 1
    assert metric(before, "augmentd_sessions_open") == 0
    assert metric(before, "augmentd_executor_workers", device="cpu") == 2

    with augmentd.Client(server.addresses[0]) as client:
        a = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=2, seed=1, name="a"))
        b = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=1, seed=2, name="b"))
        with client.stream_batches(a, credits=2, max_batches=3) as stream:
            got_a = list(stream)
        with client.stream_batches(b, credits=1, max_batches=2) as stream:
            got_b = list(stream)
        assert len(got_a) == 3 and len(got_b) == 2
        stats = {s.session_id: s for s in client.stats().sessions}

        after = parse_exposition(scrape(address)[2])
        assert metric(after, "augmentd_sessions_open") == 2
        assert metric(after, "augmentd_sessions_opened_total") == metric(before, "augmentd_sessions_opened_total") + 2
        assert metric(after, "augmentd_batches_total") == metric(before, "augmentd_batches_total") + 5
        for session, n, batch_size in ((a, 3, 2), (b, 2, 1)):
            sid = session.session_id
            assert metric(after, "augmentd_session_batches_delivered_total", session=sid) == n
            assert metric(after, "augmentd_session_samples_delivered_total", session=sid) == n * batch_size
            delivered = metric(after, "augmentd_session_bytes_delivered_total", session=sid)
            assert delivered == stats[sid].bytes_delivered
            assert delivered >= n * batch_size * 8 * 8 * 8 * 4  # at least the float32 images
            assert metric(after, "augmentd_session_active_streams", session=sid) == 0
            assert metric(after, "augmentd_session_credits", session=sid) == 0
            assert metric(after, "augmentd_session_weight", session=sid) == 1
            assert metric(after, "augmentd_session_info", session=sid, name=session.config.name, device="cpu") == 1
            for phase in ("queue", "load", "compute"):
                count = metric(after, "augmentd_batch_latency_seconds_count", session=sid, phase=phase)
                assert count == n, (phase, count)
                inf = metric(after, "augmentd_batch_latency_seconds_bucket", session=sid, phase=phase, le="+Inf")
                assert inf == n
                buckets = sorted((float(dict(k[1])["le"]), v) for k, v in after.items()
                                 if k[0] == "augmentd_batch_latency_seconds_bucket"
                                 and dict(k[1]).get("session") == sid and dict(k[1]).get("phase") == phase)
                assert [v for _, v in buckets] == sorted(v for _, v in buckets), "buckets are cumulative"
            assert metric(after, "augmentd_batch_latency_seconds_sum", session=sid, phase="compute") > 0
        client.close_session(a)
        gone = parse_exposition(scrape(address)[2])
        assert metric(gone, "augmentd_sessions_open") == 1
        assert metric(gone, "augmentd_session_batches_delivered_total", session=a.session_id) is None
        assert metric(gone, "augmentd_batch_latency_seconds_count", session=a.session_id, phase="load") is None

    assert scrape(address, "/healthz")[0] == 200
    assert scrape(address, "/readyz")[:1] == (200,)
    assert scrape(address, "/nope")[0] == 404
    # Per-batch log lines carry the session id and the batch index.
    assert re.search(rf"session={a.session_id} .*batch=\d", server.output), server.output


def _watch_health(channel):
    """grpc.health.v1.Health/Watch("") as an iterator of serving-status numbers."""
    def decode(data):
        return data[1] if len(data) >= 2 else 0
    return channel.unary_stream("/grpc.health.v1.Health/Watch", request_serializer=lambda s: b"",
                                response_deserializer=decode)("")


def test_sigterm_while_streaming_drains(served):
    server, dataset = served
    address = metrics_address(server)
    client = augmentd.Client(server.addresses[1])
    session = client.open_session(augmentd.dataset_session_config(str(dataset), batch_size=2, seed=9,
                                                                  prefetch_depth=3))
    watch = _watch_health(client.channel)
    assert next(watch) == 1  # SERVING
    stream = client.stream_batches(session, credits=2)
    first = [next(stream), next(stream)]
    assert [b.batch_index for b in first] == [0, 1]
    t0 = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    assert next(watch) == 2  # NOT_SERVING, seen while the server drains
    assert scrape(address, "/readyz")[0] == 503 or server.proc.poll() is not None
    # The stream keeps its order, every batch it receives is whole, and it ends with `end` (no error).
    rest = list(stream)
    assert [b.batch_index for b in rest] == list(range(2, 2 + len(rest)))
    for b in first + rest:
        assert b.image.shape == (2, 1, 8, 8, 8)
    assert stream.end is not None and stream.end.reason == "session closed", stream.end
    assert stream.end.next_batch_index == 2 + len(rest)
    # The open Health/Watch call holds the drain until --drain_timeout (4 s), then it is cancelled.
    with pytest.raises(grpc.RpcError):
        for _ in watch:
            pass
    rc = server.proc.wait(timeout=15)
    elapsed = time.monotonic() - t0
    assert rc == 0, server.output
    assert elapsed < 4 + 3, elapsed  # --drain_timeout=4s plus process teardown
    assert "draining" in server.output
    client.close()


def test_help_explains_every_flag():
    """Every flag in --help has an explanation with its default, including the operations / security ones."""
    import subprocess

    from augmentd_server import augmentd_bin
    out = subprocess.run([augmentd_bin(), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    blocks = re.findall(r"^  (--\w+)=\S+\n((?:      .*\n)+)", out.stdout, flags=re.M)
    flags = {name: " ".join(text.split()) for name, text in blocks}
    for name in ("--metrics_port", "--tls_cert", "--tls_key", "--tls_client_ca", "--auth_token_file",
                 "--allow_client_shm", "--gpu_workers", "--batch_workers", "--max_inflight_batches_per_session",
                 "--max_inflight_bytes_per_session", "--drain_timeout"):
        assert name in flags, f"{name} missing from --help:\n{out.stdout}"
    for name, text in flags.items():
        assert len(text) > 30 and "Default" in text, f"{name}: '{text}'"

#!/usr/bin/env python3
"""Where an inline patch request's time goes between the Python client and augmentd (issue 22), part by part.

The inline StreamPatches call of patch_bench (B=2, 205³ float32 image + int16 segmentation = 103 MB in, ~27 MB
out) spends most of its time in the "request" phase (the request queued → the server's handler has it). This
probe measures the parts of that path on their own, all in one run on the same host:

  encode     augmentd.wire.encode_stream_request of the request (the one client-side copy of the tensor bytes),
             against np.copyto of the same bytes into a reused buffer (the memory-bandwidth floor).
  socket     the same number of bytes through a bare socket, blocking sender and receiver threads: unix
             socketpair and TCP loopback, default buffers and SO_SNDBUF / SO_RCVBUF of --sndbuf (the kernel caps
             it at net.core.wmem_max; the effective value is printed). The floor of any transport.
  grpc-py    one message of the same size per call over a gRPC stream between this process's client and a
             Python gRPC server with raw-bytes handlers (no protobuf), unix and TCP: the HTTP/2 transport alone.
  server     the real augmentd (--bin) with an inline PatchAugmenter session, over unix and TCP, calls of the two
             alternating in one process (both see the same load); then on the unix connection alternating calls
             with the client socket's send buffer at the default and at --sndbuf (set on the connected socket
             found in /proc/self/fd); then two servers, one with --unix_socket_buffer=0 (the server's send buffer,
             i.e. the response), calls alternating. Phases as patch_bench defines them (PatchFuture.phases).
             One message per batch (AUGMENTD_PATCH_CHUNK=0), as in session 9.
  chunks     one message per batch against PatchChunk messages of the --chunks sizes (AugmentRequest.chunked_bytes),
             one PatchAugmenter per size on one server, calls rotating.

Timings are medians of --iters rounds after --warmup. On a shared machine the absolute numbers are noisy; the pairs
measured alternately (unix vs TCP, default vs wide send buffer) are the comparisons to read.

    python3 bench/inline_transport_probe.py --device cpu --out /tmp/inline-probe.md
    python3 bench/inline_transport_probe.py --device cuda:0 --out $OUT/inline-probe.md   # the GPU host (CPU work)
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import queue
import socket
import statistics
import sys
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "client", "python", "src"))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))

import augmentd  # noqa: E402
from augmentd.v1 import batch_pb2, server_info_pb2, tensor_pb2  # noqa: E402
from augmentd.wire import EncodedRequest, encode_stream_request  # noqa: E402

INLINE = server_info_pb2.DELIVERY_KIND_INLINE


def med(values):
    return statistics.median(values) if values else float("nan")


def sysctl(name: str) -> str:
    try:
        with open("/proc/sys/" + name.replace(".", "/")) as f:
            return f.read().strip()
    except OSError:
        return "?"


def request_arrays(initial, batch=2):
    rng = np.random.default_rng(0)
    image = rng.standard_normal((batch, 1, *initial), dtype=np.float32)
    seg = (rng.random((batch, 1, *initial)) * 3).astype(np.int16)
    return image, seg


def encoded(image, seg) -> bytes:
    request = batch_pb2.AugmentRequest(session_id="s1-probe", batch_index=1)
    heads = (tensor_pb2.Tensor(name="image", dtype=tensor_pb2.DTYPE_FLOAT32, shape=image.shape),
             tensor_pb2.Tensor(name="segmentation", dtype=tensor_pb2.DTYPE_INT16, shape=seg.shape))
    return encode_stream_request(EncodedRequest(request, heads, (image, seg)))


def probe_encode(args, image, seg):
    """encode_stream_request as shipped (written in place, in parallel chunks) and with its b"".join fallback,
    alternating; np.copyto into a reused buffer as the floor."""
    from augmentd import wire

    times = {"direct": [], "join": [], "copy": []}
    flat = np.empty(image.nbytes + seg.nbytes, np.uint8)
    direct = wire._DIRECT
    try:
        for i in range(2 * (args.warmup + args.iters)):
            mode = "join" if i % 2 else "direct"
            wire._DIRECT = 1 << 62 if mode == "join" else direct
            t0 = time.perf_counter()
            data = encoded(image, seg)
            t1 = time.perf_counter()
            del data
            np.copyto(flat[:image.nbytes], image.reshape(-1).view(np.uint8))
            np.copyto(flat[image.nbytes:], seg.reshape(-1).view(np.uint8))
            t2 = time.perf_counter()
            if i >= 2 * args.warmup:
                times[mode].append((t1 - t0) * 1e3)
                times["copy"].append((t2 - t1) * 1e3)
    finally:
        wire._DIRECT = direct
    return [(f"encode_stream_request: written in place ({wire._copy_threads()} copy thread(s))", med(times["direct"])),
            ("encode_stream_request: b\"\".join of the parts (alternating)", med(times["join"])),
            ("np.copyto into a reused buffer (one thread)", med(times["copy"]))]


def socket_pair(family):
    if family == "unix":
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    a = socket.create_connection(listener.getsockname())
    b, _ = listener.accept()
    listener.close()
    return a, b


def probe_socket(args, nbytes):
    payload = memoryview(bytearray(os.urandom(1 << 20)) * (nbytes >> 20))
    rows = []
    for family in ("unix", "tcp"):
        for sndbuf in (0, args.sndbuf):
            a, b = socket_pair(family)
            if sndbuf:
                a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
                b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, sndbuf)
            sink = memoryview(bytearray(len(payload)))

            def receive():
                got = 0
                while got < len(sink):
                    got += b.recv_into(sink[got:], min(4 << 20, len(sink) - got))

            times = []
            for i in range(args.warmup + args.iters):
                t = threading.Thread(target=receive)
                t0 = time.perf_counter()
                t.start()
                a.sendall(payload)
                t.join()
                if i >= args.warmup:
                    times.append((time.perf_counter() - t0) * 1e3)
            effective = a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
            rows.append((f"{family}, SO_SNDBUF {'default' if not sndbuf else sndbuf} (effective {effective})",
                         med(times)))
            a.close()
            b.close()
    return rows


def probe_grpc_py(args, data: bytes, tmp: str):
    import grpc
    from concurrent import futures

    opts = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    rows = []
    for family in ("unix", "tcp"):
        arrived: "queue.SimpleQueue" = queue.SimpleQueue()

        def handler(requests, context):
            for r in requests:
                arrived.put(time.perf_counter())
                yield b"ok"

        server = grpc.server(futures.ThreadPoolExecutor(4), options=opts)
        server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
            "probe.Probe", {"S": grpc.stream_stream_rpc_method_handler(handler)})])
        if family == "unix":
            target = f"unix://{tmp}/grpc-py.sock"
            server.add_insecure_port(target)
        else:
            port = server.add_insecure_port("127.0.0.1:0")
            target = f"127.0.0.1:{port}"
        server.start()
        channel = grpc.insecure_channel(target, options=opts)
        outgoing: "queue.SimpleQueue" = queue.SimpleQueue()

        def requests():
            while True:
                item = outgoing.get()
                if item is None:
                    return
                yield item

        responses = channel.stream_stream("/probe.Probe/S")(requests())
        times = []
        for i in range(args.warmup + args.iters):
            t0 = time.perf_counter()
            outgoing.put(data)
            t1 = arrived.get()
            next(responses)
            if i >= args.warmup:
                times.append((t1 - t0) * 1e3)
        outgoing.put(None)
        for _ in responses:
            pass
        channel.close()
        server.stop(None)
        rows.append((f"{family}: message queued → the Python server's handler has it", med(times)))
    return rows


def set_send_buffer(peer_path: str, size: int) -> int:
    """SO_SNDBUF / SO_RCVBUF of this process's unix sockets connected to peer_path; returns how many."""
    n = 0
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                continue
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        try:
            if s.family == socket.AF_UNIX and os.path.normpath("/" + s.getpeername().lstrip("/")) == peer_path:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
                n += 1
        except (OSError, TypeError):
            pass
        finally:
            s.close()
    return n


PHASES = ("submit", "request", "queue", "compute", "delivery", "response", "result")


def phase_row(name, calls):
    return (name, med([c[0] for c in calls]), {p: med([c[1][p] for c in calls if p in c[1]]) for p in PHASES})


def probe_server(args, tmp: str):
    """Session 9's rows (the connection and socket buffers), with one message per batch as then (the chunks part
    compares that with PatchChunk messages)."""
    saved = os.environ.get("AUGMENTD_PATCH_CHUNK")
    os.environ["AUGMENTD_PATCH_CHUNK"] = "0"
    try:
        return _probe_server(args, tmp)
    finally:
        if saved is None:
            del os.environ["AUGMENTD_PATCH_CHUNK"]
        else:
            os.environ["AUGMENTD_PATCH_CHUNK"] = saved


def _probe_server(args, tmp: str):
    import patch_bench
    from augmentd_server import ServerProcess

    sock = f"{tmp}/augmentd-probe.sock"
    proc = ServerProcess([f"--listen=unix://{sock}", "--listen=127.0.0.1:0", f"--device={args.device}",
                          "--max_batch_size=4", "--batch_workers=2", "--max_request_bytes=1GiB",
                          "--max_response_bytes=1GiB"])
    rows = []
    try:
        addresses = proc.wait_for_serving(timeout=60)
        tcp = next(a for a in addresses if not a.startswith("unix"))
        ns = argparse.Namespace(preset=args.preset)
        cfg = patch_bench.config(ns, args.patch, 2, args.device, INLINE)
        with augmentd.Client(f"unix://{sock}") as cu, augmentd.Client(tcp) as ct:
            with augmentd.PatchAugmenter(cu, cfg, inline=True) as au, augmentd.PatchAugmenter(ct, cfg, inline=True) as at:
                image, seg = request_arrays(au.patch_size)
                for _ in range(args.warmup):
                    au(image, seg)
                    at(image, seg)

                def call(aug):
                    t0 = time.perf_counter()
                    future = aug.submit(image, seg)
                    aug.result(future)
                    return (time.perf_counter() - t0) * 1e3, future.phases()

                calls = {"unix": [], "tcp": []}
                for i in range(args.iters):
                    order = (("unix", au), ("tcp", at)) if i % 2 else (("tcp", at), ("unix", au))
                    for name, aug in order:
                        calls[name].append(call(aug))
                rows += [phase_row("unix socket, client send buffer widened (alternating with TCP)", calls["unix"]),
                         phase_row("TCP loopback (alternating with unix)", calls["tcp"])]
                calls = {"default": [], "wide": []}
                found = 0
                for i in range(args.iters * 2):
                    wide = i % 2 == 1
                    found = set_send_buffer(sock, args.sndbuf if wide else 106496)  # 106496 → the default 212992
                    calls["wide" if wide else "default"].append(call(au))
                rows += [phase_row("unix, client SO_SNDBUF default (alternating)", calls["default"]),
                         phase_row(f"unix, client SO_SNDBUF {args.sndbuf} (alternating; {found} socket(s) set)",
                                   calls["wide"])]
    finally:
        proc.stop()
    # The server's send buffer (the response): a second server with --unix_socket_buffer=0, calls alternating.
    plain = f"{tmp}/augmentd-probe-plain.sock"
    wide = ServerProcess([f"--listen=unix://{sock}", f"--device={args.device}", "--max_batch_size=4",
                          "--batch_workers=2", "--max_request_bytes=1GiB", "--max_response_bytes=1GiB"])
    narrow = ServerProcess([f"--listen=unix://{plain}", "--unix_socket_buffer=0", f"--device={args.device}",
                            "--max_batch_size=4", "--batch_workers=2", "--max_request_bytes=1GiB",
                            "--max_response_bytes=1GiB"])
    try:
        wide.wait_for_serving(timeout=60)
        narrow.wait_for_serving(timeout=60)
        ns = argparse.Namespace(preset=args.preset)
        cfg = patch_bench.config(ns, args.patch, 2, args.device, INLINE)
        with augmentd.Client(f"unix://{sock}") as cw, augmentd.Client(f"unix://{plain}") as cn:
            with augmentd.PatchAugmenter(cw, cfg, inline=True) as aw, augmentd.PatchAugmenter(cn, cfg, inline=True) as an:
                image, seg = request_arrays(aw.patch_size)
                for _ in range(args.warmup):
                    aw(image, seg)
                    an(image, seg)
                calls = {"wide": [], "narrow": []}
                for i in range(args.iters):
                    order = (("wide", aw), ("narrow", an)) if i % 2 else (("narrow", an), ("wide", aw))
                    for name, aug in order:
                        t0 = time.perf_counter()
                        future = aug.submit(image, seg)
                        aug.result(future)
                        calls[name].append(((time.perf_counter() - t0) * 1e3, future.phases()))
                rows += [phase_row("unix, server send buffer 8 MiB (default; alternating with the next row)",
                                   calls["wide"]),
                         phase_row("unix, server --unix_socket_buffer=0 (another server)", calls["narrow"])]
        # Session 9's changes together against none of them, alternating in this process: "before" = the server
        # with --unix_socket_buffer=0, a client connection left at the default send buffer, b"".join encoding.
        from augmentd import wire

        direct = wire._DIRECT
        os.environ["AUGMENTD_UNIX_SNDBUF"] = "0"
        try:
            cb = augmentd.Client(f"unix://{plain}")
            before = augmentd.PatchAugmenter(cb, cfg, inline=True)
        finally:
            del os.environ["AUGMENTD_UNIX_SNDBUF"]
        try:
            with augmentd.Client(f"unix://{sock}") as ca, augmentd.PatchAugmenter(ca, cfg, inline=True) as after:
                image, seg = request_arrays(after.patch_size)
                for _ in range(args.warmup):
                    after(image, seg)
                    wire._DIRECT = 1 << 62
                    before(image, seg)
                    wire._DIRECT = direct
                calls = {"after": [], "before": []}
                for i in range(args.iters):
                    order = (("after", after), ("before", before)) if i % 2 else (("before", before), ("after", after))
                    for name, aug in order:
                        wire._DIRECT = 1 << 62 if name == "before" else direct
                        t0 = time.perf_counter()
                        future = aug.submit(image, seg)
                        aug.result(future)
                        calls[name].append(((time.perf_counter() - t0) * 1e3, future.phases()))
                wire._DIRECT = direct
                rows += [phase_row("before: no widening either side, join encoding (alternating)", calls["before"]),
                         phase_row("after: session 9's client and server", calls["after"])]
        finally:
            wire._DIRECT = direct
            before.close()
            cb.close()
    finally:
        wide.stop()
        narrow.stop()
    return rows


def probe_chunks(args, tmp: str):
    """Inline batches as one StreamPatches message against PatchChunk messages of --chunks sizes (issue 22), one
    PatchAugmenter per size on one server and one connection, calls rotating between them (all see the same load)."""
    import patch_bench
    from augmentd_server import ServerProcess

    sock = f"{tmp}/augmentd-chunks.sock"
    proc = ServerProcess([f"--listen=unix://{sock}", f"--device={args.device}", "--max_batch_size=4",
                          "--batch_workers=2", "--max_request_bytes=1GiB", "--max_response_bytes=1GiB"])
    sizes = [int(x) for x in args.chunks.split(",")]
    rows = []
    augs = []
    try:
        proc.wait_for_serving(timeout=60)
        ns = argparse.Namespace(preset=args.preset)
        cfg = patch_bench.config(ns, args.patch, 2, args.device, INLINE)
        with augmentd.Client(f"unix://{sock}") as client:
          try:
            for size in sizes:
                os.environ["AUGMENTD_PATCH_CHUNK"] = str(size)
                try:
                    augs.append(augmentd.PatchAugmenter(client, cfg, inline=True))
                finally:
                    del os.environ["AUGMENTD_PATCH_CHUNK"]
                assert augs[-1]._chunk == size, "the server does not list patch_chunks"
            image, seg = request_arrays(augs[0].patch_size)
            for _ in range(args.warmup):
                for aug in augs:
                    aug(image, seg)
            calls = {size: [] for size in sizes}
            for i in range(args.iters):
                for k in range(len(sizes)):
                    j = (i + k) % len(sizes)
                    t0 = time.perf_counter()
                    future = augs[j].submit(image, seg)
                    augs[j].result(future)
                    calls[sizes[j]].append(((time.perf_counter() - t0) * 1e3, future.phases()))
            for size in sizes:
                name = "one message per batch (AUGMENTD_PATCH_CHUNK=0)" if size == 0 else f"chunks of {size >> 10} KiB"
                rows.append(phase_row(name + " (rotating)", calls[size]))
          finally:
            for aug in augs:
                aug.close()
    finally:
        proc.stop()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("AUGMENTD_BIN", os.path.join(REPO, "build", "server", "augmentd")))
    ap.add_argument("--device", default="cpu", help="the augmentd session's device (the transport is host work)")
    ap.add_argument("--patch", type=int, default=128)
    ap.add_argument("--preset", type=int, default=1)
    ap.add_argument("--initial", type=int, default=205, help="the enlarged patch of --patch (205 for 128, nnunet_default)")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sndbuf", type=int, default=8 << 20)
    ap.add_argument("--parts", default="encode,socket,grpc-py,server,chunks")
    ap.add_argument("--chunks", default=f"0,{1 << 20},{4 << 20},{16 << 20}",
                    help="PatchChunk sizes of the chunks part (0: one message per batch)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.environ["AUGMENTD_BIN"] = args.bin
    augmentd.wire.tune_malloc()  # as augmentd.Client does, before any thread allocates
    parts = set(args.parts.split(","))
    initial = [args.initial] * 3
    image, seg = request_arrays(initial)
    data = encoded(image, seg)
    nbytes = len(data)
    lines = [f"# Inline request transport, part by part — {platform.node()}", "",
             f"Date {datetime.date.today().isoformat()}. Command: `python3 {' '.join(sys.argv)}`. Request: B=2, "
             f"{'×'.join(map(str, initial))} float32 image + int16 segmentation, {nbytes / 1e6:.1f} MB encoded. "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start. net.core.wmem_max "
             f"{sysctl('net.core.wmem_max')}, wmem_default {sysctl('net.core.wmem_default')}, tcp_wmem "
             f"'{sysctl('net.ipv4.tcp_wmem')}'. Medians of {args.iters} rounds after {args.warmup}.", ""]
    import tempfile

    with tempfile.TemporaryDirectory(prefix="augmentd-probe-") as tmp:
        if "encode" in parts:
            lines += ["## Client encoding", "", "| what | ms |", "|---|---|"]
            lines += [f"| {n} | {v:.1f} |" for n, v in probe_encode(args, image, seg)] + [""]
        if "socket" in parts:
            lines += [f"## The same {nbytes >> 20} MiB through a bare socket (blocking threads)", "",
                      "| socket | ms |", "|---|---|"]
            lines += [f"| {n} | {v:.1f} |" for n, v in probe_socket(args, nbytes)] + [""]
        if "grpc-py" in parts:
            lines += ["## gRPC Python ↔ Python, raw bytes (HTTP/2 transport, no protobuf)", "",
                      "| path | ms |", "|---|---|"]
            lines += [f"| {n} | {v:.1f} |" for n, v in probe_grpc_py(args, data, tmp)] + [""]
        del data
        if "server" in parts:
            lines += [f"## augmentd, inline PatchAugmenter (session on {args.device}), phases in ms", "",
                      "| connection | call | " + " | ".join(PHASES) + " |", "|---|---|" + "---|" * len(PHASES)]
            for name, call_ms, ph in probe_server(args, tmp):
                lines.append(f"| {name} | {call_ms:.1f} | " + " | ".join(f"{ph[p]:.1f}" for p in PHASES) + " |")
            lines.append("")
        if "chunks" in parts:
            lines += [f"## augmentd, inline batches in one message or in PatchChunk messages (session on {args.device}), "
                      "phases in ms", "", "| request | call | " + " | ".join(PHASES) + " |",
                      "|---|---|" + "---|" * len(PHASES)]
            for name, call_ms, ph in probe_chunks(args, tmp):
                lines.append(f"| {name} | {call_ms:.1f} | " + " | ".join(f"{ph[p]:.1f}" for p in PHASES) + " |")
            lines.append("")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

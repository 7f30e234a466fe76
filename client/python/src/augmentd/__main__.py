"""Command line of the augmentd Python client.

    python -m augmentd info --target 127.0.0.1:50051 [--json] [--timeout 10]
"""
import argparse
import sys

import grpc
from google.protobuf import json_format

from augmentd import Client
from augmentd.v1 import pipeline_pb2, server_info_pb2, tensor_pb2


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def format_server_info(info: server_info_pb2.ServerInfo) -> str:
    lines = [f"augmentd {info.version} ({info.api_version})", f"build: {info.build}",
             f"default device: {info.default_device}", "devices:"]
    for d in info.devices:
        extra = f", {d.uuid}" if d.uuid else ""
        lines.append(f"  {d.name:8s} {d.model}{extra}: {_gib(d.total_memory_bytes)} total, "
                     f"{_gib(d.free_memory_bytes)} free")
    lim = info.limits
    lines.append("limits:")
    for field, value in lim.ListFields():
        lines.append(f"  {field.name} = {value}")
    supported = [t.name for t in info.transforms if t.cpu or t.cuda]
    lines.append(f"transforms: {len(info.transforms)} in the contract, {len(supported)} implemented"
                 + (f" ({', '.join(supported)})" if supported else ""))
    lines.append("presets: " + ", ".join(pipeline_pb2.Preset.Name(p).removeprefix("PRESET_").lower()
                                         for p in info.presets))
    lines.append("deliveries: " + ", ".join(server_info_pb2.DeliveryKind.Name(d).removeprefix("DELIVERY_KIND_")
                                            .lower() for d in info.deliveries))
    lines.append("image dtypes: " + ", ".join(tensor_pb2.DType.Name(t).removeprefix("DTYPE_").lower()
                                              for t in info.image_dtypes))
    lines.append("label dtypes: " + ", ".join(tensor_pb2.DType.Name(t).removeprefix("DTYPE_").lower()
                                              for t in info.label_dtypes))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m augmentd", description="augmentd client")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="print the server's version, devices, limits and transforms")
    info.add_argument("--target", default="127.0.0.1:50051", help="host:port or unix:///path")
    info.add_argument("--json", action="store_true", help="print the full ServerInfo message as JSON")
    info.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the server")
    args = parser.parse_args(argv)

    try:
        with Client(args.target, connect_timeout=args.timeout) as client:
            server_info = client.server_info(timeout=args.timeout)
    except grpc.FutureTimeoutError:
        print(f"augmentd: no server reachable at {args.target} within {args.timeout:g} s", file=sys.stderr)
        return 1
    except grpc.RpcError as e:
        print(f"augmentd: GetServerInfo failed: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    if args.json:
        print(json_format.MessageToJson(server_info, preserving_proto_field_name=True))
    else:
        print(format_server_info(server_info))
    return 0


if __name__ == "__main__":
    sys.exit(main())

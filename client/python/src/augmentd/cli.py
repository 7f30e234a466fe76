"""The ``augmentd-client`` / ``python -m augmentd`` command line.

    python -m augmentd info    [--address ADDR] [--json]           the server's version, devices, limits, transforms
    python -m augmentd preview DATASET [--out preview.png] ...     PNG montage: original vs augmented slices
    python -m augmentd bench   [--dataset PATH] [--batches N] ...  samples/s and batch latency p50/p99 of a server
    python -m augmentd nnunet  install | uninstall | status | ext-dir   register nnUNetTrainerAugmentd with nnU-Net
    python -m augmentd nnunet  check -tr TRAINER [-d DATASET] [-p PLANS] [-c CONF]   its pipeline, translated

``preview`` and ``bench`` use the server at ``--address`` or, without one, start a private local ``augmentd``
(``--augmentd-bin``, else $AUGMENTD_BIN, ``augmentd`` on PATH or the source checkout's build). Exit status 0 on
success, 1 on a failure (message on stderr), 2 for a bad command line.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

import grpc
from google.protobuf import json_format

from augmentd.v1 import pipeline_pb2, server_info_pb2, tensor_pb2

from .client import Client
from .sessions import AugmentdError

PRESETS = {"nnunet_default": pipeline_pb2.PRESET_NNUNET_DEFAULT, "nnunet_da5": pipeline_pb2.PRESET_NNUNET_DA5,
           "nnunet_validation": pipeline_pb2.PRESET_NNUNET_VALIDATION}


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


def _cmd_info(args) -> int:
    try:
        with Client(args.address, connect_timeout=args.timeout) as client:
            server_info = client.server_info(timeout=args.timeout)
    except grpc.FutureTimeoutError:
        print(f"augmentd: no server reachable at {args.address} within {args.timeout:g} s", file=sys.stderr)
        return 1
    except grpc.RpcError as e:
        print(f"augmentd: GetServerInfo failed: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    if args.json:
        print(json_format.MessageToJson(server_info, preserving_proto_field_name=True))
    else:
        print(format_server_info(server_info))
    return 0


def _cmd_nnunet(args) -> int:
    from .nnunet import registration as reg

    if args.action == "install":
        print(reg.install_shim())
    elif args.action == "uninstall":
        print(reg.uninstall_shim())
    elif args.action == "ext-dir":
        print(reg.ext_trainer_dir())
    else:
        state = "installed" if reg.shim_installed() else "not installed"
        print(f"shim {reg.shim_path()}: {state}\nexternal trainer folder (nnUNet_extTrainer): {reg.ext_trainer_dir()}")
    return 0


def add_subcommand(sub, name: str, help_text: str, module_doc: str, local_server: bool = True):
    """A subcommand parser described by its module's docstring (after the first paragraph), with the server
    options (``add_server_options``)."""
    p = sub.add_parser(name, help=help_text, description=module_doc.split("\n\n", 1)[1].strip())
    add_server_options(p, local_server)
    return p


def add_server_options(p: argparse.ArgumentParser, local_ok: bool = True) -> None:
    """--address (alias --target); with ``local_ok`` also the options of a private local server."""
    if local_ok:
        p.add_argument("--address", "--target", dest="address", default=None,
                       help="server to use (host:port or unix:///path); default: start a private local augmentd")
        p.add_argument("--augmentd-bin", default=None,
                       help="augmentd binary for the local server (default: $AUGMENTD_BIN, PATH, source checkout)")
        p.add_argument("--device", default="auto",
                       help="device of the local server and the session: cpu, cuda:N, auto (default: auto)")
    else:
        p.add_argument("--address", "--target", dest="address", default="127.0.0.1:50051",
                       help="host:port or unix:///path (default: 127.0.0.1:50051)")


def build_parser() -> argparse.ArgumentParser:
    from . import cli_bench, cli_preview

    parser = argparse.ArgumentParser(prog="python -m augmentd", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="print the server's version, devices, limits and transforms",
                          description="Prints GetServerInfo: version, devices, limits, transforms, presets.")
    add_server_options(info, local_ok=False)
    info.add_argument("--json", action="store_true", help="print the full ServerInfo message as JSON")
    info.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the server")
    info.set_defaults(func=_cmd_info)

    cli_preview.add_parser(sub)
    cli_bench.add_parser(sub)

    nn = sub.add_parser("nnunet", help="register the augmentd trainers with nnU-Net; check a trainer class",
                        description="install: write a shim module into nnunetv2/training/nnUNetTrainer so that "
                                    "`nnUNetv2_train ... -tr nnUNetTrainerAugmentd` finds the trainer (idempotent); "
                                    "uninstall: remove it; status: show both registration options; ext-dir: print "
                                    "the folder to put into nnUNet_extTrainer instead of installing; check -tr NAME: "
                                    "print how augmentd translates that trainer's pipeline (or why it cannot).")
    actions = nn.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (("install", "write the shim into nnU-Net's trainer folder"), ("uninstall", "remove it"),
                         ("status", "show both registration options"),
                         ("ext-dir", "print the folder for nnUNet_extTrainer")):
        actions.add_parser(action, help=text, description=text).set_defaults(func=_cmd_nnunet)
    from .nnunet import check as nnunet_check
    chk = actions.add_parser("check", help="translate a trainer class's pipeline without training",
                             description=nnunet_check.__doc__.split("\n\n", 1)[1].strip(),
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    nnunet_check.add_arguments(chk)
    chk.set_defaults(func=nnunet_check.main)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\naugmentd: interrupted", file=sys.stderr)
        return 1
    except AugmentdError as err:
        print(f"augmentd {args.command}: {err}", file=sys.stderr)
        return 1
    except (OSError, ValueError, RuntimeError, grpc.FutureTimeoutError) as err:
        print(f"augmentd {args.command}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1

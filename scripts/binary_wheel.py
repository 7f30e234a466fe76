#!/usr/bin/env python3
"""Wheel surgery for scripts/build-wheel.sh (standard library only; patchelf for the RUNPATH step).

    binary_wheel.py add-binary PURE.whl --binary build/server/augmentd --out-dir DIR \
        [--requires 'nvidia-cuda-runtime>=13.0,<14' ...] [--script augmentd=augmentd.packaged:main ...] \
        [--info cuda_architectures=90 ...]
        The pure wheel of client/python (py3-none-any) plus the server executable at augmentd/_bin/augmentd
        (mode 0755) and augmentd/_bin/build-info.json; extra Requires-Dist lines; grpcio / protobuf lower bounds
        raised to what the generated stubs check at import; extra console scripts; Root-Is-Purelib false and
        the tag py3-none-linux_x86_64 (auditwheel then gives the manylinux tag). Prints the new wheel's path.
    binary_wheel.py add-rpath WHEEL --file augmentd/_bin/augmentd --rpath '$ORIGIN/../../nvidia/cu13/lib' \
        --patchelf PATH
        Appends a RUNPATH entry to one ELF file of a wheel (auditwheel keeps only entries inside the wheel, so the
        entry pointing at the nvidia-* wheels is added after the repair) and rewrites the wheel in place.

Every rewrite recomputes RECORD (sha256 and size of each file), so `pip install` verifies the new contents.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

Entry = Tuple[zipfile.ZipInfo, bytes]


def _read(wheel: Path) -> Dict[str, Entry]:
    with zipfile.ZipFile(wheel) as z:
        return {i.filename: (i, z.read(i)) for i in z.infolist() if not i.is_dir()}


def _dist_info(entries: Dict[str, Entry]) -> str:
    names = {n.split("/", 1)[0] for n in entries if n.split("/", 1)[0].endswith(".dist-info")}
    if len(names) != 1:
        raise SystemExit(f"expected one .dist-info folder in the wheel, found {sorted(names)}")
    return names.pop()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write(wheel: Path, entries: Dict[str, Entry]) -> None:
    """Writes entries (RECORD regenerated last) to wheel, atomically."""
    dist_info = _dist_info(entries)
    record_name = f"{dist_info}/RECORD"
    files = {n: e for n, e in entries.items() if n != record_name}
    lines = [f"{n},{_record_hash(d)},{len(d)}" for n, (_, d) in files.items()] + [f"{record_name},,"]
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for name, (info, data) in files.items():
            out = zipfile.ZipInfo(name, date_time=info.date_time)
            out.external_attr = info.external_attr
            out.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(out, data)
        rec = zipfile.ZipInfo(record_name, date_time=(2026, 1, 1, 0, 0, 0))
        rec.external_attr = 0o644 << 16
        z.writestr(rec, "\n".join(lines) + "\n", zipfile.ZIP_DEFLATED)
    os.replace(tmp, wheel)


def _file(name: str, data: bytes, mode: int = 0o644) -> Entry:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    return info, data


def _stub_bounds(entries: Dict[str, Entry]) -> Dict[str, str]:
    """The grpcio / protobuf versions the generated stubs require at import time (they raise below them)."""
    bounds: Dict[str, str] = {}
    for name, (_, data) in entries.items():
        text = data.decode("utf-8", "replace") if name.endswith(".py") else ""
        m = re.search(r"^GRPC_GENERATED_VERSION = '([0-9.]+)'", text, re.M)
        if m:
            bounds["grpcio"] = f">={m.group(1)}"
        m = re.search(r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,\s*(\d+),\s*(\d+),"
                      r"\s*(\d+),", text)
        if m:
            major, minor, patch = (int(g) for g in m.groups())
            bounds["protobuf"] = f">={major}.{minor}.{patch},<{major + 1}"  # a major mismatch is refused too
    return bounds


def add_binary(args: argparse.Namespace) -> None:
    src = Path(args.wheel)
    entries = _read(src)
    dist_info = _dist_info(entries)
    if not any(n.startswith("augmentd/_proto/augmentd/v1/") for n in entries):
        raise SystemExit(f"{src} holds no generated stubs (augmentd/_proto/augmentd/v1/)")
    binary = Path(args.binary).read_bytes()
    if binary[:4] != b"\x7fELF":
        raise SystemExit(f"{args.binary} is not an ELF executable")
    entries["augmentd/_bin/augmentd"] = _file("augmentd/_bin/augmentd", binary, 0o755)
    info = dict(kv.split("=", 1) for kv in args.info)
    entries["augmentd/_bin/build-info.json"] = _file("augmentd/_bin/build-info.json",
                                                     (json.dumps(info, indent=1, sort_keys=True) + "\n").encode())

    # METADATA: raise the stubs' bounds, add the runtime wheels of the executable.
    meta_name = f"{dist_info}/METADATA"
    head, sep, body = entries[meta_name][1].decode().partition("\n\n")
    bounds = _stub_bounds(entries)
    lines = []
    for line in head.splitlines():
        m = re.match(r"Requires-Dist: (grpcio|protobuf)\b[^;]*$", line)
        lines.append(f"Requires-Dist: {m.group(1)}{bounds[m.group(1)]}" if m and m.group(1) in bounds else line)
    # After the unconditional requirements (before those of extras).
    last = max(i for i, line in enumerate(lines)
               if line.startswith("Requires-Python:") or (line.startswith("Requires-Dist:") and ";" not in line))
    lines[last + 1:last + 1] = [f"Requires-Dist: {r}" for r in args.requires]
    entries[meta_name] = _file(meta_name, ("\n".join(lines) + sep + body).encode())

    # Console scripts.
    ep_name = f"{dist_info}/entry_points.txt"
    ep = entries[ep_name][1].decode() if ep_name in entries else ""
    if args.script:
        if "[console_scripts]" not in ep:
            ep = "[console_scripts]\n" + ep
        ep = ep.replace("[console_scripts]\n",
                        "[console_scripts]\n" + "".join(f"{s.replace('=', ' = ', 1)}\n" for s in args.script), 1)
        entries[ep_name] = _file(ep_name, ep.encode())

    # WHEEL: platform-specific, one tag.
    wheel_name = f"{dist_info}/WHEEL"
    text = entries[wheel_name][1].decode()
    text = re.sub(r"^Root-Is-Purelib: .*$", "Root-Is-Purelib: false", text, flags=re.M)
    text = re.sub(r"^Tag: .*\n", "", text, flags=re.M).rstrip("\n") + f"\nTag: {args.tag}\n"
    entries[wheel_name] = _file(wheel_name, text.encode())

    name, version = dist_info[: -len(".dist-info")].rsplit("-", 1)
    out = Path(args.out_dir) / f"{name}-{version}-{args.tag}.whl"
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, entries)
    print(out)


def add_rpath(args: argparse.Namespace) -> None:
    wheel = Path(args.wheel)
    entries = _read(wheel)
    if args.file not in entries:
        raise SystemExit(f"{wheel} has no {args.file}")
    info, data = entries[args.file]
    with tempfile.TemporaryDirectory() as d:
        elf = Path(d) / "elf"
        elf.write_bytes(data)
        old = subprocess.run([args.patchelf, "--print-rpath", str(elf)], check=True, capture_output=True,
                             text=True).stdout.strip()
        parts = [p for p in old.split(":") if p]
        if args.rpath not in parts:
            parts.append(args.rpath)
        subprocess.run([args.patchelf, "--set-rpath", ":".join(parts), str(elf)], check=True)
        new = subprocess.run([args.patchelf, "--print-rpath", str(elf)], check=True, capture_output=True,
                             text=True).stdout.strip()
        entries[args.file] = (info, elf.read_bytes())
    _write(wheel, entries)
    print(f"{args.file}: RUNPATH {new}")


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add-binary", help="pure wheel + server executable -> platform wheel")
    a.add_argument("wheel")
    a.add_argument("--binary", required=True)
    a.add_argument("--out-dir", required=True)
    a.add_argument("--tag", default="py3-none-linux_x86_64")
    a.add_argument("--requires", action="append", default=[], help="an extra Requires-Dist (repeatable)")
    a.add_argument("--script", action="append", default=[], help="NAME=module:function console script")
    a.add_argument("--info", action="append", default=[], help="KEY=VALUE for augmentd/_bin/build-info.json")
    a.set_defaults(func=add_binary)
    r = sub.add_parser("add-rpath", help="append a RUNPATH entry to one ELF file of a wheel")
    r.add_argument("wheel")
    r.add_argument("--file", required=True)
    r.add_argument("--rpath", required=True)
    r.add_argument("--patchelf", default="patchelf")
    r.set_defaults(func=add_rpath)
    args = parser.parse_args(argv)
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

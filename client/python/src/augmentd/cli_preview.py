"""python -m augmentd preview: a PNG montage of original vs augmented patches of an nnU-Net dataset.

For each of --samples cases of a preprocessed configuration folder the case is read here (.b2nd with
blosc2, or nnU-Net's older .npy / .npz), a box of the session's initial patch size is cropped around a
foreground voxel (padding: image 0, labels −1, as nnU-Net's loader pads) and sent through a patch-mode session
with the chosen preset. One row per sample: original image | original labels | augmented image | augmented
labels — the middle slice along axis 0, the original being the centre patch_size crop of what was sent
(what the spatial transform returns when it neither rotates nor scales). Labels are coloured over the image.
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import List, Tuple

import numpy as np

from .local_server import connect_or_start

# Label colours (index = label value; regions: channel k gets colour k+1).
_PALETTE = np.array([[0, 0, 0], [230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
                     [145, 30, 180], [70, 240, 240], [240, 50, 230], [210, 245, 60]], np.uint8)


def write_png(path: str, rgb: np.ndarray) -> None:
    """Writes an (H, W, 3) uint8 array as an 8-bit RGB PNG (zlib + struct, no imaging library)."""
    rgb = np.ascontiguousarray(rgb, np.uint8)
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))  # filter type 0 per scanline

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def resolve_configuration(path: str, configuration: str, plans: str) -> Tuple[Path, dict]:
    """(configuration folder, resolved plans configuration) for a dataset folder or a configuration folder."""
    p = Path(path).resolve()
    if (p / "dataset.json").is_file():
        dataset_dir, plans_name, cfg = p, plans, configuration
    elif (p.parent / "dataset.json").is_file():
        dataset_dir = p.parent
        plans_name = next((f.stem for f in sorted(dataset_dir.glob("*.json"), key=lambda f: -len(f.stem))
                           if p.name.startswith(f.stem + "_")), plans)
        cfg = p.name[len(plans_name) + 1:]
    else:
        raise FileNotFoundError(f"{path}: neither an nnU-Net preprocessed dataset folder (with dataset.json) nor a "
                                f"configuration folder inside one")
    plans_json = json.loads((dataset_dir / f"{plans_name}.json").read_text())
    configs = plans_json["configurations"]
    if cfg not in configs:
        raise ValueError(f"configuration {cfg!r} not in {plans_name}.json (has {', '.join(configs)})")
    resolved, seen = dict(configs[cfg]), {cfg}
    while "inherits_from" in resolved:  # nnU-Net's configuration inheritance
        parent = resolved.pop("inherits_from")
        if parent in seen:
            raise ValueError(f"{plans_name}.json: inheritance cycle at {parent!r}")
        seen.add(parent)
        resolved = {**configs[parent], **resolved}
    folder = dataset_dir / resolved.get("data_identifier", f"{plans_name}_{cfg}")
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: configuration {cfg!r} is not preprocessed")
    return folder, resolved


def read_case(folder: Path, case_id: str) -> Tuple[np.ndarray, np.ndarray]:
    """(image (C, X, Y, Z) float32, seg (1, X, Y, Z) int16) of one preprocessed case."""
    if (folder / f"{case_id}.b2nd").is_file():
        try:
            import blosc2
        except ImportError:
            raise RuntimeError("reading .b2nd needs the blosc2 package (installed with nnunetv2)") from None
        data = blosc2.open(str(folder / f"{case_id}.b2nd"), mode="r")[:]
        seg = blosc2.open(str(folder / f"{case_id}_seg.b2nd"), mode="r")[:]
    elif (folder / f"{case_id}.npy").is_file():
        data, seg = np.load(folder / f"{case_id}.npy"), np.load(folder / f"{case_id}_seg.npy")
    else:
        with np.load(folder / f"{case_id}.npz") as z:
            data, seg = z["data"], z["seg"]
    return data.astype(np.float32), seg.astype(np.int16)


def crop_around(data: np.ndarray, seg: np.ndarray, size: List[int], center: List[int]):
    """A box of ``size`` centred at ``center`` (spatial), padded with 0 (image) / −1 (labels)."""
    out_d = np.zeros((data.shape[0], *size), np.float32)
    out_s = np.full((seg.shape[0], *size), -1, np.int16)
    src, dst = [], []
    for c, s, n in zip(center, size, data.shape[1:]):
        lo = c - s // 2
        a, b = max(lo, 0), min(lo + s, n)
        src.append(slice(a, b))
        dst.append(slice(a - lo, b - lo))
    out_d[(slice(None), *dst)] = data[(slice(None), *src)]
    out_s[(slice(None), *dst)] = seg[(slice(None), *src)]
    return out_d, out_s


def _label_map(target: np.ndarray) -> np.ndarray:
    """(1 or R, ...) target → one label map (regions: channel k coloured k+1)."""
    if target.shape[0] == 1 and target.dtype != np.bool_:
        return np.maximum(target[0].astype(np.int64), 0)
    out = np.zeros(target.shape[1:], np.int64)
    for k in range(target.shape[0]):
        out[target[k].astype(bool)] = k + 1
    return out


def _panel(image2d: np.ndarray, labels2d, lo: float, hi: float, scale: int) -> np.ndarray:
    g = np.clip((image2d - lo) / max(hi - lo, 1e-6), 0, 1)
    rgb = np.repeat((g * 255).astype(np.uint8)[..., None], 3, axis=2)
    if labels2d is not None:
        colours = _PALETTE[labels2d % len(_PALETTE)]
        mask = (labels2d > 0)[..., None]
        rgb = np.where(mask, (0.45 * rgb + 0.55 * colours).astype(np.uint8), rgb)
    return np.kron(rgb, np.ones((scale, scale, 1), np.uint8))


def montage(rows: List[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], gap: int = 3) -> np.ndarray:
    """rows of (orig image, orig labels, aug image, aug labels) 2D slices → one RGB montage."""
    h = max(r[0].shape[0] for r in rows)
    w = max(r[0].shape[1] for r in rows)
    scale = max(1, 160 // max(h, w))
    tiles = []
    for oi, ol, ai, al in rows:
        lo, hi = np.percentile(oi, [0.5, 99.5]) if oi.size else (0.0, 1.0)
        panels = [_panel(oi, None, lo, hi, scale), _panel(oi, ol, lo, hi, scale), _panel(ai, None, lo, hi, scale),
                  _panel(ai, al, lo, hi, scale)]
        row = np.full((h * scale, 4 * w * scale + 3 * gap, 3), 255, np.uint8)
        for k, p in enumerate(panels):
            x = k * (w * scale + gap)
            row[:p.shape[0], x:x + p.shape[1]] = p
        tiles.append(row)
    sep = np.full((gap, tiles[0].shape[1], 3), 255, np.uint8)
    return np.concatenate([t if i == 0 else np.concatenate([sep, t]) for i, t in enumerate(tiles)])


def run(args) -> int:
    import augmentd
    from .cli import PRESETS

    folder, cfg = resolve_configuration(args.dataset, args.configuration, args.plans)
    patch = [int(p) for p in cfg["patch_size"]]
    if len(patch) != 3:
        raise ValueError(f"preview shows 3D configurations; {folder.name} has a {len(patch)}D patch {patch}")
    cases = sorted(p.name[:-4] for p in folder.glob("*.pkl"))
    if not cases:
        raise FileNotFoundError(f"{folder}: no preprocessed cases (*.pkl)")
    rng = np.random.RandomState(args.seed)
    picked = [cases[i] for i in rng.choice(len(cases), min(args.samples, len(cases)), replace=False)]
    volumes = [read_case(folder, c) for c in picked]
    channels = volumes[0][0].shape[0]
    client, server = connect_or_start(args.address, device=args.device, binary=args.augmentd_bin,
                                      start_local="never" if args.address else "always")
    try:
        config = augmentd.patch_session_config(patch, batch_size=len(picked), seed=args.seed,
                                               preset=PRESETS[args.preset], num_image_channels=channels,
                                               device="" if args.device == "auto" else args.device, name="preview")
        session = client.open_session(config)
        size = session.initial_patch_size or patch
        images, segs = [], []
        for data, seg in volumes:
            fg = np.argwhere(seg[0] > 0)
            center = fg[rng.randint(len(fg))] if len(fg) else np.array(seg.shape[1:]) // 2
            d, s = crop_around(data, seg, size, list(center))
            images.append(d)
            segs.append(s)
        batch = client.augment(session, np.stack(images), np.stack(segs), batch_index=0)
        client.close_session(session)
    finally:  # server first (see LocalServer.stop)
        if server is not None:
            server.stop()
        client.close()
    out_img, out_seg = batch.image, batch.targets[0]
    rows = []
    for j in range(len(picked)):
        orig_img, orig_seg = crop_around(images[j], segs[j], patch, [n // 2 for n in size])
        mid = patch[0] // 2
        rows.append((orig_img[0, mid], _label_map(orig_seg)[mid], out_img[j, 0, mid].astype(np.float32),
                     _label_map(out_seg[j])[mid]))
    write_png(args.out, montage(rows))
    print(f"wrote {args.out}: {len(picked)} samples ({', '.join(picked)}) of {folder}, preset {args.preset}, "
          f"patch {patch}, crop {list(size)}; columns: original image | original labels | augmented image | "
          f"augmented labels (middle slice along axis 0)")
    return 0


def add_parser(sub) -> None:
    from .cli import PRESETS, add_subcommand

    p = add_subcommand(sub, "preview", "write a PNG montage of original vs augmented patches of a dataset",
                       __doc__)
    p.add_argument("dataset", help="nnU-Net preprocessed dataset folder (with dataset.json) or a configuration "
                                   "folder inside it (e.g. .../Dataset001_X/nnUNetPlans_3d_fullres)")
    p.add_argument("--configuration", default="3d_fullres", help="for a dataset folder (default: 3d_fullres)")
    p.add_argument("--plans", default="nnUNetPlans", help="plans identifier for a dataset folder")
    p.add_argument("--preset", choices=sorted(PRESETS), default="nnunet_default", help="pipeline preset")
    p.add_argument("--samples", type=int, default=4, help="cases shown, one row each (default: 4)")
    p.add_argument("--seed", type=int, default=0, help="picks the cases, crops and augmentation (default: 0)")
    p.add_argument("--out", default="augmentd-preview.png", help="PNG file to write")
    p.set_defaults(func=run)

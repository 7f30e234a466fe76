#!/usr/bin/env python3
"""A straightforward batched PyTorch GPU port of nnU-Net's default augmentation (bgv2 0.3.5 semantics).

The baseline of DESIGN.md ("a straightforward batched PyTorch GPU port ... 4.8 ms per batch of 2"): whole-batch
tensor ops where PyTorch has them (one grid_sample per batch for the image, one per label for the seg, batched
statistics), Python loops where parameters differ per sample/channel (blur kernels, low-res shapes, flips).

  python3 bench/torch_port.py --json out.jsonl [--iters 100]

Modes as bench/cuda_pipeline_bench.cc: all-on (every transform on every sample and channel, mirroring on all
axes) and default-p (nnU-Net's default probabilities). Times are medians of CUDA-event times after warm-up.
"""
import argparse
import json
import math

import torch
import torch.nn.functional as F

DEV = "cuda"


def bg_contrast(lo, hi, n):
    u = torch.rand(n)
    low = lo + (1 - lo) * torch.rand(n)
    high = max(lo, 1.0) + (hi - max(lo, 1.0)) * torch.rand(n)
    return torch.where((u < 0.5) & (lo < 1), low, high)


def draw(B, C, P, probs):
    r = lambda: torch.rand(B)
    p = {}
    rot, scl = r() < probs["rot"], r() < probs["scale"]
    ang = (torch.rand(B, 3) * 2 - 1) * (math.pi / 6) * rot[:, None]
    s = torch.where(scl, 0.7 + 0.7 * torch.rand(B), torch.ones(B))
    c, sn = torch.cos(ang), torch.sin(ang)
    o, z = torch.ones(B), torch.zeros(B)
    rx = torch.stack([o, z, z, z, c[:, 0], -sn[:, 0], z, sn[:, 0], c[:, 0]], 1).view(B, 3, 3)
    ry = torch.stack([c[:, 1], z, sn[:, 1], z, o, z, -sn[:, 1], z, c[:, 1]], 1).view(B, 3, 3)
    rz = torch.stack([c[:, 2], -sn[:, 2], z, sn[:, 2], c[:, 2], z, z, z, o], 1).view(B, 3, 3)
    p["A"] = (rz @ ry @ rx) * s[:, None, None]
    p["crop"] = ~(rot | scl)
    p["noise"] = torch.where(r() < probs["noise"], 0.1 * torch.rand(B), torch.zeros(B))
    p["blur"] = (r() < probs["blur"])[:, None] & (torch.rand(B, C) < probs["blur_ch"])
    p["sigma"] = 0.5 + 0.5 * torch.rand(B, C, 3)
    p["bright"] = torch.where((r() < probs["bright"])[:, None], bg_contrast(0.75, 1.25, B * C).view(B, C), torch.ones(B, C))
    p["contrast_on"] = (r() < probs["contrast"])[:, None].expand(B, C)
    p["contrast"] = bg_contrast(0.75, 1.25, B * C).view(B, C)
    p["lowres"] = (r() < probs["lowres"])[:, None] & (torch.rand(B, C) < probs["lowres_ch"])
    p["lowres_s"] = 0.5 + 0.5 * torch.rand(B, C)
    for k, name in ((0, "g0"), (1, "g1")):
        p[f"gamma{k}_on"] = (r() < probs[name])[:, None].expand(B, C)
        p[f"gamma{k}"] = bg_contrast(0.7, 1.5, B * C).view(B, C)
    p["mirror"] = torch.rand(B, 3) < probs["mirror"]
    return p


def kernel_size(sigma):
    n = 6 * sigma + 0.5
    k = round(n)
    if k % 2 == 0:
        k = k + 1 if n > k else k - 1
    return k


def gauss1d(sigma):
    k = kernel_size(sigma)
    x = torch.arange(k, dtype=torch.float64) - (k - 1) // 2
    w = torch.exp(-0.5 * (x / sigma) ** 2)
    return (w / w.sum()).float().to(DEV)


def pipeline(img, seg, p, P, ds_shapes):
    B, C = img.shape[:2]
    S = img.shape[2:]
    # spatial: one grid for the batch; crop samples use an integer crop
    base = torch.stack(torch.meshgrid(*[torch.arange(n, device=DEV, dtype=torch.float32) - (n - 1) / 2 for n in P],
                                      indexing="ij"), -1)
    A = p["A"].to(DEV)
    u = torch.einsum("bij,xyzj->bxyzi", A, base)
    half = torch.tensor([s / 2 for s in S], device=DEV)
    grid = (u / half).flip(-1)
    out = F.grid_sample(img, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    labels = torch.unique(seg)
    best, res = None, None
    for lab in labels.tolist():
        v = F.grid_sample((seg == lab).float() * 1000, grid, mode="bilinear", padding_mode="zeros",
                          align_corners=False).half()
        if best is None:
            best, res = v, torch.full_like(v, lab, dtype=torch.int16)
        else:
            m = v > best
            res[m] = lab
            best = torch.maximum(best, v)
    sizes = torch.tensor(list(S), device=DEV, dtype=torch.float32)
    oob = ((grid < -1 + 1 / sizes) | (grid > 1 - 1 / sizes)).any(-1, keepdim=True).permute(0, 4, 1, 2, 3)
    res[oob] = -1
    crop = p["crop"]
    if crop.any():
        st = [S[d] // 2 - P[d] // 2 for d in range(3)]
        sl = (slice(st[0], st[0] + P[0]), slice(st[1], st[1] + P[1]), slice(st[2], st[2] + P[2]))
        idx = crop.nonzero().flatten().to(DEV)
        out[idx] = img[idx][(slice(None), slice(None)) + sl]
        res[idx] = seg[idx][(slice(None), slice(None)) + sl]
    x, s = out, res
    # noise
    x = x + torch.randn_like(x) * p["noise"].to(DEV).view(B, 1, 1, 1, 1)
    # blur: per (b, c, axis) separable conv with reflect padding
    blur = p["blur"]
    for b, c in blur.nonzero().tolist():
        v = x[b:b + 1, c:c + 1]
        for ax in range(3):
            w = gauss1d(float(p["sigma"][b, c, ax]))
            r = (w.numel() - 1) // 2
            pad = [0] * 6
            pad[2 * (2 - ax)] = pad[2 * (2 - ax) + 1] = r
            shape = [1, 1, 1, 1, 1]
            shape[2 + ax] = w.numel()
            v = F.conv3d(F.pad(v, pad, mode="reflect"), w.view(shape))
        x[b:b + 1, c:c + 1] = v
    # brightness
    x = x * p["bright"].to(DEV).view(B, C, 1, 1, 1)
    # contrast (preserve range), batched statistics
    con = p["contrast_on"].to(DEV)
    mean = x.mean((2, 3, 4), keepdim=True)
    mn = x.amin((2, 3, 4), keepdim=True)
    mx = x.amax((2, 3, 4), keepdim=True)
    m = torch.where(con, p["contrast"].to(DEV), torch.ones_like(p["contrast"].to(DEV))).view(B, C, 1, 1, 1)
    y = torch.minimum(torch.maximum((x - mean) * m + mean, mn), mx)
    x = torch.where(con.view(B, C, 1, 1, 1), y, x)
    # low resolution: per (b, c) shape
    for b, c in p["lowres"].nonzero().tolist():
        sc = float(p["lowres_s"][b, c])
        q = [max(1, round(n * sc)) for n in P]
        d = F.interpolate(x[b:b + 1, c:c + 1], size=q, mode="nearest-exact")
        x[b:b + 1, c:c + 1] = F.interpolate(d, size=list(P), mode="trilinear", align_corners=False)
    # gammas (batched over (b, c) with masks), retain stats (unbiased std)
    for k, inv in ((0, True), (1, False)):
        on = p[f"gamma{k}_on"].to(DEV).view(B, C, 1, 1, 1)
        g = p[f"gamma{k}"].to(DEV).view(B, C, 1, 1, 1)
        v = -x if inv else x
        mu = v.mean((2, 3, 4), keepdim=True)
        sd = v.std((2, 3, 4), keepdim=True)
        mn = v.amin((2, 3, 4), keepdim=True)
        rng = v.amax((2, 3, 4), keepdim=True) - mn
        v = ((v - mn) / rng.clamp(min=1e-7)).pow(g) * rng + mn
        v = (v - v.mean((2, 3, 4), keepdim=True)) * sd / v.std((2, 3, 4), keepdim=True).clamp(min=1e-7) + mu
        if inv:
            v = -v
        x = torch.where(on, v, x)
    # mirroring per sample
    for b in range(B):
        dims = [d for d in range(3) if p["mirror"][b, d]]
        if dims:
            x[b] = torch.flip(x[b], [d + 1 for d in dims])
            s[b] = torch.flip(s[b], [d + 1 for d in dims])
    s = torch.where(s == -1, torch.zeros_like(s), s)
    ds = [F.interpolate(s.float(), size=q, mode="nearest-exact").short() for q in ds_shapes]
    return x, s, ds


PROBS = {
    "all-on": dict(rot=1, scale=1, noise=1, blur=1, blur_ch=1, bright=1, contrast=1, lowres=1, lowres_ch=1,
                   g0=1, g1=1, mirror=1),
    "default-p": dict(rot=0.2, scale=0.2, noise=0.1, blur=0.2, blur_ch=0.5, bright=0.15, contrast=0.15, lowres=0.25,
                      lowres_ch=0.5, g0=0.1, g1=0.3, mirror=0.5),
}


def run(mode, B, C, S, P, iters):
    torch.manual_seed(0)
    img = torch.randn(B, C, *S, device=DEV) + 0.3
    coarse = torch.randint(0, 4, (B, 1, *[(n + 7) // 8 for n in S]), device=DEV).float()
    seg = F.interpolate(coarse, size=list(S), mode="nearest").short()
    seg[:, :, :2] = -1
    ds_shapes = [[max(1, round(n * f)) for n in P] for f in (0.5, 0.25, 0.125, 0.0625)]
    params = [draw(B, C, P, PROBS[mode]) for _ in range(16)]
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base_mem = torch.cuda.memory_allocated()
    for i in range(10):
        pipeline(img, seg, params[i % 16], P, ds_shapes)
    torch.cuda.synchronize()
    times = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(iters):
        e0.record()
        pipeline(img, seg, params[i % 16], P, ds_shapes)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    peak = torch.cuda.max_memory_allocated()
    del img, seg
    torch.cuda.empty_cache()
    return dict(impl="torch_port", mode=mode, B=B, C=C, shape="x".join(map(str, P)) + "<-" + "x".join(map(str, S)),
                ms=times[len(times) // 2], peak_mb=peak / 2**20, input_mb=base_mem / 2**20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    rows = []
    for mode in ("all-on", "default-p"):
        for S, P in (((205, 205, 205), (128, 128, 128)), ((175, 257, 210), (80, 160, 160))):
            for B in (2, 8):
                for C in (1, 4):
                    r = run(mode, B, C, S, P, args.iters)
                    rows.append(r)
                    print(f"torch_port {mode:9s} B={B} C={C} {r['shape']:22s} {r['ms']:.3f} ms "
                          f"{B / r['ms'] * 1e3:.0f} samples/s peak {r['peak_mb']:.0f} MiB", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Markdown tables of one bench/cuda_coverage_check.sh run: augmentd CUDA vs the PyTorch port vs bgv2 on all cores.

    python3 bench/cuda_coverage_table.py OUT_DIR     # reads augmentd.jsonl, torch.jsonl, bgv2.jsonl (those present)

Table 1 (issue 4 matrix): ms per batch (augmentd: best of eager / CUDA-graph medians), samples/s, speed-up over the
port and over bgv2 (bgv2 works per sample: its ms per batch = B / samples per second of all workers), achieved
bandwidth against the measured device copy, GPU memory. Table 2 (issue 10): per-transform GPU cost = time of
"only-X" (rotation + scaling + X) minus "spatial" (rotation + scaling), same batch and shape.
"""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    out = sys.argv[1]
    rows = load(os.path.join(out, "augmentd.jsonl"))
    port = {(r["mode"], r["shape"], r["B"], r["C"]): r for r in load(os.path.join(out, "torch.jsonl"))}
    bgv2 = {(r["mode"], r["shape"], r["C"]): r for r in load(os.path.join(out, "bgv2.jsonl"))}
    dev = next((r for r in rows if r["impl"] == "device"), {"name": "?", "copy_gbps": 0})
    print(f"Device: {dev['name']}; measured device-to-device copy {dev['copy_gbps']:.0f} GB/s (read + write).\n")
    print("| mode | patch <- input | B | C | augmentd ms/batch | samples/s | PyTorch port ms | x port | "
          "bgv2 all cores ms/batch | x bgv2 | GB/s (% of copy) | augmentd GPU MiB (workspace) | port peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for r in rows:
        if r["impl"] != "augmentd":
            continue
        ms = min(r["ms_eager"], r["ms_graph"])
        best[(r["mode"], r["shape"], r["B"], r["C"])] = ms
        if r["mode"].startswith("only-"):
            continue
        p = port.get((r["mode"], r["shape"], r["B"], r["C"]))
        g = bgv2.get((r["mode"], r["shape"], r["C"]))
        g_ms = r["B"] / g["samples_per_s"] * 1e3 if g else None
        gbps = r["bytes"] / (ms * 1e-3) / 1e9
        pct = 100 * gbps / dev["copy_gbps"] if dev["copy_gbps"] else 0
        cells = [r["mode"], r["shape"], r["B"], r["C"], f"{ms:.4f}", f"{r['B'] / (ms * 1e-3):,.0f}",
                 f"{p['ms']:.3f}" if p else "–", f"{p['ms'] / ms:.1f}x" if p else "–",
                 f"{g_ms:.1f}" if g_ms else "–", f"{g_ms / ms:,.0f}x" if g_ms else "–", f"{gbps:.0f} ({pct:.0f}%)",
                 f"{r['mem_mb']:.0f} ({r['ws_mb']:.0f})", f"{p['peak_mb']:.0f}" if p else "–"]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    per = [(k, v) for k, v in best.items() if k[0].startswith("only-")]
    if per:
        print("\nPer-transform GPU cost (B, C as listed; rotation + scaling on in both terms):\n")
        print("| transform | patch <- input | B | C | spatial ms | spatial + transform ms | transform ms |")
        print("|---|---|---|---|---|---|---|")
        for (mode, shape, B, C), ms in per:
            base = best.get(("spatial", shape, B, C))
            print(f"| {mode[5:]} | {shape} | {B} | {C} | {base:.4f} | {ms:.4f} | {ms - base:+.4f} |" if base else
                  f"| {mode[5:]} | {shape} | {B} | {C} | – | {ms:.4f} | – |")
    da5 = [r for r in bgv2.values() if r["mode"] == "da5"]
    if da5:
        print("\nnnUNetTrainerDA5 pipeline, batchgeneratorsv2 on all cores (the CUDA engine does not cover DA5 yet):\n")
        print("| patch <- input | C | workers | samples/s | ms per batch of 2 | ms per batch of 8 "
              "| mean s/sample/core |")
        print("|---|---|---|---|---|---|---|")
        for r in da5:
            sps = r["samples_per_s"]
            print(f"| {r['shape']} | {r['C']} | {r['workers']} | {sps:.1f} | {2e3 / sps:.1f} | {8e3 / sps:.1f} | "
                  f"{r.get('mean_sample_s', r['median_sample_s']):.2f} |")


if __name__ == "__main__":
    main()

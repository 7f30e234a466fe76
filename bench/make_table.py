#!/usr/bin/env python3
"""Merges bench/cuda_pipeline_bench.cc and bench/torch_port.py JSON lines into one markdown table.

  python3 bench/make_table.py augmentd.jsonl torch.jsonl > table.md
"""
import datetime
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    rows = load(sys.argv[1])
    port = {(r["mode"], r["shape"], r["B"], r["C"]): r for r in (load(sys.argv[2]) if len(sys.argv) > 2 else [])}
    dev = next((r for r in rows if r["impl"] == "device"), {"name": "?", "copy_gbps": 0})
    print(f"Date {datetime.date.today().isoformat()}; machine: one {dev['name']} (nvidia-h200 lease); "
          f"measured device-to-device copy {dev['copy_gbps']:.0f} GB/s (bytes read + written).")
    print("Baseline, same run: bench/torch_port.py (straightforward batched PyTorch port, same transforms).")
    print("augmentd times: median CUDA-event time per batch, eager = launches + parameter upload, graph = replay of "
          "one CUDA graph per stage mask (parameters uploaded inside it from a pinned staging buffer); best of the two used for samples/s, ratio and bandwidth. Bytes = input image+seg "
          "read once + image, seg and DS outputs written once (f32 image).\n")
    print("| mode | patch <- input | B | C | augmentd eager ms | augmentd graph ms | samples/s | PyTorch port ms "
          "| speed-up | GB/s (% of copy) | augmentd GPU MiB (workspace) | port peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["impl"] != "augmentd":
            continue
        best = min(r["ms_eager"], r["ms_graph"])
        p = port.get((r["mode"], r["shape"], r["B"], r["C"]))
        gbps = r["bytes"] / (best * 1e-3) / 1e9
        pct = 100 * gbps / dev["copy_gbps"] if dev["copy_gbps"] else 0
        print(f"| {r['mode']} | {r['shape']} | {r['B']} | {r['C']} | {r['ms_eager']:.4f} | {r['ms_graph']:.4f} | "
              f"{r['B'] / (best * 1e-3):,.0f} | {p['ms']:.3f} | {p['ms'] / best:.1f}x | " if p else
              f"| {r['mode']} | {r['shape']} | {r['B']} | {r['C']} | {r['ms_eager']:.4f} | {r['ms_graph']:.4f} | "
              f"{r['B'] / (best * 1e-3):,.0f} | – | – | ", end="")
        print(f"{gbps:.0f} ({pct:.0f}%) | {r['mem_mb']:.0f} ({r['ws_mb']:.0f}) | "
              f"{p['peak_mb']:.0f} |" if p else f"{gbps:.0f} ({pct:.0f}%) | {r['mem_mb']:.0f} ({r['ws_mb']:.0f}) | – |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The rate of a large fp32 GEMM on this GPU (cuBLAS without TF32: FFMA, no tensor cores), in the
shapes of DeepSeek sparse attention's indexer as transformers runs it: q.float() [b, s, heads, d]
times k.float() [b, d, s], i.e. (s heads x d) @ (d x s) per sequence.

One JSON line per shape: the median time over --reps runs, its FLOPs (2 s heads d s per sequence)
and the fraction of --fp32-tflops it reaches.

Usage: python3 fp32_gemm_probe.py --fp32-tflops 67 --out OUT.jsonl
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sdpa_bench import median_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--fp32-tflops", type=float, required=True)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    assert not torch.backends.cuda.matmul.allow_tf32, "TF32 would change the kernel"
    out = open(args.out, "a")
    for heads, dim in ((64, 128), (32, 128)):
        for s in (2048, 4096, 8192):
            q = torch.randn(1, s * heads, dim, device="cuda", dtype=torch.float32)
            k = torch.randn(1, dim, s, device="cuda", dtype=torch.float32)
            ms = median_ms(lambda: torch.matmul(q, k), args.reps)
            flops = 2.0 * s * heads * dim * s
            rec = {"heads": heads, "dim": dim, "seq": s, "ms": ms, "flops": flops,
                   "fraction": flops / (ms * 1e-3) / (args.fp32_tflops * 1e12),
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"heads {heads} d {dim} s {s}: {ms:.2f} ms, {flops / ms / 1e9:.1f} TFLOP/s "
                  f"({rec['fraction']:.3f})", flush=True)
            del q, k
    out.close()


if __name__ == "__main__":
    main()

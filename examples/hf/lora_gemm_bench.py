#!/usr/bin/env python3
"""Bandwidth that PEFT's fp32 LoRA GEMMs reach: x (rows x in, fp32) through lora_A (in -> r) and
lora_B (r -> out), forward and backward as autograd runs them (forward: x A^T, h B^T; backward:
dB = g^T h, dh = g B, dA = dh^T x, dx = dh A), batch 1, no bias, the adapters' own weights only.
Each GEMM has one wide fp32 operand or result (rows x in or rows x out) and a rank-wide one, so
it is bound by memory: the bytes counted are the wide operands' (forward (in + out) x 4, backward
2 (in + out) x 4 per row), the achieved fraction is bytes / time / the GPU's HBM bandwidth.

Usage: python3 lora_gemm_bench.py --hbm-GBps 3350 --out OUT.jsonl
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_bench import median_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--hbm-GBps", type=float, required=True)
    ap.add_argument("--rank", type=int, default=16)
    args = ap.parse_args()
    out = open(args.out, "a")
    r = args.rank
    for rows in (4096, 16384):
        for width_in, width_out in ((2048, 2048), (2048, 512), (2048, 8192), (8192, 2048), (4096, 4096),
                                    (4096, 14336), (14336, 4096), (5120, 5120)):
            x = torch.randn(rows, width_in, device="cuda", dtype=torch.float32)
            a = torch.randn(r, width_in, device="cuda", dtype=torch.float32, requires_grad=True)
            b = torch.randn(width_out, r, device="cuda", dtype=torch.float32, requires_grad=True)
            xg = x.clone().requires_grad_(True)
            g = torch.randn(rows, width_out, device="cuda", dtype=torch.float32)

            def fwd():
                return F.linear(F.linear(xg, a), b)

            def fwd_bwd():
                fwd().backward(g)

            f_ms = median_ms(fwd, 20)
            fb_ms = median_ms(fwd_bwd, 20)
            b_ms = fb_ms - f_ms
            wide = rows * (width_in + width_out) * 4
            bw = args.hbm_GBps * 1e9
            rec = {"rows": rows, "in": width_in, "out": width_out, "rank": r, "fwd_ms": f_ms, "bwd_ms": b_ms,
                   "fwd_fraction": wide / (f_ms * 1e-3) / bw, "bwd_fraction": 2 * wide / (b_ms * 1e-3) / bw,
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "tf32": torch.backends.cuda.matmul.allow_tf32}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"rows {rows:6d} {width_in:5d}->{width_out:5d}: fwd {f_ms:.3f} ms ({rec['fwd_fraction']:.2f})"
                  f"  bwd {b_ms:.3f} ms ({rec['bwd_fraction']:.2f})", flush=True)


if __name__ == "__main__":
    main()

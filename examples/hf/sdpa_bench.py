#!/usr/bin/env python3
"""Throughput of torch's scaled_dot_product_attention as transformers' sdpa path calls it.

Causal, no mask, bf16, batch 1, grouped-query (enable_gqa) with --heads query and --kv-heads
key/value heads, for each head dim and sequence length: the median time of the forward and of
forward + backward over --reps runs, and the TFLOP/s they reach (causal FLOPs: forward
2 * s^2 * heads * d, i.e. half of QK^T and PV; backward 2.5x the forward, flash's recompute of
the scores included).

Usage: python3 sdpa_bench.py --out OUT.jsonl
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dims", default="64,80,96,128,256")
    ap.add_argument("--seqs", default="2048,4096,8192,16384")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    out = open(args.out, "a")
    for d in [int(x) for x in args.head_dims.split(",")]:
        for s in [int(x) for x in args.seqs.split(",")]:
            q = torch.randn(1, args.heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(1, args.kv_heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(1, args.kv_heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            gqa = args.heads != args.kv_heads

            def fwd():
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)

            g = torch.randn(1, args.heads, s, d, device="cuda", dtype=torch.bfloat16)

            def fwd_bwd():
                fwd().backward(g)

            f_ms = median_ms(fwd, args.reps)
            fb_ms = median_ms(fwd_bwd, args.reps)
            flops_fwd = 2.0 * s * s * args.heads * d
            rec = {"head_dim": d, "seq": s, "heads": args.heads, "kv_heads": args.kv_heads, "fwd_ms": f_ms,
                   "bwd_ms": fb_ms - f_ms, "fwd_tflops": flops_fwd / f_ms / 1e9,
                   "bwd_tflops": 2.5 * flops_fwd / (fb_ms - f_ms) / 1e9,
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
            out.write(json.dumps(rec) + "\n")
            print(f"d {d:4d} s {s:6d}: fwd {rec['fwd_tflops']:6.1f} TFLOP/s  bwd {rec['bwd_tflops']:6.1f} TFLOP/s",
                  flush=True)
            del q, k, v, g
    out.close()


if __name__ == "__main__":
    main()

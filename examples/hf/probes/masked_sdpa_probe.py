#!/usr/bin/env python3
"""torch's scaled_dot_product_attention with and without a dense boolean mask, as transformers'
sdpa path calls it for DeepSeek sparse attention (DeepseekV32 / GLM-5: the indexer's top-k turned
into an s x s boolean mask beside the causal one) and for a plain causal layer.

For each sequence length: the median time of the forward and of forward + backward over --reps
runs, for (a) is_causal=True and no mask, (b) a boolean [1, 1, s, s] mask (causal, and top-k keys
per query when s > --topk), q/k head dim --dqk and v head dim --dv; and the CUDA kernels each
variant ran (torch.profiler), so the kernel sdpa picked is on record.

Usage: python3 masked_sdpa_probe.py --out OUT.jsonl
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from sdpa_bench import median_ms  # noqa: E402


def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    by_name = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            by_name[e.name[:120]] = by_name.get(e.name[:120], 0.0) + e.device_time / 1e3
    return sorted(([n, round(t, 3)] for n, t in by_name.items()), key=lambda x: -x[1])[:6]


def topk_mask(s, topk):
    causal = torch.ones(s, s, device="cuda", dtype=torch.bool).tril()
    if s <= topk:
        return causal[None, None]
    scores = torch.rand(s, s, device="cuda").masked_fill(~causal, float("-inf"))
    idx = scores.topk(topk, dim=-1).indices
    mask = torch.zeros(s, s, device="cuda", dtype=torch.bool).scatter_(-1, idx, True)
    return (mask & causal)[None, None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--heads", type=int, default=128)
    ap.add_argument("--dqk", type=int, default=192)
    ap.add_argument("--dv", type=int, default=128)
    ap.add_argument("--topk", type=int, default=2048)
    ap.add_argument("--seqs", default="2048,4096,8192")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    out = open(args.out, "a")
    for s in [int(x) for x in args.seqs.split(",")]:
        q = torch.randn(1, args.heads, s, args.dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, args.heads, s, args.dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, args.heads, s, args.dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(1, args.heads, s, args.dv, device="cuda", dtype=torch.bfloat16)
        mask = topk_mask(s, args.topk)
        for variant in ("causal", "bool_mask"):
            def fwd():
                if variant == "causal":
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

            def fwd_bwd():
                fwd().backward(g)

            f_ms = median_ms(fwd, args.reps)
            fb_ms = median_ms(fwd_bwd, args.reps)
            square_flops = 2.0 * s * s * args.heads * (args.dqk + args.dv)  # QK^T and PV over all keys
            rec = {"variant": variant, "seq": s, "heads": args.heads, "dqk": args.dqk, "dv": args.dv,
                   "topk": args.topk, "fwd_ms": f_ms, "bwd_ms": fb_ms - f_ms,
                   "square_fwd_tflops": square_flops / f_ms / 1e9,
                   "fwd_kernels": kernels(fwd), "fwd_bwd_kernels": kernels(fwd_bwd),
                   "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"{variant:10s} s={s}: fwd {f_ms:.2f} ms bwd {fb_ms - f_ms:.2f} ms "
                  f"({rec['square_fwd_tflops']:.0f} TFLOP/s over the square) {rec['fwd_kernels'][:1]}", flush=True)
        del q, k, v, g, mask
        torch.cuda.empty_cache()
    out.close()


if __name__ == "__main__":
    main()

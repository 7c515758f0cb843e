#!/usr/bin/env python3
"""What grouped_mm_experts_forward's routing-weights product holds in backward (transformers 5.17,
integrations/moe.py): bf16 expert outputs times fp32 top-k weights, permuted back by an index,
summed over the top k and cast to bf16. Run alone, without checkpointing and under non-reentrant
and reentrant checkpointing, each over 5 steps; prints the backward's peak over the memory alive
when backward starts, in units of one routed-rows x hidden fp32 tensor.

    python3 examples/hf/probes/weighting_probe.py --out FILE
"""
import argparse
import json

import torch
from torch.utils.checkpoint import checkpoint

TOKENS, TOP_K, HIDDEN, INNER = 8192, 8, 2048, 512


def weighting(act, down, weights, perm, inv_perm):
    out = act @ down  # bf16 rows x hidden, as the experts' down projection
    weighted = out[perm] * weights[perm].unsqueeze(-1)  # fp32 product (sorted order)
    back = weighted[inv_perm]
    return back.view(TOKENS, TOP_K, HIDDEN).sum(dim=1).to(torch.bfloat16)


def run(mode, dtype_w):
    rows = TOKENS * TOP_K
    act = torch.randn(rows, INNER, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    down = torch.randn(INNER, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    logits = torch.randn(TOKENS, TOP_K, device="cuda", dtype=torch.float32, requires_grad=True)
    perm = torch.randperm(rows, device="cuda")
    inv_perm = torch.empty_like(perm)
    inv_perm[perm] = torch.arange(rows, device="cuda")
    unit = rows * HIDDEN * 4
    out = []
    for _ in range(5):
        weights = logits.softmax(-1).to(dtype_w).reshape(-1)
        if mode == "none":
            y = weighting(act, down, weights, perm, inv_perm)
        else:
            y = checkpoint(weighting, act, down, weights, perm, inv_perm, use_reentrant=(mode == "reentrant"))
        loss = y.float().square().mean()
        torch.cuda.synchronize()
        start = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        loss.backward()
        torch.cuda.synchronize()
        out.append((torch.cuda.max_memory_allocated() - start) / unit)
        act.grad = down.grad = logits.grad = None
    return sorted(out)[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    for dtype_w in (torch.float32, torch.bfloat16):
        for mode in ("none", "non_reentrant", "reentrant"):
            peak = run(mode, dtype_w)
            rows.append({"weights": str(dtype_w), "mode": mode, "backward_peak_over_start_fp32_rows": peak,
                         "tokens": TOKENS, "top_k": TOP_K, "hidden": HIDDEN, "inner": INNER,
                         "gpu": torch.cuda.get_device_name(), "torch": torch.__version__})
            print(rows[-1])
    with open(args.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()

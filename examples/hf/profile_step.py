#!/usr/bin/env python3
"""Where a Hugging Face Transformers (+ PEFT) training step spends its time, from torch.profiler.

For each case of a hf_step.py case file (--only to pick): build the model as longest_seq.py does,
run two steps, then profile a third (forward, backward, AdamW step) and write one JSON line:
the step's wall time, the summed GPU kernel time, the GPU's idle share (wall minus kernels: where
the host, not the GPU, sets the pace), the number of kernel launches, and the 25 kernels with the
most GPU time.

Usage: python3 profile_step.py --cases cases_a.json --only NAME,... --out OUT.jsonl
"""
import argparse
import contextlib
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_step  # noqa: E402
import longest_seq  # noqa: E402


def one_step(c, built, seq):
    ids = torch.randint(0, built.vocab, (built.nseq, seq), device="cuda")
    loss = built.forward_loss(ids)
    loss.backward()
    built.opt.step()
    built.opt.zero_grad(set_to_none=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, nargs="+")
    ap.add_argument("--only", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--top", type=int, default=25, help="kernels listed per case (0: all)")
    args = ap.parse_args()
    cases = []
    for p in args.cases:
        with open(p) as f:
            cases += json.load(f)
    keep = args.only.split(",")
    cases = [c for c in cases if c["case"] in keep]
    out = open(args.out, "a")
    from torch.profiler import ProfilerActivity, profile

    for c in cases:
        c = dict(c, prompt_tokens=int(c["seq"]) // 4)
        built = longest_seq.build(c)
        seq = int(c["seq"])
        for _ in range(2):
            one_step(c, built, seq)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            one_step(c, built, seq)
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        gpu_us = sum(e.device_time for e in kernels)
        by_name = {}
        for e in kernels:
            n, t = by_name.get(e.name, (0, 0.0))
            by_name[e.name] = (n + 1, t + e.device_time)
        top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:args.top or None]
        rec = {"case": c["case"], "seq": seq, "wall_s": wall, "gpu_kernel_s": gpu_us / 1e6,
               "gpu_idle_share": 1 - gpu_us / 1e6 / wall, "kernel_launches": len(kernels),
               "top_kernels": [{"name": n[:200], "calls": k, "gpu_s": t / 1e6} for n, (k, t) in top],
               "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(f"{c['case']}: wall {wall*1e3:.1f} ms, kernels {gpu_us/1e3:.1f} ms, launches {len(kernels)}", flush=True)
        for n, (k, t) in top[:8]:
            print(f"    {t/1e3:8.2f} ms {k:5d}x {n[:100]}", flush=True)
        del built
        torch.cuda.empty_cache()
    out.close()


if __name__ == "__main__":
    main()

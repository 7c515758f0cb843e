#!/usr/bin/env python3
"""Kernel time of transformers' plain-PyTorch Mamba-2 and Gated DeltaNet layers (hybrid_ref.py's
tf_mamba / tf_gdn: pre-norm, mixer, residual; batch 1, bf16, no recompute), from torch.profiler:
per layer and sequence length, the wall time of forward + backward, the summed kernel time, the
kernel launches, and every kernel with its calls and time; forward and backward apart.

Usage: python3 profile_mixers.py OUT.jsonl [SEQ ...]   (default 1024)
"""
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hybrid_ref  # noqa: E402


def kernels(prof):
    by_name = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            n, t = by_name.get(e.name, (0, 0.0))
            by_name[e.name] = (n + 1, t + e.device_time)
    rows = sorted(by_name.items(), key=lambda kv: -kv[1][1])
    return [{"name": n[:160], "calls": k, "gpu_s": t / 1e6} for n, (k, t) in rows]


def phase(fn):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    ks = kernels(prof)
    return {"wall_s": wall, "gpu_kernel_s": sum(k["gpu_s"] for k in ks),
            "launches": sum(k["calls"] for k in ks), "kernels": ks}


def main():
    out = open(sys.argv[1], "w")
    seqs = [int(s) for s in sys.argv[2:]] or [1024]
    for block, make, cfg in [("mamba2", hybrid_ref.tf_mamba, hybrid_ref.MAMBA),
                             ("gated_deltanet", hybrid_ref.tf_gdn, hybrid_ref.GDN)]:
        with torch.device("cuda"):
            torch.manual_seed(0)
            layer, _ = make()
            layer = layer.to(hybrid_ref.BF16)
            for seq in seqs:
                x = torch.randn(1, seq, cfg["h"], dtype=hybrid_ref.BF16, requires_grad=True)
                gy = torch.randn(1, seq, cfg["h"], dtype=hybrid_ref.BF16)
                for _ in range(2):  # warm-up
                    layer(x).backward(gy)
                holder = {}
                fwd = phase(lambda: holder.setdefault("y", layer(x)))
                bwd = phase(lambda: holder["y"].backward(gy))
                rec = {"block": block, "seq": seq, "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "forward": fwd, "backward": bwd}
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(block, seq, {p: (round(r["wall_s"] * 1e3, 2), round(r["gpu_kernel_s"] * 1e3, 2), r["launches"])
                                   for p, r in (("fwd", fwd), ("bwd", bwd))}, flush=True)
                del holder
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What torch's strided broadcast-product kernels reach on this GPU.

transformers' plain-PyTorch Mamba-2 scan (torch_forward / mamba2_chunk_scan) builds its chunk
products as broadcast multiplies of fp32 views summed over one axis, e.g.
(C[:, :, :, None, :, :] * B[:, :, None, :, :, :]).sum(-1) over (b, chunks, Q, Q, heads, N). remat
prices that op as 2 x 4 bytes a product element forward (the product written, then read by the
sum) and 6 x 4 backward. This times the same expression forward and backward (CUDA events, median
of 7 after 2 warm-ups) for shapes of the scans remat models and writes, per shape, those byte
counts over the time as a fraction of the HBM bandwidth given (--hbm-GBps).

    python3 broadcast_bench.py --hbm-GBps 4800 --out broadcast-h200.jsonl
"""
import argparse
import json
import statistics

import torch

# (chunks, chunk Q, heads, state N): Nemotron-H-8B at 1024 and 2048 tokens, Falcon-H1-0.5B's and
# -7B's shapes at 2048 / 4096, a Granite-4.0-H-Tiny-like one
SHAPES = [(8, 128, 128, 128), (16, 128, 128, 128), (32, 128, 24, 128), (8, 256, 24, 256), (16, 256, 48, 128)]


def timed(fn, reps=7, warm=2):
    times = []
    for i in range(warm + reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= warm:
            times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hbm-GBps", type=float, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    bw = args.hbm_GBps * 1e9
    with open(args.out, "w") as out:
        for chunks, q, heads, n in SHAPES:
            c = torch.randn(1, chunks, q, heads, n, device="cuda", requires_grad=True)
            b = torch.randn(1, chunks, q, heads, n, device="cuda", requires_grad=True)
            elems = chunks * q * q * heads * n

            def forward():
                return (c[:, :, :, None, :, :] * b[:, :, None, :, :, :]).sum(dim=-1)

            fwd_s = timed(forward)
            g = forward()
            grad = torch.ones_like(g)

            def backward():
                torch.autograd.grad(g, (c, b), grad, retain_graph=True)

            bwd_s = timed(backward)
            row = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "chunks": chunks, "q": q,
                   "heads": heads, "state": n, "product_elements": elems, "fwd_s": fwd_s, "bwd_s": bwd_s,
                   "fwd_fraction": 2 * 4 * elems / fwd_s / bw, "bwd_fraction": 6 * 4 * elems / bwd_s / bw}
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")
            del c, b, g, grad
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

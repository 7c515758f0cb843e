#!/usr/bin/env python3
"""The host's cost of one decoder layer in a Hugging Face Transformers (+ PEFT) training step.

At a short sequence (--seq, default 128) the GPU finishes every kernel before the host has
launched the next, so a phase's time is the host's: Python, module calls, torch's dispatcher,
autograd and the checkpoint's hooks. Each case is built twice, with --layers-a and --layers-b
decoder layers (random weights on the GPU, as hf_step.py builds them); the difference of the
median phase times over the difference of the layer counts is one layer's host cost, with the
embedding, the loss and the optimizer's per-step work cancelled out.

Writes one JSON line per (case, layer count): median forward, backward and optimizer wall
times of --steps steps after two warm-ups, and the host's own time to return from each call.

Usage: python3 host_calibrate.py --cases calib.json --out OUT.jsonl
A case: {"case", "config", "mode": full|lora, "checkpointing": none|non_reentrant|reentrant}.
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_step  # noqa: E402
import host_time  # noqa: E402
import longest_seq  # noqa: E402


def measure(c, layers, seq, steps):
    c = dict(c, layers=layers, seq=seq, prompt_tokens=seq // 4)
    built = longest_seq.build(c)
    for _ in range(2):
        host_time.one_step(c, built, seq)
    runs = [host_time.one_step(c, built, seq) for _ in range(steps)]
    del built
    hf_step.free_all()
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--layers-a", type=int, default=2)
    ap.add_argument("--layers-b", type=int, default=6)
    ap.add_argument("--steps", type=int, default=7)
    args = ap.parse_args()
    with open(args.cases) as f:
        cases = json.load(f)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "seq": args.seq}
    with open(args.out, "a") as out:
        out.write(json.dumps({"micro": host_time.micro_benchmarks(), **meta}) + "\n")
        for c in cases:
            per = {}
            for n in (args.layers_a, args.layers_b):
                per[n] = measure(c, n, args.seq, args.steps)
                out.write(json.dumps({**c, "layers": n, "median_s": per[n], **meta}) + "\n")
                out.flush()
            d = args.layers_b - args.layers_a
            layer_ms = {k: round((per[args.layers_b][k] - per[args.layers_a][k]) / d * 1e3, 3)
                        for k in per[args.layers_a]}
            print(c["case"], "per layer ms:", layer_ms, flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How much of a Hugging Face Transformers (+ PEFT) training step the host, not the GPU, paces.

For each case of a hf_step.py case file (--only to pick): build the model as longest_seq.py does,
run two warm-up steps, then --steps timed steps. Each phase (forward + loss, backward, AdamW step)
is timed twice: `host` is the time until the Python call returns (kernels only enqueued, no
synchronization), `wall` the time until the GPU has finished it. Where host is close to wall the
GPU waited for the host. One more step runs under torch.profiler (CPU and CUDA) and gives the
number of kernel launches, CUDA runtime calls that block (synchronize, malloc, free) and the
aten ops the host dispatched, per phase.

Then microbenchmarks of the host's own costs with tensors so small that the GPU is never the
bottleneck: one aten op dispatched from Python, one nn.Module call, one autograd node run in
backward, one non-reentrant checkpoint region and one saved tensor inside it.

Usage: python3 host_time.py --cases cases_a.json ... --only NAME,... --out OUT.jsonl
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_step  # noqa: E402
import longest_seq  # noqa: E402


def timed_phase(fn):
    t0 = time.perf_counter()
    out = fn()
    host = time.perf_counter() - t0
    torch.cuda.synchronize()
    return out, host, time.perf_counter() - t0


def one_step(c, built, seq):
    ids = torch.randint(0, built.vocab, (built.nseq, seq), device="cuda")
    torch.cuda.synchronize()
    loss, fh, fw = timed_phase(lambda: built.forward_loss(ids))
    _, bh, bw = timed_phase(lambda: loss.backward())

    def opt_step():
        built.opt.step()
        built.opt.zero_grad(set_to_none=True)

    _, oh, ow = timed_phase(opt_step)
    return {"fwd_host": fh, "fwd_wall": fw, "bwd_host": bh, "bwd_wall": bw, "opt_host": oh, "opt_wall": ow}


def profiled_counts(c, built, seq):
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        one_step(c, built, seq)
    counts = {}
    for e in prof.key_averages():
        if e.key.startswith("cuda") or e.key.startswith("aten::"):
            counts[e.key] = [e.count, round(e.self_cpu_time_total / 1e3, 3)]
    launches = sum(v[0] for k, v in counts.items() if k.startswith("cudaLaunch"))
    blocking = {k: v for k, v in counts.items() if any(s in k for s in ("Synchronize", "Malloc", "Free", "Memcpy"))}
    aten = sorted(((k, v) for k, v in counts.items() if k.startswith("aten::")), key=lambda kv: -kv[1][0])
    return {"launches": launches, "blocking": blocking, "aten_total": sum(v[0] for _, v in aten),
            "aten_top": aten[:30]}


def per_call_us(fn, calls):
    fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def micro_benchmarks():
    from torch.utils.checkpoint import checkpoint

    x = torch.ones(8, device="cuda")
    xg = torch.ones(8, device="cuda", requires_grad=True)
    lin = torch.nn.Linear(8, 8, device="cuda")
    res = {"aten_op_us": per_call_us(lambda: x.add(1.0), 2000),
           "aten_op_grad_us": per_call_us(lambda: xg.mul(1.0), 2000),
           "linear_module_us": per_call_us(lambda: lin(x), 2000)}

    def chain(t, n):
        for _ in range(n):
            t = t * 1.0001
        return t

    def backward_of(n):
        y = chain(xg, n).sum()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y.backward()
        return time.perf_counter() - t0

    res["backward_node_us"] = statistics.median((backward_of(2000) - backward_of(200)) / 1800 * 1e6 for _ in range(5))

    def region_fwd(n_regions, ops_per_region):
        t = xg
        for _ in range(n_regions):
            t = checkpoint(chain, t, ops_per_region, use_reentrant=False)
        return t

    def ckpt_cost(n_regions, ops):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        y = region_fwd(n_regions, ops).sum()
        fwd = time.perf_counter() - t0
        t0 = time.perf_counter()
        y.backward()
        return fwd, time.perf_counter() - t0

    for ops in (1, 20):
        f, b = zip(*[ckpt_cost(100, ops) for _ in range(5)])
        res[f"ckpt_region_{ops}ops_fwd_us"] = statistics.median(f) / 100 * 1e6
        res[f"ckpt_region_{ops}ops_bwd_us"] = statistics.median(b) / 100 * 1e6
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, nargs="+")
    ap.add_argument("--only", required=True)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = []
    for p in args.cases:
        with open(p) as f:
            cases += json.load(f)
    keep = args.only.split(",")
    cases = [c for c in cases if c["case"] in keep]
    out = open(args.out, "a")
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cpus": os.cpu_count()}
    micro = micro_benchmarks()
    out.write(json.dumps({"micro": micro, **meta}) + "\n")
    print("micro", micro, flush=True)
    for c in cases:
        c = dict(c, prompt_tokens=int(c["seq"]) // 4)
        built = longest_seq.build(c)
        seq = int(c["seq"])
        for _ in range(2):
            one_step(c, built, seq)
        steps = [one_step(c, built, seq) for _ in range(args.steps)]
        med = {k: statistics.median(s[k] for s in steps) for k in steps[0]}
        rec = {"case": c["case"], "seq": seq, "median_s": med, "steps": steps,
               "profile": profiled_counts(c, built, seq), **meta}
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(c["case"], {k: round(v * 1e3, 2) for k, v in med.items()}, "launches", rec["profile"]["launches"],
              "aten", rec["profile"]["aten_total"], "blocking", rec["profile"]["blocking"], flush=True)
        del built
        hf_step.free_all() if hasattr(hf_step, "free_all") else torch.cuda.empty_cache()
    out.close()


if __name__ == "__main__":
    main()

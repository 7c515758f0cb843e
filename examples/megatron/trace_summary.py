#!/usr/bin/env python3
"""Summarises torch.profiler chrome traces of one Megatron-LM iteration per rank:
where the GPU is busy (compute kernels, NCCL kernels), where it idles, how long
the host waits in synchronising calls, and how long each checkpointed layer's
backward (replayed forward + its backward) takes on the host and on the GPU.

Usage: trace_summary.py NAME=DIR [NAME=DIR ...] > summary.json
DIR holds rank-N.json.gz as Megatron-LM's --use-pytorch-profiler writes them.
"""
import glob
import gzip
import json
import os
import re
import sys

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpyAsync",
              "cudaMemcpy")


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def overlap_with(intervals, window):
    lo, hi = window
    return union_length([(max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi])


def summarise(path):
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e]
    steps = [e for e in spans if e.get("name", "").startswith("ProfilerStep#")]
    step = max(steps, key=lambda e: e["dur"]) if steps else None
    lo = step["ts"] if step else min(e["ts"] for e in spans)
    hi = lo + step["dur"] if step else max(e["ts"] + e["dur"] for e in spans)
    inside = [e for e in spans if e["ts"] >= lo and e["ts"] + e["dur"] <= hi + 1]
    kernels = [e for e in inside if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    nccl = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" in e["name"].lower()]
    compute = [(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" not in e["name"].lower()]
    syncs = [e for e in inside if e.get("cat") == "cuda_runtime" and e["name"] in SYNC_CALLS]
    sync_by_name = {}
    for e in syncs:
        s = sync_by_name.setdefault(e["name"], {"count": 0, "ms": 0.0})
        s["count"] += 1
        s["ms"] += e["dur"] / 1e3
    ckpt = [e for e in inside if e.get("cat") == "cpu_op" and "CheckpointFunctionBackward" in e["name"]
            and "evaluate_function" in e["name"]]
    replays = [{"host_ms": e["dur"] / 1e3,
                "gpu_compute_ms": overlap_with(compute, (e["ts"], e["ts"] + e["dur"])) / 1e3,
                "host_sync_ms": sum(s["dur"] for s in syncs if e["ts"] <= s["ts"] <= e["ts"] + e["dur"]) / 1e3}
               for e in sorted(ckpt, key=lambda e: e["ts"])]
    by_kernel = {}
    for e in kernels:
        name = re.sub(r"<.*", "", e["name"])[:80]
        by_kernel[name] = by_kernel.get(name, 0.0) + e["dur"] / 1e3
    top = sorted(by_kernel.items(), key=lambda kv: -kv[1])[:12]
    cpu_ops = [e for e in inside if e.get("cat") == "cpu_op"]
    launches = [e for e in inside if e.get("cat") == "cuda_runtime" and "Launch" in e["name"]]
    return {
        "iteration_ms": (hi - lo) / 1e3,
        "gpu_compute_busy_ms": union_length(compute) / 1e3,
        "gpu_nccl_busy_ms": union_length(nccl) / 1e3,
        "gpu_any_busy_ms": union_length(compute + nccl) / 1e3,
        "gpu_idle_ms": (hi - lo - union_length(compute + nccl)) / 1e3,
        "kernel_launches": len(launches),
        "cpu_ops": len(cpu_ops),
        "host_syncs": sync_by_name,
        "checkpoint_backward": {"count": len(replays), "host_ms": sum(r["host_ms"] for r in replays),
                                "gpu_compute_ms": sum(r["gpu_compute_ms"] for r in replays),
                                "host_sync_ms": sum(r["host_sync_ms"] for r in replays), "each": replays[:8]},
        "top_kernels_ms": top,
    }


def main():
    out = {}
    for arg in sys.argv[1:]:
        name, directory = arg.split("=", 1)
        out[name] = {os.path.basename(p).split(".")[0]: summarise(p)
                     for p in sorted(glob.glob(os.path.join(directory, "rank-*.json.gz")))}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

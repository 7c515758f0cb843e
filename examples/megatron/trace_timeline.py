#!/usr/bin/env python3
"""Host and GPU timelines of one profiled Megatron-LM iteration (rank 0), per forward and backward
phase: wall time, GPU busy time (union of kernels, copies and memsets), host time spent waiting in
synchronising CUDA calls, host busy time (wall less the waits), CPU ops and kernel launches issued,
and the median host cost of one cudaLaunchKernel. Phases as in trace_phases.py.

Usage: trace_timeline.py NAME=TRACE.json.gz [NAME=TRACE.json.gz ...] > timeline.json
"""
import json
import statistics
import sys

from trace_phases import phases, profiled_step

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpyAsync")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def busy_us(intervals, lo, hi):
    """Length of the union of intervals, clipped to [lo, hi)."""
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi)
    total, end = 0.0, lo
    for a, b in clipped:
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def phase_row(kind, timeline, lo, hi):
    gpu, waits, launch_events, cpu_op_starts = timeline
    launches = [dur for ts, dur in launch_events if lo <= ts < hi]
    wait_us = busy_us(waits, lo, hi)
    return {"kind": kind, "wall_ms": round((hi - lo) / 1e3, 2), "gpu_busy_ms": round(busy_us(gpu, lo, hi) / 1e3, 2),
            "host_wait_ms": round(wait_us / 1e3, 2), "host_busy_ms": round((hi - lo - wait_us) / 1e3, 2),
            "cpu_ops": sum(1 for ts in cpu_op_starts if lo <= ts < hi),
            "kernel_launches": len(launches),
            "launch_median_us": round(statistics.median(launches), 2) if launches else None}


def summarise(path):
    events, lo, hi = profiled_step(path)
    gpu = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in GPU_CATS]
    waits = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("cat") == "cuda_runtime" and e["name"] in SYNC_CALLS]
    launches = [(e["ts"], e["dur"]) for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
    cpu_op_starts = [e["ts"] for e in events if e.get("cat") == "cpu_op"]
    timeline = (gpu, waits, launches, cpu_op_starts)
    rows, start = [], lo
    for a, b in phases(events):
        rows.append(phase_row("forward", timeline, start, a))
        rows.append(phase_row("backward", timeline, a, b))
        start = b
    rows.append(phase_row("rest (loss tail, optimizer)", timeline, start, hi))
    return {"iteration_ms": round((hi - lo) / 1e3, 2), "gpu_busy_ms": round(busy_us(gpu, lo, hi) / 1e3, 2),
            "phases": rows}


def main():
    out = {}
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        out[name] = summarise(path)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

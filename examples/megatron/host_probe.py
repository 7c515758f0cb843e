#!/usr/bin/env python3
"""Measures how fast this machine's host drives the GPU, for reading host-bound runs (the small MoE's
layers wait on Python and on the dispatcher's syncs, reports/megatron/README.md): harness.py writes
the result as a log's second line, "# host: {...}", so runs on machines with slower or faster CPUs
can be told apart.

Prints one JSON object, medians of 5 repetitions:
  cpu               the CPU model (/proc/cpuinfo)
  launch_us         host time to issue one tiny in-place kernel from Python (torch dispatch + launch)
  sync_us           one tiny kernel and a .item() round trip to the host (what a dispatcher sync costs)
  python_loop_ns    one iteration of a pure Python loop
  device            where the kernels ran ("cuda" on the GPU machine; "cpu" elsewhere, a dry run)

Usage: python3 examples/megatron/host_probe.py
"""
import json
import platform
import statistics
import time

import torch


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def per_call_us(fn, calls, sync):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / calls * 1e6


def python_loop_ns(iterations=1_000_000):
    start = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i
    return (time.perf_counter() - start) / iterations * 1e9


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    x = torch.zeros(16, device=device)
    launch = [per_call_us(lambda: x.add_(1), 20000, sync) for _ in range(5)]
    round_trip = [per_call_us(lambda: x.sum().item(), 2000, sync) for _ in range(5)]
    loop = [python_loop_ns() for _ in range(5)]
    print(json.dumps({"cpu": cpu_model(), "launch_us": round(statistics.median(launch), 2),
                      "sync_us": round(statistics.median(round_trip), 2),
                      "python_loop_ns": round(statistics.median(loop), 1), "device": device}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per forward and backward phase of one profiled Megatron-LM iteration (rank 0): host time, and the
Python functions and CPU ops that take the most of it (inclusive time), to compare two runs.
Phases: a backward is a run of autograd engine ops; the forward is the stretch before it.

Usage: trace_phases.py NAME=DIR [NAME=DIR ...] > phases.json   (DIR holds rank-0.json.gz)
"""
import collections
import gzip
import json
import os
import sys


def phases(events):
    bw = sorted((e for e in events if e.get("cat") == "cpu_op"
                 and e["name"].startswith("autograd::engine::evaluate_function")), key=lambda e: e["ts"])
    runs = []
    for e in bw:
        if runs and e["ts"] - runs[-1][1] < 1500:
            runs[-1][1] = max(runs[-1][1], e["ts"] + e["dur"])
        else:
            runs.append([e["ts"], e["ts"] + e["dur"]])
    return [r for r in runs if r[1] - r[0] > 3000]


def top(events, lo, hi, cats, n=25):
    total = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("cat") in cats and lo <= e["ts"] and e["ts"] + e["dur"] <= hi:
            total[e["name"][:100]] += e["dur"] / 1e3
            count[e["name"][:100]] += 1
    return [[k, round(v, 2), count[k]] for k, v in total.most_common(n)]


def profiled_step(path):
    """The complete events of a trace's (longest) profiled iteration, and its start and end (us)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and "dur" in e]
    step = max((e for e in events if e["name"].startswith("ProfilerStep#")), key=lambda e: e["dur"])
    lo, hi = step["ts"], step["ts"] + step["dur"]
    return [e for e in events if lo <= e["ts"] <= hi], lo, hi


def summarise(path):
    events, lo, hi = profiled_step(path)
    out = {"iteration_ms": (hi - lo) / 1e3, "phases": []}
    start = lo
    for a, b in phases(events):
        for kind, x, y in (("forward", start, a), ("backward", a, b)):
            out["phases"].append({"kind": kind, "ms": (y - x) / 1e3,
                                  "python": top(events, x, y, ("python_function",)),
                                  "ops": top(events, x, y, ("cpu_op", "cuda_runtime"), 15)})
        start = b
    return out


def main():
    out = {}
    for arg in sys.argv[1:]:
        name, directory = arg.split("=", 1)
        out[name] = summarise(os.path.join(directory, "rank-0.json.gz"))
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs Megatron-LM's pretrain_gpt.py over a grid of layouts and recompute
settings and records, per rank, max allocated / max reserved / device-used
bytes and the iteration times, with the full log of every run.

Usage (on the GPU machine, from the repository root):
  python3 examples/megatron/harness.py --grid examples/megatron/grid.json \
      --megatron .megatron --out $OUT/megatron --budget-s 540

The grid file lists settings; each names its GPU count and the flags that
differ from the common ones. Settings run in order until the time budget
would be exceeded; what ran is written to summary.json as it goes.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

MEMORY_LINE = re.compile(
    r"\[Rank (\d+)\] \(after (\d+) iterations\) memory \(MB\) \| allocated: ([\d.]+) \| "
    r"max allocated: ([\d.]+) \| reserved: ([\d.]+) \| max reserved: ([\d.]+)"
    r"(?: \| total device memory used: ([\d.]+))?")
ITERATION_LINE = re.compile(r"iteration\s+(\d+)/\s*(\d+) \|.*?elapsed time per iteration \(ms\): ([\d.]+)")


def parse_log(text):
    """Per-rank memory (MB, last report of each rank) and per-iteration times (ms)."""
    ranks = {}
    for m in MEMORY_LINE.finditer(text):
        rank = int(m.group(1))
        ranks[rank] = {
            "after_iteration": int(m.group(2)),
            "allocated_MB": float(m.group(3)),
            "max_allocated_MB": float(m.group(4)),
            "reserved_MB": float(m.group(5)),
            "max_reserved_MB": float(m.group(6)),
            "device_used_MB": float(m.group(7)) if m.group(7) else None,
        }
    times = [(int(m.group(1)), float(m.group(3))) for m in ITERATION_LINE.finditer(text)]
    return ranks, times


def command_for(setting, common, megatron_dir, port):
    gpus = setting["gpus"]
    flags = common + setting["flags"]
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={gpus}", "--nnodes=1", f"--master_port={port}",
            os.path.join(megatron_dir, "pretrain_gpt.py")] + flags


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        return out
    except OSError:
        return []


def host_probe(env):
    """host_probe.py's measurements of this machine's host, or why there are none."""
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "host_probe.py")
    try:
        out = subprocess.run([sys.executable, probe], capture_output=True, text=True, env=env, timeout=120)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"error": f"host probe failed: {type(e).__name__}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", required=True)
    ap.add_argument("--megatron", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=540)
    ap.add_argument("--timeout-s", type=float, default=180)
    ap.add_argument("--only", default="", help="comma-separated setting names")
    ap.add_argument("--run-id", default=time.strftime("%Y-%m-%dT%H:%M:%S"), help="written into every log's device line")
    ap.add_argument("--stop-on-first-failure", action="store_true")
    args = ap.parse_args()

    grid = json.load(open(args.grid))
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1",
               CUDA_DEVICE_MAX_CONNECTIONS="1", PYTHONPATH=os.path.abspath(args.megatron), PYTHONUNBUFFERED="1",
               OMP_NUM_THREADS="4")
    summary = {"device": gpu_name(), "host": host_probe(env), "megatron_commit": grid.get("megatron_commit", ""),
               "common_flags": grid["common_flags"], "runs": []}
    print(f"host: {json.dumps(summary['host'])}", flush=True)
    only = set(filter(None, args.only.split(",")))
    start = time.time()
    port = 29500
    host_after = summary["host"]
    for setting in grid["settings"]:
        if only and setting["name"] not in only:
            continue
        elapsed = time.time() - start
        if summary["runs"] and elapsed + setting.get("expected_s", 60) > args.budget_s:
            summary["runs"].append({"name": setting["name"], "status": "not run (time budget)"})
            continue
        port += 1
        host_before = host_after
        cmd = command_for(setting, grid["common_flags"], args.megatron, port)
        t0 = time.time()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout_s)
            log, rc = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            log = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            log += (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            rc = "timeout"
        wall_s = time.time() - t0
        # the host's speed moves within a session (reports/megatron, runs 13-14): probe it again after
        # each run, so each log says how fast its host was before and after
        host_after = host_probe(env)
        with open(os.path.join(args.out, "logs", setting["name"] + ".log"), "w") as f:
            device = summary["device"][0] if summary["device"] else "unknown"
            # the run id pairs a recompute setting with its no-recompute run of the same session
            f.write(f"# device: {device} ({len(summary['device'])} GPUs; harness run {args.run_id})\n"
                    f"# host: {json.dumps(host_before)}\n# host after: {json.dumps(host_after)}\n"
                    + " ".join(cmd) + "\n" + log)
        ranks, times = parse_log(log)
        steady = [t for it, t in times if it >= 3]
        run = {"name": setting["name"], "gpus": setting["gpus"], "flags": setting["flags"], "rc": rc,
               "wall_s": round(wall_s, 1), "host": host_before, "host_after": host_after,
               "ranks": ranks, "iteration_ms": times,
               "median_iteration_ms": statistics.median(steady) if steady else None}
        summary["runs"].append(run)
        print(f"{setting['name']}: rc {rc}, {wall_s:.0f} s, median {run['median_iteration_ms']} ms, "
              f"max alloc MB {[r['max_allocated_MB'] for _, r in sorted(ranks.items())]}, "
              f"launch us {host_before.get('launch_us')} -> {host_after.get('launch_us')}", flush=True)
        if rc != 0:
            print("\n".join(log.splitlines()[-25:]), flush=True)
            if args.stop_on_first_failure and len(summary["runs"]) == 1:
                break
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

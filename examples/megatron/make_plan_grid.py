#!/usr/bin/env python3
"""Writes plan_grid.json: Megatron-LM runs of plans remat chose itself
(`remat plan --framework megatron-local --emit-megatron-args`, the best plan
Megatron runs as-is under a memory budget), for harness.py to run and
`remat validate --megatron-log` to check against what remat predicted.

Usage: python3 examples/megatron/make_plan_grid.py [path/to/remat] > examples/megatron/plan_grid.json
       python3 examples/megatron/make_plan_grid.py [path/to/remat] --moe > examples/megatron/plan_grid_moe.json
The --moe grid plans the Mixtral-shaped MoE (moe-8x7-4l.yaml) and runs, in the same harness session,
the same layouts without recompute (the plans' time over none).
"""
import json
import os
import shlex
import subprocess
import sys

ARGS = [a for a in sys.argv[1:] if a != "--moe"]
REMAT = ARGS[0] if ARGS else "./build/src/remat"
HERE = os.path.dirname(os.path.abspath(__file__))
DENSE = "--model llama3-8b --num-layers 8 --hardware h200 --framework megatron-local"
PLANS = [  # name, layout, budget GiB
    ("plan-tp1pp2-s8192-mbs1-gbs4-b55", "--tp 1 --pp 2 --mbs 1 --gbs 4 --seq 8192", 55),
    ("plan-tp1pp2-s4096-mbs2-gbs8-b50", "--tp 1 --pp 2 --mbs 2 --gbs 8 --seq 4096", 50),
    ("plan-tp1pp2-s4096-mbs2-gbs8-b55", "--tp 1 --pp 2 --mbs 2 --gbs 8 --seq 4096", 55),
    ("plan-tp2pp1-s8192-mbs2-gbs4-b45", "--tp 2 --pp 1 --mbs 2 --gbs 4 --seq 8192", 45),
]
MOE = f"--model {HERE}/moe-8x7-4l.yaml --hardware h200 --framework megatron-local"
MOE_PLANS = [
    ("plan-moe8x7-tp1pp2-s8192-mbs1-gbs4-b95", "--tp 1 --pp 2 --mbs 1 --gbs 4 --seq 8192", 95),
    ("plan-moe8x7-tp1pp2-s8192-mbs1-gbs4-b85", "--tp 1 --pp 2 --mbs 1 --gbs 4 --seq 8192", 85),
    ("plan-moe8x7-tp1pp1ep2-s8192-mbs1-gbs4-b90", "--tp 1 --pp 1 --dp 2 --ep 2 --mbs 1 --gbs 4 --seq 8192", 90),
]
# what remat's flags leave to the launch script: the router's load-balancing loss, as the grid runs set it
MOE_EXTRA = ("--moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2 --train-iters 10").split()
# the training loop, data and logging: what remat does not print itself
COMMON = ("--mock-data --tokenizer-type NullTokenizer --vocab-size 128255 --optimizer adam --lr 1e-5 --min-lr 1e-6 "
          "--weight-decay 0.1 --clip-grad 1.0 --train-iters 6 --eval-iters 0 --eval-interval 1000 --log-interval 1 "
          "--log-memory-interval 1 --log-device-memory-used --log-throughput --attention-dropout 0 --hidden-dropout 0 "
          "--init-method-std 0.02 --seed 1234 --distributed-backend nccl --rotary-base 500000").split()


def plan_setting(name, model, layout, budget, extra):
    cmd = [REMAT, "plan"] + shlex.split(model + " " + layout) + ["--memory-budget-GiB", str(budget),
                                                                  "--emit-megatron-args"]
    gpus, *flags = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return {"name": name, "gpus": int(gpus), "flags": flags + extra, "expected_s": 60,
            "remat_plan": " ".join(cmd[1:]).replace(HERE + "/", "examples/megatron/")}


def no_recompute(plan, name):
    """The plan's flags without its --recompute-* arguments: the same layout with no recompute."""
    flags, skip = [], False
    for f in plan["flags"]:
        if f.startswith("--"):
            skip = f.startswith("--recompute-")
        if not skip:
            flags.append(f)
    return {"name": name, "gpus": plan["gpus"], "flags": flags, "expected_s": 60}


def main():
    if "--moe" in sys.argv:
        plans = [plan_setting(n, MOE, layout, b, MOE_EXTRA) for n, layout, b in MOE_PLANS]
        settings = [no_recompute(plans[0], "moe8x7-tp1pp2-s8192-mbs1-gbs4-none-planflags"),
                    no_recompute(plans[2], "moe8x7-tp1pp1ep2-s8192-mbs1-gbs4-none-planflags")] + plans
    else:
        settings = [plan_setting(n, DENSE, layout, b, []) for n, layout, b in PLANS]
    print(json.dumps({"megatron_commit": "d98e8a64dd", "common_flags": COMMON, "settings": settings}, indent=1))


if __name__ == "__main__":
    main()

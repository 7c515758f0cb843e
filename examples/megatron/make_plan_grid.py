#!/usr/bin/env python3
"""Writes plan_grid.json: Megatron-LM runs of plans remat chose itself
(`remat plan --framework megatron-local --emit-megatron-args`, the best plan
Megatron runs as-is under a memory budget), for harness.py to run and
`remat validate --megatron-log` to check against what remat predicted.

Usage: python3 examples/megatron/make_plan_grid.py [path/to/remat] > examples/megatron/plan_grid.json
"""
import json
import shlex
import subprocess
import sys

REMAT = sys.argv[1] if len(sys.argv) > 1 else "./build/src/remat"
DENSE = "--model llama3-8b --num-layers 8 --hardware h200 --framework megatron-local"
PLANS = [  # name, layout, budget GiB
    ("plan-tp1pp2-s8192-mbs1-gbs4-b55", "--tp 1 --pp 2 --mbs 1 --gbs 4 --seq 8192", 55),
    ("plan-tp1pp2-s4096-mbs2-gbs8-b50", "--tp 1 --pp 2 --mbs 2 --gbs 8 --seq 4096", 50),
    ("plan-tp1pp2-s4096-mbs2-gbs8-b55", "--tp 1 --pp 2 --mbs 2 --gbs 8 --seq 4096", 55),
    ("plan-tp2pp1-s8192-mbs2-gbs4-b45", "--tp 2 --pp 1 --mbs 2 --gbs 4 --seq 8192", 45),
]
# the training loop, data and logging: what remat does not print itself
COMMON = ("--mock-data --tokenizer-type NullTokenizer --vocab-size 128255 --optimizer adam --lr 1e-5 --min-lr 1e-6 "
          "--weight-decay 0.1 --clip-grad 1.0 --train-iters 6 --eval-iters 0 --eval-interval 1000 --log-interval 1 "
          "--log-memory-interval 1 --log-device-memory-used --log-throughput --attention-dropout 0 --hidden-dropout 0 "
          "--init-method-std 0.02 --seed 1234 --distributed-backend nccl --rotary-base 500000").split()


def main():
    settings = []
    for name, layout, budget in PLANS:
        cmd = [REMAT, "plan"] + shlex.split(DENSE + " " + layout) + ["--memory-budget-GiB", str(budget),
                                                                      "--emit-megatron-args"]
        gpus, *flags = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
        settings.append({"name": name, "gpus": int(gpus), "flags": flags, "expected_s": 60,
                         "remat_plan": " ".join(cmd[1:])})
    print(json.dumps({"megatron_commit": "d98e8a64dd", "common_flags": COMMON, "settings": settings}, indent=1))


if __name__ == "__main__":
    main()

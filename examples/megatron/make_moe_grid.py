#!/usr/bin/env python3
"""Writes grid-moe.json (session 5): the MoE model of make_grid.py under torch.profiler at pp 2 and ep 2
(none and recompute, to see where the replayed MoE layer's time goes), then MoE runs not used for fitting:
pp 2 with full block 1, selective moe, s 8192, 8 microbatches, and ep 2 with full uniform 1.
With --second, writes grid-moe2.json: a Mixtral-8x7B-shaped MoE (see second_grid).
Profiled runs are for analysis only: the profiler slows the iteration it records."""
import json
import sys

from make_grid import COMMON, MOE, setting

PROFILE = "--profile --use-pytorch-profiler --profile-step-start 4 --profile-step-end 5".split()


def profiled(tp, pp, ep, recompute):
    s = setting("moe", MOE, tp, pp, ep, 4096, 1, 4, recompute)
    s["name"] = "prof-" + s["name"]
    s["flags"] += PROFILE + ["--tensorboard-dir", f"prof/{s['name']}/tb"]
    return s


MOE_8X7 = ("--num-layers 4 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
           "--group-query-attention --num-query-groups 8 --num-experts 8 --moe-router-topk 2 "
           "--moe-ffn-hidden-size 14336 --moe-token-dispatcher-type alltoall --moe-router-load-balancing-type aux_loss "
           "--moe-aux-loss-coeff 1e-2").split()
LONGER = ["--train-iters", "10"]  # argparse keeps the last: 10 iterations, the median over 3-10


def second_grid():
    """Mixtral-8x7B layer dims cut to 4 layers, where the experts' GEMMs outweigh the host's per-layer work,
    then the small MoE's pp 2 none / full uniform 1 again, measured in the same session as the rest."""
    s = []
    for pp, ep, seq, r in [(2, 1, 4096, "none"), (2, 1, 4096, "full-uniform1"), (2, 1, 4096, "full-block1"),
                           (2, 1, 4096, "sel-moe"), (1, 2, 4096, "none"), (1, 2, 4096, "full-uniform1"),
                           (1, 2, 4096, "sel-moe"), (2, 1, 8192, "none"), (2, 1, 8192, "full-uniform1")]:
        x = setting("moe8x7", MOE_8X7, 1, pp, ep, seq, 1, 4, r)
        x["flags"] += LONGER
        s.append(x)
    for r in ["none", "full-uniform1"]:
        x = setting("moe", MOE, 1, 2, 1, 4096, 1, 4, r)
        x["name"] += "-rerun"
        x["flags"] += LONGER
        s.append(x)
    return s


def stacks_grid():
    """The small MoE at ep 2 without recompute and with selective moe, profiled with Python stacks:
    recompute measured free there, and the forward phases differ by 15-17 ms of host time."""
    s = []
    for r in ["none", "sel-moe", "full-uniform1"]:  # unprofiled first: the three in one session
        x = setting("moe", MOE, 1, 1, 2, 4096, 1, 4, r)
        x["name"] += "-session8"
        x["flags"] += LONGER
        s.append(x)
    for r in ["none", "sel-moe", "full-uniform1"]:
        x = profiled(1, 1, 2, r)
        x["name"] = x["name"].replace("prof-", "stacks-")
        x["flags"] = [f.replace("prof-", "stacks-") for f in x["flags"]] + ["--pytorch-profiler-collect-callstack"]
        s.append(x)
    return s


def one_gpu(recompute, iterations, seq=4096, name="moe", model=MOE, suffix="", extra=()):
    """A setting of `model` on one GPU (no pipeline, no expert parallelism), run `iterations` times."""
    x = setting(name, model, 1, 1, 1, seq, 1, 4, recompute)
    x["gpus"] = 1
    x["name"] += suffix
    x["flags"] += ["--train-iters", str(iterations), *extra]
    return x


def one_gpu_profiled(recompute, prefix, extra=()):
    """The small MoE on one GPU at s 4096 with torch.profiler on, named `prefix`-... instead of prof-..."""
    x = profiled(1, 1, 1, recompute)
    x["gpus"] = 1
    x["name"] = x["name"].replace("prof-", prefix)
    x["flags"] = [f.replace("prof-", prefix) for f in x["flags"]] + list(extra)
    return x


def single_gpu_grid():
    """The small MoE on one GPU (8 local experts, no pipeline, no expert parallelism): none, selective
    moe and full uniform 1 in one session, then none and selective moe profiled with Python stacks."""
    return ([one_gpu(r, 10) for r in ["none", "sel-moe", "full-uniform1"]] +
            [one_gpu_profiled(r, "stacks-", ["--pytorch-profiler-collect-callstack"]) for r in ["none", "sel-moe"]])


def widths_grid():
    """The small MoE's experts widened to 4096 and 8192 on one GPU, none and full uniform 1: between the
    host-bound 2048-wide experts and the GPU-bound Mixtral-shaped ones."""
    s = []
    for width in [4096, 8192]:
        model = [f if f != "2048" or i == 0 or MOE[i - 1] != "--moe-ffn-hidden-size" else str(width)
                 for i, f in enumerate(MOE)]
        s += [one_gpu(r, 10, name=f"moe{width}", model=model) for r in ["none", "full-uniform1"]]
    return s


def seqs_grid():
    """The small MoE on one GPU at s 2048 and s 8192, none / selective moe / full uniform 1 (20 iterations):
    the host's work per layer stays, the GPU's grows with s, so what a replay costs as s grows tells
    how much of its host time hides behind GPU work. Then s 4096 profiled without stacks, for the
    host and GPU timelines of one iteration."""
    past_the_drift = ["--profile-step-start", "10", "--profile-step-end", "11", "--train-iters", "12"]
    return ([one_gpu(r, 20, seq=seq) for seq in [2048, 8192] for r in ["none", "sel-moe", "full-uniform1"]] +
            [one_gpu_profiled(r, "timeline-", past_the_drift) for r in ["none", "sel-moe", "full-uniform1"]])


def gc_grid():
    """The small MoE on one GPU at s 4096 with Python's garbage collector off (--manual-gc, as large
    Megatron-LM jobs run): none / selective moe / full uniform 1, twice, interleaved, 20 iterations, to
    see whether the drift within a run and the spread between repeats shrink."""
    return [one_gpu(r, 20, suffix="-" + rep, extra=["--manual-gc"])
            for rep in ["gc1", "gc2"] for r in ["none", "sel-moe", "full-uniform1"]]


def probe_grid():
    """The small MoE on one GPU at s 4096, none and selective moe alternating (none three times), with
    the host probed before and after every run: does the probe follow the run's time?"""
    return [one_gpu(r, 20, suffix=f"-p{i + 1}") for i, r in enumerate(["none", "sel-moe", "none", "sel-moe", "none"])]


GRIDS = {"--probe": probe_grid, "--gc": gc_grid, "--seqs": seqs_grid, "--widths": widths_grid,
         "--single": single_gpu_grid, "--stacks": stacks_grid, "--second": second_grid}


def main():
    make = GRIDS.get(sys.argv[1]) if len(sys.argv) > 1 else first_grid
    if make is None:
        sys.exit(f"make_moe_grid.py: unknown grid {sys.argv[1]}; one of {', '.join(GRIDS)} or none")
    print(json.dumps({"megatron_commit": "d98e8a64dd", "common_flags": COMMON, "settings": make()}, indent=1))


def first_grid():
    """grid-moe.json: the profiled pp 2 and ep 2 runs, then the MoE layouts held out from the fit."""
    s = [profiled(1, 2, 1, "none"), profiled(1, 2, 1, "full-uniform1"),
         profiled(1, 1, 2, "none"), profiled(1, 1, 2, "sel-moe")]
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "full-block1"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "sel-moe"))
    s.append(setting("moe", MOE, 1, 1, 2, 4096, 1, 4, "full-uniform1"))
    s.append(setting("moe", MOE, 1, 2, 1, 8192, 1, 4, "none"))
    s.append(setting("moe", MOE, 1, 2, 1, 8192, 1, 4, "full-uniform1"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 8, "none"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 8, "full-uniform1"))
    return s


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes grid-moe.json (session 5): the MoE model of make_grid.py under torch.profiler at pp 2 and ep 2
(none and recompute, to see where the replayed MoE layer's time goes), then MoE runs not used for fitting:
pp 2 with full block 1, selective moe, s 8192, 8 microbatches, and ep 2 with full uniform 1.
Profiled runs are for analysis only: the profiler slows the iteration it records."""
import json

from make_grid import COMMON, MOE, setting

PROFILE = "--profile --use-pytorch-profiler --profile-step-start 4 --profile-step-end 5".split()


def profiled(tp, pp, ep, recompute):
    s = setting("moe", MOE, tp, pp, ep, 4096, 1, 4, recompute)
    s["name"] = "prof-" + s["name"]
    s["flags"] += PROFILE + ["--tensorboard-dir", f"prof/{s['name']}/tb"]
    return s


def main():
    s = [profiled(1, 2, 1, "none"), profiled(1, 2, 1, "full-uniform1"),
         profiled(1, 1, 2, "none"), profiled(1, 1, 2, "sel-moe")]
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "full-block1"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "sel-moe"))
    s.append(setting("moe", MOE, 1, 1, 2, 4096, 1, 4, "full-uniform1"))
    s.append(setting("moe", MOE, 1, 2, 1, 8192, 1, 4, "none"))
    s.append(setting("moe", MOE, 1, 2, 1, 8192, 1, 4, "full-uniform1"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 8, "none"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 8, "full-uniform1"))
    print(json.dumps({"megatron_commit": "d98e8a64dd", "common_flags": COMMON, "settings": s}, indent=1))


if __name__ == "__main__":
    main()

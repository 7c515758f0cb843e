#!/usr/bin/env python3
"""Which model classes honour logits_to_keep (TRL's GRPO passes it to compute the completion's logits only).

For every config that probes/cut_counts.py built (reports/hf/cut-counts-h200.jsonl, cut to one layer), build
the model as the harness does on the meta device and record the class, whether its forward() names
logits_to_keep, and the logits' length from a meta-device forward of 16 tokens with logits_to_keep=1 (1 where
the class honours it, 16 where it computes every position's logits; absent where the forward fails on meta).

    on the GPU machine:  python3 logits_to_keep.py --out keep.jsonl
"""
import argparse
import inspect
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../.."))


def built_configs():
    seen = []
    for line in open(f"{ROOT}/reports/hf/cut-counts-h200.jsonl"):
        row = json.loads(line)
        if "params" in row and row["config"] not in seen:
            seen.append(row["config"])
    return seen


def main():
    import torch

    sys.path.insert(0, os.path.dirname(HERE))
    import hf_step

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=300)
    a = ap.parse_args()
    t0 = time.time()
    with open(a.out, "w") as f:
        for path in built_configs():
            if time.time() - t0 > a.deadline:
                break
            rec = {"config": path}
            try:
                cfg, _, _ = hf_step.load_config(path, 1)
                model = hf_step.build_model(cfg, torch.bfloat16, "sdpa", device="meta")
                rec["class"] = type(model).__name__
                rec["forward_names_it"] = "logits_to_keep" in inspect.signature(model.forward).parameters
                ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
                with torch.no_grad():
                    out = model(input_ids=ids, logits_to_keep=1)
                rec["logits_positions"] = int(out.logits.shape[1])
            except Exception as e:  # noqa: BLE001 - recorded, the next config goes on
                rec["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            f.write(json.dumps(rec) + "\n")
            f.flush()


if __name__ == "__main__":
    main()

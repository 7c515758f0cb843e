#!/usr/bin/env python3
"""Parameter counts of cut models, as the harness builds them, beside remat's.

The harness cuts a config to a few layers (hf_step.load_config) before transformers builds it, and
a config class may derive per-layer choices from the count (Gemma 4 makes the last layer full
attention). This builds each config at a few cuts on the meta device (no weights, no memory), full
and with PEFT's all-linear at rank 8, and records model.parameters() and those requiring a gradient.

    on the GPU machine:  python3 cut_counts.py run --cases cases.json --out counts.jsonl
    here:                python3 cut_counts.py cases --out cases.json   (configs remat loads, cuts)
                         python3 cut_counts.py compare counts.jsonl      (remat's counts beside them)
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../.."))
CUTS = (1, 2, 3, 5)


def configs():
    paths = glob.glob(f"{ROOT}/tests/data/hf_configs/*.json") + glob.glob(f"{ROOT}/examples/hf/unseen*/realcfg/*.json")
    return sorted(os.path.relpath(p, ROOT) for p in paths if "manifest" not in p)


def file_layers(path):
    d = json.load(open(os.path.join(ROOT, path)))
    text = d.get("text_config") if isinstance(d.get("text_config"), dict) else d
    n = text.get("num_hidden_layers") or d.get("num_hidden_layers") or d.get("n_layer")
    return n if isinstance(n, int) and n > 0 else None


def make_cases(out):
    remat = f"{ROOT}/build/src/remat"
    cases = []
    for path in configs():
        r = subprocess.run([remat, "estimate", "--framework", "hf", "--model", path, "--hardware", "h200", "--tp", "1",
                            "--pp", "1"], capture_output=True, text=True, cwd=ROOT)
        if r.returncode == 2 or "builds its default" in r.stderr or "builds their default" in r.stderr:
            continue
        n = file_layers(path)
        if not n:
            continue
        for layers in sorted({min(c, n) for c in CUTS}):
            for mode in ("full", "lora"):
                cases.append({"config": path, "layers": layers, "mode": mode})
    # every config at one cut first (full at one layer, LoRA at three), so a deadline cuts the rest
    cases.sort(key=lambda c: 0 if (c["mode"], c["layers"]) in (("full", 1), ("lora", 3)) else 1)
    json.dump(cases, open(out, "w"), indent=0)
    print(f"{len(cases)} cases", file=sys.stderr)


def run(cases_file, out, deadline_s):
    import torch

    sys.path.insert(0, os.path.dirname(HERE))
    import hf_step

    t0 = time.time()
    with open(out, "w") as f:
        for c in json.load(open(cases_file)):
            if time.time() - t0 > deadline_s:
                break
            rec = dict(c)
            try:
                cfg, model_type, _ = hf_step.load_config(c["config"], c["layers"])
                model = hf_step.build_model(cfg, torch.bfloat16, "sdpa", device="meta")
                if c["mode"] == "lora":
                    from peft import LoraConfig, get_peft_model

                    with torch.device("meta"):
                        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear",
                                                                 task_type="CAUSAL_LM"))
                rec["params"] = sum(p.numel() for p in model.parameters())
                rec["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
                rec["model_type"] = model_type
                rec["built_layers"] = cfg.get_text_config().num_hidden_layers  # where the cut reached
            except Exception as e:  # noqa: BLE001 - recorded, the next config goes on
                rec["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            f.write(json.dumps(rec) + "\n")
            f.flush()


def compare(counts_file):
    """Each count beside remat's (validate --hf-run on a placeholder step that carries it)."""
    remat = f"{ROOT}/build/src/remat"
    rows = [json.loads(line) for line in open(counts_file)]
    equal = differ = refused = 0
    for row in rows:
        if "params" not in row:
            continue
        rec = {"case": "c", "config": row["config"], "num_hidden_layers": row["layers"], "seq": 1024, "mbs": 1,
               "mode": row["mode"], "lora_rank": 8 if row["mode"] == "lora" else 0,
               "lora_targets": ["all-linear"] if row["mode"] == "lora" else [], "lora_dropout": 0.0,
               "checkpointing": "none", "attention": "sdpa", "precision": "bf16", "objective": "sft",
               "grpo_group": None, "gpu": "NVIDIA H200", "step": 3, "oom": False, "peak_allocated_bytes": 1,
               "allocated_before_bytes": 1, "step_time_s": 1.0, "params": row["params"],
               "trainable_params": row["trainable_params"]}
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/s.jsonl", "w") as f:
                f.write(json.dumps(rec) + "\n")
            r = subprocess.run([remat, "validate", "--hf-run", f"{tmp}/s.jsonl", "--json", f"{tmp}/v.json"],
                               capture_output=True, text=True, cwd=ROOT)
            if r.returncode != 0:
                refused += 1
                continue
            p = json.load(open(f"{tmp}/v.json"))["cases"][0]["params"]
        if p["predicted"] == p["measured"] and p["predicted_trainable"] == p["measured_trainable"]:
            equal += 1
            continue
        differ += 1
        print(f"{row['config']}\t{row['layers']}\t{row['mode']}\t{p['predicted'] - p['measured']:+}\t"
              f"{p['predicted_trainable'] - p['measured_trainable']:+}\t{p['measured']}")
    print(f"{equal} equal, {differ} differ, {refused} refused by remat, "
          f"{sum('error' in r for r in rows)} not built", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cases", "run", "compare"])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--cases")
    ap.add_argument("--out")
    ap.add_argument("--deadline", type=float, default=500)
    a = ap.parse_args()
    if a.what == "cases":
        make_cases(a.out)
    elif a.what == "run":
        run(a.cases, a.out, a.deadline)
    else:
        compare(a.file)


if __name__ == "__main__":
    main()

"""Draws a blind set of training steps at random from every config remat loads (tests/data/hf_configs/,
examples/hf/unseen*/realcfg/): layers cut to 1-6, sequence 1k-16k, full or LoRA (rank 8-128 on one of a
few target sets, dropout 0 or 0.05), none / non-reentrant / reentrant, sdpa or eager, bf16 or mixed, SFT,
DPO or GRPO. Keeps the cases remat prices (validate --hf-run on a placeholder record, as
dsv4/predict_cases.py does) whose predicted peak is under --max-gib, and writes them with the
predictions: python3 make_cases.py --seed N --count 24 --out cases.json > predicted.tsv
With --pairs every drawn step is checkpointed and comes with its twin without checkpointing (where remat
says the twin fits), so that validate --hf-run compares the time ratio on configs no one chose."""
import argparse
import glob
import json
import os
import random
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.."))
TARGETS = [["all-linear"], ["q_proj", "v_proj"], ["q_proj", "k_proj", "v_proj", "o_proj"],
           ["gate_proj", "up_proj", "down_proj"],
           ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]]


def predict(case, remat):
    with tempfile.TemporaryDirectory() as tmp:
        rec = {k: case.get(k) for k in ("case", "config", "seq", "mbs", "mode", "lora_rank", "lora_dropout",
                                        "checkpointing", "attention", "precision", "objective", "grpo_group",
                                        "checkpoint_layers")}
        if case.get("lora_adapter_dtype") == "bf16":
            rec["lora_param_dtype"] = "bfloat16"
        rec.update({"num_hidden_layers": case["layers"], "lora_targets": case.get("lora_targets", []),
                    "gpu": "NVIDIA H200", "step": 3, "oom": False, "peak_allocated_bytes": 1,
                    "allocated_before_bytes": 1, "step_time_s": 1.0})
        with open(f"{tmp}/s.jsonl", "w") as f:
            f.write(json.dumps(rec) + "\n")
        r = subprocess.run([remat, "validate", "--hf-run", f"{tmp}/s.jsonl", "--json", f"{tmp}/v.json"],
                           capture_output=True, text=True, cwd=ROOT)
        if r.returncode != 0 or not os.path.exists(f"{tmp}/v.json"):
            return None
        cases = json.load(open(f"{tmp}/v.json"))["cases"]
        return cases[0]["predicted"] if cases else None


def transformers_builds(remat):
    """The configs transformers 5.17 built (reports/hf/param-counts-*.jsonl, by file name), less those whose
    class builds a default language model in place of the file's keys (remat's note says so)."""
    built = set()
    for f in glob.glob(f"{ROOT}/reports/hf/param-counts-*.jsonl"):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict) and r.get("file") and r.get("params"):
                built.add(r["file"])

    def usable(path):
        if os.path.basename(path) not in built:
            return False
        r = subprocess.run([remat, "estimate", "--framework", "hf", "--model", path, "--hardware", "h200", "--tp", "1",
                            "--pp", "1"], capture_output=True, text=True, cwd=ROOT)
        return "builds its default" not in r.stderr and "builds their default" not in r.stderr
    return usable


def widen(rng, c):
    """--wide (seed 7 on): knobs the earlier sets left at their defaults: the first R layers only
    checkpointed, bf16 adapters (autocast_adapter_dtype=False), batches up to 4, sequences to 32k."""
    if c["checkpointing"] != "none" and c["layers"] >= 2 and rng.random() < 0.3:
        c["checkpoint_layers"] = rng.randint(1, c["layers"] - 1)
    if c["mode"] == "lora" and rng.random() < 0.25:
        c["lora_adapter_dtype"] = "bf16"
    if c["objective"] != "grpo" and rng.random() < 0.2:
        c["mbs"] = rng.choice([3, 4])
    if c["attention"] == "sdpa" and rng.random() < 0.15:
        c["seq"] = rng.choice([24576, 32768])
    return c


def draw(rng, config):
    mode = rng.choice(["full", "lora", "lora"])
    c = {"config": config, "layers": rng.randint(1, 6), "seq": rng.choice([1024, 2048, 3000, 4096, 6144, 8192, 12288, 16384]),
         "mbs": rng.choice([1, 1, 1, 2]), "mode": mode,
         "checkpointing": rng.choice(["none", "non_reentrant", "reentrant"]), "attention": rng.choice(["sdpa", "sdpa", "eager"]),
         "precision": rng.choice(["bf16", "bf16", "mixed"]), "objective": rng.choice(["sft", "sft", "dpo", "grpo"]),
         "est_s": 30}
    if c["objective"] == "grpo":
        c["grpo_group"], c["mbs"] = rng.choice([2, 4]), 1
    if c["attention"] == "eager":
        c["seq"] = min(c["seq"], 4096)
    if mode == "lora":
        c.update(lora_rank=rng.choice([8, 16, 32, 64, 128]), lora_dropout=rng.choice([0.0, 0.0, 0.05]),
                 lora_targets=rng.choice(TARGETS))
    else:
        c.update(lora_rank=0, lora_dropout=0.0, lora_targets=[])
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, default=24)
    ap.add_argument("--max-gib", type=float, default=110)
    ap.add_argument("--out", required=True)
    ap.add_argument("--remat", default=f"{ROOT}/build/src/remat")
    ap.add_argument("--pairs", action="store_true", help="checkpointed steps, each with its twin without checkpointing")
    ap.add_argument("--wide", action="store_true", help="also draw partial checkpointing, bf16 adapters, mbs 3-4, 24-32k")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    configs = sorted(os.path.relpath(p, ROOT) for p in glob.glob(f"{ROOT}/tests/data/hf_configs/*.json") +
                     glob.glob(f"{ROOT}/examples/hf/unseen*/realcfg/*.json") if "manifest" not in p)
    rng.shuffle(configs)
    usable = transformers_builds(a.remat)
    cases, tried = [], 0
    for config in configs:
        if len(cases) >= a.count:
            break
        tried += 1
        c = draw(rng, config)
        if a.wide:
            c = widen(rng, c)
        if not usable(config):
            continue
        # a cut, never more layers than the file has (transformers refuses a layer_types list of
        # another length; seed 3 drew one)
        d = json.load(open(os.path.join(ROOT, config)))
        text = d.get("text_config") if isinstance(d.get("text_config"), dict) else d
        n_file = text.get("num_hidden_layers") or d.get("num_hidden_layers") or d.get("n_layer")
        if isinstance(n_file, int) and n_file > 0:
            c["layers"] = min(c["layers"], n_file)
        if a.pairs and c["checkpointing"] == "none":
            c["checkpointing"] = rng.choice(["non_reentrant", "reentrant"])
        c["case"] = f"rb{a.seed}-{len(cases):02d}-" + os.path.basename(config)[:-5][:32]
        drawn = [c]
        if a.pairs:
            drawn.append(dict(c, checkpointing="none", case=c["case"] + "-none"))
        priced = [(d, predict(d, a.remat)) for d in drawn]
        if any(p is None or p["peak_bytes"] > a.max_gib * 2**30 or p["peak_bytes"] < 2**30 for _, p in priced):
            continue
        for d, p in priced:
            cases.append(d)
            print(f"{d['case']}\t{p['peak_bytes'] / 2**30:.2f}\t{p['before_bytes'] / 2**30:.2f}", flush=True)
    json.dump(cases, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()

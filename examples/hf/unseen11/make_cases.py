#!/usr/bin/env python3
"""Blind set 11: real configs from tests/data/hf_configs/ that no measured step used before, cut to a
few layers, each run in a mode drawn at random (fixed seed). Targets are named in each family's own
module names, read from remat's module list (the refusal of a name no model has lists them).
Cases remat predicts above 120 GiB are dropped before the draw is written (they would not fit).

    python3 examples/hf/unseen11/make_cases.py   # writes examples/hf/unseen11/cases.json
"""
import json
import os
import random
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
REMAT = os.path.join(ROOT, "build", "src", "remat")

# config file: the layer counts it may be cut to
CONFIGS = {
    "c4ai-command-r-v01": [2, 3], "cosmos-reason2-8b": [2, 4], "devstral-2-123b-instruct": [2],
    "devstral-small-2-24b": [2, 4], "dolphin3.0-mistral-24b": [2, 4], "ernie-4.5-300b-a47b-fp8-paddle": [2, 3],
    "falcon-180b-chat": [2], "gemma-3-27b-it": [2, 6], "gemma-4-31b-it": [2, 6], "glm-4.5": [4],
    "gpt-oss-120b": [2], "llama-4-maverick-17b-128e-instruct": [2], "llama-3.1-70b-instruct": [2],
    "mixtral-8x22b-v0.1": [2], "nemotron-3-nano-30b-a3b": [4, 6], "opt-66b-llm-analysis": [2],
    "qwen3-235b-a22b-fp8-simai-qwen2moe-type": [2], "qwen3-next-80b-a3b-thinking": [4],
    "qwen3.6-35b-a3b": [4], "qwq-32b": [2, 4], "qwen3-32b": [2, 4], "lfm2.5-vl-1.6b": [4, 8],
    "codellama-34b-instruct-hf": [2], "step-3.7-flash-fp8": [2, 4], "exaone-4.5-33b": [4],
    "qwen2.5-vl-7b-instruct": [2, 4], "qwen3-vl-30b-a3b-instruct": [2], "lightonocr-2-1b": [4, 8],
    "phi-3.5-vision-instruct-lm": [4], "llava-1.5-7b-hf-ome": [2, 4], "deepseek-v3": [4],
    "minicpm5-1b": [4, 8], "muse-glimmer-30b": [2], "llama-2-13b-chat-norwegian": [4],
    "elyza-japanese-llama-2-13b-instruct": [4], "sakura-14b-qwen2.5-v1.0": [4], "triangulum-10b": [4],
}
CK = {"none": "none", "nr": "non_reentrant", "re": "reentrant"}
TARGET_SETS = ["qv", "attn", "mlp", "attn_down", "all-linear"]


def modules(path, layers):
    """remat's module list for the model: name -> matrix word."""
    out = subprocess.run([REMAT, "estimate", "--model", path, "--hardware", "h200", "--framework", "hf",
                          "--num-layers", str(layers), "--lora-rank", "8", "--lora-targets", "nosuch"],
                         capture_output=True, text=True).stderr
    listed = out.split(": ", 3)[-1]
    return dict(re.findall(r"([\w.]+) \(([\w ]+)\)", listed))


def targets_for(mods, kind):
    by_word = {}
    for name, word in mods.items():
        by_word.setdefault(word, []).append(name)
    words = {"qv": ["q", "v", "qkv"], "attn": ["q", "k", "v", "qkv", "o"],
             "mlp": ["gate", "up", "gate_up", "down"], "attn_down": ["q", "k", "v", "qkv", "o", "down"]}[kind]
    names = [n for w in words for n in by_word.get(w, [])]
    if kind == "qv" and "qkv" in by_word:
        names = by_word["qkv"]
    return sorted(set(names), key=names.index)


def max_positions(cfg):
    if cfg.get("model_type") == "opt" and "max_position_embeddings" not in cfg:
        return 2048  # OPTConfig's default: learned positions, a longer sequence indexes past them
    for c in (cfg.get("text_config") or {}, cfg.get("llm_config") or {}, cfg):
        if isinstance(c, dict) and c.get("max_position_embeddings"):
            return int(c["max_position_embeddings"])
    return 32768


def draw(rng, name, layer_choices, path=None):
    path = path or f"tests/data/hf_configs/{name}.json"
    cfg = json.load(open(os.path.join(ROOT, path)))
    layers = rng.choice(layer_choices)
    mode = rng.choice(["full", "lora", "lora"])
    ck = rng.choice(["none", "nr", "re"])
    seq = min(rng.choice([1024, 2048, 3000, 4096, 6144, 8192, 12288, 16384, 24576]), max_positions(cfg))
    mbs = rng.choice([1, 1, 1, 2, 3, 4]) if seq <= 8192 else 1
    attn = rng.choice(["sdpa", "sdpa", "eager"]) if seq <= 8192 else "sdpa"
    precision = rng.choice(["bf16", "bf16", "mixed"])
    objective = rng.choice(["sft", "sft", "sft", "grpo", "dpo"])
    c = {"config": path, "layers": layers, "seq": seq, "mbs": mbs, "mode": mode, "checkpointing": CK[ck],
         "attention": attn, "precision": precision, "objective": objective, "est_s": 20}
    tag = f"{name}-{layers}l-{mode}-{ck}-s{seq}" + (f"-b{mbs}" if mbs > 1 else "")
    if objective == "grpo":
        c["grpo_group"] = 4
    if mode == "lora":
        rank = rng.choice([8, 16, 32, 64, 128])
        dropout = rng.choice([0.0, 0.0, 0.05, 0.1])
        kind = rng.choice(TARGET_SETS)
        mods = modules(os.path.join(ROOT, path), layers)
        targets = ["all-linear"] if kind == "all-linear" else targets_for(mods, kind)
        c.update({"lora_rank": rank, "lora_dropout": dropout, "lora_targets": targets})
        tag += f"-r{rank}-{kind}" + (f"-do{dropout:g}" if dropout else "")
    tag += ("-eager" if attn == "eager" else "") + ("-mixed" if precision == "mixed" else "")
    tag += f"-{objective}" if objective != "sft" else ""
    c["case"] = tag
    return c


def predicted_peak_gib(c):
    """remat's predicted step peak for a case, through validate --hf-run on a placeholder log; None
    where remat refuses it (the reason printed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write(json.dumps({**c, "num_hidden_layers": c["layers"], "step": 1, "lora_rank": c.get("lora_rank", 0),
                            "lora_targets": c.get("lora_targets", []), "lora_dropout": c.get("lora_dropout", 0),
                            "grpo_group": c.get("grpo_group"), "gpu": "NVIDIA H200", "peak_allocated_bytes": 1,
                            "allocated_before_bytes": 1, "step_time_s": 1}) + "\n")
    out = subprocess.run([REMAT, "validate", "--hf-run", f.name, "--hardware", "h200"], capture_output=True,
                         text=True, cwd=ROOT)
    os.unlink(f.name)
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[0] == c["case"]:
            return float(parts[2])
    return out.stderr.strip()[-300:]


def fitting_cases(cases):
    """The cases, duplicates dropped, that remat prices below 120 GiB (eager where it asks for it)."""
    seen = set()
    cases = [c for c in cases if not (c["case"] in seen or seen.add(c["case"]))]
    kept = []
    for c in cases:
        peak = predicted_peak_gib(c)
        if isinstance(peak, str) and "give --attention eager" in peak:
            c["attention"] = "eager"
            c["case"] += "-eager"
            peak = predicted_peak_gib(c)
        if isinstance(peak, float) and peak < 120:
            kept.append(c)
        else:
            print("dropped", c["case"], peak)
    return kept


def write_cases(seed, configs, out_dir, path_of=lambda name: None):
    """Each config drawn twice (random.Random(seed)), the fitting cases written to out_dir/cases.json."""
    rng = random.Random(seed)
    kept = fitting_cases([draw(rng, name, configs[name], path_of(name)) for name in configs for _ in range(2)])
    json.dump(kept, open(os.path.join(out_dir, "cases.json"), "w"), indent=1)
    print(f"{len(kept)} cases written")


def main():
    write_cases(11, CONFIGS, HERE)


if __name__ == "__main__":
    main()

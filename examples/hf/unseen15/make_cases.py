#!/usr/bin/env python3
"""Blind set 15: configs no measured step used before, from tests/data/hf_configs/ and the real-config
sets 11 to 13 that transformers 5.17 builds without remote code (GPT-J, BLOOM, GPT-2, MPT, Pythia, Phi-1,
Gemma 2 and 3, LFM2, Qwen2-VL, Qwen3-VL, Qwen3.5, Mistral Small 4, Gemma 4 26B-A4B, GLM-4.5-Air,
MiniMax-M2.5, Nemotron-H, Phi-3.5-MoE, DeepSeek-V3.1, Llama 3.2 Vision, GLM-4.1V), cut to a few layers,
each drawn twice in random modes with unseen11's draw (seed 15). Cases remat predicts above 120 GiB or
refuses are dropped.

    python3 examples/hf/unseen15/make_cases.py   # writes examples/hf/unseen15/cases.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

REALCFG = {
    "unseen11": ["deepseek-coder-33b-base", "gpt-j-6b-django", "gpt3-finnish-small-bloom", "kogpt2-base-v2-kochatgpt",
                 "mpt-7b-xai-checkpoint", "oasst-sft-1-pythia-12b", "phi-1-pilotai", "olmocr-7b-qwen2vl",
                 "mistral-small-4-awq", "gemma-2-2b-it-riseup", "gemma-3-4b-text-timelymeal", "lfm2-1.2b-jedi-v4"],
    "unseen12": ["gemma-4-26b-a4b", "glm-4.5-air-mlx-4bit", "minimax-m2.5", "nemotron-h-56b-base-8k",
                 "phi-3.5-moe-instruct-ome", "qwen3-vl-2b-instruct-ome", "qwen3.5-0.8b-llm-tpu", "megrez-3b-instruct"],
}
# config file: the layer counts it may be cut to
CONFIGS = {
    "deepseek-coder-33b-base": [2, 4], "gpt-j-6b-django": [4, 8], "gpt3-finnish-small-bloom": [6, 12],
    "kogpt2-base-v2-kochatgpt": [6, 12], "mpt-7b-xai-checkpoint": [4], "oasst-sft-1-pythia-12b": [2, 4],
    "phi-1-pilotai": [6], "olmocr-7b-qwen2vl": [4], "mistral-small-4-awq": [2], "gemma-2-2b-it-riseup": [6],
    "gemma-3-4b-text-timelymeal": [6], "lfm2-1.2b-jedi-v4": [6], "gemma-4-26b-a4b": [2],
    "glm-4.5-air-mlx-4bit": [3], "minimax-m2.5": [2], "nemotron-h-56b-base-8k": [4], "phi-3.5-moe-instruct-ome": [2],
    "qwen3-vl-2b-instruct-ome": [4], "qwen3.5-0.8b-llm-tpu": [4, 8], "megrez-3b-instruct": [4],
    "deepseek-v3.1-nvfp4": [4], "llama-3.2-11b-vision-instruct": [4], "glm-4.1v-9b-thinking": [4],
    "nemotron-3-super-120b-a12b-fp8": [4], "qwen2.5-32b-instruct": [2],
}


def path_of(name):
    for folder, names in REALCFG.items():
        if name in names:
            return f"examples/hf/{folder}/realcfg/{name}.json"
    return None


def cap_learned_positions(path):
    """GPT-2's learned positions stop at n_positions (unseen11's draw reads max_position_embeddings
    only): a longer sequence is a device-side assert. Capped after the draw, which stays seed 15's."""
    cases = json.load(open(path))
    for c in cases:
        cfg = json.load(open(os.path.join(HERE, "..", "..", "..", c["config"])))
        limit = cfg.get("n_positions") if cfg.get("model_type") in ("gpt2", "gpt_bigcode") else None
        if limit and c["seq"] > limit:
            c["case"] = c["case"].replace(f"-s{c['seq']}", f"-s{limit}")
            c["seq"] = limit
    json.dump(cases, open(path, "w"), indent=1)


def main():
    unseen11.write_cases(15, CONFIGS, HERE, path_of)
    cap_learned_positions(os.path.join(HERE, "cases.json"))


if __name__ == "__main__":
    main()

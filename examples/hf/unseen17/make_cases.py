#!/usr/bin/env python3
"""Blind set 17: configs no measured step used before, from tests/data/hf_configs/ and the real-config
sets 11, 12 and 15 that transformers 5.17 builds without remote code (CodeLlama-34B, DeepSeek-R1 and
DeepSeek-V3, GPT-J, BLOOM, GPT-NeoX, Phi-2, Phi-3, Qwen1.5, Qwen3, Gemma, Gemma 2, Gemma 3, Gemma 4 26B-A4B
and E4B, LFM2, Nemotron-H, Qwen3.5, Qwen3.6, SmolLM, Yi, GLM-5), cut to a few layers, each drawn twice in
random modes with unseen11's draw (seed 17). Cases remat predicts above 120 GiB or refuses are dropped.

    python3 examples/hf/unseen17/make_cases.py   # writes examples/hf/unseen17/cases.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

REALCFG = {
    "unseen11": ["cobolpro-llama-34b", "deepseek-r1-itounagi", "gpt-j-6b-django", "gpt3-finnish-small-bloom",
                 "merlyn-education-teacher-assistant", "phi-2-lexgap", "phi-3-mini-4k-npc-merged",
                 "qwen1.5-0.5b-nuextract", "qwen3-4b-instruct-2507-torchsharp"],
    "unseen12": ["gemma-2-9b-ome", "gemma-4-26b-a4b", "gemma-7b-ome", "lfm2-2.6b-mlx-neuroforge",
                 "nemotron-h-56b-base-8k", "qwen3.5-122b-a10b", "qwen3.6-27b-nvfp4", "smollm-1.7b-ome", "yi-34b"],
    "unseen15": ["gemma-4-e4b-ome-fixture"],
}
# config file: the layer counts it may be cut to
CONFIGS = {
    "cobolpro-llama-34b": [2], "deepseek-r1-itounagi": [4], "gpt-j-6b-django": [2, 4],
    "gpt3-finnish-small-bloom": [4, 12], "merlyn-education-teacher-assistant": [2, 4], "phi-2-lexgap": [4, 8],
    "phi-3-mini-4k-npc-merged": [4], "qwen1.5-0.5b-nuextract": [8, 24], "qwen3-4b-instruct-2507-torchsharp": [4],
    "gemma-2-9b-ome": [4], "gemma-4-26b-a4b": [4], "gemma-7b-ome": [4], "lfm2-2.6b-mlx-neuroforge": [6],
    "nemotron-h-56b-base-8k": [4], "qwen3.5-122b-a10b": [4], "qwen3.6-27b-nvfp4": [4], "smollm-1.7b-ome": [8],
    "yi-34b": [2], "gemma-4-e4b-ome-fixture": [4], "deepseek-v3-simai": [4], "gemma3-1b-it-mediatek": [6, 26],
    "glm-5": [4], "qwen3.5-397b-a17b": [4],
}


def path_of(name):
    for folder, names in REALCFG.items():
        if name in names:
            return f"examples/hf/{folder}/realcfg/{name}.json"
    return None


def max_positions(cfg):
    """unseen11's limit, and GPT-J's and CodeGen's n_positions: they gather rotary sin/cos from a table
    of that many rows. The first run's GPT-J at 8192 was a device-side assert that ended the run; the
    cap changes no draw (the rng makes the same choices)."""
    if cfg.get("model_type") in ("gptj", "codegen"):
        return int(cfg.get("n_positions", 2048))
    return unseen11_max_positions(cfg)


unseen11_max_positions = unseen11.max_positions
unseen11.max_positions = max_positions


def main():
    unseen11.write_cases(17, CONFIGS, HERE, path_of)


if __name__ == "__main__":
    main()

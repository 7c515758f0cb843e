#!/usr/bin/env python3
"""Blind set 20: the configs transformers 5.17 builds without remote code that no measured step has
used yet (every earlier draw of them was refused or priced above 120 GiB): Mistral Small 4 (MLA), Gemma
4 26B-A4B, E4B and E2B, Nemotron-H 56B and 3 Ultra, Qwen1.5, Qwen3.5 27B and 35B-A3B, a Qwen3.6 DFlash
draft, GLM-5.1 and 5.3, Kimi K2.6 and K2.7, MPT-7B, GPT-OSS-20B, Qwen3.6's linear-attention test layer,
Solar Open, DeepSeek-R1, and Llama 1/2/3 fine-tunes, cut to a few layers, each drawn twice in random
modes with unseen11's draw (seed 20). Cases remat predicts above 120 GiB or refuses are dropped.

    python3 examples/hf/unseen20/make_cases.py   # writes examples/hf/unseen20/cases.json
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# unseen18's module loads unseen17's (unseen11's draw, with GPT-J's and CodeGen's position table)
_spec = importlib.util.spec_from_file_location("unseen18", os.path.join(HERE, "..", "unseen18", "make_cases.py"))
unseen18 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(unseen18)

REALCFG = {
    "unseen11": ["mistral-small-4-mlx-4bit"],
    "unseen12": ["gemma-4-26b-a4b", "nemotron-h-56b-base-8k", "qwen1.5-1.8b-chat", "qwen3.5-27b-ome-fixture",
                 "qwen3.5-35b-a3b-ome-fixture", "qwen3.6-27b-dflash-draft-specforge"],
    "unseen15": ["gemma-4-e4b-ome-fixture", "glm-5.1", "kimi-k2.7-code-nvfp4", "mpt-7b-ipex"],
    "unseen16": ["glm-5.3-fp8-aic", "gpt-oss-20b-aic", "kimi-k2.6-tt-forge", "qwen3.6-35b-a3b-linear-llmservingsim",
                 "solar-open-2l-neuron"],
}
# config file: the layer counts it may be cut to
CONFIGS = {
    "mistral-small-4-mlx-4bit": [2], "gemma-4-26b-a4b": [2], "nemotron-h-56b-base-8k": [2, 4],
    "qwen1.5-1.8b-chat": [8, 24], "qwen3.5-27b-ome-fixture": [4], "qwen3.5-35b-a3b-ome-fixture": [4],
    "qwen3.6-27b-dflash-draft-specforge": [1], "gemma-4-e4b-ome-fixture": [4], "glm-5.1": [4],
    "kimi-k2.7-code-nvfp4": [2], "mpt-7b-ipex": [4], "glm-5.3-fp8-aic": [4], "gpt-oss-20b-aic": [2],
    "kimi-k2.6-tt-forge": [2], "qwen3.6-35b-a3b-linear-llmservingsim": [1], "solar-open-2l-neuron": [2],
    "atom-7b": [4], "deepseek-v3-r1-original": [4], "gemma-4-e2b-it": [35], "llama-65b-hf-decapoda": [2],
    "lzlv-70b-fp16-hf": [2], "nemotron-3-ultra-550b-a55b": [4], "skywork-reward-llama-3.1-8b-v0.2-ome": [4],
    "wizard-vicuna-30b-uncensored": [2],
}


def main():
    unseen18.unseen17.unseen11.write_cases(20, CONFIGS, HERE, unseen18.realcfg_path_of(REALCFG))


if __name__ == "__main__":
    main()

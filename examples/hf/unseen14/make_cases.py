#!/usr/bin/env python3
"""Blind set 14: real configs from tests/data/hf_configs/ that no measured step used before (DeepSeek
sparse attention at the released dims, Gemma 4, EXAONE 4.5, Kimi-K2.5 with its tower, Llama 4
Maverick, Nemotron 3 Nano, Qwen3.5 and Qwen3.6, audio wrappers and dense models), cut to a few
layers, each drawn twice in random modes with unseen11's draw (seed 14). Cases remat predicts above
120 GiB are dropped.

    python3 examples/hf/unseen14/make_cases.py   # writes examples/hf/unseen14/cases.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

# config file: the layer counts it may be cut to
CONFIGS = {
    "deepseek-v3.2-exp": [3], "devstral-small-2507": [4, 8], "exaone-4.5-33b": [2, 4], "gemma-4-31b-it": [2, 6],
    "glm-5": [3], "kimi-k2.5": [2], "lfm2-1.2b": [6, 16], "llama-4-maverick-17b-128e-instruct": [2],
    "nemotron-3-nano-30b-a3b": [4], "phi-tiny-moe-instruct": [4], "qwen2.5-72b": [2], "qwen3-235b-a22b": [2],
    "qwen3.5-9b": [4], "qwen3.6-35b-a3b-nvfp4": [4], "voxtral-mini-3b-2507": [4], "llama-2-7b-chat-hf": [4, 8],
}


def main():
    unseen11.write_cases(14, CONFIGS, HERE)


if __name__ == "__main__":
    main()

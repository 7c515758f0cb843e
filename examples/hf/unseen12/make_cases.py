#!/usr/bin/env python3
"""Blind set 12: twenty real configs from tests/data/hf_configs/ that no measured step used before
(six MoE models with shared experts, four without, ten dense), cut to a few layers, each drawn twice
in random modes with unseen11's draw (seed 12). Cases remat predicts above 120 GiB are dropped.

    python3 examples/hf/unseen12/make_cases.py   # writes examples/hf/unseen12/cases.json

The committed cases.json is the draw as measured: rerun now, it drops the two cases remat has since
learned to refuse (PEFT's no-match on Mixtral's experts) or to price above the GPU (GLM-5.2's DPO pair).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

# config file: the layer counts it may be cut to
CONFIGS = {
    "deepseek-v3-r1-original": [4], "kimi-k2.5": [2, 3], "glm-5.2": [3], "ling-plus-base": [2],
    "hunyuan-a13b-instruct": [2], "qwen3-next-80b-a3b-thinking": [4], "llama-4-scout-17b-16e-instruct": [2],
    "wizardlm-2-8x22b": [2], "phi-mini-moe-instruct": [2, 4], "qwen3-coder-480b-a35b-instruct": [2],
    "qwen2.5-32b": [2, 4], "qwen2-72b-instruct": [2], "llama-3.1-405b": [2], "meta-llama-3-8b-instruct": [4, 8],
    "medgemma-27b-it": [2, 6], "ernie-4.5-0.3b-base-pt": [4, 8], "lwm-text-chat-1m": [4],
    "codefuse-codellama-34b": [2], "cogito-v1-preview-qwen-14b": [4], "dolphin-2.5-mixtral-8x7b": [2],
}


def main():
    unseen11.write_cases(12, CONFIGS, HERE)


if __name__ == "__main__":
    main()

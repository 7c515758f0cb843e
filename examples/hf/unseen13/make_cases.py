#!/usr/bin/env python3
"""Blind set 13: the real configs of examples/hf/unseen13/realcfg/ that transformers 5.17 builds
without remote code (param-counts-realcfg13-h200.jsonl) and no measured step used before, cut to a few
layers, each drawn twice in random modes with unseen11's draw (seed 13). Qwen3.5-397B is left out: its
dimensions are tests/data/hf_configs/qwen3.5-397b-a17b.json's. Cases remat predicts above 120 GiB are
dropped.

    python3 examples/hf/unseen13/make_cases.py   # writes examples/hf/unseen13/cases.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

# config file: the layer counts it may be cut to
CONFIGS = {
    "kimi-k2.6-nvfp4": [2, 3], "mimo-v2-flash": [2, 4], "llava-v1.5-7b-original-ome": [4],
    "minicpm-v-4.6-llm-tpu": [4, 8], "qwen1.5-7b-chat-llm-tpu": [4], "qwen2.5-vl-3b-llm-tpu": [4, 8],
    "qwen2-vl-2b-ome": [4, 8], "qwen3-1.7b": [8, 28], "qwen3-vl-32b-instruct": [2, 4],
    "qwen3-vl-235b-a22b-instruct": [2],
}


def main():
    unseen11.write_cases(13, CONFIGS, HERE, lambda name: f"examples/hf/unseen13/realcfg/{name}.json")


if __name__ == "__main__":
    main()

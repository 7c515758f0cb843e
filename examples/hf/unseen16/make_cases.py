#!/usr/bin/env python3
"""Blind set 16: the configs of real-config set 15 (examples/hf/unseen15/realcfg/) that transformers 5.17
builds without remote code, and corpus configs no measured step used (Fuyu's Persimmon, Gemma 4 E2B whole,
Llama 3.2 90B Vision, Nemotron 3 Ultra, Qwen2-Audio, Qwen2.5-3B, Ling-lite), cut to a few layers, each
drawn twice in random modes with unseen11's draw (seed 16). Cases remat predicts above 120 GiB or refuses
are dropped (MPT beyond its max_seq_len among them).

    python3 examples/hf/unseen16/make_cases.py   # writes examples/hf/unseen16/cases.json
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unseen11"))
import make_cases as unseen11  # noqa: E402  (write_cases)

REALCFG15 = ["command-r-35b-ome", "deepseek-v3.2-nvfp4", "e5-mistral-7b-ome", "falcon-40b-ipex", "gemma-2-2b-ome",
             "gemma-4-e4b-ome-fixture", "glm-5.1", "kimi-k2.7-code-nvfp4", "kimi-k3-dspark-draft-specforge",
             "ling-flash-2.0-eagle3-draft-specforge", "llama-4-scout-fp8-dynamic-isim", "minimax-m2.7",
             "mpt-7b-ipex", "nemotron-3.5-lightning-30b-a3b-nvfp4", "olmocr-2-7b-1025-tt-metal",
             "qwen3-embedding-8b-ome", "qwen3-vl-8b-instruct", "qwen3.5-27b", "qwen3.5-35b-a3b"]
# config file: the layer counts it may be cut to
CONFIGS = {
    "command-r-35b-ome": [2, 4], "deepseek-v3.2-nvfp4": [4], "e5-mistral-7b-ome": [4, 8], "falcon-40b-ipex": [2],
    "gemma-2-2b-ome": [6, 12], "gemma-4-e4b-ome-fixture": [4], "glm-5.1": [4], "kimi-k2.7-code-nvfp4": [2],
    "kimi-k3-dspark-draft-specforge": [2, 5], "ling-flash-2.0-eagle3-draft-specforge": [1],
    "llama-4-scout-fp8-dynamic-isim": [2], "minimax-m2.7": [2], "mpt-7b-ipex": [4],
    "nemotron-3.5-lightning-30b-a3b-nvfp4": [4], "olmocr-2-7b-1025-tt-metal": [4], "qwen3-embedding-8b-ome": [4],
    "qwen3-vl-8b-instruct": [4], "qwen3.5-27b": [4], "qwen3.5-35b-a3b": [4], "fuyu-8b": [4],
    "gemma-4-e2b-it": [35], "llama-3.2-90b-vision-instruct": [4], "nemotron-3-ultra-550b-a55b": [4],
    "qwen2-audio-7b-instruct": [4], "qwen2.5-3b-instruct": [8, 36], "ling-lite": [2],
}


def path_of(name):
    return f"examples/hf/unseen15/realcfg/{name}.json" if name in REALCFG15 else None


def main():
    unseen11.write_cases(16, CONFIGS, HERE, path_of)


if __name__ == "__main__":
    main()

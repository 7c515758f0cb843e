#!/usr/bin/env python3
"""Blind set 19: configs no measured step used before, from tests/data/hf_configs/ and the real-config
sets 11 and 12 that transformers 5.17 builds without remote code (Hunyuan's and DeepSeek-V3's EAGLE-3
drafts, an EAGLE Mixtral draft, Llama 2 and 3 fine-tunes, Reflection-70B, Yi and Phi-3 merges, Mistral
7B variants, Phi-2 and Pythia with quantization keys, Qwen1.5, Qwen2.5, Qwen3, LongCat's DFlash draft,
DeepSeek-R1, a one-layer Mixtral), cut to a few layers, each drawn twice in random modes with unseen11's
draw (seed 19). Cases remat predicts above 120 GiB or refuses are dropped.

    python3 examples/hf/unseen19/make_cases.py   # writes examples/hf/unseen19/cases.json
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# unseen18's module loads unseen17's (unseen11's draw, with GPT-J's and CodeGen's position table)
_spec = importlib.util.spec_from_file_location("unseen18", os.path.join(HERE, "..", "unseen18", "make_cases.py"))
unseen18 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(unseen18)

REALCFG = {
    "unseen11": ["llama-2-13b-ce-bnb4", "mistral-7b-instruct-v0.2-fp32", "mistral-7b-neuroweave", "phi-2-gptq-4bit",
                 "phi-3-mini-4k-instruct-onnx-cfg", "pythia-1b-building-eng-bnb4", "qwen2.5-0.5b-grpo-v5format",
                 "qwen2.5-3b-instruct-agentscribe", "semcoder-deepseek-coder-6.7b"],
    "unseen12": ["allam-7b-instruct-preview", "deepseek-v3-671b-eagle3-draft-specforge",
                 "longcat-flash-dflash-draft-specforge", "mixtral-ipex-1l-test", "phi4-eagle3-draft-specforge",
                 "qwen1.5-4b-chat", "qwen3-0.6b-base-think-sft"],
}
# config file: the layer counts it may be cut to
CONFIGS = {
    "llama-2-13b-ce-bnb4": [4], "mistral-7b-instruct-v0.2-fp32": [4], "mistral-7b-neuroweave": [4, 8],
    "phi-2-gptq-4bit": [8], "phi-3-mini-4k-instruct-onnx-cfg": [8], "pythia-1b-building-eng-bnb4": [8, 16],
    "qwen2.5-0.5b-grpo-v5format": [12, 24], "qwen2.5-3b-instruct-agentscribe": [8], "semcoder-deepseek-coder-6.7b": [4],
    "allam-7b-instruct-preview": [4], "deepseek-v3-671b-eagle3-draft-specforge": [1],
    "longcat-flash-dflash-draft-specforge": [2], "mixtral-ipex-1l-test": [1], "phi4-eagle3-draft-specforge": [1],
    "qwen1.5-4b-chat": [8], "qwen3-0.6b-base-think-sft": [14, 28], "hunyuan-7b-eagle3-draft-angelslim": [1],
    "eagle-mixtral-8x7b-draft": [1], "reflection-llama-3.1-70b": [2], "2prymmal-yi1.5-6b-slerp": [4],
    "3prymmal-phi3-3b-slerp": [8], "deepseek-v3-r1-original": [4], "llama-3.1-8b-computer-networks-llm": [4],
}


def main():
    unseen18.unseen17.unseen11.write_cases(19, CONFIGS, HERE, unseen18.realcfg_path_of(REALCFG))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Blind set 18: the configs of real-config set 16 (examples/hf/unseen16/realcfg/) that transformers 5.17
builds without remote code (CodeGen, DeepSeek-V2, Falcon, Gemma 3, Gemma 4 26B-A4B, GLM-4.7-Flash, GLM-4.7,
GLM-5.3, GPT-NeoX, GPT-OSS, Kimi K2.6, MiniMax-M2, Mixtral 8x22B, Llama 3.2 Vision, Nemotron 3 Nano,
Phi-3, Pixtral, Qwen2-VL, Qwen3.5-122B, Qwen3.6 linear, Solar Open), cut to a few layers, each drawn
twice in random modes with unseen11's draw (seed 18). Cases remat predicts above 120 GiB or refuses are
dropped. The flat Step-3.7 file is left out: transformers builds its default text config from it.

    python3 examples/hf/unseen18/make_cases.py   # writes examples/hf/unseen18/cases.json
"""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load(folder):
    """examples/hf/<folder>/make_cases.py as a module of its own name."""
    spec = importlib.util.spec_from_file_location(folder, os.path.join(HERE, "..", folder, "make_cases.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


unseen17 = load("unseen17")  # unseen11's draw, with GPT-J's and CodeGen's position table

# config file: the layer counts it may be cut to
CONFIGS = {
    "codegen-2b-multi-1l-ipex": [1], "deepseek-v2-ipex": [2], "falcon-7b-ipex": [1], "gemma-3-27b-neuron": [2, 4],
    "gemma-4-26b-a4b-nvfp4-aic": [2], "glm-4.7-flash-aic": [2, 4], "glm-4.7-fp8-aic": [4], "glm-5.3-fp8-aic": [4],
    "gpt-neox-ipex": [1], "gpt-oss-20b-aic": [2, 4], "kimi-k2.6-tt-forge": [4], "minimax-m2-neuron": [2],
    "mixtral-8x22b-instruct-isim": [2], "mllama-4l-neuron": [4], "nemotron-3-nano-30b-a3b-bf16-aic": [4, 6],
    "phi3-gpu-ipex": [8], "pixtral-4l-neuron": [4], "qwen2-vl-2b-llm-tpu": [4, 28],
    "qwen3.5-122b-a10b-nvfp4-aic": [4], "qwen3.6-35b-a3b-linear-llmservingsim": [1], "solar-open-2l-neuron": [2],
}


def path_of(name):
    return f"examples/hf/unseen16/realcfg/{name}.json"


def realcfg_path_of(realcfg):
    """path_of for a draw over several real-config folders ({folder: [names]}); corpus names: None."""
    def path_of_name(name):
        for folder, names in realcfg.items():
            if name in names:
                return f"examples/hf/{folder}/realcfg/{name}.json"
        return None
    return path_of_name


def main():
    unseen17.unseen11.write_cases(18, CONFIGS, HERE, path_of)


if __name__ == "__main__":
    main()

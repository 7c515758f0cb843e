"""Which PEFT LoRA adapters on a Mamba-1 mixer's projections run in a training step of this install.

For each config and each of in_proj, x_proj, dt_proj, out_proj: build the causal LM (bf16, on the
GPU, no mamba_ssm on the image), wrap it with LoRA r 8 on that one module name, run one forward
and backward over 256 tokens and record whether PEFT accepted the target, how many adapters it
made, and whether their lora_A and lora_B weights got a gradient (an adapter the mixer bypasses,
reading the base weight directly, gets none). Also writes the source of each mixer class's forward
paths, where remat reads what they save.

    python3 examples/hf/probes/mamba1_adapters_probe.py --out probe.jsonl --source-dir DIR CONFIG.json ...
"""
import argparse
import inspect
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import hf_step  # noqa: E402

TARGETS = ["in_proj", "x_proj", "dt_proj", "out_proj"]


def mixer_sources(model, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for module in model.modules():
        name = type(module).__name__
        if name.endswith("Mixer") and not os.path.exists(os.path.join(out_dir, name + ".py")):
            with open(os.path.join(out_dir, name + ".py"), "w") as f:
                f.write(inspect.getsource(type(module)))


def probe(config, target, source_dir):
    from peft import LoraConfig, get_peft_model

    cfg, model_type, _ = hf_step.load_config(config, None)
    rec = {"config": config, "model_type": model_type, "target": target}
    model = hf_step.build_model(cfg, torch.bfloat16, "eager")
    mixer_sources(model, source_dir)
    try:
        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=[target]))
    except Exception as e:  # noqa: BLE001 - PEFT's refusal is the finding
        rec["peft_error"] = repr(e)[:400]
        return rec
    model.train()
    ids = torch.randint(0, cfg.vocab_size, (1, 256), device="cuda")
    try:
        model(input_ids=ids, labels=ids).loss.backward()
    except RuntimeError as e:  # no adapter on the loss's path: nothing requires a gradient
        rec["backward_error"] = repr(e)[:300]
    adapters = [(n, p) for n, p in model.named_parameters() if "lora_" in n]
    rec["adapters"] = len([n for n, _ in adapters if "lora_A" in n])
    rec["adapter_params"] = sum(p.numel() for _, p in adapters)
    rec["with_grad"] = len([n for n, p in adapters if "lora_A" in n and p.grad is not None])
    rec["b_with_grad"] = len([n for n, p in adapters if "lora_B" in n and p.grad is not None])
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("configs", nargs="+")
    args = ap.parse_args()
    with open(args.out, "w") as out, torch.device("cuda"):
        for config in args.configs:
            for target in TARGETS:
                rec = probe(config, target, args.source_dir)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(json.dumps(rec), flush=True)
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

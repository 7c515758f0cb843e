"""What PEFT's all-linear adapts outside a multimodal model's language model (transformers 5.17, peft 0.21).

For each config (its language model cut to a few layers; the towers keep their own depth), builds the
model as hf_step.py does (AutoModelForCausalLM, else the image-text class), applies
LoraConfig(target_modules="all-linear", r=16) and writes one JSON line: every adapted module outside
the language model's decoder layers, grouped by its path with layer indices written as N (in, out,
count), the adapter parameters those hold, and the trainable parameter count of the whole model.
remat's tower linear modules (ModelSpec::tower_linear_modules) are read against these lines.

    python3 examples/hf/all_linear/tower_probe.py --out towers.jsonl NAME=CONFIG[:LAYERS] ...
"""
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import hf_step  # noqa: E402
from probe import run_probes  # noqa: E402


def language_layers(model, n_layers):
    """The path of the language model's decoder layers (a ModuleList of n_layers)."""
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and name.endswith("layers") and len(mod) == n_layers:
            if "vision" not in name and "visual" not in name and "audio" not in name:
                return name
    return None


def probe(name, config, layers):
    from peft import LoraConfig, get_peft_model

    cfg, model_type, _ = hf_step.load_config(config, layers)
    model = hf_step.build_model(cfg, torch.bfloat16, "sdpa")
    text = cfg.get_text_config()
    lm_layers = language_layers(model, text.num_hidden_layers)
    rec = {"name": name, "config": config, "layers": layers, "model_type": model_type,
           "class": type(model).__name__, "params": sum(p.numel() for p in model.parameters()),
           "language_layers": lm_layers}
    lcfg = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    try:
        peft_model = get_peft_model(model, lcfg)
    except (ValueError, TypeError, RuntimeError) as e:
        rec["peft_error"] = repr(e)[:1000]
        return rec
    groups, outside_adapter_params = {}, 0
    for full, mod in peft_model.named_modules():
        if not hasattr(mod, "lora_A") or full.rsplit(".", 1)[-1] in ("lora_A", "lora_B"):
            continue
        path = full.split("base_model.model.", 1)[-1]
        if lm_layers and path.startswith(lm_layers + "."):
            continue
        base = getattr(mod, "base_layer", mod)
        fin, fout = getattr(base, "in_features", None), getattr(base, "out_features", None)
        key = re.sub(r"\.\d+\.", ".N.", path)
        g = groups.setdefault(key, {"path": key, "in": fin, "out": fout, "count": 0, "kind": type(base).__name__})
        g["count"] += 1
        outside_adapter_params += sum(p.numel() for n, p in mod.named_parameters() if "lora_" in n)
    rec["outside_adapted"] = sorted(groups.values(), key=lambda g: g["path"])
    rec["outside_adapter_params"] = outside_adapter_params
    rec["trainable_params"] = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    return rec


def main():
    run_probes(probe, __doc__, mode="w")


if __name__ == "__main__":
    main()

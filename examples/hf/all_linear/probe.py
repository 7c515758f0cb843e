"""What PEFT's all-linear adapts on one model as this install builds it (transformers 5.x, peft 0.21).

For each config (cut to a few layers), builds the causal LM on the GPU, lists every nn.Linear of
the base model by its path inside a layer, applies LoraConfig(target_modules="all-linear", r=16) and
writes one JSON line: the modules that got an adapter (path, in, out), the stacked parameters PEFT
adapts through its MoE conversion (target_parameters, rank_pattern) and the trainable parameter
count. remat's table of adapted modules is read against these lines.

    python3 examples/hf/all_linear/probe.py --out probe.jsonl NAME=CONFIG[:LAYERS] ...
"""
import argparse
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import hf_step  # noqa: E402


def layer_path(name):
    """model.layers.3.mlp.gate_proj -> (3, mlp.gate_proj); a module outside the layers -> (None, name)"""
    m = re.search(r"\.layers\.(\d+)\.(.*)$", name)
    return (int(m.group(1)), m.group(2)) if m else (None, name)


def linear_rows(model, only_adapted):
    rows = {}
    for name, mod in model.named_modules():
        if only_adapted:
            if not hasattr(mod, "lora_A") or name.rsplit(".", 1)[-1] in ("lora_A", "lora_B"):
                continue
            base = getattr(mod, "base_layer", mod)
            shape = [getattr(base, "in_features", None), getattr(base, "out_features", None)]
            kind = type(mod).__name__
        else:
            if not isinstance(mod, torch.nn.Linear):
                continue
            shape, kind = [mod.in_features, mod.out_features], "Linear"
        layer, path = layer_path(name)
        key = f"{path}|{kind}|{shape}"
        rows.setdefault(key, {"path": path, "kind": kind, "in_out": shape, "layers": []})["layers"].append(layer)
    return sorted(rows.values(), key=lambda r: (str(r["layers"][0]), r["path"]))


def probe(name, config, layers):
    from peft import LoraConfig, get_peft_model

    cfg, model_type, _ = hf_step.load_config(config, layers)
    hf = hf_step.build_model(cfg, torch.bfloat16, "sdpa")
    rec = {"name": name, "config": config, "layers": layers, "model_type": model_type,
           "params": sum(p.numel() for p in hf.parameters()), "linears": linear_rows(hf, False)}
    lcfg = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    try:
        model = get_peft_model(hf, lcfg)
    except ValueError as e:  # PEFT refuses all-linear here (a Mamba model's out_proj): the linears stand
        rec["peft_error"] = repr(e)[:1000]
        return rec
    used = model.peft_config["default"]
    rec["target_modules"] = sorted(used.target_modules) if not isinstance(used.target_modules, str) else used.target_modules
    rec["target_parameters"] = sorted(used.target_parameters or [])
    rec["rank_pattern"] = dict(used.rank_pattern or {})
    rec["adapted"] = linear_rows(model, True)
    rec["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    per_module = {}
    for n, p in model.named_parameters():
        if p.requires_grad:
            layer, path = layer_path(n)
            per_module[path] = per_module.get(path, 0) + (p.numel() if layer in (None, 0, 1, 2, 3, 4, 5) else 0)
    rec["trainable_by_path_first_layers"] = per_module
    return rec


def run_probes(probe_one, description, mode="a"):
    """Command line NAME=CONFIG[:LAYERS] ... --out FILE: one JSON line per model from probe_one(name,
    config, layers); a model that fails is a line with its error, not the end of the run."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", required=True)
    ap.add_argument("models", nargs="+", help="NAME=CONFIG[:LAYERS]")
    args = ap.parse_args()
    with open(args.out, mode) as out:
        for spec in args.models:
            name, rest = spec.split("=", 1)
            config, _, layers = rest.partition(":")
            try:
                rec = probe_one(name, config, int(layers) if layers else None)
            except Exception as e:  # noqa: BLE001
                rec = {"name": name, "config": config, "error": repr(e)[:2000]}
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(name, rec.get("trainable_params"), rec.get("error", rec.get("peft_error", "")), flush=True)
            torch.cuda.empty_cache()


def main():
    run_probes(probe, __doc__)


if __name__ == "__main__":
    main()

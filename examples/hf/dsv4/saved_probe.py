"""Lists what autograd saves for one DeepSeek-V4 layer of each attention type, by walking the graph.

Builds a one-layer DeepseekV4ForCausalLM (transformers 5.17, random weights, bf16, eager attention)
per layer type, runs a forward with labels, and writes one JSON line per saved tensor: the autograd
node, the attribute, shape, dtype and bytes, deduplicated by storage. Usage:
  python3 saved_probe.py --config CFG --seq 2048 --out saved.jsonl
"""
import argparse
import json

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def walk(loss):
    seen_nodes, seen_storage, rows = set(), set(), []
    stack = [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(node, attr)
            except Exception:  # noqa: BLE001 (freed or unsupported)
                continue
            values = value if isinstance(value, (tuple, list)) else [value]
            for v in values:
                if not isinstance(v, torch.Tensor) or v.device.type != "cuda":
                    continue
                key = (v.untyped_storage().data_ptr(), v.untyped_storage().nbytes())
                fresh = key not in seen_storage
                seen_storage.add(key)
                rows.append({"node": type(node).__name__, "attr": attr, "shape": list(v.shape),
                             "dtype": str(v.dtype).replace("torch.", ""),
                             "storage_bytes": v.untyped_storage().nbytes(), "new": fresh})
        stack.extend(n for n, _ in node.next_functions)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.out, "w") as out:
        for rate in (0, 4, 128):
            cfg = AutoConfig.from_pretrained(args.config)
            cfg.num_hidden_layers = 1
            cfg.layer_types = [{0: "sliding_attention", 4: "compressed_sparse_attention",
                                128: "heavily_compressed_attention"}[rate]]
            cfg.mlp_layer_types = ["moe"]
            with torch.device("cuda"):
                model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="eager")
            model.train()
            ids = torch.randint(0, cfg.vocab_size, (1, args.seq), device="cuda")
            loss = model(input_ids=ids, labels=ids).loss
            for row in walk(loss):
                row["rate"] = rate
                out.write(json.dumps(row) + "\n")
            no_grad = [n for n, p in model.named_parameters() if p.requires_grad]
            del loss
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            missing = [n for n, p in model.named_parameters() if p.grad is None]
            out.write(json.dumps({"rate": rate, "params_without_grad": missing, "params": len(no_grad)}) + "\n")
            del model, loss
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

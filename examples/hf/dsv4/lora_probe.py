"""What PEFT 0.21 does with LoRA target lists on DeepSeek-V4 (transformers 5.17): for each list, the
adapted modules, the trainable count, and whether a training step (512 tokens, eager) runs or raises.

    python3 examples/hf/dsv4/lora_probe.py --config CFG --out lora-probe.jsonl
"""
import argparse
import json
import traceback

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoConfig, AutoModelForCausalLM

TARGETS = {
    "all-linear": "all-linear",
    "attention": ["q_a_proj", "q_b_proj", "kv_proj", "o_b_proj"],
    "o_a": ["o_a_proj"],
    "llama-names": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "mlp": ["gate_proj", "up_proj", "down_proj"],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cfg = AutoConfig.from_pretrained(args.config)
    with open(args.out, "w") as out:
        for name, targets in TARGETS.items():
            row = {"targets": name}
            try:
                with torch.device("cuda"):
                    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="eager")
                model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=targets))
                row["adapted"] = sorted({n.split(".layers.")[-1].split(".", 1)[-1].rsplit(".lora_A", 1)[0]
                                         for n, _ in model.named_parameters() if ".lora_A" in n})
                row["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
                ids = torch.randint(0, cfg.vocab_size, (1, 512), device="cuda")
                model(input_ids=ids, labels=ids).loss.backward()
                row["step"] = "ok"
            except Exception as e:  # noqa: BLE001
                row["step"] = f"{type(e).__name__}: {str(e)[:300]}"
                row["where"] = traceback.format_exc()[-600:]
            out.write(json.dumps(row) + "\n")
            out.flush()
            model = None
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

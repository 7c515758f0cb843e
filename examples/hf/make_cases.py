#!/usr/bin/env python3
"""Writes the case grid for hf_step.py: cases_a.json (first GPU call), cases_b.json and
cases_c.json (second call, in that order). Order inside a file = priority (a call's
deadline skips the tail).
Run: python3 examples/hf/make_cases.py"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FAM = {  # short name: (config file, layers used or None for the file's)
    "llama1b": ("llama-3.2-1b-instruct.json", None),
    "qwen3-4b": ("qwen3-4b.json", 12),
    "mistral7b": ("mistral-7b-instruct-v0.3.json", 8),
    "phi4": ("phi-4.json", 6),
    "qwen25-3b": ("qwen2.5-3b.json", 12),
    "qwen3moe": ("qwen3-30b-a3b.json", 2),
    "mixtral": ("mixtral-8x7b-v0.1.json", 2),
}
CK = {"none": "none", "nr": "non_reentrant", "re": "reentrant"}


def case(fam, mode, ck, seq, mbs=1, attn="sdpa", precision="bf16", objective="sft", group=None,
         dropout=0.0, est=10, rank=16, adapter=None):
    cfg, layers = FAM[fam]
    name = f"{fam}-{mode}-{ck}-s{seq}"
    if mbs != 1:
        name += f"-mbs{mbs}"
    if attn != "sdpa":
        name += f"-{attn}"
    if precision != "bf16":
        name += f"-{precision}"
    if dropout:
        name += f"-do{dropout:g}"
    if rank != 16:
        name += f"-r{rank}"
    if adapter:
        name += f"-ad{adapter}"
    if objective != "sft":
        name += f"-{objective}" + (f"-g{group}" if group else "")
    c = {"case": name, "config": f"tests/data/hf_configs/{cfg}", "layers": layers, "seq": seq, "mbs": mbs,
         "mode": mode, "checkpointing": CK[ck], "attention": attn, "precision": precision,
         "objective": objective, "est_s": est}
    if mode == "lora":
        c.update({"lora_rank": rank, "lora_dropout": dropout})
        if adapter:
            c["lora_adapter_dtype"] = adapter
    if group:
        c["grpo_group"] = group
    return c


A = [
    # first: one of each code path (the call aborts if one of these errors)
    case("llama1b", "full", "none", 2048),
    case("llama1b", "lora", "nr", 4096),
    case("llama1b", "lora", "re", 4096),
    case("qwen3moe", "lora", "none", 2048, est=15),
    case("llama1b", "lora", "none", 1024, objective="grpo", group=4),
    case("llama1b", "full", "none", 1024, objective="dpo"),
    case("llama1b", "full", "none", 2048, precision="mixed"),
    case("phi4", "lora", "none", 4096, est=15),
    # llama-3.2-1B grid
    case("llama1b", "lora", "none", 2048),
    case("llama1b", "full", "none", 4096),
    case("llama1b", "lora", "none", 4096),
    case("llama1b", "full", "nr", 4096),
    case("llama1b", "full", "re", 4096),
    case("llama1b", "full", "none", 8192),
    case("llama1b", "lora", "none", 8192),
    case("llama1b", "full", "nr", 8192),
    case("llama1b", "lora", "nr", 8192),
    case("llama1b", "lora", "nr", 16384),
    case("llama1b", "full", "nr", 16384, est=15),
    case("llama1b", "lora", "nr", 32768, est=20),
    case("llama1b", "lora", "re", 32768, est=20),
    case("llama1b", "full", "none", 4096, mbs=2),
    case("llama1b", "lora", "nr", 8192, mbs=2),
    case("llama1b", "lora", "none", 4096, dropout=0.05),
    case("llama1b", "lora", "nr", 4096, dropout=0.05),
    case("llama1b", "full", "none", 2048, attn="eager"),
    case("llama1b", "lora", "none", 4096, attn="eager"),
    # other dense families
    case("qwen3-4b", "full", "none", 4096, est=15),
    case("qwen3-4b", "lora", "none", 4096),
    case("qwen3-4b", "full", "nr", 8192, est=15),
    case("qwen3-4b", "lora", "nr", 8192),
    case("mistral7b", "full", "none", 4096, est=20),
    case("mistral7b", "lora", "none", 4096, est=15),
    case("mistral7b", "lora", "nr", 16384, est=20),
    case("phi4", "full", "none", 4096, est=25),
    case("phi4", "lora", "nr", 8192, est=20),
    case("qwen25-3b", "full", "none", 4096, est=15),
    case("qwen25-3b", "lora", "none", 4096),
    case("qwen25-3b", "lora", "nr", 8192),
]

B = [
    # MoE
    case("qwen3moe", "full", "none", 2048, est=15),
    case("qwen3moe", "full", "nr", 4096, est=15),
    case("qwen3moe", "lora", "nr", 4096, est=15),
    case("qwen3moe", "lora", "none", 4096, est=15),
    case("mixtral", "full", "none", 2048, est=20),
    case("mixtral", "lora", "none", 2048, est=15),
    case("mixtral", "full", "nr", 4096, est=20),
    case("mixtral", "lora", "nr", 4096, est=15),
    # mixed precision
    case("llama1b", "full", "none", 4096, precision="mixed"),
    case("llama1b", "full", "nr", 2048, precision="mixed"),
    case("llama1b", "full", "nr", 4096, precision="mixed"),
    # GRPO / DPO
    case("llama1b", "lora", "none", 2048, objective="grpo", group=4),
    case("llama1b", "full", "none", 1024, objective="grpo", group=2),
    case("llama1b", "lora", "nr", 2048, objective="grpo", group=4),
    case("llama1b", "lora", "none", 2048, objective="dpo"),
    # more dense points
    case("qwen3-4b", "lora", "none", 2048),
    case("qwen3-4b", "lora", "re", 8192),
    case("qwen3-4b", "lora", "nr", 16384, est=15),
    case("qwen3-4b", "lora", "none", 4096, attn="eager"),
    case("mistral7b", "lora", "none", 2048, est=15),
    case("mistral7b", "full", "nr", 8192, est=20),
    case("mistral7b", "lora", "re", 8192, est=15),
    case("phi4", "lora", "none", 2048, est=15),
    case("phi4", "full", "nr", 8192, est=25),
    case("qwen25-3b", "lora", "none", 2048, attn="eager"),
    case("qwen25-3b", "full", "nr", 8192, est=15),
    case("qwen25-3b", "lora", "nr", 16384, est=15),
    case("llama1b", "full", "none", 16384, est=15),
    case("llama1b", "lora", "none", 16384, est=15),
    case("llama1b", "full", "nr", 32768, est=25),
]

# C: the wider sweep (second call, after B): PEFT options, longer sequences, batch, eager,
# MoE, RL objectives, then every dense family x full/lora x none/nr x seq 2048..16384 not
# already above. Large ones may OOM: that is recorded.
C = [
    case("llama1b", "lora", "none", 4096, adapter="bf16", est=5),
    case("llama1b", "lora", "nr", 8192, adapter="bf16", est=5),
    case("qwen3-4b", "lora", "none", 4096, adapter="bf16", est=5),
    case("llama1b", "lora", "none", 4096, rank=64, est=5),
    case("llama1b", "lora", "nr", 4096, rank=64, est=5),
    case("llama1b", "full", "re", 32768, est=15),
    case("llama1b", "lora", "none", 32768, est=15),
    case("qwen3-4b", "lora", "nr", 32768, est=15),
    case("mistral7b", "lora", "nr", 32768, est=15),
    case("qwen25-3b", "lora", "nr", 32768, est=15),
    case("llama1b", "lora", "none", 2048, mbs=2, est=5),
    case("llama1b", "lora", "none", 2048, mbs=4, est=5),
    case("llama1b", "full", "none", 2048, mbs=4, est=5),
    case("qwen3-4b", "lora", "nr", 4096, mbs=4, est=8),
    case("mistral7b", "lora", "none", 2048, attn="eager", est=5),
    case("phi4", "lora", "none", 2048, attn="eager", est=5),
    case("llama1b", "full", "none", 4096, attn="eager", est=5),
    case("llama1b", "lora", "nr", 4096, attn="eager", est=5),
    case("qwen3moe", "lora", "none", 8192, est=8),
    case("qwen3moe", "full", "none", 4096, est=8),
    case("qwen3moe", "lora", "nr", 8192, est=8),
    case("qwen3moe", "lora", "re", 4096, est=8),
    case("mixtral", "lora", "none", 4096, est=8),
    case("mixtral", "full", "none", 4096, est=10),
    case("mixtral", "lora", "nr", 8192, est=8),
    case("mixtral", "lora", "re", 4096, est=8),
    case("qwen3-4b", "full", "none", 2048, precision="mixed", est=5),
    case("llama1b", "full", "re", 4096, precision="mixed", est=5),
    case("llama1b", "lora", "none", 1024, objective="grpo", group=8, est=5),
    case("llama1b", "full", "nr", 2048, objective="grpo", group=4, est=8),
    case("qwen3-4b", "lora", "none", 2048, objective="grpo", group=4, est=8),
    case("llama1b", "lora", "re", 2048, objective="grpo", group=4, est=5),
    case("llama1b", "lora", "nr", 4096, objective="dpo", est=5),
    case("llama1b", "full", "nr", 2048, objective="dpo", est=5),
    case("qwen3-4b", "lora", "none", 2048, objective="dpo", est=8),
    case("llama1b", "lora", "none", 2048, mbs=2, objective="dpo", est=5),
]
_have = {c["case"] for c in A + B + C}  # the sweep goes last: its big cases may OOM
for fam in ("llama1b", "qwen3-4b", "mistral7b", "phi4", "qwen25-3b"):
    for seq in (2048, 4096, 8192, 16384):
        for mode in ("lora", "full"):
            for ck in ("none", "nr"):
                c = case(fam, mode, ck, seq, est=8 if seq >= 8192 else 5)
                if c["case"] not in _have:
                    C.append(c)
                    _have.add(c["case"])

if __name__ == "__main__":
    names = [c["case"] for c in A + B + C]
    assert len(names) == len(set(names)), "duplicate case names"
    for fn, cases in (("cases_a.json", A), ("cases_b.json", B), ("cases_c.json", C)):
        with open(os.path.join(HERE, fn), "w") as f:
            json.dump(cases, f, indent=1)
            f.write("\n")
    print(f"{len(A)} + {len(B)} + {len(C)} cases")

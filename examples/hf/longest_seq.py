#!/usr/bin/env python3
"""The longest sequence a Hugging Face Transformers (+ PEFT) training step fits, found on the GPU.

For each case: build the model as hf_step.py does (random weights on the GPU, optional LoRA r 16,
optional gradient checkpointing), cap the caching allocator at --budget-gib with
torch.cuda.set_per_process_memory_fraction (expandable segments on, so that the cap measures
allocated bytes rather than fragments), then binary-search the sequence length in steps of
--granularity: a length fits when two full training steps (forward, backward, AdamW step; the
second with the optimizer state allocated) run without torch.cuda.OutOfMemoryError.

Objectives as hf_step.py computes them: sft (the model's own loss), grpo (a group of --grpo-group
sequences with a prompt of --prompt-tokens, TRL's computation in plain torch), dpo (chosen and
rejected, the prompt --prompt-tokens).

Usage: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
         python3 longest_seq.py --cases longest_cases.json --budget-gib 30 --out OUT.jsonl
One JSON line per case: the longest fitting length, the shortest failing one, the peak allocated
bytes of the longest one's second step, and every probe.
"""
import argparse
import contextlib
import gc
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_step  # noqa: E402  (same directory)


def build(c):
    cfg, model_type, _ = hf_step.load_config(c["config"], c.get("layers"))
    model = hf_step.build_model(cfg, torch.bfloat16, c.get("attention", "sdpa"))
    ckpt = c.get("checkpointing", "none")
    if ckpt != "none":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": ckpt == "reentrant"})
        if c["mode"] == "lora" and ckpt == "reentrant":
            model.enable_input_require_grads()
    ref_model, ref_ctx = None, contextlib.nullcontext
    if c["mode"] == "lora":
        from peft import LoraConfig, get_peft_model

        targets = hf_step.LORA_ATTN if model_type in hf_step.MOE_TYPES else hf_step.LORA_DENSE
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=targets,
                                                 task_type="CAUSAL_LM"))
        ref_model, ref_ctx = model, model.disable_adapter
    elif c.get("objective", "sft") != "sft":
        import copy

        ref_model = copy.deepcopy(model).requires_grad_(False).eval()
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-5, foreach=True)
    return model, ref_model, ref_ctx, opt, cfg.vocab_size


def loss_of(c, model, ref_model, ref_ctx, ids):
    objective = c.get("objective", "sft")
    none = contextlib.nullcontext
    if objective == "sft":
        return hf_step.sft_loss(model, ids, none)
    prompt = int(c["prompt_tokens"])
    if objective == "grpo":
        return hf_step.grpo_loss(model, ref_model, ref_ctx, ids, prompt, none)
    return hf_step.dpo_loss(model, ref_model, ref_ctx, ids, prompt, none)


def fits(c, built, seq):
    """Two steps at `seq`; False on out-of-memory. Leaves no tensor of the probe behind."""
    model, ref_model, ref_ctx, opt, vocab = built
    objective = c.get("objective", "sft")
    rows = int(c.get("grpo_group", 4)) if objective == "grpo" else 2 if objective == "dpo" else 1
    ok, peak = True, 0
    try:
        for _ in range(2):
            torch.cuda.reset_peak_memory_stats()
            ids = torch.randint(0, vocab, (rows, seq), device="cuda")
            loss = loss_of(c, model, ref_model, ref_ctx, ids)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del loss, ids
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
    except torch.cuda.OutOfMemoryError:
        ok = False
    opt.zero_grad(set_to_none=True)
    sys.last_traceback = sys.last_value = None
    return ok, peak


def search(c, built, granularity, start):
    probes = []

    def probe(seq):
        t0 = time.time()
        ok, peak = fits(c, built, seq)
        gc.collect()  # the failed probe's graph, held by its frames until here
        torch.cuda.empty_cache()
        probes.append({"seq": seq, "fits": ok, "peak_allocated_bytes": peak, "s": round(time.time() - t0, 2)})
        print(f"    seq {seq}: {'fits' if ok else 'OOM'} peak {peak / 2**30:.2f} GiB", flush=True)
        return ok

    lo, hi = 0, start
    while probe(hi):  # grow until a length fails
        lo, hi = hi, hi * 2
    while hi - lo > granularity:
        mid = (lo + hi) // 2 // granularity * granularity
        if mid <= lo:
            break
        if probe(mid):
            lo = mid
        else:
            hi = mid
    peak = max((p["peak_allocated_bytes"] for p in probes if p["seq"] == lo), default=0)
    return lo, hi, peak, probes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-gib", type=float, required=True)
    ap.add_argument("--granularity", type=int, default=128)
    ap.add_argument("--deadline", type=float, default=540)
    args = ap.parse_args()
    t_start = time.time()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(args.budget_gib * 2**30 / total)
    with open(args.cases) as f:
        cases = json.load(f)
    out = open(args.out, "a")
    for c in cases:
        if time.time() - t_start > args.deadline:
            print(f"SKIP {c['case']} (deadline)", flush=True)
            continue
        print(f"CASE {c['case']}", flush=True)
        t0 = time.time()
        built = build(c)
        lo, hi, peak, probes = search(c, built, args.granularity, int(c.get("start_seq", 4096)))
        del built
        gc.collect()
        torch.cuda.empty_cache()
        rec = dict(c, budget_bytes=int(args.budget_gib * 2**30), granularity=args.granularity,
                   longest_fitting_seq=lo, shortest_failing_seq=hi, peak_allocated_bytes=peak,
                   probes=probes, gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), seconds=round(time.time() - t0, 1))
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(f"  longest {lo} (fails at {hi}) in {time.time() - t0:.0f}s", flush=True)
    out.close()


if __name__ == "__main__":
    main()

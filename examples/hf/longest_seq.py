#!/usr/bin/env python3
"""The longest sequence a Hugging Face Transformers (+ PEFT) training step fits, found on the GPU.

For each case: build the model as hf_step.py does (random weights on the GPU, optional LoRA r 16,
optional gradient checkpointing), cap the caching allocator at --budget-gib with
torch.cuda.set_per_process_memory_fraction (expandable segments on, so that the cap measures
allocated bytes rather than fragments), then binary-search the sequence length in steps of
--granularity: a length fits when two full training steps (forward, backward, AdamW step; the
second with the optimizer state allocated) run without torch.cuda.OutOfMemoryError.

A case takes hf_step.py's fields but seq (hf_step.build_case sets the model up): mode, lora_rank,
lora_targets, lora_dropout, checkpointing, checkpoint_layers, attention, precision, objective
(sft; grpo with grpo_group; dpo) and prompt_tokens (the GRPO/DPO prompt; default a quarter of the
sequence), plus start_seq, the first length probed.

Usage: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
         python3 longest_seq.py --cases longest_cases.json --budget-gib 30 --out OUT.jsonl
One JSON line per case: the longest fitting length, the shortest failing one, the peak allocated
bytes of the longest one's second step, and every probe.
"""
import argparse
import gc
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_step  # noqa: E402  (same directory)


def build(c):
    """The case's model and step as hf_step.py sets them up (every field of its cases but seq)."""
    return hf_step.build_case(c, {}, {})


def fits(built, seq):
    """Two steps at `seq`; False on out-of-memory. Leaves no tensor of the probe behind."""
    ok, peak = True, 0
    try:
        for _ in range(2):
            torch.cuda.reset_peak_memory_stats()
            ids = torch.randint(0, built.vocab, (built.nseq, seq), device="cuda")
            loss = built.forward_loss(ids)
            loss.backward()
            built.opt.step()
            built.opt.zero_grad(set_to_none=True)
            del loss, ids
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
    except torch.cuda.OutOfMemoryError:
        ok = False
    built.opt.zero_grad(set_to_none=True)
    sys.last_traceback = sys.last_value = None
    return ok, peak


def search(c, built, granularity, start, grow, deadline_at):
    """[longest fitting, shortest failing) and the probes; stops early (returning what it bracketed)
    once the clock passes deadline_at."""
    probes = []

    def probe(seq):
        t0 = time.time()
        ok, peak = fits(built, seq)
        gc.collect()  # the failed probe's graph, held by its frames until here
        torch.cuda.empty_cache()
        probes.append({"seq": seq, "fits": ok, "peak_allocated_bytes": peak, "s": round(time.time() - t0, 2)})
        print(f"    seq {seq}: {'fits' if ok else 'OOM'} peak {peak / 2**30:.2f} GiB", flush=True)
        return ok

    lo, hi = 0, start
    while probe(hi):  # grow until a length fails
        lo, hi = hi, max(hi + granularity, int(hi * grow) // granularity * granularity)
        if time.time() > deadline_at:
            return lo, None, 0, probes
    while hi - lo > granularity and time.time() < deadline_at:
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
        try:
            built = build(c)
            lo, hi, peak, probes = search(c, built, args.granularity, int(c.get("start_seq", 4096)),
                                          float(c.get("grow", 2)), t_start + args.deadline)
        except Exception as e:  # noqa: BLE001 - one case's failure leaves the others to run
            print(f"  ERROR {e!r}", flush=True)
            out.write(json.dumps(dict(c, error=repr(e)[:1000])) + "\n")
            built = None
            gc.collect()
            torch.cuda.empty_cache()
            continue
        model_fields = {k: built.base[k] for k in ("num_hidden_layers", "params", "trainable_params",
                                                     "lora_target_modules", "attn_implementation_actual")
                        if k in built.base}
        built = None
        gc.collect()
        torch.cuda.empty_cache()
        rec = dict(c, **model_fields, budget_bytes=int(args.budget_gib * 2**30), granularity=args.granularity,
                   longest_fitting_seq=lo, shortest_failing_seq=hi, peak_allocated_bytes=peak,
                   probes=probes, gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), seconds=round(time.time() - t0, 1))
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(f"  longest {lo} (fails at {hi}) in {time.time() - t0:.0f}s", flush=True)
    out.close()


if __name__ == "__main__":
    main()

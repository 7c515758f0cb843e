#!/usr/bin/env python3
"""Measured per-GPU memory of real Hugging Face Transformers (+ PEFT) training steps.

One case = one setting: build a model with random weights straight on the GPU from a
config.json of tests/data/hf_configs/ (optionally fewer layers), optionally wrap it in a
PEFT LoRA adapter, optionally turn on gradient checkpointing, build
torch.optim.AdamW(foreach=True, lr=1e-5) over the trainable parameters, then

  * step 0 (diagnostic, skipped under gradient checkpointing): one extra forward+backward
    with torch.autograd.graph.saved_tensors_hooks that records every tensor saved for
    backward (deduplicated by storage data_ptr, counted by storage nbytes), attributed to
    the decoder layer running at the time (forward pre/post hooks), else to "outside".
    Storages of parameters are counted apart (saved_bytes_params), not in the layers.
  * steps 1..3: forward, loss.backward(), opt.step(), opt.zero_grad(set_to_none=True),
    with torch.cuda memory read after forward, after backward and after the optimizer.

Objectives: "sft" (the model's own causal-LM loss, labels=input_ids), "grpo" and "dpo"
(written here in plain torch after TRL's GRPOTrainer / DPOTrainer, see grpo_loss and
dpo_loss; TRL itself is not installed on the GPU machine).

Usage: python3 hf_step.py --cases examples/hf/cases_a.json --out OUT.jsonl
                          [--deadline 540] [--abort-first N] [--only NAME,...] [--start I --t0 EPOCH]
                          [--trace-peak DIR]
--trace-peak records the caching allocator's history during step 3 and writes DIR/CASE.json: the
bytes allocated in the step at its peak, grouped by the source line (transformers, peft, torch)
that allocated them.
Exit code 3 (with OUT.jsonl.next holding the next index) when GPU memory stays allocated after a
case: run it again with --start $(cat OUT.jsonl.next) and the same --t0 (see README).
One JSON line per step (and one per case for step 0), flushed after each line.
Plain Python: torch, transformers, peft. Nothing is downloaded.
"""
import argparse
import contextlib
import copy
import gc
import json
import re
import os
import statistics
import sys
import time
import traceback
import types

import torch
import torch.nn.functional as F

T_START = time.time()
TRACE_STACKS = "python"  # --trace-stacks
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LORA_DENSE = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
# Phi-3/Phi-4 fuse q,k,v into qkv_proj and gate,up into gate_up_proj: the same weights
LORA_PHI3 = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
MOE_TYPES = {"qwen3_moe", "mixtral", "qwen2_moe", "deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "glm4_moe_lite", "gpt_oss", "nemotron_h", "lfm2_moe",
             "granitemoehybrid", "step3p7"}
# Where a family names the seven matrices its own way, the module names PEFT is given for each role
# (the log keeps the role names). LFM2: the attention's out_proj (its short convolution has an
# out_proj too, which stays without adapter), w1 / w3 / w2 for gate / up / down.
LFM2_MODULES = {"o_proj": "self_attn.out_proj", "gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}
PEFT_MODULES = {"lfm2": LFM2_MODULES, "lfm2_moe": LFM2_MODULES}


def log(msg):
    print(f"[{time.time() - T_START:7.1f}s] {msg}", flush=True)


# ----------------------------------------------------------------------------------------
# model construction
# ----------------------------------------------------------------------------------------
def cut_layers(d, layers):
    """num_hidden_layers set to `layers`; the per-layer lists and patterns keep their first layers."""
    n_file = d.get("num_hidden_layers")
    d["num_hidden_layers"] = layers
    if "n_layer" in d:  # GPT-2, GPT-J, Falcon's RefinedWeb configs name it so
        d["n_layer"] = layers
    # per-layer lists, any key (gpt-oss, OLMo 3, EXAONE 4: sliding or full attention; GLM-5's
    # mlp_layer_types and indexer_types, which its config requires as long as the layer count) and
    # Nemotron-H's pattern string
    for key, value in d.items():
        per_layer = isinstance(value, list) or (key == "hybrid_override_pattern" and isinstance(value, str))
        if per_layer and n_file and len(value) == n_file:
            d[key] = value[:layers]


def load_config(path, layers):
    """Load a config.json the way loading a real checkpoint does (AutoConfig.from_pretrained
    on a local folder), with num_hidden_layers overridden when `layers` is given."""
    import tempfile

    import transformers
    from transformers import AutoConfig

    with open(os.path.join(REPO, path)) as f:
        d = json.load(f)
    # a multimodal config nests its language model's keys (Gemma 3, Qwen-VL, Mistral 3): cut them there
    nested = [d[k] for k in ("text_config", "llm_config") if isinstance(d.get(k), dict)]
    counted = [p for p in nested + [d] if "num_hidden_layers" in p] or (nested[:1] or [d])
    n_file = counted[0].get("num_hidden_layers")
    if layers:
        for part in counted:
            cut_layers(part, int(layers))
    d["use_cache"] = False
    mt = d["model_type"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(d, f)
        cfg = AutoConfig.from_pretrained(tmp, local_files_only=True)
        # a flat file of a wrapper's model_type, whose AutoConfig ignores the keys at the top and
        # builds its default text_config (Gemma 3 1B's MediaTek file: Gemma3Config), is read as its
        # `architectures` class reads it (Gemma3ForCausalLM: Gemma3TextConfig, the keys at the top).
        # Otherwise AutoConfig's reading stands (an EAGLE draft's mixtral file naming LlamaForCausalLM
        # is built as Mixtral, as AutoModelForCausalLM builds it)
        own = getattr(getattr(transformers, (d.get("architectures") or ["?"])[0], None), "config_class", None)
        wrapper = cfg.get_text_config() is not cfg
        if own is not None and not nested and wrapper and not isinstance(cfg, own):
            cfg = own.from_pretrained(tmp, local_files_only=True)
    cfg.use_cache = False
    return cfg, mt, n_file


def build_model(cfg, dtype, attn, device="cuda"):
    """The causal LM of cfg; a multimodal wrapper with no causal-LM class (Step 3.7) as its
    image-text model, trained on text alone (its vision tower takes no gradient); an audio wrapper
    with neither (Voxtral) as the class its `architectures` names. device "meta" builds no weights
    (probes/cut_counts.py)."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    with torch.device(device):
        try:
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=attn)
        except TypeError:
            model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype, attn_implementation=attn)
        except ValueError:
            try:
                model = AutoModelForImageTextToText.from_config(cfg, dtype=dtype, attn_implementation=attn)
            except ValueError:
                named = getattr(transformers, (getattr(cfg, "architectures", None) or ["?"])[0], None)
                if named is None:
                    raise
                model = named._from_config(cfg, dtype=dtype, attn_implementation=attn)
    model.config.use_cache = False
    model.train()
    return model


def find_layers(model, n_layers):
    """The decoder layers' ModuleList (works for plain and PEFT-wrapped models)."""
    best = None
    for name, mod in model.named_modules():
        # "layers" (Llama and most), "h" (Falcon, GPT-2, GPTBigCode), "blocks" (DBRX)
        if isinstance(mod, torch.nn.ModuleList) and name.endswith(("layers", ".h", ".blocks")) and len(mod) == n_layers:
            if best is None or len(name) > len(best[0]):
                best = (name, mod)
    if best is None:
        raise RuntimeError("decoder layers not found")
    return best


# ----------------------------------------------------------------------------------------
# objectives
# ----------------------------------------------------------------------------------------
def selective_log_softmax(logits, index):
    """As TRL's trl.trainer.utils.selective_log_softmax does for bf16/fp16 logits:
    a loop over rows of log_softmax + gather (the fp32 branch uses logsumexp instead)."""
    if logits.dtype in (torch.float32, torch.float64):
        selected = torch.gather(logits, dim=-1, index=index.unsqueeze(-1)).squeeze(-1)
        lse = torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])
        return selected - lse
    per_token_logps = []
    for row_logits, row_labels in zip(logits, index):
        row_logps = F.log_softmax(row_logits, dim=-1)
        per_token_logps.append(row_logps.gather(dim=-1, index=row_labels.unsqueeze(-1)).squeeze(-1))
    return torch.stack(per_token_logps)


def completion_logps(model, ids, n_compl):
    """TRL GRPOTrainer._get_per_token_logps: logits of the last n_compl+1 positions only
    (logits_to_keep), drop the last, log-prob of each completion token."""
    logits = model(input_ids=ids, logits_to_keep=n_compl + 1).logits
    logits = logits[:, :-1, :]
    return selective_log_softmax(logits, ids[:, -n_compl:])


def grpo_loss(model, ref_model, ref_ctx, ids, prompt_len, autocast_ctx):
    """GRPO as TRL's GRPOTrainer computes it (beta=0.04, epsilon=0.2, loss_type 'grpo'-style
    per-token mean over the completion), written in plain torch:
        logp, old_logp, ref_logp = per-token log-probs of the completion tokens
        ratio = exp(logp - old_logp);  A = random advantages (one per sequence)
        KL    = exp(ref_logp - logp) - (ref_logp - logp) - 1
        loss  = mean_tokens( -(min(ratio*A, clip(ratio, 1-eps, 1+eps)*A) - beta*KL) )
    ref_logp and old_logp are computed under torch.no_grad (reference = frozen copy for
    full fine-tuning, the same model with adapters disabled for LoRA)."""
    beta, eps = 0.04, 0.2
    n_compl = ids.shape[1] - prompt_len
    with torch.no_grad():
        with ref_ctx(), autocast_ctx():
            ref_logp = completion_logps(ref_model, ids, n_compl)
        with autocast_ctx():
            old_logp = completion_logps(model, ids, n_compl)
    with autocast_ctx():
        logp = completion_logps(model, ids, n_compl)
        adv = torch.randn(ids.shape[0], device=ids.device)
        d = ref_logp - logp
        kl = torch.exp(d) - d - 1
        ratio = torch.exp(logp - old_logp)
        l1 = ratio * adv.unsqueeze(1)
        l2 = torch.clamp(ratio, 1 - eps, 1 + eps) * adv.unsqueeze(1)
        per_tok = -(torch.min(l1, l2) - beta * kl)
        mask = torch.ones_like(per_tok)
        loss = (per_tok * mask).sum() / mask.sum()
    return loss


def seq_logps(model, ids, prompt_len):
    """TRL DPOTrainer.concatenated_forward (simplified): full-sequence logits, shifted,
    selective_log_softmax, summed over completion tokens."""
    logits = model(input_ids=ids).logits
    logits = logits[:, :-1, :]
    labels = ids[:, 1:]
    lp = selective_log_softmax(logits, labels)
    mask = torch.zeros_like(lp)
    mask[:, prompt_len - 1:] = 1.0
    return (lp * mask).sum(-1)


def dpo_loss(model, ref_model, ref_ctx, ids, prompt_len, autocast_ctx):
    """DPO (sigmoid loss, beta=0.1), batch = [chosen..., rejected...] (2*mbs sequences):
        pc, pr = policy log-prob sums of the chosen / rejected completions
        rc, rr = reference log-prob sums (torch.no_grad; frozen copy or adapters disabled)
        loss   = mean( -logsigmoid(beta * ((pc - rc) - (pr - rr))) )"""
    beta = 0.1
    b = ids.shape[0] // 2
    with torch.no_grad(), ref_ctx(), autocast_ctx():
        ref = seq_logps(ref_model, ids, prompt_len)
    with autocast_ctx():
        pol = seq_logps(model, ids, prompt_len)
        pc, pr = pol[:b], pol[b:]
        rc, rr = ref[:b], ref[b:]
        loss = -F.logsigmoid(beta * ((pc - rc) - (pr - rr))).mean()
    return loss


def sft_loss(model, ids, autocast_ctx):
    # The model's own loss, exactly as Transformers computes it. The output object is
    # dropped right away (as Trainer does), so only the loss and its graph stay alive.
    with autocast_ctx():
        out = model(input_ids=ids, labels=ids)
        loss = out.loss
        del out
    return loss


# ----------------------------------------------------------------------------------------
# saved-tensor diagnostic
# ----------------------------------------------------------------------------------------
class SavedTensorProbe:
    def __init__(self, model, layers, n_layers):
        self.layers = layers
        self.cur = None
        self.seen = set()
        self.param_ptrs = set()
        for p in model.parameters():
            try:
                self.param_ptrs.add(p.untyped_storage().data_ptr())
            except Exception:
                pass
        self.per_layer = [0] * n_layers
        self.outside = 0
        self.params = 0
        self.params_seen = set()
        self.layer0 = []
        self.n_tensors = 0
        self.handles = []
        for i, layer in enumerate(layers):
            self.handles.append(layer.register_forward_pre_hook(self._pre(i)))
            self.handles.append(layer.register_forward_hook(self._post(i)))

    def _pre(self, i):
        def f(mod, args):
            self.cur = i
        return f

    def _post(self, i):
        def f(mod, args, out):
            self.cur = None
        return f

    def pack(self, t):
        self.n_tensors += 1
        try:
            st = t.untyped_storage()
            ptr, nb = st.data_ptr(), st.nbytes()
        except Exception:
            return t
        # Return a detached alias (same storage, so memory is unchanged): returning `t` itself
        # makes a C++ reference cycle (saved output -> grad_fn -> saved output) that only
        # backward() breaks, so an OOM in this pass would leak the whole graph.
        if ptr in self.param_ptrs:
            if ptr not in self.params_seen:
                self.params_seen.add(ptr)
                self.params += nb
            return t.detach()
        if ptr in self.seen:
            return t.detach()
        self.seen.add(ptr)
        if self.cur is None:
            self.outside += nb
        else:
            self.per_layer[self.cur] += nb
            if self.cur == 0 and len(self.layer0) < 60:
                self.layer0.append([list(t.shape), str(t.dtype).replace("torch.", ""), nb])
        return t.detach()

    @staticmethod
    def unpack(t):
        return t

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []


# ----------------------------------------------------------------------------------------
# one case
# ----------------------------------------------------------------------------------------

def first_frame(frames):
    """The innermost frame in library or harness code: where a tensor was made."""
    for f in frames:
        name = f.get("filename", "")
        if any(k in name for k in ("transformers/", "peft/", "torch/utils/checkpoint", "torch/nn/", "hf_step.py",
                                   "torch/autograd", "torch/optim")):
            short = name.split("site-packages/")[-1]
            return f"{short}:{f.get('line')} {f.get('name')}"
    # with --trace-stacks all: the autograd node whose C++ code allocated it
    for f in frames:
        node = re.search(r"(\w+Backward\d*)", f.get("name", ""))
        if node:
            return "autograd: " + node.group(1)
    return "(no python frame: autograd engine)" if frames else "(no frames)"


def peak_report(snapshot, case):
    """Replays the allocator trace of one step: the running total of blocks allocated during the
    step, its peak, and what was alive then, grouped by the line that allocated it; the same for
    the peak before the optimizer step (its first allocation from torch/optim ends that part)."""
    alive, total, peak, peak_set = {}, 0, 0, {}
    before_opt = None  # (peak, alive) when the optimizer's first allocation came
    for ev in snapshot["device_traces"][0]:
        act = ev["action"]
        if act == "alloc":
            where = first_frame(ev.get("frames", []))
            if before_opt is None and "torch/optim" in where:
                before_opt = (peak, peak_set)
            alive[ev["addr"]] = (ev["size"], where)
            total += ev["size"]
            if total > peak:
                peak, peak_set = total, dict(alive)
        elif act == "free_requested" and ev["addr"] in alive:
            total -= alive.pop(ev["addr"])[0]

    def grouped(at_peak):
        groups, sizes = {}, {}
        for size, where in at_peak.values():
            n, b = groups.get(where, (0, 0))
            groups[where] = (n + 1, b + size)
            sizes.setdefault(where, []).append(size)
        rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
        return [{"where": w, "blocks": n, "bytes": b, "largest": sorted(sizes[w], reverse=True)[:24]}
                for w, (n, b) in rows[:40]]

    report = {"case": case, "step_peak_bytes_over_start": peak, "alive_at_peak": grouped(peak_set)}
    if before_opt is not None:
        report["backward_peak_bytes_over_start"] = before_opt[0]
        report["alive_at_backward_peak"] = grouped(before_opt[1])
    return report


def build_case(c, versions, meta):
    """The case's model, reference, optimizer and loss, as a training script sets them up.
    Returns a namespace: base (the record's fields), model, hf (the transformers model), ref_model,
    opt, trainable, n_layers, vocab, nseq (sequences per step), autocast_ctx and
    forward_loss(ids); a GRPO/DPO prompt is c["prompt_tokens"] long, else a quarter of the sequence."""
    name = c["case"]
    precision = c.get("precision", "bf16")
    mode = c.get("mode", "full")
    ckpt = c.get("checkpointing", "none")
    attn = c.get("attention", "sdpa")
    objective = c.get("objective", "sft")
    seq, mbs = c.get("seq"), int(c.get("mbs", 1))
    group = c.get("grpo_group")
    rank = int(c.get("lora_rank", 16)) if mode == "lora" else 0
    dropout = float(c.get("lora_dropout", 0.0)) if mode == "lora" else 0.0

    cfg, model_type, n_file = load_config(c["config"], c.get("layers"))
    n_layers = cfg.get_text_config().num_hidden_layers  # a multimodal config nests it (Emu3)
    # Gemma 4's enable_moe_block: experts beside each layer's dense MLP
    is_moe = model_type in MOE_TYPES or bool(getattr(cfg, "enable_moe_block", False))
    if mode != "lora":
        targets = []
    elif c.get("lora_targets"):  # the case names its own (all seven on an MoE, say)
        targets = list(c["lora_targets"])
    elif is_moe:
        targets = LORA_ATTN  # MoE: attention projections only
    elif model_type == "phi3":
        targets = LORA_PHI3
    else:
        targets = LORA_DENSE

    base = {
        "case": name, "config": c["config"], "model_type": model_type,
        "num_hidden_layers": n_layers, "num_hidden_layers_file": n_file,
        "seq": seq, "mbs": mbs, "mode": mode, "lora_rank": rank, "lora_targets": targets,
        "lora_dropout": dropout, "checkpointing": ckpt, "checkpoint_layers": c.get("checkpoint_layers"),
        "attention": attn,
        "precision": precision, "objective": objective,
        "grpo_group": group if objective == "grpo" else None,
    }
    base.update(versions)
    meta["base"] = base
    meta["phase"] = "build"

    param_dtype = torch.float32 if precision == "mixed" else torch.bfloat16
    if precision == "mixed":
        autocast_ctx = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731
    else:
        autocast_ctx = contextlib.nullcontext

    torch.manual_seed(0)
    t_build = time.time()
    hf = build_model(cfg, param_dtype, attn)
    base["attn_implementation_actual"] = getattr(hf.config, "_attn_implementation", None)
    base["experts_implementation_actual"] = getattr(hf.config, "_experts_implementation", None)

    ref_model = None
    if objective in ("grpo", "dpo") and mode == "full":
        ref_model = copy.deepcopy(hf)
        ref_model.requires_grad_(False)
        ref_model.eval()

    if ckpt != "none":
        hf.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": ckpt == "reentrant"})
        if c.get("checkpoint_layers") is not None:
            # the first R decoder layers checkpointed, the rest kept: each GradientCheckpointingLayer
            # reads its own flag (what `remat plan --framework hf` prints for a plan of R layers)
            for i, layer in enumerate(find_layers(hf, n_layers)[1]):  # get_decoder() has none on Mllama
                layer.gradient_checkpointing = i < int(c["checkpoint_layers"])
        if mode == "lora" and ckpt == "reentrant":
            # as Trainer / PEFT users do: frozen embeddings would otherwise give the reentrant
            # checkpoints inputs without requires_grad, and the adapters no gradient
            if hasattr(hf, "enable_input_require_grads"):
                hf.enable_input_require_grads()
            else:
                hf.get_input_embeddings().register_forward_hook(lambda m, i, o: o.requires_grad_(True))
    hf.train()

    model = hf
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        # PEFT's "all-linear": every nn.Linear but the output layer
        target_modules = ("all-linear" if targets == ["all-linear"] else
                          [PEFT_MODULES.get(model_type, {}).get(t, t) for t in targets])
        base["lora_target_modules"] = [target_modules] if isinstance(target_modules, str) else target_modules
        lcfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=dropout, target_modules=target_modules,
                          task_type="CAUSAL_LM")
        # PEFT's default (autocast_adapter_dtype=True) keeps the adapter weights in fp32 on a bf16
        # base and casts each adapter's input to fp32; "lora_adapter_dtype": "bf16" in a case
        # turns that off (autocast_adapter_dtype=False) so the adapters stay bf16.
        autocast_adapter = c.get("lora_adapter_dtype", "default") != "bf16"
        model = get_peft_model(hf, lcfg, autocast_adapter_dtype=autocast_adapter)
        model.train()
        base["lora_autocast_adapter_dtype"] = autocast_adapter
        base["lora_param_dtype"] = next(str(p.dtype).replace("torch.", "") for n, p in model.named_parameters()
                                        if "lora_A" in n)
        matched = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if hasattr(m, "lora_A")
                          and n.rsplit(".", 1)[-1] not in ("lora_A", "lora_B")})
        base["lora_modules_matched"] = matched
        base["lora_modules_count"] = sum(1 for n, m in model.named_modules()
                                         if hasattr(m, "lora_A") and (targets == ["all-linear"] or
                                                                      n.rsplit(".", 1)[-1] in targets))

    if objective in ("grpo", "dpo"):
        if mode == "lora":
            ref_model = model
            ref_ctx = model.disable_adapter
        else:
            ref_ctx = contextlib.nullcontext
    else:
        ref_ctx = contextlib.nullcontext

    trainable = [p for p in model.parameters() if p.requires_grad]
    base["params"] = sum(p.numel() for p in model.parameters())
    base["trainable_params"] = sum(p.numel() for p in trainable)
    base["ref_params"] = (sum(p.numel() for p in ref_model.parameters())
                          if (ref_model is not None and ref_model is not model) else 0)
    opt = torch.optim.AdamW(trainable, lr=1e-5, foreach=True)
    base["build_time_s"] = round(time.time() - t_build, 3)
    log(f"  built {name}: params={base['params']/1e9:.3f}B trainable={base['trainable_params']/1e6:.1f}M "
        f"attn={base['attn_implementation_actual']} alloc={torch.cuda.memory_allocated()/2**30:.2f}GiB")

    vocab = cfg.get_text_config().vocab_size
    if objective == "grpo":
        nseq = int(group)
    elif objective == "dpo":
        nseq = 2 * mbs
    else:
        nseq = mbs
    base["batch_sequences"] = nseq

    def forward_loss(ids):
        if objective == "sft":
            return sft_loss(model, ids, autocast_ctx)
        prompt_len = int(c.get("prompt_tokens", ids.shape[1] // 4))
        if objective == "grpo":
            return grpo_loss(model, ref_model, ref_ctx, ids, prompt_len, autocast_ctx)
        return dpo_loss(model, ref_model, ref_ctx, ids, prompt_len, autocast_ctx)

    return types.SimpleNamespace(base=base, model=model, hf=hf, ref_model=ref_model, opt=opt, trainable=trainable,
                                 n_layers=n_layers, vocab=vocab, nseq=nseq, autocast_ctx=autocast_ctx,
                                 forward_loss=forward_loss)


def run_case(c, versions, write, meta, trace_dir=None, steps=3, diagnostic=True):
    name = c["case"]
    built = build_case(c, versions, meta)
    base, model, opt, forward_loss = built.base, built.model, built.opt, built.forward_loss
    seq, nseq, vocab, n_layers = int(c["seq"]), built.nseq, built.vocab, built.n_layers
    ckpt = c.get("checkpointing", "none")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)

    def new_ids():
        return torch.randint(0, vocab, (nseq, seq), device="cuda", generator=gen)

    # ---- step 0: saved-for-backward diagnostic (not under checkpointing) ----
    diag = dict(base, step=0, oom=False)
    meta["phase"] = "diag"
    if ckpt == "none" and diagnostic:
        lname, layers = find_layers(model, n_layers)
        probe = SavedTensorProbe(model, layers, n_layers)
        ids = new_ids()
        loss = None
        try:
            with torch.autograd.graph.saved_tensors_hooks(probe.pack, probe.unpack):
                loss = forward_loss(ids)
            loss.backward()
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - lose the diagnostic, keep the steps
            diag["diag_error"] = repr(e)[:500]
            log(f"  diag error: {traceback.format_exc()}")
        finally:
            probe.remove()
        del loss, ids
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        pl = probe.per_layer
        diag.update({
            "layers_module": lname,
            "saved_bytes_layer0": pl[0],
            "saved_bytes_layer_median": int(statistics.median(pl)),
            "saved_bytes_outside": probe.outside,
            "saved_bytes_params": probe.params,
            "saved_bytes_per_layer": pl,
            "saved_bytes_total": sum(pl) + probe.outside,
            "saved_tensor_hook_calls": probe.n_tensors,
            "saved_tensors_layer0": probe.layer0,
        })
        log(f"  diag: layer0={pl[0]/2**20:.1f}MiB median={statistics.median(pl)/2**20:.1f}MiB "
            f"outside={probe.outside/2**20:.1f}MiB params={probe.params/2**20:.1f}MiB")
        del probe
    else:
        diag.update({"saved_bytes_layer0": None, "saved_bytes_layer_median": None,
                     "saved_bytes_outside": None, "saved_tensors_layer0": None})
    write(diag)

    # ---- steps 1..steps ----
    for step in range(1, steps + 1):
        meta["phase"] = f"step{step}"
        ids = new_ids()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        tracing = trace_dir and step == steps
        if tracing:
            torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks=TRACE_STACKS)
        before = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        loss = forward_loss(ids)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        peak_fwd = torch.cuda.max_memory_allocated()
        alloc_fwd = torch.cuda.memory_allocated()
        loss.backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        peak_bwd = torch.cuda.max_memory_allocated()
        alloc_bwd = torch.cuda.memory_allocated()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        peak = torch.cuda.max_memory_allocated()
        after = torch.cuda.memory_allocated()
        if tracing:
            report = peak_report(torch.cuda.memory._snapshot(), name)
            torch.cuda.memory._record_memory_history(enabled=None)
            report.update(before_bytes=before, peak_allocated_bytes=peak)
            os.makedirs(trace_dir, exist_ok=True)
            with open(os.path.join(trace_dir, name + ".json"), "w") as f:
                json.dump(report, f, indent=1)
        loss_val = float(loss.detach().float().item())
        del loss, ids
        rec = dict(base, step=step,
                   allocated_before_bytes=before, peak_allocated_bytes=peak, allocated_after_bytes=after,
                   peak_fwd_bytes=peak_fwd, alloc_after_fwd_bytes=alloc_fwd,
                   peak_bwd_bytes=peak_bwd, alloc_after_bwd_bytes=alloc_bwd,
                   peak_reserved_bytes=torch.cuda.max_memory_reserved(),
                   step_time_s=round(t3 - t0, 4), fwd_time_s=round(t1 - t0, 4),
                   bwd_time_s=round(t2 - t1, 4), opt_time_s=round(t3 - t2, 4),
                   loss=loss_val, oom=False)
        write(rec)
        log(f"  step {step}: before={before/2**30:.2f} peak={peak/2**30:.2f} fwd_peak={peak_fwd/2**30:.2f} "
            f"after_fwd={alloc_fwd/2**30:.2f} bwd_peak={peak_bwd/2**30:.2f} after={after/2**30:.2f} GiB "
            f"t={t3-t0:.3f}s loss={loss_val:.3f}")
    del opt, model, built, forward_loss


def free_all():
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=540.0, help="seconds from start; no case starts "
                    "when its estimate would cross it")
    ap.add_argument("--abort-first", type=int, default=0,
                    help="exit if any of the first N cases fails with an error other than OOM")
    ap.add_argument("--only", default="")
    ap.add_argument("--trace-peak", default="", help="directory for each case's allocations alive at the step-3 peak")
    ap.add_argument("--trace-stacks", choices=["python", "all"], default="python",
                    help="all: also C++ frames, so blocks the autograd engine allocates name their node")
    ap.add_argument("--steps", type=int, default=3, help="measured steps per case (AdamW's states exist from step 2)")
    ap.add_argument("--no-diag", action="store_true", help="skip step 0, the saved-tensor diagnostic")
    ap.add_argument("--start", type=int, default=0, help="index of the first case to run")
    ap.add_argument("--gc-off", action="store_true", help="disable Python's cyclic garbage collector while a "
                    "case runs (collected between cases); each record says python_gc: off")
    ap.add_argument("--t0", type=float, default=0.0, help="epoch seconds the deadline counts from "
                    "(default: this process's start); lets a restarted process keep one deadline")
    args = ap.parse_args()

    import transformers
    import peft

    versions = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                "transformers": transformers.__version__, "peft": peft.__version__,
                "gpu_total_bytes": torch.cuda.get_device_properties(0).total_memory,
                "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    if args.gc_off:
        versions["python_gc"] = "off"
    log(f"versions: {versions} cuda={torch.version.cuda} "
        f"total_mem={torch.cuda.get_device_properties(0).total_memory/2**30:.1f}GiB")

    global T_START, TRACE_STACKS
    TRACE_STACKS = args.trace_stacks
    if args.t0:
        T_START = args.t0
    cases = []
    for p in args.cases:
        with open(p) as f:
            cases += json.load(f)
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["case"] in keep]

    fout = open(args.out, "a")

    def write(rec):
        fout.write(json.dumps(rec) + "\n")
        fout.flush()

    n_ok = n_oom = n_err = n_skip = 0
    for i, c in enumerate(cases):
        if i < args.start:
            continue
        elapsed = time.time() - T_START
        est = float(c.get("est_s", 15))
        if elapsed + est > args.deadline:
            log(f"SKIP {c['case']} (elapsed {elapsed:.0f}s + est {est:.0f}s > {args.deadline:.0f}s)")
            write({"case": c["case"], "config": c["config"], "skipped": True, "reason": "deadline"})
            n_skip += 1
            continue
        log(f"CASE {i+1}/{len(cases)} {c['case']}")
        t0 = time.time()
        status = "ok"
        meta = {}
        try:
            if args.gc_off:
                gc.collect()
                gc.disable()
            run_case(c, versions, write, meta, args.trace_peak or None, args.steps, not args.no_diag)
            n_ok += 1
        except torch.cuda.OutOfMemoryError as e:
            status = "oom"
            msg = str(e).split("\n")[0][:300]
            rec = dict(meta.get("base") or {"case": c["case"], "config": c["config"], **versions})
            rec.update({"step": None, "oom": True, "oom_phase": meta.get("phase"), "error": msg,
                        "case_spec": c})
            write(rec)
            log(f"  OOM: {msg}")
            n_oom += 1
            e = None
        except Exception as e:  # noqa: BLE001
            status = "error"
            tb = traceback.format_exc()
            write({"case": c["case"], "config": c["config"], "oom": False, "error": repr(e)[:1000],
                   "phase": meta.get("phase"), "traceback": tb[-3000:], "case_spec": c, **versions})
            log(f"  ERROR: {tb}")
            n_err += 1
            e = None
        sys.last_traceback = sys.last_value = None
        gc.enable()
        free_all()
        log(f"  {status} in {time.time()-t0:.1f}s; alloc after free={torch.cuda.memory_allocated()/2**20:.0f}MiB")
        if status == "error" and i < args.abort_first:
            log("ABORT: error in an early case")
            break
        if torch.cuda.memory_allocated() > 2**30:
            # something still holds the last case's tensors: let the caller start a fresh process
            with open(args.out + ".next", "w") as f:
                f.write(str(i + 1))
            log(f"LEAK: {torch.cuda.memory_allocated()/2**20:.0f}MiB still allocated; exit 3, restart at {i+1}")
            fout.close()
            sys.exit(3)
    log(f"DONE ok={n_ok} oom={n_oom} error={n_err} skipped={n_skip}")
    fout.close()


if __name__ == "__main__":
    main()

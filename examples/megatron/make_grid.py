#!/usr/bin/env python3
"""Writes grid.json: LLaMA3-8B dims cut to 8 layers (dense GQA), a small MoE
and an MLA variant, on 2 GPUs: pp 2 and tp 2, s 4096 and 8192, mbs 1 and 2,
microbatch counts 1 (fewer than stages), 4 and 8, every Megatron recompute
setting remat maps to."""
import json

COMMON = ("--transformer-impl local --mock-data --tokenizer-type NullTokenizer --vocab-size 128255 "
          "--no-gradient-accumulation-fusion --no-masked-softmax-fusion --no-bias-swiglu-fusion --no-rope-fusion "
          "--no-persist-layer-norm --bf16 --optimizer adam --lr 1e-5 --min-lr 1e-6 --weight-decay 0.1 "
          "--clip-grad 1.0 --train-iters 6 --eval-iters 0 --eval-interval 1000 --log-interval 1 "
          "--log-memory-interval 1 --log-device-memory-used --log-throughput --attention-dropout 0 "
          "--hidden-dropout 0 --init-method-std 0.02 --seed 1234 --distributed-backend nccl "
          "--position-embedding-type rope --rotary-base 500000 --normalization RMSNorm --swiglu "
          "--untie-embeddings-and-output-weights --disable-bias-linear").split()

DENSE = ("--num-layers 8 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
         "--group-query-attention --num-query-groups 8").split()
MOE = ("--num-layers 4 --hidden-size 2048 --ffn-hidden-size 8192 --num-attention-heads 16 "
       "--group-query-attention --num-query-groups 4 --num-experts 8 --moe-router-topk 2 "
       "--moe-ffn-hidden-size 2048 --moe-token-dispatcher-type alltoall --moe-router-load-balancing-type aux_loss "
       "--moe-aux-loss-coeff 1e-2").split()
MLA = ("--num-layers 4 --hidden-size 2048 --ffn-hidden-size 8192 --num-attention-heads 16 "
       "--multi-latent-attention --q-lora-rank 768 --kv-lora-rank 512 --qk-head-dim 128 "
       "--qk-pos-emb-head-dim 64 --v-head-dim 128").split()

RECOMPUTE = {
    "none": [],
    "full-uniform1": "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1".split(),
    "full-block1": "--recompute-granularity full --recompute-method block --recompute-num-layers 1".split(),
    "full-block2": "--recompute-granularity full --recompute-method block --recompute-num-layers 2".split(),
    "full-block4": "--recompute-granularity full --recompute-method block --recompute-num-layers 4".split(),
    "sel-attn": "--recompute-granularity selective --recompute-modules core_attn".split(),
    "sel-mlp": "--recompute-granularity selective --recompute-modules mlp".split(),
    "sel-attn-mlp": "--recompute-granularity selective --recompute-modules core_attn mlp".split(),
    "sel-moe": "--recompute-granularity selective --recompute-modules moe".split(),
    "sel-mlaup": "--recompute-granularity selective --recompute-modules mla_up_proj".split(),
}


def setting(model_name, model, tp, pp, ep, seq, mbs, gbs, recompute, expected_s=55):
    name = f"{model_name}-tp{tp}pp{pp}" + (f"ep{ep}" if ep > 1 else "") + f"-s{seq}-mbs{mbs}-gbs{gbs}-{recompute}"
    flags = model + RECOMPUTE[recompute] + [
        "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
        "--seq-length", str(seq), "--max-position-embeddings", str(seq),
        "--micro-batch-size", str(mbs), "--global-batch-size", str(gbs)]
    if ep > 1:
        flags += ["--expert-model-parallel-size", str(ep)]
    return {"name": name, "gpus": tp * pp * max(1, 2 // (tp * pp)), "flags": flags, "expected_s": expected_s}


def main():
    s = []
    for r in ["none", "full-uniform1", "full-block2", "sel-attn", "sel-mlp", "sel-attn-mlp"]:
        s.append(setting("dense", DENSE, 1, 2, 1, 4096, 1, 4, r))
    s.append(setting("dense", DENSE, 1, 2, 1, 8192, 1, 4, "none", 70))
    s.append(setting("dense", DENSE, 1, 2, 1, 8192, 1, 4, "full-uniform1", 70))
    s.append(setting("dense", DENSE, 1, 2, 1, 4096, 2, 8, "none", 70))
    s.append(setting("dense", DENSE, 1, 2, 1, 4096, 1, 1, "none"))
    s.append(setting("dense", DENSE, 1, 2, 1, 4096, 2, 16, "sel-attn", 80))
    s.append(setting("dense", DENSE, 2, 1, 1, 4096, 1, 2, "none"))
    s.append(setting("dense", DENSE, 2, 1, 1, 4096, 1, 2, "full-uniform1"))
    s.append(setting("dense", DENSE, 2, 1, 1, 8192, 2, 4, "sel-attn-mlp", 70))
    s.append(setting("dense", DENSE, 2, 1, 1, 4096, 1, 2, "sel-mlp"))
    s.append(setting("moe", MOE, 1, 1, 2, 4096, 1, 4, "none"))
    s.append(setting("moe", MOE, 1, 1, 2, 4096, 1, 4, "sel-moe"))
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "full-uniform1"))
    # second run (session 4): more MoE layouts and tp 2 with block recompute
    s.append(setting("moe", MOE, 1, 2, 1, 4096, 1, 4, "none"))
    s.append(setting("moe", MOE, 1, 1, 2, 8192, 1, 4, "none", 60))
    s.append(setting("dense", DENSE, 2, 1, 1, 4096, 2, 8, "full-block4", 60))
    s.append(setting("mla", MLA, 1, 2, 1, 4096, 1, 4, "none"))
    s.append(setting("mla", MLA, 1, 2, 1, 4096, 1, 4, "sel-mlaup"))
    s.append(setting("mla", MLA, 2, 1, 1, 4096, 2, 4, "full-block2"))
    print(json.dumps({"megatron_commit": "d98e8a64dd", "common_flags": COMMON, "settings": s}, indent=1))


if __name__ == "__main__":
    main()

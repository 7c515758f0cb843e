#!/usr/bin/env bash
# Writes examples/megatron/remat_flag_sets.txt: every Megatron-LM flag set
# `remat plan` prints (its best plan Megatron-LM runs as-is) for the README's
# plan examples and the harness grid's layouts (grid.json), at the default
# budget and at tighter ones, one per line as check_flags.py reads them:
# "<gpus> <flags...>". Run Megatron's own parse_args, validate_args and
# TransformerConfig on it (needs PyTorch; on a machine without a GPU, see examples/megatron/cpu_checks/):
#   PYTHONPATH=.megatron python3 examples/megatron/check_flags.py examples/megatron/remat_flag_sets.txt
# Usage: examples/megatron/emit_flag_sets.sh [path/to/remat [output file]]
set -euo pipefail
cd "$(dirname "$0")/../.."
REMAT=${1:-./build/src/remat}
OUT=${2:-examples/megatron/remat_flag_sets.txt}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# grid.json's common flags that remat does not print itself (training loop, data, logging); remat prints
# the rotary base (the grid's 500000: rope_theta in the model files below) and the norm epsilon
COMMON="--mock-data --tokenizer-type NullTokenizer --vocab-size 128255 --no-gradient-accumulation-fusion \
--no-masked-softmax-fusion --no-bias-swiglu-fusion --no-rope-fusion --no-persist-layer-norm --optimizer adam \
--lr 1e-5 --min-lr 1e-6 --weight-decay 0.1 --clip-grad 1.0 --train-iters 6 --eval-iters 0 --eval-interval 1000 \
--log-interval 1 --attention-dropout 0 --hidden-dropout 0 --init-method-std 0.02 --seed 1234 \
--distributed-backend nccl"

# the grid's MoE and MLA models (make_grid.py) as remat model files
cat > "$TMP/grid-moe.yaml" <<'YAML'
name: grid-moe
source: "examples/megatron/make_grid.py MOE"
hidden_size: 2048
intermediate_size: 8192
num_attention_heads: 16
num_key_value_heads: 4
head_dim: 128
vocab_size: 128256
num_hidden_layers: 4
n_routed_experts: 8
num_experts_per_tok: 2
moe_intermediate_size: 2048
rope_theta: 500000
YAML
cat > "$TMP/grid-mla.yaml" <<'YAML'
name: grid-mla
source: "examples/megatron/make_grid.py MLA"
hidden_size: 2048
intermediate_size: 8192
num_attention_heads: 16
num_key_value_heads: 16
vocab_size: 128256
num_hidden_layers: 4
q_lora_rank: 768
kv_lora_rank: 512
qk_rope_head_dim: 64
qk_nope_head_dim: 128
v_head_dim: 128
rope_theta: 500000
YAML

# make_moe_grid.py --widths: the small MoE with wider experts
for width in 4096 8192; do
  sed "s/^name: grid-moe$/name: grid-moe$width/; s/^moe_intermediate_size: 2048$/moe_intermediate_size: $width/" \
    "$TMP/grid-moe.yaml" > "$TMP/grid-moe$width.yaml"
done

DENSE="--model llama3-8b --num-layers 8"
CASES=(
  ""  # README: the default job, LLaMA3-70B tp 8 pp 4 mbs 4
  "--model deepseek-v3 --num-layers 63 --tp 1 --pp 16 --dp 128 --ep 64 --mbs 1"
  "--model deepseek-v2 --num-layers 63 --tp 1 --pp 16 --dp 128 --ep 32 --mbs 1"
  "--model qwen3-8b --hardware a800-80gb --tp 1 --pp 1 --mbs 1 --precision bf16"
  "$DENSE --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 1 --gbs 4"
  "$DENSE --hardware h200 --tp 1 --pp 2 --seq 8192 --mbs 1 --gbs 4"
  "$DENSE --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 2 --gbs 8"
  "$DENSE --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 2 --gbs 16"
  "$DENSE --hardware h200 --tp 2 --pp 1 --seq 4096 --mbs 1 --gbs 2"
  "$DENSE --hardware h200 --tp 2 --pp 1 --seq 8192 --mbs 2 --gbs 4"
  "--model $TMP/grid-moe.yaml --hardware h200 --tp 1 --pp 1 --dp 2 --ep 2 --seq 4096 --mbs 1 --gbs 4"
  "--model $TMP/grid-moe.yaml --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 1 --gbs 4"
  "--model $TMP/grid-mla.yaml --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 1 --gbs 4"
  "--model $TMP/grid-mla.yaml --hardware h200 --tp 2 --pp 1 --seq 4096 --mbs 2 --gbs 4"
  "--model $TMP/grid-moe.yaml --hardware h200 --tp 1 --pp 2 --seq 8192 --mbs 1 --gbs 4"
  "--model $TMP/grid-moe.yaml --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 1 --gbs 8"
  "--model examples/megatron/moe-8x7-4l.yaml --hardware h200 --tp 1 --pp 2 --seq 4096 --mbs 1 --gbs 4"
  "--model examples/megatron/moe-8x7-4l.yaml --hardware h200 --tp 1 --pp 2 --seq 8192 --mbs 1 --gbs 4"
  "--model examples/megatron/moe-8x7-4l.yaml --hardware h200 --tp 1 --pp 1 --dp 2 --ep 2 --seq 4096 --mbs 1 --gbs 4"
  "--model examples/megatron/moe-8x7-4l.yaml --hardware h200 --tp 1 --pp 1 --dp 2 --ep 2 --seq 8192 --mbs 1 --gbs 4"
  # one GPU (make_moe_grid.py --single and --widths)
  "--model $TMP/grid-moe.yaml --hardware h200 --tp 1 --pp 1 --seq 4096 --mbs 1 --gbs 4"
  "--model $TMP/grid-moe4096.yaml --hardware h200 --tp 1 --pp 1 --seq 4096 --mbs 1 --gbs 4"
  "--model $TMP/grid-moe8192.yaml --hardware h200 --tp 1 --pp 1 --seq 4096 --mbs 1 --gbs 4"
)
# every config.json of the corpus that loads (the list as of this script, so that new corpus files do not
# change the checked sets), on the first of three layouts it accepts, at the default budget; Llama-3.1-405B
# and DeepSeek-R1 (deepseek-v3.json) at pp 16, whose layer counts pp does not divide
CORPUS=(deepseek-v3 devstral-small-2-24b exaone-4.0-32b gpt-oss-120b gpt-oss-20b llama-3.1-70b-instruct
  llama-3.1-8b-instruct llama-3.1-8b llama-3.2-1b-instruct llama-3.2-3b-instruct llama-3.2-3b
  llama-3.2-90b-vision-instruct mistral-7b-instruct-v0.3 mixtral-8x7b-v0.1 olmo-3.1-32b-instruct phi-4
  phi-3.5-vision-instruct-lm qwen2.5-14b qwen2.5-32b-instruct qwen2.5-32b qwen2.5-3b qwen2.5-7b
  qwen2.5-vl-7b-instruct qwen3-14b qwen3-30b-a3b qwen3-32b qwen3-4b qwen3-8b qwen3.5-397b-a17b qwen3.5-9b
  lfm2.5-vl-1.6b)
CORPUS_LAYOUTS=("--tp 2 --pp 4 --dp 2 --mbs 1" "--tp 1 --pp 4 --dp 8 --ep 8 --mbs 1" "--tp 1 --pp 2 --dp 2 --mbs 1")
BIG_CASES=(
  "--model tests/data/llama-3.1-405b-config.json --hardware h100-sxm --tp 8 --pp 16 --seq 8192"
  "--model tests/data/hf_configs/deepseek-v3.json --hardware h100-sxm --tp 4 --pp 16 --dp 16 --ep 64"
  "--model tests/data/hf_configs/deepseek-v3.json --hardware h100-sxm --tp 8 --pp 16 --dp 4 --ep 32"
)

# the default budget, then tighter ones so that other settings get printed too
BUDGETS=("" 95 90 85 70 60 55 50 45 40 30 20 10 5)
FRAMEWORKS=("" "--framework megatron-local")

{
  echo "# remat plan --emit-megatron-args for the README examples and the harness grid; regenerate with"
  echo "# examples/megatron/emit_flag_sets.sh (one line per distinct flag set; gpus = tp * pp * dp)"
  for fw in "${FRAMEWORKS[@]}"; do
  for c in "${CASES[@]}"; do
    for b in "${BUDGETS[@]}"; do
      # shellcheck disable=SC2086
      line=$($REMAT plan $c $fw ${b:+--memory-budget-GiB $b} --emit-megatron-args 2>/dev/null) || continue
      echo "$line $COMMON"
    done
  done
  for c in "${BIG_CASES[@]}"; do
    # shellcheck disable=SC2086
    line=$($REMAT plan $c $fw --emit-megatron-args 2>/dev/null) && echo "$line $COMMON"
  done
  for name in "${CORPUS[@]}"; do
    for layout in "${CORPUS_LAYOUTS[@]}"; do
      # shellcheck disable=SC2086
      if line=$($REMAT plan --model "tests/data/hf_configs/$name.json" --hardware h100-sxm $layout $fw \
        --emit-megatron-args 2>/dev/null); then
        echo "$line $COMMON"
        break
      fi
    done
  done
  done
} | awk '!seen[$0]++' > "$OUT"
echo "wrote $OUT ($(grep -vc '^#' "$OUT") flag sets)"

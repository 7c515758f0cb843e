#!/usr/bin/env bash
# Issue 6: the longest sequence one GPU takes under no checkpointing, layer
# checkpointing (full) and StreamBP, for Qwen3-4B/8B/14B/32B on an A800 80GB
# under SFT, GRPO (group 8) and DPO, mbs 1 (the StreamBP paper's App. D setup:
# pure bf16 full training where it fits one GPU, else LoRA rank 32 on
# q,k,v,o,gate,up,down in mixed precision; Adam; StreamBP partitions of 500
# tokens per layer chunk and 100 per LM-head chunk, 2000 also tried). Plus
# Qwen3-8B LoRA SFT on one RTX 3090 24 GB and Qwen3-8B SFT under ZeRO-2 over 8
# A800s. Writes reports/streambp-longest-seq.json and .md.
set -euo pipefail
cd "$(dirname "$0")/.."
remat=${REMAT:-./build/src/remat}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=(--tp 1 --pp 1 --mbs 1 --maximize seq --streambp-partition-tokens 500,2000 --lm-head-partition-tokens 100)
full=(--precision bf16)
lora=(--precision mixed --lora-rank 32 --lora-targets qkv,o,mlp)

# run NAME HARDWARE MODEL OBJECTIVE DP ZERO [lora|bp]; bp: the paper's Fig. 3 setting (backprop only:
# no optimizer state, bf16 gradients): full training where checkpointing fits 1024
# tokens, else LoRA
run() {
  local name=$1 hw=$2 model=$3 obj=$4 dp=$5 zero=$6 mode=full
  local args=("${base[@]}" --hardware "$hw" --model "$model" --objective "$obj" --dp "$dp" --zero-stage "$zero")
  "$remat" plan "${args[@]}" "${full[@]}" --format json --json "$tmp/$name.json" >/dev/null || true
  if [ "${7:-}" = bp ]; then
    mode=bp-only
    "$remat" plan "${args[@]}" "${full[@]}" --optimizer none --format json --json "$tmp/$name.json" >/dev/null || true
  fi
  if [ "$mode" = full ] && { [ "$(jq ".results[1].value < 1024" "$tmp/$name.json")" = true ] || [ "${7:-}" = lora ]; }; then
    mode=lora
    "$remat" plan "${args[@]}" "${lora[@]}" --format json --json "$tmp/$name.json" >/dev/null || true
  fi
  jq --arg name "$name" --arg mode "$mode" --arg obj "$obj" --arg hw "$hw" \
    '{name: $name, model: .model.name, hardware: $hw, objective: $obj, training: $mode, dp: .training.dp,
      zero_stage: .training.zero_stage, budget_GiB: (.budget_bytes / 1073741824),
      none: .results[0].value, full: .results[1].value, streambp: .results[2].value,
      streambp_chunks: .results[2].streambp_chunks, lm_head_chunks: .results[2].lm_head_chunks,
      layer_partition_tokens: .results[2].layer_partition_tokens, streambp_over_full}' "$tmp/$name.json" >"$tmp/$name.row"
  echo "$name: $(jq -c '[.training, .none, .full, .streambp, .streambp_over_full]' "$tmp/$name.row")"
}

for size in 4b 8b 14b 32b; do
  for obj in sft grpo dpo; do run "qwen3-$size-$obj" a800-80gb "qwen3-$size" "$obj" 1 1; done
done
run qwen3-8b-sft-rtx3090-lora rtx-3090 qwen3-8b sft 1 1 lora
run qwen3-8b-bp-fig3 a800-80gb qwen3-8b sft 1 1 bp
run qwen3-14b-bp-fig3 a800-80gb qwen3-14b sft 1 1 bp
run qwen3-32b-bp-fig3-lora a800-80gb qwen3-32b sft 1 1 lora
run qwen3-8b-sft-zero2-dp8 a800-80gb qwen3-8b sft 8 2

jq -s '{paper_stated: {single_gpu_over_checkpointing: [2.8, 5.5], rtx3090_qwen3_8b_lora: 4.4, zero2: [5.0, 5.6]},
        rows: .}' "$tmp"/*.row >reports/streambp-longest-seq.json
{
  echo "# Longest sequence per method (predicted by remat, issue 6)"
  echo
  echo "mbs 1, GRPO group 8 (G sequences per step), DPO chosen + rejected; Adam; budget = HBM less the hardware file's reserve."
  echo "Paper's stated ratios of StreamBP over checkpointing: 2.8-5.5x (single A800), ~4.4x (RTX 3090, Qwen3-8B LoRA), 5-5.6x (ZeRO-2)."
  echo
  echo "| case | training | none | full ckpt | StreamBP | D / C | StreamBP / ckpt |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  jq -r '.rows[] | "| \(.model) \(.objective) on \(.hardware)\(if .dp > 1 then " ZeRO-\(.zero_stage) dp \(.dp)" else "" end) | \(.training) | \(.none) | \(.full) | \(.streambp) | \(.streambp_chunks) / \(.lm_head_chunks) | \(.streambp_over_full * 100 | round / 100)x |"' \
    reports/streambp-longest-seq.json
  cat <<'NOTE'

## Beside the paper's stated ratios

- Fig. 3 setting (backprop only; 8B and 14B full with bf16 gradients, 32B LoRA; rows `bp-only`, the 32B LoRA
  row): the paper states 2.8-5.5x over checkpointing, falling with model size. We predict 5.4x (8B), 4.2x (14B)
  and 3.0x (32B LoRA): the same order, all three inside the range.
- Full-model SFT/GRPO/DPO of Qwen3-4B (and GRPO of Qwen3-8B LoRA) come out above 5.5x. There checkpointing is
  bound by the logits: 10 bytes per token x vocabulary entry (bf16 logits, the loss's fp32 copy, fp32 gradient;
  18 for GRPO with the old-policy and reference logits) = 1.5 MB per token for Qwen3's 151936-entry vocabulary,
  against 36 layer inputs of 2560 x 2 bytes = 0.18 MB per token that StreamBP keeps, plus the chunked layer
  backward's whole-sequence buffers (the incoming gradient, the input-gradient and dK/dV accumulators, K and V,
  and the flash backward's GQA-expanded dK/dV over the visible keys: about 0.04 MB per token here). That model
  of the chunked backward was checked on an H200 to within 0.1% of the allocator's peak
  (reports/gpu/validate-h200-streambp.txt, LLaMA3-8B dims, s 4k-32k, D 1-32). Per-token costs of the Hugging
  Face implementation that the model leaves out (embedding outputs, rotary tables, allocator fragmentation;
  the extra bf16 logits copy on the baseline side goes the other way) would pull the measured StreamBP length
  down; the paper's Table 3 figures are held out here, so this is unconfirmed.
- Figures the paper states in its text for training (sec. 4.2): Qwen3-8B SFT 72k with StreamBP against 15.7k with
  checkpointing (4.6x), where we predict 50.4k and 9.3k (5.4x) under pure bf16 Adam; Qwen3-32B SFT "up to 16k",
  where we predict 17.0k (LoRA).
- RTX 3090, Qwen3-8B LoRA (rank 32, mixed precision): the paper states ~4.4x, 15k for StreamBP (so ~3.4k for
  checkpointing); we predict 16.6k and 3.1k, 5.4x: StreamBP's length 11% long, checkpointing's 9% short, the
  same per-token terms as above.
- ZeRO-2 over 8 GPUs, Qwen3-8B SFT: stated 5-5.6x; we predict 5.4x, inside (sharded gradients and optimizer
  leave more room, the ratio stays the logits-to-layer-inputs ratio of the single-GPU case).
NOTE
} >reports/streambp-longest-seq.md
cat reports/streambp-longest-seq.md

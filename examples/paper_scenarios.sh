#!/usr/bin/env bash
# The EAGLE paper's three end-to-end models with their Table 6 layouts on
# A100 80GB PCIe: first/middle/last stage memory and MFU of no recompute, full
# recompute, fine-grained (standard) recompute and EAGLE at one fixed R
# (Table 3 scenario) and at each method's best R (Table 4 scenario), then the
# planner's best plan, frontier and Megatron-LM flags. Writes the reports
# under reports/ (the golden files tests/test_golden.cpp checks).
# Assumed where Table 6 is silent: seq 4096; dp = GPUs / (tp pp) (32 GPUs for
# LLaMA3-70B, 2048 for DeepSeek); ep 32 (V2) and 64 (V3); 4*pp microbatches.
set -euo pipefail
cd "$(dirname "$0")/.."
remat=${REMAT:-./build/src/remat}
llama=(--model llama3-70b --tp 8 --pp 4 --dp 1 --mbs 4)
v2=(--model deepseek-v2 --num-layers 63 --tp 1 --pp 16 --dp 128 --ep 32 --mbs 1)
v3=(--model deepseek-v3 --num-layers 63 --tp 1 --pp 16 --dp 128 --ep 64 --mbs 1)
for name in llama3-70b deepseek-v2 deepseek-v3; do
  case $name in
    llama3-70b) args=("${llama[@]}") ;;
    deepseek-v2) args=("${v2[@]}") ;;
    deepseek-v3) args=("${v3[@]}") ;;
  esac
  echo "== $name"
  "$remat" scenarios "${args[@]}" --json "reports/paper-scenarios-$name.json"
  "$remat" plan "${args[@]}" --json "reports/plan-$name.json" || true  # exit 1 = no plan fits, still reported
done

#!/usr/bin/env bash
# Run on the GPU machine: transformers' own Gemma 4 sources and its parameter counts of the
# Gemma 4 configs (corpus files and the synthetic shapes beside this script).
set -euo pipefail
here=$(dirname "$0")
tf=$(python3 -c 'import transformers, os; print(os.path.dirname(transformers.__file__))')
mkdir -p "$OUT/src"
cp "$tf/models/gemma4/configuration_gemma4.py" "$tf/models/gemma4/modeling_gemma4.py" "$OUT/src/"
python3 -c 'import transformers; print(transformers.__version__)' > "$OUT/version.txt"
files=("$here"/*.json tests/data/hf_configs/gemma-4-31b-it.json tests/data/hf_configs/gemma-4-e2b-it.json)
python3 examples/hf/count_params.py --out "$OUT/counts.jsonl" "${files[@]}" 2>&1 | tail -5
python3 examples/hf/count_params.py --whole --out "$OUT/counts-whole.jsonl" "${files[@]}" 2>&1 | tail -5

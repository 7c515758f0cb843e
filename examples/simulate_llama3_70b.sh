#!/usr/bin/env sh
# LLaMA3-70B on the default layout (A100 80GB PCIe, tp 8, pp 4, mbs 4, seq 4096):
# the event simulation under full recompute and EAGLE, with Perfetto traces,
# memory-over-time plots, the sweep over R and the per-stage bars.
# Usage: examples/simulate_llama3_70b.sh [path/to/remat] [output dir]
set -eu
remat=${1:-./build/src/remat}
out=${2:-reports}
mkdir -p "$out"
for s in full eagle; do
  "$remat" simulate --model llama3-70b --tp 8 --pp 4 --strategy "$s" \
    --trace "$out/simulate_llama3_70b_$s.trace.json" --svg "$out/simulate_llama3_70b_$s.svg" \
    --json "$out/simulate_llama3_70b_$s.json"
done
"$remat" simulate --model llama3-70b --tp 8 --pp 4 --strategy eagle \
  --svg-sweep "$out/simulate_llama3_70b_sweep.svg" --svg-stages "$out/simulate_llama3_70b_stages.svg" > /dev/null
echo "wrote $out/simulate_llama3_70b_*.{svg,json,trace.json}; open a trace at https://ui.perfetto.dev"

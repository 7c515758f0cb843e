#!/bin/bash
# Whether back-to-back kernels run into the GPU's power limit: MLA attention (s = 4096) timed call
# by call (REMAT_ATTN_PROBE) with the SM clock, power and clock-event reasons sampled every 50 ms,
# then every block's kernels timed isolated (--op-gap-ms: each op starts on an idle GPU) with the
# same sampling. Usage: gpu_power.sh OUTDIR DEVICE_TAG [GIT_COMMIT]; REMAT_BENCH: prebuilt binary.
set -uo pipefail
OUT_DIR=${1:?outdir}; TAG=${2:?device tag}; GIT=${3:-unknown}
B=${REMAT_BENCH:-/tmp/remat-wrap/build/cuda/remat-bench}
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
sample() { nvidia-smi --query-gpu=$Q --format=csv,nounits -lms 50 > "$1" & echo $!; }
P=$(sample "$OUT_DIR/clocks-mla-probe.csv")
REMAT_ATTN_PROBE=1 "$B" --no-check --blocks mla --strategies none --seqs 4096 --reps 40 --profiled-reps 1 \
  --out /tmp/mla-probe.json --git-commit "$GIT" 2> "$OUT_DIR/mla-probe.log"
kill "$P"
P=$(sample "$OUT_DIR/clocks-isolated.csv")
"$B" --no-check --blocks rmsnorm_linear,mlp,moe,gqa,mla --strategies none --seqs 4096,8192,16384 --op-gap-ms 30 \
  --reps 3 --profiled-reps 3 --out "$OUT_DIR/measurements-$TAG-isolated.json" --git-commit "$GIT" 2> "$OUT_DIR/isolated.log"
kill "$P"

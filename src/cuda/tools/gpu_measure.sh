#!/bin/bash
# The measurement run committed under reports/gpu: build, then the correctness checks and the
# sweep (all blocks and strategies, s in 1024..16384), the deterministic-attention gradient run
# and the real-router MoE run. Usage: gpu_measure.sh OUTDIR DEVICE_TAG [GIT_COMMIT]
# REMAT_BENCH=path: use that (prebuilt) remat-bench instead of building one.
set -uo pipefail
OUT_DIR=${1:?outdir}; TAG=${2:?device tag}; GIT=${3:-unknown}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -n "${REMAT_BENCH:-}" ]; then
  B=$REMAT_BENCH
else
  "$HERE/gpu_build.sh" > "$OUT_DIR/build.log" 2>&1 || { tail -30 "$OUT_DIR/build.log"; exit 1; }
  B=/tmp/remat-wrap/build/cuda/remat-bench
fi
$B --seqs 1024,2048,4096,8192,16384 --out "$OUT_DIR/measurements-$TAG.json" --git-commit "$GIT" 2>&1 | tee "$OUT_DIR/run.log"
$B --no-check --blocks gqa,mla --seqs 4096 --deterministic-attention --reps 3 --profiled-reps 1 \
   --out "$OUT_DIR/measurements-$TAG-deterministic-attention.json" --git-commit "$GIT" 2>&1 | tee -a "$OUT_DIR/run.log"
$B --no-check --blocks moe --seqs 4096 --routing router \
   --out "$OUT_DIR/measurements-$TAG-moe-router.json" --git-commit "$GIT" 2>&1 | tee -a "$OUT_DIR/run.log"

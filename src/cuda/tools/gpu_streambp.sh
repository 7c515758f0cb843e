#!/bin/bash
# The StreamBP run committed under reports/gpu: the backend's GPU tests, then the chunked LM head
# and the chunked layer backward (LLaMA3-8B dims) at s = 4096..32768 with 1..32 chunks.
# Usage: gpu_streambp.sh OUTDIR DEVICE_TAG [GIT_COMMIT]; REMAT_BENCH / REMAT_CUDA_TESTS: prebuilt binaries.
set -uo pipefail
OUT_DIR=${1:?outdir}; TAG=${2:?device tag}; GIT=${3:-unknown}
B=${REMAT_BENCH:-/tmp/remat-wrap/build/cuda/remat-bench}
T=${REMAT_CUDA_TESTS:-$(dirname "$B")/remat-cuda-tests}
"$T" 2>&1 | tail -25 | tee "$OUT_DIR/streambp-tests.log"
"$B" --blocks lm_head,streambp_layer --seqs 4096,8192,16384,32768 --chunks 1,2,4,8,16,32 --reps 5 --profiled-reps 1 \
  --out "$OUT_DIR/measurements-$TAG-streambp.json" --git-commit "$GIT" 2>&1 | tee "$OUT_DIR/streambp-run.log"

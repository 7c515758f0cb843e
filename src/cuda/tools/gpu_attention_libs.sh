#!/bin/bash
# Which cuDNN builds the GPU machine has and how fast each runs MLA's attention (s = 4096, qk 192,
# v 128, 128 heads, causal): remat-bench against the system cuDNN and against every other
# libcudnn.so.9 found (PyTorch's wheel), plus PyTorch's own SDPA backends on the same shape as an
# outside reference. Usage: gpu_attention_libs.sh OUTDIR [GIT_COMMIT]; REMAT_BENCH: prebuilt binary.
set -uo pipefail
OUT_DIR=${1:?outdir}; GIT=${2:-unknown}
B=${REMAT_BENCH:-/tmp/remat-wrap/build/cuda/remat-bench}
HERE=$(cd "$(dirname "$0")" && pwd)
{
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  pip list 2>/dev/null | grep -i -E 'cudnn|flash|transformer.engine|triton'
  find / -xdev -name 'libcudnn.so.9*' 2>/dev/null
} > "$OUT_DIR/libs.txt" 2>&1
run_bench() {  # LABEL [LD_LIBRARY_PATH]
  LD_LIBRARY_PATH=${2:-${LD_LIBRARY_PATH:-}} "$B" --no-check --blocks mla,gqa --strategies none --seqs 4096 \
    --reps 20 --out "$OUT_DIR/attn-$1.json" --git-commit "$GIT" 2> "$OUT_DIR/attn-$1.log"
  python3 "$HERE/summarize.py" "$OUT_DIR/attn-$1.json" > "$OUT_DIR/attn-$1.txt" 2>&1
}
run_bench system
for lib in $(find / -xdev -name 'libcudnn.so.9' -path '*site-packages*' 2>/dev/null); do
  dir=$(dirname "$lib"); tag=$(echo "$dir" | md5sum | cut -c1-6)
  echo "$tag $dir" >> "$OUT_DIR/libs.txt"
  run_bench "pip-$tag" "$dir"
done
python3 "$HERE/torch_sdpa_ref.py" > "$OUT_DIR/torch-sdpa.txt" 2>&1

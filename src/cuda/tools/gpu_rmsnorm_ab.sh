#!/bin/bash
# A/B of the RMSNorm forward kernels (REMAT_RMSNORM_FWD=warp|pipe|flat, and the default auto
# choice) on the blocks' real shapes, then the committed measurement run (default choice).
# Usage: gpu_rmsnorm_ab.sh OUTDIR TAG COMMIT; REMAT_BENCH=path uses a prebuilt remat-bench.
set -uo pipefail
OUT_DIR=${1:?outdir}; TAG=${2:?tag}; GIT=${3:-unknown}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${REMAT_BENCH:-}" ]; then
  "$HERE/gpu_build.sh" > "$OUT_DIR/build.log" 2>&1 || { tail -30 "$OUT_DIR/build.log"; exit 1; }
  export REMAT_BENCH=/tmp/remat-wrap/build/cuda/remat-bench
fi
B=$REMAT_BENCH
VARIANTS=${VARIANTS:-pipe flat auto}
for v in $VARIANTS; do
  REMAT_RMSNORM_FWD=$v $B --no-check --blocks rmsnorm_linear,mlp,moe --strategies none --seqs 2048,4096,8192,16384 \
    --out "/tmp/ab-$v.json" > "/tmp/ab-$v.log" 2>&1
done
python3 - $VARIANTS <<'PY' > "$OUT_DIR/ab.txt"
import json, sys
for v in sys.argv[1:]:
    d = json.load(open(f"/tmp/ab-{v}.json"))
    for c in d["cases"]:
        for k in c["kernels"]:
            if k["kind"] == "rmsnorm" and k["name"] == "norm" and k["phase"] == "forward":
                print(v, c["block"], c["dims"]["s"], "%.0f GB/s %.3f of 4800, %.1f us" % (k["gbps"], k["gbps"] / 4800, k["time_s"] * 1e6))
PY
cat "$OUT_DIR/ab.txt"
"$HERE/gpu_measure.sh" "$OUT_DIR" "$TAG" "$GIT" > /dev/null 2>&1
tail -5 "$OUT_DIR/run.log"

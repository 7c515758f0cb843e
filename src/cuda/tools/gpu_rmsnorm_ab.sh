#!/bin/bash
# A/B of the RMSNorm forward kernels (REMAT_RMSNORM_FWD=warp|pipe) on the blocks' real shapes,
# then the committed measurement run with the faster one. Usage: gpu_rmsnorm_ab.sh OUTDIR TAG COMMIT
set -uo pipefail
OUT_DIR=${1:?outdir}; TAG=${2:?tag}; GIT=${3:-unknown}
HERE=$(cd "$(dirname "$0")" && pwd)
"$HERE/gpu_build.sh" > "$OUT_DIR/build.log" 2>&1 || { tail -30 "$OUT_DIR/build.log"; exit 1; }
B=/tmp/remat-wrap/build/cuda/remat-bench
for v in warp pipe; do
  REMAT_RMSNORM_FWD=$v $B --no-check --blocks rmsnorm_linear,moe --strategies none --seqs 2048,4096,8192,16384 \
    --out "$OUT_DIR/ab-$v.json" > "$OUT_DIR/ab-$v.log" 2>&1
done
python3 - "$OUT_DIR" <<'PY' > "$OUT_DIR/ab.txt"
import json, sys
out = sys.argv[1]
best = {}
for v in ("warp", "pipe"):
    d = json.load(open(f"{out}/ab-{v}.json"))
    tot = 0
    for c in d["cases"]:
        for k in c["kernels"]:
            if k["kind"] == "rmsnorm" and k["name"] == "norm":
                print(v, c["block"], c["dims"]["s"], "%.0f GB/s %.3f of 4800, %.1f us" % (k["gbps"], k["gbps"] / 4800, k["time_s"] * 1e6))
                tot += k["time_s"]
    best[v] = tot
print("BEST", min(best, key=best.get))
PY
cat "$OUT_DIR/ab.txt"
BEST=$(awk '/^BEST/{print $2}' "$OUT_DIR/ab.txt")
export REMAT_RMSNORM_FWD=${BEST:-pipe}
echo "sweep with REMAT_RMSNORM_FWD=$REMAT_RMSNORM_FWD"
"$HERE/gpu_measure.sh" "$OUT_DIR" "$TAG" "$GIT" > /dev/null 2>&1
tail -5 "$OUT_DIR/run.log"
ls -la "$OUT_DIR"

#!/bin/bash
# DeepSeek-V4 cut models on one GPU: checkpointed cases for two steps (a third non-reentrant step raises
# inside torch's checkpoint replay, SystemError from DeepseekV4DecoderLayer.forward), the rest for three.
T0=$(date +%s)
python3 examples/hf/hf_step.py --cases examples/hf/dsv4/cases_ckpt.json --out $OUT/steps-ckpt.jsonl --deadline 250 \
  --t0 $T0 --no-diag --steps 2 --trace-peak /tmp/traces 2>&1 | grep -E "CASE|step 2|error|DONE|OOM" | tail -40
python3 examples/hf/hf_step.py --cases examples/hf/dsv4/cases_none.json --out $OUT/steps-none.jsonl --deadline 500 \
  --t0 $T0 --no-diag --trace-peak /tmp/traces 2>&1 | grep -E "CASE|step 3|error|DONE|OOM" | tail -40
tar czf $OUT/traces.tgz -C /tmp traces

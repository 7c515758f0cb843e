# blind set 3 (cases_blind3.json): all-linear and the new names under GRPO, DPO, eager, mixed, long sequences
T0=$(date +%s)
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python3 examples/hf/hf_step.py --cases examples/hf/all_linear/cases_blind3.json --out $OUT/steps.jsonl --deadline 560 --t0 $T0 --no-diag --trace-peak /tmp/traces 2>&1 | grep -E "CASE|ok in|ERROR|OOM|SKIP|Error" | head -60
tar czf $OUT/traces.tgz -C /tmp traces 2>/dev/null

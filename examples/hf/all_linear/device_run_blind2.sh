# the linear modules of the models PEFT refuses all-linear on, then blind set 2 (cases_blind2.json)
T0=$(date +%s)
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python3 examples/hf/all_linear/probe.py --out $OUT/probe-mamba.jsonl nemotron3nano=examples/hf/nemotron-3-nano-cut3.json \
  fh1=examples/hf/falcon_h1/falcon-h1-0.5b-shape-4l.json nemotron3super=examples/hf/latent/nemotron-3-super-5l-64e.json 2>&1 | grep -E "^[a-z0-9]+ " | cut -c1-200
python3 examples/hf/hf_step.py --cases examples/hf/all_linear/cases_blind2.json --out $OUT/steps.jsonl --deadline 560 --t0 $T0 --no-diag --trace-peak /tmp/traces 2>&1 | grep -E "CASE|ok in|ERROR|OOM|SKIP|Error" | head -60
tar czf $OUT/traces.tgz -C /tmp traces 2>/dev/null

T0=$(date +%s)
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
H=tests/data/hf_configs
python3 examples/hf/all_linear/probe.py --out $OUT/probe.jsonl \
 v2lite=examples/hf/mla_unseen/deepseek-v2-lite-4l.json:4 dsv3=$H/deepseek-v3.json:4 glm45=$H/glm-4.5.json:4 \
 qwen15moe=examples/hf/all_linear/qwen1.5-moe-a2.7b-shape-4l.json qwen2moe235=examples/hf/unseen8b/qwen2moe-typed-235b-2l.json \
 qwen3next=examples/hf/unseen8/qwen3next-4l.json qwen35=examples/hf/hybrid_unseen/qwen3.5-9b-text-4l.json qwen36=$H/qwen3.6-35b-a3b.json:4 \
 nemotron3nano=examples/hf/nemotron-3-nano-cut3.json lfm2=examples/hf/lfm2/lfm2-1.2b-text.json fh1=examples/hf/falcon_h1/falcon-h1-0.5b-shape-4l.json \
 granite4h=examples/hf/hybrid_unseen/granite-4.0-h-tiny-like-4l.json olmoh=examples/hf/olmo_hybrid/olmo-hybrid-7b-shape-4l.json \
 mllama=examples/hf/mllama/llama-3.2-11b-vision-6l.json mixtral=$H/mixtral-8x7b-v0.1.json:2 gptoss=$H/gpt-oss-20b.json:2 \
 granitemoe=$H/granite-3.1-1b-a400m-instruct.json:2 scout=$H/llama-4-scout-17b-16e-instruct.json:2 phitiny=$H/phi-tiny-moe-instruct.json:2 \
 hunyuan=$H/hunyuan-a13b-instruct.json:2 ling=$H/ling-lite.json:2 laguna=$H/laguna-s-2.1-fp8.json:2 kimilinear=examples/hf/more_families/kimi-linear-48b-shape.json:4 \
 nemotronsuper49=$H/llama-3.3-nemotron-super-49b-v1.json:2 qwen3moe=$H/qwen3-30b-a3b.json:2 2>&1 | tail -40
echo "probe done at $(( $(date +%s) - T0 )) s"
python3 examples/hf/hf_step.py --cases examples/hf/all_linear/cases.json --out $OUT/steps.jsonl --deadline 570 --t0 $T0 --no-diag --trace-peak /tmp/traces 2>&1 | grep -E "CASE|ok in|ERROR|OOM|SKIP|Error|error" | head -80
tar czf $OUT/traces.tgz -C /tmp traces 2>/dev/null; ls -la $OUT

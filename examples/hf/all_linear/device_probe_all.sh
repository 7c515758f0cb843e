# PEFT's all-linear on one config per model_type of the corpus (probe_types.txt), 4 layers at most
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python3 examples/hf/all_linear/probe.py --out $OUT/probe-types.jsonl $(cat examples/hf/all_linear/probe_types.txt) 2>&1 | grep -v Warning | grep -E "^[a-z0-9_]+ " | cut -c1-200
python3 - <<'PY'
import peft, transformers
from peft.utils import transformers_weight_conversion as c
import inspect, os
print(peft.__version__, transformers.__version__)
print(inspect.getsource(c._convert_peft_config_moe)[:3000])
print(inspect.getsource(c.convert_peft_config_for_transformers)[:2000])
PY

#!/usr/bin/env python3
"""For each config: is its model_type (and nested language model_type) a transformers built-in,
and the parameter count of the class its `architectures` names, where transformers has it
(built on the meta device, no remote code). Complements count_params.py, which builds the causal LM."""
import json, sys, warnings
import torch, transformers
from transformers import AutoConfig
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
warnings.filterwarnings("ignore")
for path in sys.argv[1:]:
    raw = json.load(open(path))
    row = {"file": path.split("/")[-1], "model_type": raw.get("model_type")}
    row["builtin"] = raw.get("model_type") in CONFIG_MAPPING_NAMES
    for k in ("text_config", "decoder_config", "language_config", "llm_config"):
        if isinstance(raw.get(k), dict):
            row["inner"] = raw[k].get("model_type"); row["inner_builtin"] = raw[k].get("model_type") in CONFIG_MAPPING_NAMES
    arch = (raw.get("architectures") or [None])[0]
    row["arch"] = arch
    try:
        cfg = AutoConfig.from_pretrained(path)
        cls = getattr(transformers, arch, None) if arch else None
        row["arch_in_transformers"] = cls is not None
        if cls is not None:
            with torch.device("meta"):
                m = cls(cfg)
            row["arch_params"] = sum(p.numel() for p in m.parameters())
    except Exception as e:  # noqa: BLE001
        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    print(json.dumps(row), flush=True)

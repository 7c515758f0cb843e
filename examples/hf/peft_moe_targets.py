"""Which model_types PEFT converts LoRA targets for on this install (transformers 5.x, peft 0.21).

PEFT's utils/transformers_weight_conversion.py retargets the pre-v5 expert names (gate_proj, up_proj,
down_proj) at the stacked gate_up_proj and down_proj parameters for every model_type whose
transformers conversion pattern is one of its _MOE_TARGET_MODULE_MAPPING keys. remat's table of
those (src/io/hf_family_names.cpp, peft_converts_expert_targets) was read from this script's output
on the GPU machine's image.

    python3 examples/hf/peft_moe_targets.py > patterns.json
"""
import json

from peft.utils import transformers_weight_conversion as conversion
from transformers.conversion_mapping import _MODEL_TO_CONVERSION_PATTERN, get_checkpoint_conversion_mapping


def main():
    mapped = conversion._MOE_TARGET_MODULE_MAPPING
    converted = sorted(
        model_type
        for model_type, pattern in _MODEL_TO_CONVERSION_PATTERN.items()
        if pattern in mapped and mapped[pattern] and get_checkpoint_conversion_mapping(model_type) is not None
    )
    print(json.dumps({"patterns": sorted(mapped), "model_types": converted}, indent=1))


if __name__ == "__main__":
    main()

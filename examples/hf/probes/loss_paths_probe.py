"""How each causal-LM class of this transformers install hands its logits to the loss.

For every class AutoModelForCausalLM and AutoModelForImageTextToText map a model_type to, reads the
source of its forward and writes one JSON line: whether it calls self.loss_function (transformers'
ForCausalLMLoss, which upcasts the logits), builds its own CrossEntropyLoss / cross_entropy, casts
the logits to fp32 in forward (.float()), and the lines that do so. remat's ModelSpec::logits is
read against these lines.

    python3 examples/hf/probes/loss_paths_probe.py --out loss-paths.jsonl
"""
import argparse
import inspect
import json
import re

import transformers
from transformers.models.auto import modeling_auto as ma


def classes():
    seen = {}
    for mapping in ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES"):
        for model_type, names in getattr(ma, mapping, {}).items():
            for name in names if isinstance(names, (list, tuple)) else [names]:
                seen.setdefault(name, set()).add((model_type, mapping.split("_FOR_")[1].split("_MAPPING")[0]))
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.out, "w") as out:
        for name, types in sorted(classes().items()):
            rec = {"class": name, "model_types": sorted(t for t, _ in types), "auto": sorted({a for _, a in types})}
            cls = getattr(transformers, name, None)
            try:
                src = inspect.getsource(cls.forward)
            except Exception as e:  # a class this install cannot import
                rec["error"] = repr(e)[:300]
                out.write(json.dumps(rec) + "\n")
                continue
            lines = src.splitlines()
            rec["loss_function"] = "self.loss_function" in src
            rec["own_loss"] = bool(re.search(r"CrossEntropyLoss\(|cross_entropy\(", src))
            rec["logits_float"] = bool(re.search(r"logits\s*=.*\.float\(\)|lm_head\(.*\)\.float\(\)", src))
            rec["lines"] = [l.strip() for l in lines if re.search(r"CrossEntropyLoss|cross_entropy|\.float\(\)|loss_function|contiguous", l)][:12]
            out.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()

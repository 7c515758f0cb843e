#!/usr/bin/env python3
"""Parameter counts of config.json files as transformers itself builds the models.

For each file: load it with transformers' AutoConfig (no download, no remote code), build
the causal LM on the meta device (no memory, no weights) and count its parameters the way
model.parameters() yields them (a tied head counted once). A multimodal config is counted
for its language model only (its text_config built as a causal LM), as remat does. A file
transformers cannot build without remote code is reported with the error, not counted.

Writes one JSON line per file: file, model_type, class built, params, params by top-level
module (embeddings, layers, norm, head, mtp ...), and the error if any.

--whole: a multimodal config's whole model (AutoModelForImageTextToText), counting the parameters
outside its vision, audio and projector modules: the class a user fine-tunes.
--defaults: the same for every model_type transformers maps to a causal LM or an image-text-to-text
model, each built from its config class's defaults (AutoConfig.for_model), with the full config
(to_dict) in the line: what a user gets from a transformers re-save of each family's config.

    python3 count_params.py --out counts.jsonl FILE.json ...
    python3 count_params.py --out defaults.jsonl --defaults
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback
import warnings

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

# parameter names of a multimodal model's parts other than its language model
NOT_LANGUAGE = ("vision", "visual", "multi_modal_projector", "mm_projector", "projector", "audio", "image")


def language_config(config):
    text = getattr(config, "text_config", None)
    if text is not None and text is not config:
        return text, "text_config"
    llm = getattr(config, "llm_config", None)
    if llm is not None:
        return llm, "llm_config"
    return config, ""


def build(config, whole=False):
    """The causal LM for config on the meta device; the language model's config first, or with
    whole=True the multimodal model first (its tie_word_embeddings is the wrapper's)."""
    text, where = language_config(config)
    errors = []
    if whole and where:
        try:
            with torch.device("meta"):
                return AutoModelForImageTextToText.from_config(config), "image_text_to_text"
        except Exception as error:  # noqa: BLE001
            errors.append(f"image_text_to_text: {type(error).__name__}: {error}")
    for candidate, label in ((text, where or "top"), (config, "top")):
        try:
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(candidate)
            return model, label
        except Exception as error:  # noqa: BLE001 - any failure is reported per file
            errors.append(f"{label}: {type(error).__name__}: {error}")
    try:  # the whole multimodal model; count() keeps its language model's parameters
        with torch.device("meta"):
            return AutoModelForImageTextToText.from_config(config), "image_text_to_text"
    except Exception as error:  # noqa: BLE001
        errors.append(f"image_text_to_text: {type(error).__name__}: {error}")
    raise RuntimeError(" | ".join(errors))


def group_of(name):
    parts = name.split(".")
    # model.layers.3.mlp.x -> model.layers ; lm_head.weight -> lm_head
    keep = [p for p in parts[:3] if not p.isdigit()]
    return ".".join(keep[:2]) if len(keep) > 1 and keep[0] == "model" else keep[0]


def load_file(path, row):
    with open(path) as handle:
        raw = json.load(handle)
    row["model_type"] = raw.get("model_type")
    with tempfile.TemporaryDirectory() as folder:  # from_pretrained reads FOLDER/config.json
        shutil.copy(path, os.path.join(folder, "config.json"))
        return AutoConfig.from_pretrained(folder)


def load_default(model_type, row):
    row["model_type"] = model_type
    config = AutoConfig.for_model(model_type)
    row["config"] = json.loads(config.to_json_string(use_diff=False))
    return config


def count(name, load, whole=False):
    row = {"file": name}
    try:
        config = load(row)
        model, built_from = build(config, whole)
        row["class"] = type(model).__name__
        row["built_from"] = built_from
        seen = set()
        total = 0
        groups = {}
        for param_name, param in model.named_parameters():
            if id(param) in seen:
                continue
            if built_from == "image_text_to_text" and any(part in param_name for part in NOT_LANGUAGE):
                continue
            seen.add(id(param))
            total += param.numel()
            key = group_of(param_name)
            groups[key] = groups.get(key, 0) + param.numel()
        row["params"] = total
        row["groups"] = groups
        row["tied"] = bool(getattr(model.config, "tie_word_embeddings", False))
    except Exception as error:  # noqa: BLE001
        row["error"] = f"{type(error).__name__}: {error}"[:600]
        row["trace"] = traceback.format_exc()[-800:]
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--defaults", action="store_true")
    parser.add_argument("--whole", action="store_true", help="build multimodal wrappers whole")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    with open(args.out, "w") as out:
        meta = {"transformers": transformers.__version__, "torch": torch.__version__}
        out.write(json.dumps({"versions": meta}) + "\n")
        jobs = [(os.path.basename(p), lambda row, p=p: load_file(p, row)) for p in args.files]
        if args.defaults:
            from transformers.models.auto import modeling_auto

            types = set(modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
            types |= set(modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
            jobs += [(t + ".json", lambda row, t=t: load_default(t, row)) for t in sorted(types)]
        for name, load in jobs:
            row = count(name, load, args.whole)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(row["file"], row.get("params", row.get("error", "")[:120]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

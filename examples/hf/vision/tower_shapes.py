#!/usr/bin/env python3
"""The parameters a multimodal model builds outside its language model, by name and shape, as
transformers builds it (meta device: no weights, no download). A layer index in a name becomes N and
the rows of one shape are counted, so a tower's structure reads in a few lines. Files given as
arguments; with --defaults TYPE ..., transformers' default config of each model_type too.

    python3 tower_shapes.py FILE.json ... [--defaults qwen2_vl ...]   # writes $OUT/towers.json
"""
import json
import os
import re
import shutil
import sys
import tempfile

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText, CONFIG_MAPPING


def build(config):
    with torch.device("meta"):
        try:
            return AutoModelForImageTextToText.from_config(config)
        except ValueError:
            return AutoModelForCausalLM.from_config(config)


def language_prefix(model):
    names = [n for n, _ in model.named_modules()]
    for candidate in ("model.language_model", "language_model", "model.text_model", "model"):
        if candidate in names and any(n.startswith(candidate + ".layers.") for n in names):
            return candidate + "."
    return None


def describe(config, label):
    row = {"file": label, "model_type": config.model_type}
    try:
        model = build(config)
        prefix = language_prefix(model)
        seen, total, language, shapes = set(), 0, 0, {}
        for name, param in model.named_parameters():
            if id(param) in seen:
                continue
            seen.add(id(param))
            total += param.numel()
            if prefix and name.startswith(prefix):
                language += param.numel()
                continue
            key = re.sub(r"\.\d+\.", ".N.", name) + " " + "x".join(map(str, param.shape))
            shapes[key] = shapes.get(key, 0) + 1
        vision = getattr(config, "vision_config", None)
        row.update(cls=type(model).__name__, params=total, language_prefix=prefix, language_params=language,
                   outside=shapes, vision_config=vision.to_dict() if vision is not None else None,
                   tie_word_embeddings=getattr(config, "tie_word_embeddings", None))
    except Exception as error:  # noqa: BLE001
        row["error"] = f"{type(error).__name__}: {error}"[:600]
    return row


def main(argv):
    files, defaults = argv, []
    if "--defaults" in argv:
        i = argv.index("--defaults")
        files, defaults = argv[:i], argv[i + 1:]
    rows = []
    for path in files:
        folder = tempfile.mkdtemp()
        shutil.copy(path, os.path.join(folder, "config.json"))
        try:
            rows.append(describe(AutoConfig.from_pretrained(folder), path))
        except Exception as error:  # noqa: BLE001
            rows.append({"file": path, "error": f"{type(error).__name__}: {error}"[:600]})
    for model_type in defaults:
        try:
            rows.append(describe(CONFIG_MAPPING[model_type](), "default:" + model_type))
        except Exception as error:  # noqa: BLE001
            rows.append({"file": "default:" + model_type, "error": f"{type(error).__name__}: {error}"[:600]})
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "towers.json"), "w"), indent=1)
    for row in rows:
        print(row["file"], row.get("cls"), row.get("params"), row.get("language_params"), row.get("error", ""))


if __name__ == "__main__":
    main(sys.argv[1:])

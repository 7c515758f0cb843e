#!/usr/bin/env python3
"""Every parameter of a multimodal config's whole model, vision tower and projector included, as
transformers builds it (AutoModelForImageTextToText on the meta device; no weights, no download).
remat's language-model count (`model.params`) plus the tower's (ModelSpec::idle_params, named in
its note) should equal this.

    python3 count_whole.py FILE.json ...   # writes $OUT/whole.json
"""
import json
import os
import shutil
import sys
import tempfile

import torch
from transformers import AutoConfig, AutoModelForImageTextToText


def count_whole(path):
    row = {"file": path}
    try:
        folder = tempfile.mkdtemp()
        shutil.copy(path, os.path.join(folder, "config.json"))
        config = AutoConfig.from_pretrained(folder)
        with torch.device("meta"):
            model = AutoModelForImageTextToText.from_config(config)
        seen, total, groups = set(), 0, {}
        for name, param in model.named_parameters():
            if id(param) in seen:
                continue
            seen.add(id(param))
            total += param.numel()
            key = ".".join(name.split(".")[:2])
            groups[key] = groups.get(key, 0) + param.numel()
        row.update(params=total, groups=groups, cls=type(model).__name__)
    except Exception as error:  # noqa: BLE001
        row["error"] = f"{type(error).__name__}: {error}"[:400]
    return row


if __name__ == "__main__":
    rows = [count_whole(path) for path in sys.argv[1:]]
    json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "whole.json"), "w"), indent=1)
    for row in rows:
        print(row["file"], row.get("params"), row.get("error", ""))

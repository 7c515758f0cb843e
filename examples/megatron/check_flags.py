#!/usr/bin/env python3
"""Runs Megatron-LM's own argument parsing and checks (parse_args,
validate_args, and the TransformerConfig built from them) on flag sets,
without starting training. Each line of the input file is one flag set:
"<gpus> <flags...>". Prints one JSON object per line: the flags, accepted or
the error Megatron raised.

Usage: PYTHONPATH=.megatron python3 examples/megatron/check_flags.py FILE
"""
import contextlib
import logging
import io
import json
import os
import shlex
import sys

logging.disable(logging.INFO)  # Megatron logs the parsed layout; only the JSON lines go to stdout


def check(gpus, flags):
    # every Megatron-LM launch sets CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args asserts it for tp > 1)
    os.environ.update(WORLD_SIZE=str(gpus), RANK="0", LOCAL_RANK="0", CUDA_DEVICE_MAX_CONNECTIONS="1")
    sys.argv = ["pretrain_gpt.py"] + flags
    from megatron.training.arguments import parse_args, validate_args
    from megatron.training.argument_utils import gpt_config_from_args
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            args = parse_args()
            validate_args(args, {"tokenizer_type": "NullTokenizer"})
            gpt_config_from_args(args)
        return {"accepted": True}
    except SystemExit as e:  # argparse refuses unknown or malformed flags
        return {"accepted": False, "error": sink.getvalue().strip().splitlines()[-1:] or [f"exit {e.code}"]}
    except Exception as e:  # validate_args asserts, TransformerConfig raises
        return {"accepted": False, "error": f"{type(e).__name__}: {e}"}

def flag_sets(path):
    """(gpus, flags) from a grid.json or from a file of "<gpus> <flags...>" lines."""
    if path.endswith(".json"):
        grid = json.load(open(path))
        return [(s["gpus"], grid["common_flags"] + s["flags"]) for s in grid["settings"]]
    sets = []
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            gpus, *flags = shlex.split(line)
            sets.append((int(gpus), flags))
    return sets

def main():
    for gpus, flags in flag_sets(sys.argv[1]):
        result = check(gpus, flags)
        print(json.dumps({"gpus": gpus, "flags": " ".join(flags), **result}), flush=True)

if __name__ == "__main__":
    main()

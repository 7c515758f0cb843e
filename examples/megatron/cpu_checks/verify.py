#!/usr/bin/env python3
"""Shows that check_flags.py under this folder's stand-ins gives Megatron-LM's own verdicts:
  - every flag set in the committed records (reports/megatron/flags-*.jsonl, checked on an H200)
    gets the same verdict;
  - every set in refused_sets.txt (an accepted set with one rule broken) is refused, with the
    expected error.
Exit 1 on any difference.

Usage: PYTHONPATH=examples/megatron/cpu_checks:.megatron:examples/megatron \
         /usr/bin/python3 examples/megatron/cpu_checks/verify.py reports/megatron/flags-*.jsonl
"""
import json
import os
import shlex
import sys

import check_flags

HERE = os.path.dirname(os.path.abspath(__file__))


def recorded_sets(paths):
    for path in paths:
        for line in open(path):
            record = json.loads(line)
            yield path, record["gpus"], shlex.split(record["flags"]), record["accepted"]


def refused_sets():
    for line in open(os.path.join(HERE, "refused_sets.txt")):
        if line.strip() and not line.startswith("#"):
            expected, _, flag_set = line.partition(" | ")
            gpus, *flags = shlex.split(flag_set)
            yield expected.strip(), int(gpus), flags


def main():
    differences = 0
    records = list(recorded_sets(sys.argv[1:]))
    for path, gpus, flags, accepted in records:
        result = check_flags.check(gpus, flags)
        if result["accepted"] != accepted:
            differences += 1
            print(f"DIFFERS {os.path.basename(path)}: recorded accepted={accepted}, here {result}")
    refused = list(refused_sets())
    for expected, gpus, flags in refused:
        result = check_flags.check(gpus, flags)
        error = " ".join(result.get("error", [])) if isinstance(result.get("error"), list) else result.get("error", "")
        if result["accepted"] or expected not in error:
            differences += 1
            print(f"NOT REFUSED as expected ('{expected}'): {result}")
        else:
            print(f"refused: {error[:160]}")
    print(f"{len(records)} recorded sets, {len(refused)} refused sets: {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())

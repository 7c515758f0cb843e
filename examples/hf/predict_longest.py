"""remat's longest sequence for each case of a longest_seq.py cases file (or of its output lines):
`remat plan --maximize seq --framework hf` with the case's settings, the row of its checkpointing
(none, or full for gradient checkpointing of every layer).

    python3 examples/hf/predict_longest.py CASES.json|OUT.jsonl --budget-gib 40 [--hardware h200] > predicted.tsv

A case names its LoRA targets (lora_targets, the module names handed to PEFT) where it trains LoRA."""
import argparse
import json
import subprocess
import sys


def plan_args(c, budget_gib, hardware):
    args = ["plan", "--maximize", "seq", "--model", c["config"], "--hardware", hardware, "--framework", "hf",
            "--tp", "1", "--pp", "1", "--mbs", "1", "--gbs", "1", "--format", "json",
            "--memory-budget-GiB", str(budget_gib), "--precision", c.get("precision", "bf16"),
            "--attention", c.get("attention", "sdpa"),
            "--replay", "full" if c.get("checkpointing") == "reentrant" else "early-stop"]
    if c.get("layers"):
        args += ["--num-layers", str(c["layers"])]
    if c.get("mode") == "lora":
        args += ["--lora-rank", str(c.get("lora_rank", 16)), "--lora-targets", ",".join(c["lora_targets"]),
                 "--lora-dropout", str(c.get("lora_dropout", 0.0))]
    objective = c.get("objective", "sft")
    if objective == "grpo":
        args += ["--objective", "grpo", "--grpo-group", str(c["grpo_group"]),
                 "--prompt-tokens", str(c["prompt_tokens"])]
    elif objective == "dpo":
        args += ["--objective", "dpo"]
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases")
    ap.add_argument("--budget-gib", type=float, required=True)
    ap.add_argument("--hardware", default="h200")
    ap.add_argument("--remat", default="./build/src/remat")
    a = ap.parse_args()
    text = open(a.cases).read()
    cases = json.loads(text) if text.lstrip().startswith("[") else [json.loads(l) for l in text.splitlines() if l]
    print("case\tpredicted_seq")
    for c in cases:
        r = subprocess.run([a.remat] + plan_args(c, a.budget_gib, a.hardware), capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{c['case']}\trefused: {r.stderr.strip().splitlines()[-1]}")
            continue
        want = "none" if c.get("checkpointing", "none") == "none" else "full"
        rows = [row for row in json.loads(r.stdout)["results"] if row["strategy"] == want]
        print(f"{c['case']}\t{rows[0]['value']}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

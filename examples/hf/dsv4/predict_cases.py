"""Prints remat's predicted step peak and bytes before the step for each case of a cases file, through
`remat validate --hf-run` on placeholder records (so the prediction takes the path a measured step
takes). Usage: python3 predict_cases.py CASES.json [REMAT] > predictions.tsv"""
import json
import subprocess
import sys
import tempfile

cases = json.load(open(sys.argv[1]))
remat = sys.argv[2] if len(sys.argv) > 2 else "./build/src/remat"
with tempfile.TemporaryDirectory() as tmp:
    steps = f"{tmp}/steps.jsonl"
    with open(steps, "w") as out:
        for c in cases:
            rec = {k: c.get(k) for k in ("case", "config", "seq", "mbs", "mode", "lora_rank", "lora_dropout",
                                         "checkpointing", "attention", "precision", "objective")}
            rec.update({"num_hidden_layers": c.get("layers") or json.load(open(c["config"]))["num_hidden_layers"],
                        "lora_targets": c.get("lora_targets", []), "grpo_group": c.get("grpo_group"),
                        "checkpoint_layers": c.get("checkpoint_layers"),
                        "gpu": "NVIDIA H200", "step": 3, "oom": False, "peak_allocated_bytes": 1,
                        "allocated_before_bytes": 1, "step_time_s": 1.0})
            out.write(json.dumps(rec) + "\n")
    subprocess.run([remat, "validate", "--hf-run", steps, "--json", f"{tmp}/v.json"], capture_output=True)
    for c in json.load(open(f"{tmp}/v.json"))["cases"]:
        p = c["predicted"]
        print(f"{c['case']}\t{p['peak_bytes'] / 2**30:.2f}\t{p['before_bytes'] / 2**30:.2f}")

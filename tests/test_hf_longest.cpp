// The longest sequence one Hugging Face training step fits under a cap of torch's allocator
// (examples/hf/longest_seq.py: binary search on the GPU in steps of 128 tokens, two steps per
// length, the second with AdamW's state), beside `remat plan --maximize seq --framework hf` with the
// same budget and settings. The measured longest lies in [longest_fitting_seq,
// shortest_failing_seq); the issue asks 5%.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "shell_run.hpp"

namespace {

const std::string kRoot = std::string(REMAT_TEST_DATA) + "/../";

// The plan arguments of one longest_seq.py record (the first H100 files predate lora_targets,
// precision and attention in the record: all seven matrices, bf16, sdpa).
std::vector<std::string> plan_args(const nlohmann::json& r, const std::string& hardware) {
  std::vector<std::string> args = {"plan",
                                   "--maximize",
                                   "seq",
                                   "--model",
                                   kRoot + r["config"].get<std::string>(),
                                   "--hardware",
                                   hardware,
                                   "--framework",
                                   "hf",
                                   "--tp",
                                   "1",
                                   "--pp",
                                   "1",
                                   "--mbs",
                                   "1",
                                   "--gbs",
                                   "1",
                                   "--format",
                                   "json",
                                   "--memory-budget-GiB",
                                   std::to_string(r["budget_bytes"].get<double>() / (1 << 30)),
                                   "--precision",
                                   r.value("precision", "bf16"),
                                   "--attention",
                                   r.value("attention", "sdpa"),
                                   "--replay",
                                   r["checkpointing"] == "reentrant" ? "full" : "early-stop"};
  if (r.contains("layers")) args.insert(args.end(), {"--num-layers", std::to_string(r["layers"].get<int>())});
  if (r["mode"] == "lora") {
    std::string targets = "q,k,v,o,gate,up,down";
    if (r.contains("lora_targets")) {
      targets.clear();
      for (const auto& t : r["lora_targets"]) targets += (targets.empty() ? "" : ",") + t.get<std::string>();
    }
    args.insert(args.end(), {"--lora-rank", std::to_string(r.value("lora_rank", 16)), "--lora-targets", targets});
  }
  if (r["objective"] == "grpo")
    args.insert(args.end(), {"--objective", "grpo", "--grpo-group", std::to_string(r["grpo_group"].get<int>()),
                             "--prompt-tokens", std::to_string(r["prompt_tokens"].get<int>())});
  if (r["objective"] == "dpo") args.insert(args.end(), {"--objective", "dpo"});
  return args;
}

struct Interval {
  std::string name;
  double predicted = 0, longest_fitting = 0, shortest_failing = 0;
};

// remat's longest sequence for every record of reports/hf/`file`, with the measured interval.
std::vector<Interval> predicted_longest(const std::string& file, const std::string& hardware) {
  std::vector<Interval> out;
  std::ifstream in(kRoot + "reports/hf/" + file);
  std::string line;
  while (std::getline(in, line)) {
    const auto r = nlohmann::json::parse(line);
    const auto run = remat::test::run_shell(remat::test::remat_command(plan_args(r, hardware)) + " 2>/dev/null");
    EXPECT_EQ(run.exit_code, 0) << r["case"];
    if (run.exit_code != 0) continue;
    Interval i{r["case"], 0, r["longest_fitting_seq"], r["shortest_failing_seq"]};
    const std::string strategy = r["checkpointing"] == "none" ? "none" : "full";
    const auto report = nlohmann::json::parse(run.out);
    for (const auto& row : report["results"])
      if (row["strategy"] == strategy) i.predicted = row["value"].get<double>();
    out.push_back(i);
  }
  return out;
}

// Every prediction within `pct` of the measured interval; `cases` in all.
void expect_within(const std::vector<Interval>& found, double pct, size_t cases) {
  for (const Interval& i : found) {
    EXPECT_GE(i.predicted, (1 - pct / 100) * i.longest_fitting) << i.name;
    EXPECT_LT(i.predicted, (1 + pct / 100) * i.shortest_failing) << i.name;
  }
  EXPECT_EQ(found.size(), cases);
}

// reports/hf/longest-h100-{a,b}.jsonl, under a 30 GiB cap: Llama-3.2-1B SFT, GRPO and DPO,
// Qwen3-4B and Mistral-7B SFT, full and LoRA, no and non-reentrant checkpointing, 2.4k to 58k
// tokens. Worst: -1.0% (Mistral LoRA, checkpointed, 58k tokens), +1.3% (Qwen3-4B full, checkpointed).
TEST(HfLongest, FirstH100Sets) {
  std::vector<Interval> all = predicted_longest("longest-h100-a.jsonl", "h100-sxm");
  for (const Interval& i : predicted_longest("longest-h100-b.jsonl", "h100-sxm")) all.push_back(i);
  expect_within(all, 2, 18);
}

// reports/hf/longest-blind-h200.jsonl (examples/hf/longest_blind/: cases and predictions written
// before they ran), under a 40 GiB cap on the H200: Gemma 3 1B, Qwen3-30B-A3B (4 layers), Qwen3.5-9B
// (its Gated DeltaNet in torch), Phi-3-mini mixed with reentrant LoRA, Llama 3.1 8B all-linear DPO,
// Mistral-Nemo eager, GPT-OSS-20B eager, LFM2 reentrant GRPO, OLMoE, Qwen2.5-VL all-linear, Granite
// MoE mixed, DeepSeek-V2-Lite's latent attention. As first compared 11 of 12 were within 1.7%;
// Phi-3-mini's (67k tokens, 1 GiB per s x s byte) was -11.7%: remat held three gradient copies of
// each layer's s x s sdpa bias, which takes no gradient, and missed the bool sliding-window mask the
// checkpoints keep. Both read from the traces now (-0.2%); the worst is +1.3% (Gemma 3 1B).
TEST(HfLongest, BlindH200Set) { expect_within(predicted_longest("longest-blind-h200.jsonl", "h200"), 2, 12); }

}  // namespace

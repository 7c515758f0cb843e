// remat-bench: runs the EAGLE paper's recompute blocks under none / standard / eagle / offload on
// the GPU and writes one measurements JSON (schema in src/cuda/README.md).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attention.hpp"
#include "bench.hpp"
#include "blocks.hpp"
#include "check.hpp"
#include "correctness.hpp"
#include "presets.hpp"

using nlohmann::json;
using namespace remat::cuda;

namespace {

json device_json() {
  int dev = 0, v = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  int sm_khz = 0, mem_khz = 0, bus = 0, drv = 0, rt = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, dev));
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  int lt_ver = int(cublasLtGetVersion());
  (void)v;
  const std::string name = p.name;
  const bool h200 = name.find("H200") != std::string::npos;
  return {{"name", name},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"memory_bytes", int64_t(p.totalGlobalMem)},
          {"l2_bytes", p.l2CacheSize},
          {"sm_clock_max_mhz", sm_khz / 1000},
          {"memory_clock_max_mhz", mem_khz / 1000},
          {"memory_bus_width_bits", bus},
          {"driver_version", drv},
          {"cuda_runtime_version", rt},
          {"cudnn_version", int64_t(cudnnGetVersion())},
          {"cublaslt_version", lt_ver},
          {"peak_bf16_dense_tflops", 989.0},
          {"peak_hbm_GBps", h200 ? 4800.0 : 3350.0},
          {"peak_source", "vendor datasheet (shared/REFERENCE.md)"}};
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"remat-bench: measure recompute blocks on the GPU"};
  std::string blocks = "rmsnorm_linear,mlp,moe,gqa,mla", strategies = "none,standard,eagle,offload";
  std::string seqs = "4096", out_path = "measurements.json", routing = "balanced", model_moe = "deepseek-v2";
  std::string git = "unknown", chunk_list = "1,4,16";
  RunOpts o;
  bool check = true, only_check = false, det = false;
  int op_gap_ms = 0;
  app.add_option("--blocks", blocks, "comma list of blocks");
  app.add_option("--strategies", strategies, "comma list of strategies");
  app.add_option("--seqs", seqs, "comma list of sequence lengths");
  app.add_option("--out", out_path, "output JSON");
  app.add_option("--routing", routing, "moe routing: balanced | router");
  app.add_option("--moe-model", model_moe, "deepseek-v2 | toy (paper E.2) for moe and mla");
  app.add_option("--warmup", o.warmup);
  app.add_option("--reps", o.reps);
  app.add_option("--profiled-reps", o.profiled_reps);
  app.add_option("--git-commit", git);
  app.add_option("--chunks", chunk_list, "streambp blocks (lm_head, streambp_layer): comma list of chunk counts");
  app.add_flag("!--no-check", check, "skip the small-dim correctness checks");
  app.add_flag("--only-check", only_check, "run the correctness checks only");
  app.add_flag("--deterministic-attention", det, "cuDNN attention backward without the dQ accumulator");
  app.add_option("--op-gap-ms", op_gap_ms,
                 "profiled reps: idle the GPU this long before each op (isolated kernel times; 0: back to back)");
  CLI11_PARSE(app, argc, argv);
  try {
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
      std::fprintf(stderr, "remat-bench: no CUDA device\n");
      return 2;
    }
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    Ctx c(int64_t(free_b) - (4ll << 30));
    c.set_op_gap_ms(op_gap_ms);
    json doc = {
        {"schema", "remat.gpu_measurements"}, {"schema_version", "1.0"}, {"tool", "remat-bench"}, {"git_commit", git},
        {"created_utc", utc_now()},           {"device", device_json()}};
    doc["settings"] = {{"warmup", o.warmup},
                       {"reps", o.reps},
                       {"profiled_reps", o.profiled_reps},
                       {"routing", routing},
                       {"deterministic_attention", det},
                       {"dtype", "bf16, fp32 accumulate"},
                       {"timer", "CUDA events, median of reps"},
                       {"op_gap_ms", op_gap_ms},
                       {"kernel_timing", op_gap_ms > 0 ? "isolated: each profiled op starts on an idle GPU"
                                                       : "in line: profiled ops run back to back"}};
    if (check) {
      bool recompute_blocks = false, streambp_blocks = false;
      for (const auto& b : split(blocks)) (is_streambp_block(b) ? streambp_blocks : recompute_blocks) = true;
      if (recompute_blocks) doc["correctness"] = run_correctness(c, o);
      if (streambp_blocks) doc["streambp_correctness"] = streambp_check(c, o, 4);
      std::fprintf(stderr, "correctness done\n");
    }
    json cases = json::array();
    if (!only_check) {
      for (const auto& s : split(seqs))
        for (const auto& b : split(blocks)) {
          Dims d = preset_dims(b, std::stoll(s), model_moe);
          d.routing = routing;
          d.deterministic_attention = det;
          std::vector<Strategy> sts;
          for (const auto& st : split(strategies)) sts.push_back(parse_strategy(st));
          auto t0 = std::chrono::steady_clock::now();
          std::vector<int64_t> chunk_counts{1};
          if (is_streambp_block(b)) {
            sts = {Strategy::streambp};
            chunk_counts.clear();
            for (const auto& n : split(chunk_list)) chunk_counts.push_back(std::stoll(n));
          }
          for (int64_t n : chunk_counts) {
            d.chunks = n;
            json rows = run_block(c, b, d, sts, o);
            for (auto& r : rows) {
              r["routing"] = b == "moe" ? routing : "n/a";
              cases.push_back(r);
            }
          }
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::fprintf(stderr, "%-15s s=%-6s done in %.1f s\n", b.c_str(), s.c_str(), wall);
          json partial = doc;
          partial["cases"] = cases;
          std::ofstream(out_path) << partial.dump(1);
        }
    }
    doc["attention_graph_variant"] = attn_variant_used();
    doc["attention_engines"] = attn_engines_used();
    doc["cases"] = cases;
    doc["summary"] = summarize(doc);
    std::ofstream(out_path) << doc.dump(1);
    std::fprintf(stderr, "wrote %s\n", out_path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "remat-bench: %s\n", e.what());
    return 3;
  }
  return 0;
}

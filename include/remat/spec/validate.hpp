#pragma once
// Checks of specs after parsing: each returns every problem it finds.
#include <cstdint>
#include <string>
#include <vector>

#include "remat/spec/hardware_spec.hpp"
#include "remat/spec/model_spec.hpp"
#include "remat/spec/plan.hpp"
#include "remat/spec/problems.hpp"
#include "remat/spec/training_spec.hpp"

namespace remat {

// Upper bounds of every dim, count and rate remat accepts: one to two orders
// of magnitude above the physical extremes it is built for (vocabulary 1e6,
// sequence 1e7, 1e5 GPUs, 1e4 experts, 1e3 layers), low enough that no
// integer product in the layout code can overflow int64 and byte counts stay
// far from 2^63. Values above are rejected with the key, the value and the bound.
namespace limits {
constexpr int64_t kHidden = 1'000'000;       // hidden_size
constexpr int64_t kFfn = 10'000'000;         // intermediate_size, moe_intermediate_size
constexpr int64_t kHeads = 100'000;          // attention heads, kv heads
constexpr int64_t kHeadDim = 100'000;        // head_dim, MLA ranks and head dims
constexpr int64_t kVocab = 100'000'000;      // vocab_size
constexpr int64_t kLayers = 100'000;         // num_hidden_layers, --num-layers, moe_layer_freq
constexpr int64_t kExperts = 1'000'000;      // n_routed_experts
constexpr int64_t kSharedExperts = 10'000;   // n_shared_experts
constexpr double kParamsB = 1e6;             // published_params_B, paper_params_B (1e15 parameters)
constexpr int64_t kParallel = 10'000'000;    // --tp, --pp, --dp, --ep each, and tp * pp * dp GPUs
constexpr int64_t kMbs = 100'000;            // --mbs
constexpr int64_t kSeq = 100'000'000;        // --seq
constexpr int64_t kTokens = 10'000'000'000;  // mbs * seq, tokens in one microbatch
constexpr int64_t kGbs = 1'000'000'000'000;  // --gbs (and the default 4 * pp * mbs * dp)
constexpr double kTflops = 1e6;              // peak_*_tflops (at least 1e-3)
constexpr double kMinRate = 1e-3;            // smallest TFLOP/s or GB/s accepted
constexpr double kGiB = 1e6;                 // hbm_GiB, memory_reserve_GiB, --memory-budget-GiB
constexpr double kGBps = 1e7;                // every *_GBps
constexpr int64_t kDomainGpus = 1'000'000;   // nvlink_domain_gpus
constexpr double kMinFraction = 1e-3;        // efficiency fractions lie in [1e-3, 1]
constexpr double kGemmFlops = 1e30;          // efficiency.gemm_by_flops[].flops
constexpr double kAttentionSeq = 1e9;        // efficiency.attention_by_seq[].seq
}  // namespace limits

std::vector<Problem> validate_model(const ModelSpec& m, const std::string& file);
std::vector<Problem> validate_hardware(const HardwareSpec& h, const std::string& file);
// Checks the layout against the model (tp divides heads, pp <= layers, ...).
std::vector<Problem> validate_training(const TrainingSpec& t, const ModelSpec& m);
std::vector<Problem> validate_plan(const Plan& p, const TrainingSpec& t, const ModelSpec& m);

// Layers of the model after the training spec's override.
int64_t effective_layers(const ModelSpec& m, const TrainingSpec& t);
// [first, last) layer per stage.
std::vector<std::pair<int64_t, int64_t>> stage_layer_ranges(const ModelSpec& m, const TrainingSpec& t);
// Fills gbs when left 0 (4 * pp microbatches per data-parallel rank); throws
// InputError naming --gbs when that product exceeds limits::kGbs.
TrainingSpec with_defaults(TrainingSpec t);

// a * b, or false when it overflows int64 or exceeds `limit`.
bool checked_product(int64_t a, int64_t b, int64_t limit, int64_t& out);

}  // namespace remat

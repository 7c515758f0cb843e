// transformers' activations written in Python (activations.py): what their autograd saves beside x,
// where a fused kernel saves x alone. Parts of the dense MLP blocks (exact_blocks.cpp).
#include <string>
#include <utility>
#include <vector>

#include "exact_ops.hpp"
#include "exact_parts.hpp"

namespace remat::parts {

using ops::kBf16;
using ops::kFp32;

namespace {

// transformers' activations written as Python formulas (activations.py) save their intermediates
// beside x, where fused kernels elsewhere save x alone (`bytes`: one bf16 intermediate-wide tensor):
// - NewGELUActivation ("gelu_new") and AccurateGELUActivation ("gelu_accurate"), 0.5 x (1 + tanh(..
//   pow(x, 3)..)): tanh's output, 1 + tanh and 0.5 x (Phi-1 on an H100: four blocks of the
//   intermediate's size a layer at that line, the output included). Under autocast torch.pow runs in
//   fp32: it saves its fp32 cast of x (the bf16 x is freed), and tanh's output and 1 + tanh are fp32
//   (GPT-J's mixed LoRA step: three fp32 and one bf16 blocks a layer, peak-traces-h200/unseen17);
// - FastGELUActivation ("gelu_fast"), 0.5 x (1 + tanh(x 0.798 (1 + 0.0447 x x))): six products and
//   sums, no autocast op (GPT-NeoX's one-layer LoRA step: six blocks at that line, unseen18);
// - QuickGELUActivation ("quick_gelu"), x sigmoid(1.702 x): sigmoid's output.
void add_formula_saves(Block& b, const RankShape& r, const std::string& act, double bytes) {
  std::vector<std::pair<std::string, double>> saved;
  if (act == "gelu_new" || act == "gelu_accurate") {
    const double fp32 = r.autocast ? bytes * kFp32 / kBf16 : bytes;
    if (r.autocast) {
      b.tensors.push_back({.name = "pre_act32", .bytes = fp32, .working_copies = 2});
      b.ops.back().saves = {"pre_act32"};
    }
    saved = {{"gelu_tanh", fp32}, {"gelu_one_plus_tanh", fp32}, {"gelu_half_x", bytes}};
  } else if (act == "gelu_fast") {
    for (const char* name :
         {"gelu_x_scaled", "gelu_cubic_coef", "gelu_inner", "gelu_tanh", "gelu_one_plus_tanh", "gelu_half_x"})
      saved.emplace_back(name, bytes);
  } else if (act == "quick_gelu") {
    saved = {{"gelu_sigmoid", bytes}};
  }
  // x enters FastGELU's formula four times: its backward holds the output's gradient, a product's
  // and x's accumulating one at once (GPT-NeoX's full reentrant step at 6k: three intermediate-wide
  // gradients beside the six saved blocks, peak-traces-h200/random-blind)
  const double copies = act == "gelu_fast" ? 3 : 2;
  for (const auto& [name, size] : saved) {
    b.tensors.push_back({.name = name, .bytes = size, .working_copies = copies});
    b.ops.back().saves.push_back(name);
  }
}

}  // namespace

void add_python_activation_saves(Block& b, const RankShape& r, const std::string& act, double rows_f) {
  const double bytes = rows_f * kBf16;
  add_formula_saves(b, r, act, bytes);
  // transformers' XIELUActivation without its CUDA wheel (_xielu_python, activations.py): where(x > 0,
  // alpha_p * x * x + beta * x, (expm1(min(x, eps)) - x) * alpha_n + beta * x). Autograd saves the bool
  // condition, alpha_p * x, expm1's output and expm1(..) - x beside x; about twelve elementwise kernels
  // each way. Those three are in the parameters' dtype: under autocast the one-element alpha_p, alpha_n
  // and eps are fp32 and promote the bf16 x (Apertus cut to 4, mixed, 4096 tokens: three 224 MiB
  // blocks a layer at those lines, peak-traces-h200/unseen9-followup, -2.92% while priced in bf16)
  if (act == "xielu") {
    OpDef& op = b.ops.back();
    op.fwd_bytes = 58 * rows_f, op.bwd_bytes = 90 * rows_f;
    b.tensors.push_back({.name = "xielu_positive", .bytes = rows_f, .working_copies = 2});
    op.saves.push_back("xielu_positive");
    // a frozen alpha_n (LoRA) needs no gradient: the product with it keeps only alpha_n, not
    // expm1(..) - x (Apertus's mixed LoRA step: one 224 MiB block a layer at that line, two in full)
    const double param_dtype_bytes = rows_f * (r.autocast ? kFp32 : kBf16);
    std::vector<const char*> saved = {"xielu_alpha_x", "xielu_expm1"};
    if (r.weights_train) saved.push_back("xielu_negative");
    for (const char* name : saved) {
      b.tensors.push_back({.name = name, .bytes = param_dtype_bytes, .working_copies = 2});
      op.saves.push_back(name);
    }
  }
}

}  // namespace remat::parts

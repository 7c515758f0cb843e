#pragma once
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Table 2: activation bytes per transformer layer of a
// GPT-style layer (MHA, 4h GeLU MLP, dropout), 16-bit activations.
namespace remat::korthikanti {

struct Dims {
  double s = 1;  // sequence length
  double b = 1;  // microbatch size
  double h = 1;  // hidden size
  double a = 1;  // attention heads
  double t = 1;  // tensor-parallel size
};

double no_parallelism(const Dims& x);             // sbh(34 + 5as/h)
double tensor_parallel(const Dims& x);            // sbh(10 + 24/t + 5as/(ht))
double tensor_sequence_parallel(const Dims& x);   // sbh/t (34 + 5as/h)
double selective_tensor_sequence(const Dims& x);  // 34 sbh / t
double full_recompute(const Dims& x);             // 2 sbh

}  // namespace remat::korthikanti

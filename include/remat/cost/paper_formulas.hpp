#pragma once
// The EAGLE paper's Table 1, term for term: kept memory (bytes, bf16) and
// forward+backward FLOPs of the five recompute modules under
// No Recomputation, Standard Recomputation and EAGLE.
#include <cstdint>

namespace remat::paper {

// Symbols of the paper's Table 5 (Appendix B).
struct Dims {
  double b = 1;     // batch size
  double s = 1;     // sequence length
  double h = 1;     // hidden size
  double h1 = 1;    // MLP (or MoE expert) intermediate size; RMSNorm+Linear output size
  double g = 1;     // GQA groups (kv heads)
  double d = 1;     // head dimension
  double a = 1;     // MLA attention heads
  double r = 0;     // MLA decoupled RoPE head dimension
  double h_q = 0;   // MLA query latent dimension
  double h_kv = 0;  // MLA key-value latent dimension
  double K = 1;     // MoE top-K
  double h_tilde() const { return h_q + h_kv + r; }  // Table 1 footnote
};

enum class Module { rmsnorm_linear, mlp, moe, gqa, mla };
enum class Method { none, standard, eagle };

struct Cell {
  double memory_bytes = 0;  // "Memory Usage" column
  double flops = 0;         // "FLOPs (F+B)" column
};

Cell rmsnorm_linear(const Dims& x, Method m);
Cell mlp(const Dims& x, Method m);
Cell moe(const Dims& x, Method m);
Cell gqa(const Dims& x, Method m);
Cell mla(const Dims& x, Method m);
Cell table1(Module module, const Dims& x, Method m);

}  // namespace remat::paper

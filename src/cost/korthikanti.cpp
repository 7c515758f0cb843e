#include "remat/cost/korthikanti.hpp"

namespace remat::korthikanti {

// Table 2 row "no parallelism": 34 sbh from linears, norms, dropout masks;
// 5as^2b from the attention scores, softmax and its dropout.
double no_parallelism(const Dims& x) { return x.s * x.b * x.h * (34 + 5 * x.a * x.s / x.h); }

// "tensor parallel (baseline)": norms and dropouts (10 sbh) stay replicated.
double tensor_parallel(const Dims& x) { return x.s * x.b * x.h * (10 + 24 / x.t + 5 * x.a * x.s / (x.h * x.t)); }

// "tensor + sequence parallel": every term split by t.
double tensor_sequence_parallel(const Dims& x) { return x.s * x.b * x.h / x.t * (34 + 5 * x.a * x.s / x.h); }

// "tensor + sequence parallel + selective activation recompute".
double selective_tensor_sequence(const Dims& x) { return 34 * x.s * x.b * x.h / x.t; }

// "full activation recompute": only the layer input.
double full_recompute(const Dims& x) { return 2 * x.s * x.b * x.h; }

}  // namespace remat::korthikanti

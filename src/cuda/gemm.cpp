#include "gemm.hpp"

#include <map>
#include <stdexcept>
#include <tuple>

#include "check.hpp"

namespace remat::cuda {

namespace {

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

using PlanKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

cublasLtMatrixLayout_t make_layout(int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                                          ld));
  return l;
}

Plan make_plan(Ctx& c, const PlanKey& key) {
  auto [ta, tb, m, n, k, lda, ldb, ldc, accumulate] = key;
  Plan p;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  p.a = ta ? make_layout(k, m, lda) : make_layout(m, k, lda);
  p.b = tb ? make_layout(n, k, ldb) : make_layout(k, n, ldb);
  p.c = make_layout(m, n, ldc);
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = static_cast<uint64_t>(c.lt_workspace_bytes());
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(c.lt(), p.desc, p.a, p.b, p.c, p.c, pref, 1, &res, &found));
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (found == 0) throw std::runtime_error("cuBLASLt: no algorithm for this GEMM shape");
  p.algo = res.algo;
  (void)accumulate;
  return p;
}

std::map<PlanKey, Plan>& plan_cache() {
  static std::map<PlanKey, Plan> cache;
  return cache;
}

}  // namespace

double gemm_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * double(m) * double(n) * double(k); }

double gemm_bytes(int64_t m, int64_t n, int64_t k, bool reads_c) {
  return 2.0 * (double(m) * k + double(k) * n + double(m) * n * (reads_c ? 2 : 1));
}

void gemm_cm(Ctx& c, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
             const void* b, int64_t ldb, void* cmat, int64_t ldc, float beta) {
  if (m == 0 || n == 0) return;
  PlanKey key{trans_a, trans_b, m, n, k, lda, ldb, ldc, beta != 0.f};
  auto& cache = plan_cache();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_plan(c, key)).first;
  const Plan& p = it->second;
  const float alpha = 1.f;
  CUBLAS_CHECK(cublasLtMatmul(c.lt(), p.desc, &alpha, a, p.a, b, p.b, &beta, cmat, p.c, cmat, p.c, &p.algo,
                              c.lt_workspace(), static_cast<size_t>(c.lt_workspace_bytes()), c.stream()));
}

void linear_fwd(Ctx& c, const std::string& name, const LinearShape& s, const void* x, const void* w, void* y,
                float beta) {
  const int64_t ldx = s.ld_x ? s.ld_x : s.in, ldy = s.ld_y ? s.ld_y : s.out;
  const bool log = !name.empty();
  if (log) c.op_begin({name, "gemm", s.tokens, s.out, s.in, gemm_flops(s.tokens, s.out, s.in),
                       gemm_bytes(s.tokens, s.out, s.in, beta != 0.f)});
  gemm_cm(c, true, false, s.out, s.tokens, s.in, w, s.in, x, ldx, y, ldy, beta);
  if (log) c.op_end();
}

void linear_bwd_data(Ctx& c, const std::string& name, const LinearShape& s, const void* dy, const void* w, void* dx,
                     float beta) {
  const int64_t ldx = s.ld_x ? s.ld_x : s.in, ldy = s.ld_y ? s.ld_y : s.out;
  const bool log = !name.empty();
  if (log) c.op_begin({name, "gemm", s.tokens, s.in, s.out, gemm_flops(s.tokens, s.in, s.out),
                       gemm_bytes(s.tokens, s.in, s.out, beta != 0.f)});
  gemm_cm(c, false, false, s.in, s.tokens, s.out, w, s.in, dy, ldy, dx, ldx, beta);
  if (log) c.op_end();
}

void linear_bwd_weight(Ctx& c, const std::string& name, const LinearShape& s, const void* dy, const void* x,
                       void* dw, float beta) {
  const int64_t ldx = s.ld_x ? s.ld_x : s.in, ldy = s.ld_y ? s.ld_y : s.out;
  const bool log = !name.empty();
  if (log) c.op_begin({name, "gemm", s.out, s.in, s.tokens, gemm_flops(s.out, s.in, s.tokens),
                       gemm_bytes(s.out, s.in, s.tokens, beta != 0.f)});
  gemm_cm(c, false, true, s.in, s.out, s.tokens, x, ldx, dy, ldy, dw, s.in, beta);
  if (log) c.op_end();
}

}  // namespace remat::cuda

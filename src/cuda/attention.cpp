#include "attention.hpp"

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include "check.hpp"

namespace remat::cuda {

namespace {

using DescPtr = std::shared_ptr<std::remove_pointer_t<cudnnBackendDescriptor_t>>;
using Dims4 = std::array<int64_t, 4>;

DescPtr make_desc(cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnBackendCreateDescriptor(t, &d));
  return DescPtr(d, [](cudnnBackendDescriptor_t p) { cudnnBackendDestroyDescriptor(p); });
}

void set_attr(const DescPtr& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
              const void* value, const char* what) {
  cudnnStatus_t st = cudnnBackendSetAttribute(d.get(), name, type, count, value);
  if (st != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuDNN call failed: cudnnBackendSetAttribute(") + what +
                             ", attribute " + std::to_string(int(name)) + ") -> " + cudnnGetErrorString(st));
}

void set_desc(const DescPtr& d, cudnnBackendAttributeName_t name, const DescPtr& v, const char* what) {
  cudnnBackendDescriptor_t raw = v.get();
  set_attr(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
}

void finalize(const DescPtr& d, const char* what) {
  cudnnStatus_t st = cudnnBackendFinalize(d.get());
  if (st != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuDNN call failed: cudnnBackendFinalize(") + what + ") -> " +
                             cudnnGetErrorString(st));
}

Dims4 packed(const Dims4& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

// How the causal mask's index and comparison tensors are typed: the backends of different cuDNN
// versions accept different typings, so the builder tries these in order.
struct MaskVariant {
  const char* name;
  cudnnDataType_t index_type, index_compute, cmp_compute;
};
const MaskVariant kVariants[] = {
    {"index_int32_cmp_bool", CUDNN_DATA_INT32, CUDNN_DATA_INT32, CUDNN_DATA_BOOLEAN},
    {"index_float_cmp_float", CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT},
    {"index_float_cmp_bool", CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DATA_BOOLEAN},
};
std::string g_variant_used = "none";

class GraphBuilder {
 public:
  explicit GraphBuilder(const MaskVariant& mv) : mv_(mv) {}

  DescPtr tensor(int64_t uid, cudnnDataType_t dt, const Dims4& dims, const Dims4& strides, bool is_virtual,
                 bool by_value = false) {
    DescPtr t = make_desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = 16;
    set_attr(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "tensor data type");
    set_attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), "tensor dims");
    set_attr(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), "tensor strides");
    set_attr(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    set_attr(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    set_attr(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, "tensor virtual");
    if (by_value) set_attr(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "tensor by value");
    finalize(t, "tensor");
    keep_.push_back(t);
    return t;
  }
  DescPtr virt(cudnnDataType_t dt, const Dims4& dims, const Dims4& strides) {
    return tensor(next_uid_++, dt, dims, strides, true);
  }
  DescPtr virt(cudnnDataType_t dt, const Dims4& dims) { return virt(dt, dims, packed(dims)); }

  void pointwise(cudnnPointwiseMode_t mode, const DescPtr& x, const DescPtr& b, const DescPtr& y,
                 const DescPtr& t = nullptr, cudnnDataType_t prec = CUDNN_DATA_FLOAT, int64_t axis = -1) {
    DescPtr pw = make_desc(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set_attr(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set_attr(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, "pointwise precision");
    if (axis >= 0) set_attr(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "pointwise axis");
    finalize(pw, "pointwise descriptor");
    DescPtr op = make_desc(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw, "pointwise op descriptor");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x, "pointwise x");
    if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b, "pointwise b");
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y, "pointwise y");
    if (t) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t, "pointwise t");
    finalize(op, "pointwise operation");
    keep_.push_back(pw);
    ops_.push_back(op);
  }
  DescPtr pw(cudnnPointwiseMode_t mode, const DescPtr& x, const DescPtr& b, cudnnDataType_t out_dt, const Dims4& dims,
             const Dims4& strides) {
    DescPtr y = virt(out_dt, dims, strides);
    pointwise(mode, x, b, y);
    return y;
  }
  void matmul(const DescPtr& a, const DescPtr& b, const DescPtr& c) {
    DescPtr mm = make_desc(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set_attr(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "matmul compute type");
    finalize(mm, "matmul descriptor");
    DescPtr op = make_desc(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a, "matmul a");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b, "matmul b");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c, "matmul c");
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm, "matmul descriptor");
    finalize(op, "matmul operation");
    keep_.push_back(mm);
    ops_.push_back(op);
  }
  void reduction(cudnnReduceTensorOp_t mode, const DescPtr& x, const DescPtr& y) {
    DescPtr rd = make_desc(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    set_attr(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "reduction mode");
    set_attr(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, "reduction compute type");
    finalize(rd, "reduction descriptor");
    DescPtr op = make_desc(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x, "reduction x");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y, "reduction y");
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd, "reduction descriptor");
    finalize(op, "reduction operation");
    keep_.push_back(rd);
    ops_.push_back(op);
  }
  void reshape(const DescPtr& x, const DescPtr& y) {
    DescPtr op = make_desc(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x, "reshape x");
    set_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y, "reshape y");
    finalize(op, "reshape operation");
    ops_.push_back(op);
  }
  // S' = causal(S): entries above the diagonal become neg_inf.
  DescPtr causal(const DescPtr& s, const DescPtr& neg_inf, const Dims4& dims) {
    DescPtr row = virt(mv_.index_type, dims), col = virt(mv_.index_type, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, row, nullptr, mv_.index_compute, 2);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, col, nullptr, mv_.index_compute, 3);
    DescPtr mask = virt(CUDNN_DATA_BOOLEAN, dims);
    pointwise(CUDNN_POINTWISE_CMP_GE, row, col, mask, nullptr, mv_.cmp_compute);
    DescPtr out = virt(CUDNN_DATA_FLOAT, dims);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, neg_inf, out, mask);
    return out;
  }
  // Operation graph, heuristics, then the first engine config whose plan finalizes.
  DescPtr build_plan(cudnnHandle_t handle, int64_t* workspace_bytes);

 private:
  MaskVariant mv_;
  int64_t next_uid_ = 1000;
  std::vector<DescPtr> keep_, ops_;
};

DescPtr GraphBuilder::build_plan(cudnnHandle_t handle, int64_t* workspace_bytes) {
  DescPtr graph = make_desc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& o : ops_) raw.push_back(o.get());
  set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()), raw.data(),
           "graph ops");
  set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  finalize(graph, "operation graph");
  DescPtr heur = make_desc(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph");
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
  finalize(heur, "engine heuristics");
  int64_t count = 0;
  CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                       &count, nullptr));
  std::vector<DescPtr> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw_cfgs;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.push_back(make_desc(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw_cfgs.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  if (count > 0)
    CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         count, &got, raw_cfgs.data()));
  for (int64_t i = 0; i < got; ++i) {
    DescPtr plan = make_desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
    set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i], "plan engine config");
    if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t ws = 0, n = 0;
    CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                         &ws));
    *workspace_bytes = ws;
    keep_.push_back(graph);
    keep_.push_back(heur);
    return plan;
  }
  throw std::runtime_error("cuDNN: no engine config finalizes for this attention graph (" +
                           std::to_string(count) + " configs from heuristics)");
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kScale, kNegInf, kOne, kSoftmaxSum, kDQAccum };

struct AttnPlan {
  DescPtr plan;
  std::shared_ptr<GraphBuilder> graph;
  int64_t plan_ws = 0;
  int64_t extra_ws = 0;  // softmax_sum and the dQ accumulator (backward)
};

int64_t align256(int64_t v) { return (v + 255) / 256 * 256; }

Dims4 transposed(const Dims4& v) { return {v[0], v[1], v[3], v[2]}; }

AttnPlan build_fwd(cudnnHandle_t h, const AttnDims& d, const MaskVariant& mv) {
  auto g = std::make_shared<GraphBuilder>(mv);
  const Dims4 qd{d.b, d.hq, d.s, d.dqk}, ktd{d.b, d.hk, d.dqk, d.s}, vd{d.b, d.hk, d.s, d.dv}, od{d.b, d.hq, d.s, d.dv};
  const Dims4 sd{d.b, d.hq, d.s, d.s}, rd{d.b, d.hq, d.s, 1}, one{1, 1, 1, 1};
  auto q = g->tensor(kQ, CUDNN_DATA_BFLOAT16, qd, d.q_stride, false);
  auto kt = g->tensor(kK, CUDNN_DATA_BFLOAT16, ktd, transposed(d.k_stride), false);
  auto v = g->tensor(kV, CUDNN_DATA_BFLOAT16, vd, d.v_stride, false);
  auto o = g->tensor(kO, CUDNN_DATA_BFLOAT16, od, d.o_stride, false);
  auto stats = g->tensor(kStats, CUDNN_DATA_FLOAT, rd, packed(rd), false);
  auto scale = g->tensor(kScale, CUDNN_DATA_FLOAT, one, one, false, true);
  auto neg_inf = g->tensor(kNegInf, CUDNN_DATA_FLOAT, one, one, false, true);
  auto s = g->virt(CUDNN_DATA_FLOAT, sd);
  g->matmul(q, kt, s);
  auto s2 = g->pw(CUDNN_POINTWISE_MUL, s, scale, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto s3 = g->causal(s2, neg_inf, sd);
  auto mx = g->virt(CUDNN_DATA_FLOAT, rd);
  g->reduction(CUDNN_REDUCE_TENSOR_MAX, s3, mx);
  auto sub = g->pw(CUDNN_POINTWISE_SUB, s3, mx, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto ex = g->virt(CUDNN_DATA_FLOAT, sd);
  g->pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, ex);
  auto sum = g->virt(CUDNN_DATA_FLOAT, rd);
  g->reduction(CUDNN_REDUCE_TENSOR_ADD, ex, sum);
  auto lg = g->virt(CUDNN_DATA_FLOAT, rd);
  g->pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
  g->pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
  auto p = g->pw(CUDNN_POINTWISE_DIV, ex, sum, CUDNN_DATA_BFLOAT16, sd, packed(sd));
  g->matmul(p, v, o);
  AttnPlan ap;
  ap.plan = g->build_plan(h, &ap.plan_ws);
  ap.graph = g;
  return ap;
}

// dK or dV: straight into the output when heads match, else per query head then summed (GQA).
void grad_kv(GraphBuilder& g, const DescPtr& a, const DescPtr& b, const DescPtr& out, const AttnDims& d,
             int64_t dim) {
  if (d.hq == d.hk) {
    g.matmul(a, b, out);
    return;
  }
  auto full = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hq, d.s, dim});
  g.matmul(a, b, full);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
}

AttnPlan build_bwd(cudnnHandle_t h, const AttnDims& d, const MaskVariant& mv) {
  auto gp = std::make_shared<GraphBuilder>(mv);
  GraphBuilder& g = *gp;
  const Dims4 qd{d.b, d.hq, d.s, d.dqk}, ktd{d.b, d.hk, d.dqk, d.s}, vtd{d.b, d.hk, d.dv, d.s};
  const Dims4 od{d.b, d.hq, d.s, d.dv}, sd{d.b, d.hq, d.s, d.s}, rd{d.b, d.hq, d.s, 1}, one{1, 1, 1, 1};
  const Dims4 st_stride{d.hq * d.s * d.s, d.s * d.s, 1, d.s};
  auto q = g.tensor(kQ, CUDNN_DATA_BFLOAT16, qd, d.q_stride, false);
  auto kt = g.tensor(kK, CUDNN_DATA_BFLOAT16, ktd, transposed(d.k_stride), false);
  auto vt = g.tensor(kV, CUDNN_DATA_BFLOAT16, vtd, transposed(d.v_stride), false);
  auto o = g.tensor(kO, CUDNN_DATA_BFLOAT16, od, d.o_stride, false);
  auto dout = g.tensor(kDO, CUDNN_DATA_BFLOAT16, od, d.o_stride, false);
  auto stats = g.tensor(kStats, CUDNN_DATA_FLOAT, rd, packed(rd), false);
  auto dq = g.tensor(kDQ, CUDNN_DATA_BFLOAT16, qd, d.q_stride, false);
  auto dk = g.tensor(kDK, CUDNN_DATA_BFLOAT16, {d.b, d.hk, d.s, d.dqk}, d.k_stride, false);
  auto dv = g.tensor(kDV, CUDNN_DATA_BFLOAT16, {d.b, d.hk, d.s, d.dv}, d.v_stride, false);
  auto scale = g.tensor(kScale, CUDNN_DATA_FLOAT, one, one, false, true);
  auto neg_inf = g.tensor(kNegInf, CUDNN_DATA_FLOAT, one, one, false, true);
  auto one_t = g.tensor(kOne, CUDNN_DATA_FLOAT, one, one, false, true);
  auto softmax_sum = g.tensor(kSoftmaxSum, CUDNN_DATA_FLOAT, rd, packed(rd), false);
  // softmax_sum = rowsum(dO * O)
  auto dood = g.pw(CUDNN_POINTWISE_MUL, dout, o, CUDNN_DATA_FLOAT, od, packed(od));
  auto red = g.virt(CUDNN_DATA_FLOAT, rd);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, dood, red);
  g.pointwise(CUDNN_POINTWISE_MUL, red, one_t, softmax_sum);
  // P = exp(causal(scale * Q K^T) - stats)
  auto s = g.virt(CUDNN_DATA_FLOAT, sd);
  g.matmul(q, kt, s);
  auto s2 = g.pw(CUDNN_POINTWISE_MUL, s, scale, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto s3 = g.pw(CUDNN_POINTWISE_SUB, s2, stats, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto s4 = g.causal(s3, neg_inf, sd);
  auto p = g.virt(CUDNN_DATA_FLOAT, sd);
  g.pointwise(CUDNN_POINTWISE_EXP, s4, nullptr, p);
  // dV = P^T dO
  auto pt = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hq, d.s, d.s}, st_stride);
  g.reshape(p, pt);
  grad_kv(g, pt, dout, dv, d, d.dv);
  // dS = scale * P * (dO V^T - softmax_sum)
  auto dp = g.virt(CUDNN_DATA_FLOAT, sd);
  g.matmul(dout, vt, dp);
  auto dp2 = g.pw(CUDNN_POINTWISE_SUB, dp, softmax_sum, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto ds = g.pw(CUDNN_POINTWISE_MUL, dp2, p, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto ds2 = g.pw(CUDNN_POINTWISE_MUL, ds, scale, CUDNN_DATA_FLOAT, sd, packed(sd));
  // dK = dS^T Q
  auto dst = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hq, d.s, d.s}, st_stride);
  g.reshape(ds2, dst);
  grad_kv(g, dst, q, dk, d, d.dqk);
  // dQ = dS K
  auto kk = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hk, d.s, d.dqk}, d.k_stride);
  g.reshape(kt, kk);
  AttnPlan ap;
  if (d.deterministic) {
    g.matmul(ds2, kk, dq);
  } else {
    auto acc = g.tensor(kDQAccum, CUDNN_DATA_FLOAT, qd, packed(qd), false);
    g.matmul(ds2, kk, acc);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, acc, nullptr, dq);
    ap.extra_ws = align256(d.b * d.hq * d.s * d.dqk * 4);
  }
  ap.extra_ws += align256(d.b * d.hq * d.s * 4);
  ap.plan = g.build_plan(h, &ap.plan_ws);
  ap.graph = gp;
  return ap;
}

using PlanKey = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, Dims4, Dims4, Dims4, Dims4,
                           bool>;

AttnPlan& get_plan(Ctx& c, const AttnDims& d, bool backward) {
  static std::map<PlanKey, AttnPlan> cache;
  PlanKey key{backward, d.b, d.hq, d.hk, d.s, d.dqk, d.dv, d.q_stride, d.k_stride, d.v_stride, d.o_stride,
              d.deterministic};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::string errors;
  for (const auto& mv : kVariants) {
    try {
      AttnPlan ap = backward ? build_bwd(c.dnn(), d, mv) : build_fwd(c.dnn(), d, mv);
      g_variant_used = mv.name;
      return cache.emplace(key, std::move(ap)).first->second;
    } catch (const std::exception& e) {
      errors += std::string("\n  variant ") + mv.name + ": " + e.what();
    }
  }
  throw std::runtime_error(std::string("cuDNN SDPA ") + (backward ? "backward" : "forward") +
                           " graph could not be built:" + errors);
}

void execute(Ctx& c, const AttnPlan& ap, std::vector<int64_t> uids, std::vector<void*> ptrs, void* ws) {
  DescPtr pack = make_desc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data(),
           "variant pack uids");
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data(),
           "variant pack pointers");
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "variant pack workspace");
  finalize(pack, "variant pack");
  CUDNN_CHECK(cudnnBackendExecute(c.dnn(), ap.plan.get(), pack.get()));
}

constexpr float kNegInfValue = -1073741824.f;  // large negative, as the cuDNN frontend uses

}  // namespace

float AttnDims::scale() const { return 1.f / std::sqrt(float(dqk)); }

std::array<int64_t, 4> bshd_strides(int64_t s, int64_t d, int64_t row_elems) {
  return {s * row_elems, d, row_elems, 1};
}

std::string attn_variant_used() { return g_variant_used; }

double attn_fwd_flops(const AttnDims& d) {
  const double dh = 0.5 * double(d.dqk + d.dv);
  return 4.0 * double(d.b) * double(d.s) * double(d.s) * dh * double(d.hq) / 2.0;
}
double attn_bwd_flops(const AttnDims& d) { return 2.5 * attn_fwd_flops(d); }

int64_t attn_fwd_workspace_bytes(Ctx& c, const AttnDims& d) { return get_plan(c, d, false).plan_ws; }

int64_t attn_bwd_workspace_bytes(Ctx& c, const AttnDims& d) {
  const AttnPlan& ap = get_plan(c, d, true);
  return align256(ap.plan_ws) + ap.extra_ws;
}

void attn_fwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v,
              void* o, float* stats, void* workspace) {
  const AttnPlan& ap = get_plan(c, d, false);
  float scale = d.scale(), neg_inf = kNegInfValue;
  const double bytes = 2.0 * d.b * d.s * (d.hq * d.dqk + d.hk * (d.dqk + d.dv) + d.hq * d.dv) + 4.0 * d.b * d.hq * d.s;
  OpScope op(c, {name, "attention_fwd", d.s, d.s, d.dqk, attn_fwd_flops(d), bytes});
  execute(c, ap, {kQ, kK, kV, kO, kStats, kScale, kNegInf},
          {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, stats, &scale, &neg_inf}, workspace);
}

void attn_bwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v,
              const void* o, const void* dout, const float* stats, void* dq, void* dk, void* dv, void* workspace) {
  const AttnPlan& ap = get_plan(c, d, true);
  float scale = d.scale(), neg_inf = kNegInfValue, one = 1.f;
  char* ws = static_cast<char*>(workspace);
  char* extra = ws + align256(ap.plan_ws);
  void* softmax_sum = extra;
  void* dq_acc = extra + align256(d.b * d.hq * d.s * 4);
  std::vector<int64_t> uids{kQ, kK, kV, kO, kDO, kStats, kDQ, kDK, kDV, kScale, kNegInf, kOne, kSoftmaxSum};
  std::vector<void*> ptrs{const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), const_cast<void*>(o),
                          const_cast<void*>(dout), const_cast<float*>(stats), dq, dk, dv, &scale, &neg_inf, &one,
                          softmax_sum};
  const double bytes =
      2.0 * d.b * d.s * 2 * (d.hq * d.dqk + d.hk * (d.dqk + d.dv) + d.hq * d.dv) + 4.0 * d.b * d.hq * d.s;
  OpScope op(c, {name, "attention_bwd", d.s, d.s, d.dqk, attn_bwd_flops(d), bytes});
  if (!d.deterministic) {
    uids.push_back(kDQAccum);
    ptrs.push_back(dq_acc);
    if (cudnnGetVersion() < 90600)
      CUDA_CHECK(cudaMemsetAsync(dq_acc, 0, size_t(d.b * d.hq * d.s * d.dqk * 4), c.stream()));
  }
  execute(c, ap, uids, ptrs, ws);
}

}  // namespace remat::cuda

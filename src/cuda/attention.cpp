#include "attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
    throw std::runtime_error(std::string("cuDNN call failed: cudnnBackendSetAttribute(") + what + ", attribute " +
                             std::to_string(int(name)) + ") -> " + cudnnGetErrorString(st));
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
std::string g_engines_used;

// An execution plan the autotuner may pick: its workspace and where it came from.
struct PlanCand {
  DescPtr plan;
  int64_t ws = 0;
  std::string label;
};

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
  // S' = causal(S): entries above the diagonal become neg_inf. With `skv`/`sq` (by-value scalars,
  // given when the keys outnumber the queries) the diagonal is aligned bottom-right: the row index
  // is shifted by skv - sq before the comparison, as the cuDNN frontend builds it.
  DescPtr causal(const DescPtr& s, const DescPtr& neg_inf, const Dims4& dims, const DescPtr& skv = nullptr,
                 const DescPtr& sq = nullptr) {
    DescPtr row = virt(mv_.index_type, dims), col = virt(mv_.index_type, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, row, nullptr, mv_.index_compute, 2);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, col, nullptr, mv_.index_compute, 3);
    if (skv && sq) {
      DescPtr plus = virt(mv_.index_type, dims), shifted = virt(mv_.index_type, dims);
      pointwise(CUDNN_POINTWISE_ADD, row, skv, plus, nullptr, mv_.index_compute, 3);
      pointwise(CUDNN_POINTWISE_SUB, plus, sq, shifted, nullptr, mv_.index_compute, 3);
      row = shifted;
    }
    DescPtr mask = virt(CUDNN_DATA_BOOLEAN, dims);
    pointwise(CUDNN_POINTWISE_CMP_GE, row, col, mask, nullptr, mv_.cmp_compute);
    DescPtr out = virt(CUDNN_DATA_FLOAT, dims);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, neg_inf, out, mask);
    return out;
  }
  // The by-value scalars of a bottom-right mask (null when skv = s).
  std::pair<DescPtr, DescPtr> offset_scalars(const AttnDims& d, int64_t skv_uid, int64_t sq_uid) {
    if (d.kv_len() == d.s) return {nullptr, nullptr};
    const Dims4 one{1, 1, 1, 1};
    return {tensor(skv_uid, mv_.index_type, one, one, false, true),
            tensor(sq_uid, mv_.index_type, one, one, false, true)};
  }
  // Operation graph, heuristics, then the first engine config whose plan finalizes (mode A's
  // order); every other config that finalizes goes to `cands` for the autotuner (see tune()).
  DescPtr build_plan(cudnnHandle_t handle, int64_t* workspace_bytes, std::vector<PlanCand>* cands);

 private:
  MaskVariant mv_;
  int64_t next_uid_ = 1000;
  std::vector<DescPtr> keep_, ops_;
};

namespace {
int64_t engine_index(const DescPtr& cfg) {
  DescPtr eng = make_desc(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = eng.get();
  int64_t n = 0, idx = -1;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw) !=
      CUDNN_STATUS_SUCCESS)
    return -1;
  cudnnBackendGetAttribute(eng.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &idx);
  return idx;
}

std::vector<DescPtr> heuristic_cfgs(const DescPtr& graph, cudnnBackendHeurMode_t mode) {
  std::vector<DescPtr> cfgs;
  DescPtr heur = make_desc(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph");
  set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return cfgs;
  int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS)
    return cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.push_back(make_desc(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  if (count > 0 && cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                            count, &got, raw.data()) != CUDNN_STATUS_SUCCESS)
    got = 0;
  cfgs.resize(size_t(got));
  return cfgs;
}

// Engine `index` with at most one knob set (type < 0: the engine's defaults); null if it does not finalize.
DescPtr engine_cfg(const DescPtr& graph, int64_t index, int64_t knob_type, int64_t knob_value,
                   std::vector<DescPtr>* keep) {
  DescPtr eng = make_desc(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  set_desc(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph, "engine graph");
  set_attr(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index, "engine index");
  if (cudnnBackendFinalize(eng.get()) != CUDNN_STATUS_SUCCESS) return nullptr;
  DescPtr cfg = make_desc(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  set_desc(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, eng, "engine config engine");
  if (knob_type >= 0) {
    DescPtr kc = make_desc(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    cudnnBackendKnobType_t kt = cudnnBackendKnobType_t(knob_type);
    if (cudnnBackendSetAttribute(kc.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &kt) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(kc.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &knob_value) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(kc.get()) != CUDNN_STATUS_SUCCESS)
      return nullptr;
    cudnnBackendDescriptor_t raw = kc.get();
    if (cudnnBackendSetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &raw) != CUDNN_STATUS_SUCCESS)
      return nullptr;
    keep->push_back(kc);
  }
  if (cudnnBackendFinalize(cfg.get()) != CUDNN_STATUS_SUCCESS) return nullptr;
  keep->push_back(eng);
  return cfg;
}

// The knobs of engine `index`: (type, min, max, stride) each.
std::vector<std::array<int64_t, 4>> engine_knobs(const DescPtr& graph, int64_t index) {
  std::vector<std::array<int64_t, 4>> out;
  DescPtr eng = make_desc(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  set_desc(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph, "engine graph");
  set_attr(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index, "engine index");
  if (cudnnBackendFinalize(eng.get()) != CUDNN_STATUS_SUCCESS) return out;
  std::vector<DescPtr> infos;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    infos.push_back(make_desc(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR));
    raw.push_back(infos.back().get());
  }
  int64_t n = 0;
  if (cudnnBackendGetAttribute(eng.get(), CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               int64_t(raw.size()), &n, raw.data()) != CUDNN_STATUS_SUCCESS)
    return out;
  for (int64_t i = 0; i < n && i < int64_t(infos.size()); ++i) {
    cudnnBackendKnobType_t kt{};
    int64_t c = 0, mn = 0, mx = 0, st = 1;
    cudnnBackendGetAttribute(infos[i].get(), CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &c, &kt);
    cudnnBackendGetAttribute(infos[i].get(), CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &c, &mn);
    cudnnBackendGetAttribute(infos[i].get(), CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &c, &mx);
    cudnnBackendGetAttribute(infos[i].get(), CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &c, &st);
    out.push_back({int64_t(kt), mn, mx, st > 0 ? st : 1});
  }
  return out;
}
}  // namespace

bool autotune_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("REMAT_ATTN_TUNE");
    return v && std::string(v) == "1";
  }();
  return on;
}

DescPtr GraphBuilder::build_plan(cudnnHandle_t handle, int64_t* workspace_bytes, std::vector<PlanCand>* cands) {
  DescPtr graph = make_desc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (auto& o : ops_) raw.push_back(o.get());
  set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()), raw.data(),
           "graph ops");
  set_attr(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  finalize(graph, "operation graph");
  keep_.push_back(graph);
  auto make_plan = [&](const DescPtr& cfg, int64_t* ws) -> DescPtr {
    DescPtr plan = make_desc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set_attr(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
    set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg, "plan engine config");
    if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) return nullptr;
    int64_t n = 0;
    CUDNN_CHECK(
        cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, ws));
    return plan;
  };
  const std::vector<DescPtr> cfgs = heuristic_cfgs(graph, CUDNN_HEUR_MODE_A);
  DescPtr chosen;
  for (const auto& cfg : cfgs) {
    int64_t ws = 0;
    chosen = make_plan(cfg, &ws);
    if (!chosen) continue;
    *workspace_bytes = ws;
    keep_.push_back(cfg);
    if (cands) cands->push_back({chosen, ws, "A:eng" + std::to_string(engine_index(cfg))});
    break;
  }
  if (!chosen)
    throw std::runtime_error("cuDNN: no engine config finalizes for this attention graph (" +
                             std::to_string(cfgs.size()) + " configs from heuristics)");
  if (!cands || !autotune_enabled()) return chosen;
  // Candidates for the autotuner: every config of heuristics A, B and fallback, and every
  // engine of the graph with its default knobs and with each knob set to each of its values.
  auto add = [&](const DescPtr& cfg, const std::string& label) {
    if (!cfg || cands->size() >= 64) return;
    int64_t ws = 0;
    DescPtr p = make_plan(cfg, &ws);
    if (!p) return;
    keep_.push_back(cfg);
    cands->push_back({p, ws, label});
  };
  for (auto [mode, tag] : {std::pair{CUDNN_HEUR_MODE_A, "A"}, std::pair{CUDNN_HEUR_MODE_B, "B"},
                           std::pair{CUDNN_HEUR_MODE_FALLBACK, "F"}}) {
    const auto list = mode == CUDNN_HEUR_MODE_A ? cfgs : heuristic_cfgs(graph, mode);
    for (size_t i = (mode == CUDNN_HEUR_MODE_A ? 1 : 0); i < list.size(); ++i)
      add(list[i], std::string(tag) + ":eng" + std::to_string(engine_index(list[i])));
  }
  int64_t engines = 0, n = 0;
  cudnnBackendGetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &n,
                           &engines);
  for (int64_t e = 0; e < engines && e < 64; ++e) {
    add(engine_cfg(graph, e, -1, 0, &keep_), "eng" + std::to_string(e));
    for (const auto& k : engine_knobs(graph, e)) {
      int vals = 0;
      for (int64_t v = k[1]; v <= k[2] && vals < 8; v += k[3], ++vals)
        add(engine_cfg(graph, e, k[0], v, &keep_),
            "eng" + std::to_string(e) + ":knob" + std::to_string(k[0]) + "=" + std::to_string(v));
    }
  }
  return chosen;
}

enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kScale,
  kNegInf,
  kOne,
  kSoftmaxSum,
  kDQAccum,
  kSkv,
  kSq
};

struct AttnPlan {
  DescPtr plan;
  std::vector<PlanCand> cands;  // cands[0] is `plan` (heuristics A's first); cleared once tuned
  std::string label;
  std::shared_ptr<GraphBuilder> graph;
  int64_t plan_ws = 0;
  int64_t extra_ws = 0;   // softmax_sum and the dQ accumulator (backward)
  bool int_index = true;  // the mask variant's index type (the bottom-right scalars' type)
};

// Host values of the bottom-right mask's by-value scalars, typed as the graph's index tensors.
struct OffsetValues {
  int32_t skv_i = 0, sq_i = 0;
  float skv_f = 0, sq_f = 0;
  bool used = false, as_int = true;
  OffsetValues(const AttnDims& d, const AttnPlan& ap)
      : skv_i(int32_t(d.kv_len())),
        sq_i(int32_t(d.s)),
        skv_f(float(d.kv_len())),
        sq_f(float(d.s)),
        used(d.kv_len() != d.s),
        as_int(ap.int_index) {}
  void add_to(std::vector<int64_t>& uids, std::vector<void*>& ptrs) {
    if (!used) return;
    uids.push_back(kSkv), uids.push_back(kSq);
    ptrs.push_back(as_int ? static_cast<void*>(&skv_i) : static_cast<void*>(&skv_f));
    ptrs.push_back(as_int ? static_cast<void*>(&sq_i) : static_cast<void*>(&sq_f));
  }
};

int64_t align256(int64_t v) { return (v + 255) / 256 * 256; }

Dims4 transposed(const Dims4& v) { return {v[0], v[1], v[3], v[2]}; }

AttnPlan build_fwd(cudnnHandle_t h, const AttnDims& d, const MaskVariant& mv) {
  auto g = std::make_shared<GraphBuilder>(mv);
  const int64_t skv = d.kv_len();
  const Dims4 qd{d.b, d.hq, d.s, d.dqk}, ktd{d.b, d.hk, d.dqk, skv}, vd{d.b, d.hk, skv, d.dv}, od{d.b, d.hq, d.s, d.dv};
  const Dims4 sd{d.b, d.hq, d.s, skv}, rd{d.b, d.hq, d.s, 1}, one{1, 1, 1, 1};
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
  const auto [skv_t, sq_t] = g->offset_scalars(d, kSkv, kSq);
  auto s3 = g->causal(s2, neg_inf, sd, skv_t, sq_t);
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
  ap.plan = g->build_plan(h, &ap.plan_ws, &ap.cands);
  ap.graph = g;
  return ap;
}

// dK or dV: straight into the output when heads match, else per query head then summed (GQA).
void grad_kv(GraphBuilder& g, const DescPtr& a, const DescPtr& b, const DescPtr& out, const AttnDims& d, int64_t dim) {
  if (d.hq == d.hk) {
    g.matmul(a, b, out);
    return;
  }
  auto full = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hq, d.kv_len(), dim});
  g.matmul(a, b, full);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
}

AttnPlan build_bwd(cudnnHandle_t h, const AttnDims& d, const MaskVariant& mv) {
  auto gp = std::make_shared<GraphBuilder>(mv);
  GraphBuilder& g = *gp;
  const int64_t skv = d.kv_len();
  const Dims4 qd{d.b, d.hq, d.s, d.dqk}, ktd{d.b, d.hk, d.dqk, skv}, vtd{d.b, d.hk, d.dv, skv};
  const Dims4 od{d.b, d.hq, d.s, d.dv}, sd{d.b, d.hq, d.s, skv}, rd{d.b, d.hq, d.s, 1}, one{1, 1, 1, 1};
  const Dims4 st_dims{d.b, d.hq, skv, d.s}, st_stride{d.hq * d.s * skv, d.s * skv, 1, skv};
  auto q = g.tensor(kQ, CUDNN_DATA_BFLOAT16, qd, d.q_stride, false);
  auto kt = g.tensor(kK, CUDNN_DATA_BFLOAT16, ktd, transposed(d.k_stride), false);
  auto vt = g.tensor(kV, CUDNN_DATA_BFLOAT16, vtd, transposed(d.v_stride), false);
  auto o = g.tensor(kO, CUDNN_DATA_BFLOAT16, od, d.o_stride, false);
  auto dout = g.tensor(kDO, CUDNN_DATA_BFLOAT16, od, d.o_stride, false);
  auto stats = g.tensor(kStats, CUDNN_DATA_FLOAT, rd, packed(rd), false);
  auto dq = g.tensor(kDQ, CUDNN_DATA_BFLOAT16, qd, d.q_stride, false);
  auto dk = g.tensor(kDK, CUDNN_DATA_BFLOAT16, {d.b, d.hk, skv, d.dqk}, d.k_stride, false);
  auto dv = g.tensor(kDV, CUDNN_DATA_BFLOAT16, {d.b, d.hk, skv, d.dv}, d.v_stride, false);
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
  const auto [skv_t, sq_t] = g.offset_scalars(d, kSkv, kSq);
  auto s4 = g.causal(s3, neg_inf, sd, skv_t, sq_t);
  auto p = g.virt(CUDNN_DATA_FLOAT, sd);
  g.pointwise(CUDNN_POINTWISE_EXP, s4, nullptr, p);
  // dV = P^T dO
  auto pt = g.virt(CUDNN_DATA_BFLOAT16, st_dims, st_stride);
  g.reshape(p, pt);
  grad_kv(g, pt, dout, dv, d, d.dv);
  // dS = scale * P * (dO V^T - softmax_sum)
  auto dp = g.virt(CUDNN_DATA_FLOAT, sd);
  g.matmul(dout, vt, dp);
  auto dp2 = g.pw(CUDNN_POINTWISE_SUB, dp, softmax_sum, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto ds = g.pw(CUDNN_POINTWISE_MUL, dp2, p, CUDNN_DATA_FLOAT, sd, packed(sd));
  auto ds2 = g.pw(CUDNN_POINTWISE_MUL, ds, scale, CUDNN_DATA_FLOAT, sd, packed(sd));
  // dK = dS^T Q
  auto dst = g.virt(CUDNN_DATA_BFLOAT16, st_dims, st_stride);
  g.reshape(ds2, dst);
  grad_kv(g, dst, q, dk, d, d.dqk);
  // dQ = dS K
  auto kk = g.virt(CUDNN_DATA_BFLOAT16, {d.b, d.hk, skv, d.dqk}, d.k_stride);
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
  ap.plan = g.build_plan(h, &ap.plan_ws, &ap.cands);
  ap.graph = gp;
  return ap;
}

using PlanKey =
    std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, Dims4, Dims4, Dims4, Dims4, bool>;

AttnPlan& get_plan(Ctx& c, const AttnDims& d, bool backward) {
  static std::map<PlanKey, AttnPlan> cache;
  PlanKey key{backward, d.b,        d.hq,       d.hk,       d.s,        d.kv_len(),     d.dqk,
              d.dv,     d.q_stride, d.k_stride, d.v_stride, d.o_stride, d.deterministic};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::string errors;
  for (const auto& mv : kVariants) {
    try {
      AttnPlan ap = backward ? build_bwd(c.dnn(), d, mv) : build_fwd(c.dnn(), d, mv);
      ap.int_index = mv.index_type == CUDNN_DATA_INT32;
      g_variant_used = mv.name;
      return cache.emplace(key, std::move(ap)).first->second;
    } catch (const std::exception& e) {
      errors += std::string("\n  variant ") + mv.name + ": " + e.what();
    }
  }
  throw std::runtime_error(std::string("cuDNN SDPA ") + (backward ? "backward" : "forward") +
                           " graph could not be built:" + errors);
}

// Times every candidate plan on the call's own buffers (the first call of a shape: a warm-up
// iteration in the bench), keeps the fastest, and logs them all to stderr. Plans that need more
// workspace than heuristics A's first (what the caller allocated) are skipped, so the memory
// figures do not depend on the pick. `before` runs ahead of each execution (not timed).
void tune(Ctx& c, AttnPlan& ap, const DescPtr& pack, const std::function<void()>& before, const std::string& what) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  size_t best = 0;
  float best_ms = 1e30f;
  std::string log;
  char line[256];
  for (size_t i = 0; i < ap.cands.size(); ++i) {
    const PlanCand& pc = ap.cands[i];
    if (pc.ws > ap.plan_ws) {
      std::snprintf(line, sizeof line, "  %-28s ws %lld > %lld: skipped\n", pc.label.c_str(), (long long)pc.ws,
                    (long long)ap.plan_ws);
      log += line;
      continue;
    }
    before();
    if (cudnnBackendExecute(c.dnn(), pc.plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) {
      std::snprintf(line, sizeof line, "  %-28s execute failed\n", pc.label.c_str());
      log += line;
      continue;
    }
    float ms = 1e30f;
    for (int r = 0; r < 3; ++r) {
      before();
      CUDA_CHECK(cudaEventRecord(a, c.stream()));
      CUDNN_CHECK(cudnnBackendExecute(c.dnn(), pc.plan.get(), pack.get()));
      CUDA_CHECK(cudaEventRecord(b, c.stream()));
      CUDA_CHECK(cudaEventSynchronize(b));
      float t = 0.f;
      CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
      ms = std::min(ms, t);
    }
    std::snprintf(line, sizeof line, "  %-28s ws %lld  %.4f ms\n", pc.label.c_str(), (long long)pc.ws, ms);
    log += line;
    if (i == 0 || ms < best_ms * 0.99f) {  // within 1% keeps the earlier (heuristics') choice
      best_ms = ms;
      best = i;
    }
  }
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  ap.plan = ap.cands[best].plan;
  ap.label = ap.cands[best].label;
  std::fprintf(stderr, "attn tune %s: %zu plans, picked %s (%.4f ms)\n%s", what.c_str(), ap.cands.size(),
               ap.label.c_str(), best_ms, log.c_str());
  g_engines_used += (g_engines_used.empty() ? "" : "; ") + what + ": " + ap.label;
  ap.cands.clear();
}

void execute(Ctx& c, AttnPlan& ap, std::vector<int64_t> uids, std::vector<void*> ptrs, void* ws,
             const std::function<void()>& before, const std::string& what) {
  DescPtr pack = make_desc(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data(),
           "variant pack uids");
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data(),
           "variant pack pointers");
  set_attr(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "variant pack workspace");
  finalize(pack, "variant pack");
  if (ap.cands.size() > 1 && autotune_enabled()) tune(c, ap, pack, before, what);
  ap.cands.clear();
  before();
  static const bool probe = [] {
    const char* v = std::getenv("REMAT_ATTN_PROBE");
    return v && std::string(v) == "1";
  }();
  if (!probe) {
    CUDNN_CHECK(cudnnBackendExecute(c.dnn(), ap.plan.get(), pack.get()));
    return;
  }
  // Diagnostic (REMAT_ATTN_PROBE=1): the execution alone between two events, printed to stderr.
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  CUDA_CHECK(cudaEventRecord(a, c.stream()));
  CUDNN_CHECK(cudnnBackendExecute(c.dnn(), ap.plan.get(), pack.get()));
  CUDA_CHECK(cudaEventRecord(b, c.stream()));
  CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  std::fprintf(stderr, "probe %s: %.4f ms\n", what.c_str(), ms);
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
}

constexpr float kNegInfValue = -1073741824.f;  // large negative, as the cuDNN frontend uses

std::string shape_tag(const char* dir, const AttnDims& d) {
  return std::string(dir) + " b" + std::to_string(d.b) + " hq" + std::to_string(d.hq) + " hk" + std::to_string(d.hk) +
         " s" + std::to_string(d.s) + (d.kv_len() != d.s ? " skv" + std::to_string(d.kv_len()) : "") + " dqk" +
         std::to_string(d.dqk) + " dv" + std::to_string(d.dv);
}

}  // namespace

float AttnDims::scale() const { return 1.f / std::sqrt(float(dqk)); }

std::array<int64_t, 4> bshd_strides(int64_t s, int64_t d, int64_t row_elems) {
  return {s * row_elems, d, row_elems, 1};
}

std::string attn_variant_used() { return g_variant_used; }

std::string attn_engines_used() { return g_engines_used; }

double attn_fwd_flops(const AttnDims& d) {
  const double dh = 0.5 * double(d.dqk + d.dv), s = double(d.s);
  const double pairs = s * double(d.kv_len() - d.s) + s * s / 2.0;  // visible (query, key) pairs
  return 4.0 * double(d.b) * pairs * dh * double(d.hq);
}
double attn_bwd_flops(const AttnDims& d) { return 2.5 * attn_fwd_flops(d); }

int64_t attn_fwd_workspace_bytes(Ctx& c, const AttnDims& d) { return get_plan(c, d, false).plan_ws; }

int64_t attn_bwd_workspace_bytes(Ctx& c, const AttnDims& d) {
  const AttnPlan& ap = get_plan(c, d, true);
  return align256(ap.plan_ws) + ap.extra_ws;
}

void attn_fwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v, void* o,
              float* stats, void* workspace) {
  AttnPlan& ap = get_plan(c, d, false);
  float scale = d.scale(), neg_inf = kNegInfValue;
  const double bytes =
      2.0 * d.b * (d.s * (d.hq * d.dqk + d.hq * d.dv) + d.kv_len() * d.hk * (d.dqk + d.dv)) + 4.0 * d.b * d.hq * d.s;
  OpScope op(c, {name, "attention_fwd", d.s, d.kv_len(), d.dqk, attn_fwd_flops(d), bytes});
  std::vector<int64_t> uids{kQ, kK, kV, kO, kStats, kScale, kNegInf};
  std::vector<void*> ptrs{const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, stats, &scale, &neg_inf};
  OffsetValues off(d, ap);
  off.add_to(uids, ptrs);
  execute(
      c, ap, uids, ptrs, workspace, [] {}, shape_tag("fwd", d));
}

void attn_bwd(Ctx& c, const std::string& name, const AttnDims& d, const void* q, const void* k, const void* v,
              const void* o, const void* dout, const float* stats, void* dq, void* dk, void* dv, void* workspace) {
  AttnPlan& ap = get_plan(c, d, true);
  float scale = d.scale(), neg_inf = kNegInfValue, one = 1.f;
  char* ws = static_cast<char*>(workspace);
  char* extra = ws + align256(ap.plan_ws);
  void* softmax_sum = extra;
  void* dq_acc = extra + align256(d.b * d.hq * d.s * 4);
  std::vector<int64_t> uids{kQ, kK, kV, kO, kDO, kStats, kDQ, kDK, kDV, kScale, kNegInf, kOne, kSoftmaxSum};
  std::vector<void*> ptrs{const_cast<void*>(q),
                          const_cast<void*>(k),
                          const_cast<void*>(v),
                          const_cast<void*>(o),
                          const_cast<void*>(dout),
                          const_cast<float*>(stats),
                          dq,
                          dk,
                          dv,
                          &scale,
                          &neg_inf,
                          &one,
                          softmax_sum};
  OffsetValues off(d, ap);
  off.add_to(uids, ptrs);
  const double bytes =
      4.0 * d.b * (d.s * (d.hq * d.dqk + d.hq * d.dv) + d.kv_len() * d.hk * (d.dqk + d.dv)) + 4.0 * d.b * d.hq * d.s;
  OpScope op(c, {name, "attention_bwd", d.s, d.kv_len(), d.dqk, attn_bwd_flops(d), bytes});
  // cuDNN before 9.6 needs the fp32 dQ accumulator zeroed by the caller; while tuning it is
  // zeroed ahead of every candidate whatever the version (untimed).
  const bool zero_acc = !d.deterministic && cudnnGetVersion() < 90600;
  const bool tuning = !d.deterministic && ap.cands.size() > 1 && autotune_enabled();
  if (!d.deterministic) {
    uids.push_back(kDQAccum);
    ptrs.push_back(dq_acc);
  }
  const size_t acc_bytes = size_t(d.b * d.hq * d.s * d.dqk * 4);
  cudaStream_t st = c.stream();
  execute(
      c, ap, uids, ptrs, ws,
      [&] {
        if (zero_acc || (tuning && !d.deterministic)) CUDA_CHECK(cudaMemsetAsync(dq_acc, 0, acc_bytes, st));
      },
      shape_tag(d.deterministic ? "bwd-det" : "bwd", d));
}

}  // namespace remat::cuda

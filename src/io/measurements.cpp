// The CUDA backend's measurements JSON: the cases `remat validate` predicts.
#include "remat/io/measurements.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "json_document.hpp"
#include "remat/spec/problems.hpp"

namespace remat {

namespace {

using nlohmann::json;

constexpr const char* kSchema = "remat.gpu_measurements";
constexpr int64_t kMaxDim = 1'000'000'000;  // a dim of one measured block (s, hidden, experts, ...)

struct Reader {
  std::string file;
  std::vector<Problem> problems;

  void fail(const std::string& key, const json* v, const std::string& message) {
    problems.push_back({file, key, v ? v->dump() : "", message});
  }
  const json* find(const json& obj, const std::string& key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  // A required string out of `allowed` (empty: any non-empty string).
  void text(const json& obj, const std::string& prefix, const std::string& key, std::string& out,
            const std::vector<std::string>& allowed) {
    const json* v = find(obj, key);
    if (!v) return fail(prefix + key, nullptr, "required key is missing");
    if (!v->is_string() || v->get_ref<const std::string&>().empty()) return fail(prefix + key, v, "must be a text");
    out = v->get<std::string>();
    if (allowed.empty()) return;
    for (const auto& a : allowed)
      if (out == a) return;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(prefix + key, v, "must be one of " + list);
  }
  // A required integer in [low, high].
  void integer(const json& obj, const std::string& prefix, const std::string& key, int64_t& out, int64_t low,
               int64_t high) {
    const json* v = find(obj, key);
    if (!v) return fail(prefix + key, nullptr, "required key is missing");
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail(prefix + key, v,
                  "must be an integer between " + std::to_string(low) + " and " + std::to_string(high));
    if (!v->is_number_integer()) return fail(prefix + key, v, "must be an integer");
    const int64_t x = v->get<int64_t>();
    if (x < low || x > high)
      return fail(prefix + key, v,
                  "must be an integer between " + std::to_string(low) + " and " + std::to_string(high));
    out = x;
  }
  // An optional finite number >= 0 (left as is when absent).
  void optional_number(const json& obj, const std::string& prefix, const std::string& key, double& out) {
    const json* v = find(obj, key);
    if (!v) return;
    if (!v->is_number()) return fail(prefix + key, v, "must be a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) return fail(prefix + key, v, "must be a finite number >= 0");
    out = x;
  }
  // An optional text (left as is when absent).
  void optional_text(const json& obj, const std::string& prefix, const std::string& key, std::string& out) {
    const json* v = find(obj, key);
    if (!v) return;
    if (!v->is_string()) return fail(prefix + key, v, "must be a text");
    out = v->get<std::string>();
  }
  // A required finite number of seconds >= 0.
  void seconds(const json& obj, const std::string& prefix, const std::string& key, double& out) {
    const json* v = find(obj, key);
    if (!v) return fail(prefix + key, nullptr, "required key is missing");
    if (!v->is_number()) return fail(prefix + key, v, "must be a number");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) return fail(prefix + key, v, "must be a finite number of seconds >= 0");
    out = x;
  }
};

void read_dims(Reader& r, const json& c, const std::string& prefix, MeasuredCase& out) {
  const json* dims = r.find(c, "dims");
  if (!dims) return r.fail(prefix + "dims", nullptr, "required key is missing");
  if (!dims->is_object()) return r.fail(prefix + "dims", dims, "must be an object");
  for (const auto& [key, v] : dims->items()) {
    if (key == "model") {
      if (v.is_string())
        out.model = v.get<std::string>();
      else
        r.fail(prefix + "dims.model", &v, "must be a text");
      continue;
    }
    int64_t x = 0;
    r.integer(*dims, prefix + "dims.", key, x, 0, kMaxDim);
    out.dims[key] = x;
  }
  for (const char* key : {"b", "s"}) {
    int64_t x = 0;
    r.integer(*dims, prefix + "dims.", key, x, 1, kMaxDim);
  }
}

// kept_buffers / peak_buffers: [{name, bytes}], optional.
void read_buffers(Reader& r, const json& c, const std::string& prefix, const std::string& key,
                  std::vector<NamedBytes>& out) {
  const json* list = r.find(c, key);
  if (!list) return;
  if (!list->is_array()) return r.fail(prefix + key, list, "must be a list of {name, bytes}");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string p = prefix + key + "[" + std::to_string(i) + "].";
    if (!e.is_object()) {
      r.fail(p.substr(0, p.size() - 1), &e, "must be an object {name, bytes}");
      continue;
    }
    NamedBytes b;
    int64_t bytes = 0;
    r.text(e, p, "name", b.name, {});
    r.integer(e, p, "bytes", bytes, 0, std::numeric_limits<int64_t>::max());
    b.bytes = double(bytes);
    out.push_back(std::move(b));
  }
}

// kernels[]: {name, kind, phase, m, n, k, calls, flops, bytes_moved, time_s}, optional.
void read_kernels(Reader& r, const json& c, const std::string& prefix, std::vector<MeasuredKernel>& out) {
  const json* list = r.find(c, "kernels");
  if (!list) return;
  if (!list->is_array()) return r.fail(prefix + "kernels", list, "must be a list of kernel records");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    const std::string p = prefix + "kernels[" + std::to_string(i) + "].";
    if (!e.is_object()) {
      r.fail(p.substr(0, p.size() - 1), &e, "must be an object");
      continue;
    }
    MeasuredKernel k;
    r.text(e, p, "name", k.name, {});
    r.text(e, p, "kind", k.kind, {});
    r.text(e, p, "phase", k.phase, {"forward", "recompute", "backward"});
    for (auto [key, field] : {std::pair{"m", &k.m}, {"n", &k.n}, {"k", &k.k}}) r.integer(e, p, key, *field, 0, kMaxDim);
    r.integer(e, p, "calls", k.calls, 1, kMaxDim);
    r.optional_number(e, p, "flops", k.flops);
    r.optional_number(e, p, "bytes_moved", k.bytes_moved);
    r.seconds(e, p, "time_s", k.time_s);
    out.push_back(std::move(k));
  }
}

// offload: {d2h_s, h2d_s, bytes, ...}, offload cases only.
void read_offload(Reader& r, const json& c, const std::string& prefix, MeasuredOffload& out) {
  const json* o = r.find(c, "offload");
  if (!o) return;
  if (!o->is_object()) return r.fail(prefix + "offload", o, "must be an object");
  out.present = true;
  r.seconds(*o, prefix + "offload.", "d2h_s", out.d2h_s);
  r.seconds(*o, prefix + "offload.", "h2d_s", out.h2d_s);
  r.optional_number(*o, prefix + "offload.", "bytes", out.bytes);
}

void read_case(Reader& r, const json& c, size_t index, Measurements& out) {
  const std::string prefix = "cases[" + std::to_string(index) + "].";
  if (!c.is_object()) return r.fail(prefix.substr(0, prefix.size() - 1), &c, "must be an object");
  MeasuredCase m;
  r.text(c, prefix, "block", m.block, {"rmsnorm_linear", "mlp", "moe", "gqa", "mla", "lm_head", "streambp_layer"});
  r.text(c, prefix, "strategy", m.strategy, {"none", "standard", "eagle", "offload", "streambp"});
  read_dims(r, c, prefix, m);
  r.seconds(c, prefix, "forward_s", m.forward_s);
  r.seconds(c, prefix, "backward_s", m.backward_s);
  r.seconds(c, prefix, "recompute_s", m.recompute_s);
  r.seconds(c, prefix, "total_s", m.total_s);
  const int64_t max_bytes = std::numeric_limits<int64_t>::max();
  r.integer(c, prefix, "kept_bytes", m.kept_bytes, 0, max_bytes);
  r.integer(c, prefix, "peak_bytes", m.peak_bytes, 0, max_bytes);
  if (m.peak_bytes < m.kept_bytes)
    r.fail(prefix + "peak_bytes", r.find(c, "peak_bytes"), "must not be below kept_bytes");
  r.optional_text(c, prefix, "routing", m.routing);
  read_buffers(r, c, prefix, "kept_buffers", m.kept_buffers);
  read_buffers(r, c, prefix, "peak_buffers", m.peak_buffers);
  read_kernels(r, c, prefix, m.kernels);
  read_offload(r, c, prefix, m.offload);
  out.cases.push_back(std::move(m));
}

}  // namespace

Measurements parse_measurements(const std::string& text, const std::string& file) {
  const json root = parse_json_object(text, file);
  Reader r{file, {}};
  Measurements out;
  std::string schema;
  r.text(root, "", "schema", schema, {kSchema});
  r.text(root, "", "schema_version", out.schema_version, {});
  if (!out.schema_version.empty() && out.schema_version.rfind("1.", 0) != 0)
    r.fail("schema_version", r.find(root, "schema_version"), "must be 1.x");
  if (const json* dev = r.find(root, "device");
      dev && dev->is_object() && dev->contains("name") && (*dev)["name"].is_string())
    out.device = (*dev)["name"].get<std::string>();
  r.optional_text(root, "", "git_commit", out.git_commit);
  if (const json* settings = r.find(root, "settings"); settings && settings->is_object()) {
    const json* det = r.find(*settings, "deterministic_attention");
    if (det && !det->is_boolean())
      r.fail("settings.deterministic_attention", det, "must be true or false");
    else if (det)
      out.deterministic_attention = det->get<bool>();
  }
  const json* cases = r.find(root, "cases");
  if (!cases)
    r.fail("cases", nullptr, "required key is missing");
  else if (!cases->is_array() || cases->empty())
    r.fail("cases", nullptr, "must be a non-empty list of cases");
  else
    for (size_t i = 0; i < cases->size(); ++i) read_case(r, (*cases)[i], i, out);
  if (!r.problems.empty()) throw InputError(std::move(r.problems));
  return out;
}

}  // namespace remat

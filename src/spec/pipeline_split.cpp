#include "remat/spec/pipeline_split.hpp"

#include <charconv>

#include "remat/spec/problems.hpp"

namespace remat {

namespace {

constexpr int64_t kMaxLayoutLayers = 1'000'000;  // unrolled layout symbols: far above any model

[[noreturn]] void refuse(const std::string& source, const std::string& key, const std::string& value,
                         const std::string& why) {
  throw InputError({{source, key, value, why}});
}

int64_t positive(const std::string& source, const std::string& key, const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || at != end || v < 1) refuse(source, key, text, "must be an integer >= 1");
  return v;
}

// Megatron's layout grammar, in its order: "," removed, then "(...)*n" repeated,
// then "x*n" repeated; "|" ends a stage. Unrolled here without regular expressions.
struct Unroller {
  const std::string& text;
  const std::string& source;
  const std::string key = "--pipeline-model-parallel-layout";

  // The count after a '*' at `i` (i is moved past it); 0 when no '*' follows.
  int64_t count_at(const std::string& s, size_t& i) const {
    if (i >= s.size() || s[i] != '*') return 0;
    size_t j = i + 1;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    const int64_t n = positive(source, key, s.substr(i + 1, j - i - 1));
    i = j;
    return n;
  }
  void append(std::string& out, const std::string& unit, int64_t times) const {
    if (double(times) * double(unit.size()) + double(out.size()) > double(kMaxLayoutLayers))
      refuse(source, key, text, "unrolls to more than " + std::to_string(kMaxLayoutLayers) + " symbols");
    for (int64_t t = 0; t < times; ++t) out += unit;
  }
  std::string groups(const std::string& s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      if (s[i] != '(') {
        out += s[i++];
        continue;
      }
      const size_t close = s.find(')', i);
      if (close == std::string::npos) refuse(source, key, text, "has an unclosed '('");
      const std::string unit = s.substr(i + 1, close - i - 1);
      if (unit.empty() || unit.find('(') != std::string::npos)
        refuse(source, key, text, "has an empty or nested group, which Megatron-LM does not read");
      size_t after = close + 1;
      const int64_t times = count_at(s, after);
      if (times == 0) refuse(source, key, text, "has a group without *n after it");
      append(out, unit, times);
      i = after;
    }
    return out;
  }
  std::string repeats(const std::string& s) const {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      const std::string unit(1, s[i++]);
      const int64_t times = count_at(s, i);
      append(out, unit, times == 0 ? 1 : times);
    }
    return out;
  }
  std::string run() const {
    std::string plain;
    for (char c : text)
      if (c != ',') plain += c;
    return repeats(groups(plain));
  }
};

std::vector<int64_t> from_layout(const std::string& text, int64_t layers, int64_t pp, int64_t mtp_layers,
                                 const std::string& source) {
  const std::string key = "--pipeline-model-parallel-layout";
  const std::string flat = Unroller{text, source}.run();
  std::vector<int64_t> stages(1, 0);
  int64_t embeddings = 0, losses = 0, mtp = 0;
  for (size_t i = 0; i < flat.size(); ++i) {
    if (mtp > 0 && (flat[i] == 't' || flat[i] == '|'))
      refuse(source, key, text, "places MTP layers (m) before decoder layers or stages; remat models them on the last");
    const char c = flat[i];
    if (c == '|') {
      stages.push_back(0);
    } else if (c == 't') {
      ++stages.back();
    } else if (c == 'E') {
      if (i != 0) refuse(source, key, text, "must begin with the embedding E");
      ++embeddings;
    } else if (c == 'L') {
      if (i + 1 != flat.size()) refuse(source, key, text, "must end with the loss L");
      ++losses;
    } else if (c == 'm') {
      ++mtp;
    } else {
      refuse(source, key, text, std::string("has '") + c + "', not one of E, L, t, m, |, (, ), *, digits");
    }
  }
  if (embeddings != 1 || losses != 1) refuse(source, key, text, "must begin with E and end with L, once each");
  if (mtp != mtp_layers)
    refuse(source, key, text,
           "has " + std::to_string(mtp) + " MTP layers (m); the model has " + std::to_string(mtp_layers));
  if (int64_t(stages.size()) != pp)
    refuse(source, key, text,
           "has " + std::to_string(stages.size()) +
               " stages; remat models one per pipeline rank (pp = " + std::to_string(pp) + ", no virtual stages)");
  int64_t total = 0;
  for (int64_t n : stages) {
    if (n == 0) refuse(source, key, text, "has a stage without decoder layers, which remat does not model");
    total += n;
  }
  if (total != layers)
    refuse(source, key, text,
           "has " + std::to_string(total) + " decoder layers (t); the model has " + std::to_string(layers));
  return stages;
}

}  // namespace

std::vector<int64_t> megatron_layers_per_stage(const MegatronSplitText& text, int64_t layers, int64_t pp,
                                               const std::string& source, int64_t mtp_layers) {
  if (!text.layout.empty()) {
    if (!text.first_stage_layers.empty() || !text.last_stage_layers.empty())
      refuse(source, "--pipeline-model-parallel-layout", text.layout,
             "cannot be given with --decoder-first/last-pipeline-num-layers (Megatron-LM refuses both)");
    return from_layout(text.layout, layers, pp, mtp_layers, source);
  }
  std::vector<int64_t> v(size_t(pp), 0);
  int64_t rest = layers, even_stages = pp;
  if (!text.first_stage_layers.empty()) {
    v.front() = positive(source, "--decoder-first-pipeline-num-layers", text.first_stage_layers);
    rest -= v.front(), --even_stages;
  }
  if (!text.last_stage_layers.empty()) {
    v.back() = positive(source, "--decoder-last-pipeline-num-layers", text.last_stage_layers);
    rest -= v.back(), --even_stages;
  }
  const std::string key = !text.last_stage_layers.empty()    ? "--decoder-last-pipeline-num-layers"
                          : !text.first_stage_layers.empty() ? "--decoder-first-pipeline-num-layers"
                                                             : "--pp";
  const std::string value = !text.last_stage_layers.empty()    ? text.last_stage_layers
                            : !text.first_stage_layers.empty() ? text.first_stage_layers
                                                               : std::to_string(pp);
  if (pp == 1 && !text.empty()) refuse(source, key, value, "needs pp >= 2");
  if (rest < 0 || (even_stages == 0 && rest != 0) || (even_stages > 0 && (rest < even_stages || rest % even_stages)))
    refuse(source, key, value,
           "leaves " + std::to_string(rest) + " of the " + std::to_string(layers) + " layers for " +
               std::to_string(even_stages) + " other stages: Megatron-LM needs an equal count >= 1 on each");
  for (int64_t i = 0; i < pp; ++i)
    if (v[size_t(i)] == 0) v[size_t(i)] = rest / even_stages;
  return v;
}

MegatronSplitFlags megatron_split_flags(const std::vector<int64_t>& v, int64_t mtp_layers) {
  MegatronSplitFlags f;
  const size_t n = v.size();
  if (n < 2) return f;
  const auto equal = [&](size_t from, size_t to) {  // v[from, to) all equal
    for (size_t i = from + 1; i < to; ++i)
      if (v[i] != v[from]) return false;
    return true;
  };
  if (equal(0, n)) return f;
  if (equal(1, n)) {
    f.first_stage_layers = v.front();
  } else if (equal(0, n - 1)) {
    f.last_stage_layers = v.back();
  } else if (n >= 3 && equal(1, n - 1)) {
    f.first_stage_layers = v.front(), f.last_stage_layers = v.back();
  } else {
    f.layout = pipeline_layout_text(v, mtp_layers);
  }
  return f;
}

std::string pipeline_layout_text(const std::vector<int64_t>& v, int64_t mtp_layers) {
  const auto stage = [](int64_t n) { return n == 1 ? std::string("t") : "t*" + std::to_string(n); };
  std::string out = "E";
  for (size_t i = 0; i < v.size();) {
    size_t run = 1;
    // equal middle stages as one group; the first and last stage carry E and L
    if (i > 0)
      while (i + run + 1 < v.size() && v[i + run] == v[i]) ++run;
    if (run >= 3) {
      out += "(" + stage(v[i]) + "|)*" + std::to_string(run);
    } else {
      run = 1;
      out += stage(v[i]);
      if (i + 1 < v.size()) out += "|";
    }
    i += run;
  }
  for (int64_t k = 0; k < mtp_layers; ++k) out += "m";  // MTP on the last stage, before the loss
  return out + "L";
}

std::string split_text(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t run = 1;
    while (i + run < v.size() && v[i + run] == v[i]) ++run;
    out += (out.empty() ? "" : ",") + std::to_string(v[i]) + (run > 1 ? "x" + std::to_string(run) : "");
    i += run;
  }
  return out;
}

}  // namespace remat

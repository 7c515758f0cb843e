// The backend-memory predictor against remat-bench's committed H200 runs
// (reports/gpu/): kept and peak bytes within 2% for every case, and the
// buffers alive at both points named as the backend names them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "remat/io/measurements.hpp"
#include "remat/validate/backend_memory.hpp"
#include "remat/validate/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

using test::read_text;

Measurements committed(const std::string& name) {
  const std::string path = std::string(REMAT_TEST_DATA) + "/../reports/gpu/" + name;
  const std::string text = read_text(path);
  if (text.empty()) throw std::runtime_error("cannot read " + path);
  return parse_measurements(text, path);
}

// Every case of a file: kept and peak within 2%; returns the largest error.
double check_file(const std::string& name) {
  const Measurements m = committed(name);
  EXPECT_FALSE(m.cases.empty());
  double worst = 0;
  for (size_t i = 0; i < m.cases.size(); ++i) {
    const MeasuredCase& mc = m.cases[i];
    const BackendMemory p = backend_memory(backend_case(mc, m.deterministic_attention, name, "cases"));
    const double kept = std::abs(relative_error(p.kept_bytes, double(mc.kept_bytes)));
    const double peak = std::abs(relative_error(p.peak_bytes, double(mc.peak_bytes)));
    EXPECT_LE(kept, 0.02) << name << " " << mc.block << " " << mc.strategy << " s=" << mc.dim("s");
    EXPECT_LE(peak, 0.02) << name << " " << mc.block << " " << mc.strategy << " s=" << mc.dim("s");
    worst = std::max({worst, kept, peak});
  }
  return worst;
}

TEST(ValidateMemory, EveryCommittedCaseWithinTwoPercent) {
  const double worst = check_file("measurements-h200.json");
  EXPECT_LE(worst, 0.02);
  RecordProperty("worst_memory_error", std::to_string(worst));
}

TEST(ValidateMemory, DeterministicAttentionAndRouterRuns) {
  EXPECT_LE(check_file("measurements-h200-deterministic-attention.json"), 0.02);
  EXPECT_LE(check_file("measurements-h200-moe-router.json"), 0.02);
}

// The buffers alive at kept and peak are the backend's, name for name, and
// each within 2% of its measured size.
TEST(ValidateMemory, BufferListsMatchTheBackend) {
  const Measurements m = committed("measurements-h200.json");
  for (const MeasuredCase& mc : m.cases) {
    const BackendMemory p = backend_memory(backend_case(mc, false, "m", "cases"));
    auto same = [&](const std::vector<NamedBytes>& pred, const std::vector<NamedBytes>& meas, const char* what) {
      ASSERT_EQ(pred.size(), meas.size()) << mc.block << " " << mc.strategy << " " << what;
      for (const NamedBytes& b : meas) {
        auto it = std::find_if(pred.begin(), pred.end(), [&](const NamedBytes& x) {
          return x.name == b.name || x.name == b.name + ".recompute" || b.name == x.name + ".recompute";
        });
        ASSERT_NE(it, pred.end()) << mc.block << " " << mc.strategy << " " << what << " lacks " << b.name;
        EXPECT_NEAR(it->bytes, b.bytes, 0.02 * b.bytes) << mc.block << " " << mc.strategy << " " << b.name;
      }
    };
    same(p.kept_buffers, mc.kept_buffers, "kept");
    same(p.peak_buffers, mc.peak_buffers, "peak");
  }
}

// Hand-computed: rmsnorm_linear, LLaMA3-8B (h 4096, q+k+v 6144), b 1, s 1024,
// none. Kept x + xn = 2 * 1024*4096*2. Peak x + dy(1024*6144*2) + dxn + dx +
// the norm's backward partials 4 * (1024/16) * 4096: the measured 38,797,312.
TEST(ValidateMemory, RmsnormLinearByHand) {
  BackendCase c;
  c.block = "rmsnorm_linear", c.strategy = "none", c.s = 1024, c.out_features = 6144;
  c.model.hidden_size = 4096;
  const BackendMemory p = backend_memory(c);
  EXPECT_DOUBLE_EQ(p.kept_bytes, 16777216);
  EXPECT_DOUBLE_EQ(p.peak_bytes, 8388608 + 12582912 + 8388608 + 8388608 + 1048576);
  c.strategy = "standard";  // x + dy + xn + y.recompute + dxn
  EXPECT_DOUBLE_EQ(backend_memory(c).peak_bytes, 8388608 + 12582912 + 8388608 + 12582912 + 8388608);
}

// README's ws_attn: GQA 8 b hq s d + 4 b hq s + 256, MLA 4 b hq s dqk + 4 b hq s + 256.
TEST(ValidateMemory, AttentionWorkspace) {
  EXPECT_DOUBLE_EQ(attention_bwd_workspace_bytes(1, 32, 1024, 128, true, false), 33685760);
  EXPECT_DOUBLE_EQ(attention_bwd_workspace_bytes(1, 128, 1024, 192, false, false), 101187840);
  EXPECT_DOUBLE_EQ(attention_bwd_workspace_bytes(1, 32, 4096, 128, true, true), 1141375232);
}

}  // namespace
}  // namespace remat

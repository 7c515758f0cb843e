// StreamBP on the GPU (reports/gpu/measurements-h200-streambp.json, src/cuda/block_streambp.cpp):
// the cost model's peak bytes of the chunked LM head (head_peak_bytes) and of one layer's chunked
// backward (streambp_chunked_bytes) against what remat-bench's allocator counted, within 3%; the
// chunked gradients matched the unchunked ones on the GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "remat/io/measurements.hpp"
#include "remat/validate/validate.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

const std::string kFile = std::string(REMAT_TEST_DATA) + "/../reports/gpu/measurements-h200-streambp.json";

using test::read_text;

TEST(ValidateStreamBp, PeakBytesWithinThreePercent) {
  const std::string text = read_text(kFile);
  ASSERT_FALSE(text.empty()) << kFile;
  const Measurements m = parse_measurements(text, kFile);
  const auto cases = validate_cases(m, test::hardware("h200"), kFile);
  ASSERT_EQ(cases.size(), 48u);  // 2 blocks x 4 lengths x 6 chunk counts
  for (const auto& c : cases) {
    ASSERT_TRUE(c.memory_only);
    EXPECT_LE(std::abs(relative_error(c.memory.peak_bytes, c.measured_peak_bytes)), 0.03)
        << c.block << " s=" << c.s << " chunks=" << c.chunks;
    EXPECT_LE(std::abs(relative_error(c.memory.kept_bytes, c.measured_kept_bytes)), 0.02)
        << c.block << " s=" << c.s << " chunks=" << c.chunks;
  }
  const ErrorSummary all = summarize(cases);
  EXPECT_EQ(all.cases, 48);
  EXPECT_EQ(all.timed_cases, 0);
  EXPECT_LE(all.max_peak_error, 0.03);
}

// What chunking buys on the GPU: the measured peak falls with every doubling of C or D.
TEST(ValidateStreamBp, MeasuredPeakFallsWithChunks) {
  const Measurements m = parse_measurements(read_text(kFile), kFile);
  std::map<std::pair<std::string, int64_t>, std::map<int64_t, int64_t>> peak;  // (block, s) -> chunks -> bytes
  for (const auto& c : m.cases) peak[{c.block, c.dim("s")}][c.dim("chunks")] = c.peak_bytes;
  ASSERT_EQ(peak.size(), 8u);
  for (const auto& [key, by_chunks] : peak) {
    int64_t last = INT64_MAX;
    for (const auto& [chunks, bytes] : by_chunks) {
      EXPECT_LT(bytes, last) << key.first << " s=" << key.second << " chunks=" << chunks;
      last = bytes;
    }
  }
}

TEST(ValidateStreamBp, ChunkedGradientsMatchedOnTheGpu) {
  const auto doc = nlohmann::json::parse(read_text(kFile));
  ASSERT_TRUE(doc.contains("streambp_correctness"));
  ASSERT_EQ(doc["streambp_correctness"].size(), 2u);
  for (const auto& r : doc["streambp_correctness"]) {
    EXPECT_TRUE(r["pass"].get<bool>()) << r["block"];
    EXPECT_EQ(r["chunks"].get<int>(), 4);
  }
}

}  // namespace
}  // namespace remat

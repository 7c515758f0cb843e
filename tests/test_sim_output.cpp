// The simulator's outputs: Chrome trace schema, SVG well-formedness, and an
// SVG rendered by headless chromium that is not blank.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "remat/report/svg.hpp"
#include "remat/report/trace.hpp"
#include "remat/sim/schedule.hpp"
#include "remat/sim/simulate.hpp"
#include "shell_run.hpp"
#include "test_helpers.hpp"

namespace remat {
namespace {

Simulation llama_sim(Strategy s, int64_t v = 1) {
  Plan p;
  p.strategy = s;
  const TrainingSpec t = test::layout(8, 4, 1, 1, 4, 4096);
  return simulate(test::model("llama3-70b"), test::hardware("a100-80gb-pcie"), t, p, {v, 8});
}

TEST(SimTrace, EventsWellFormedAndMonotonePerTrack) {
  const Json trace = chrome_trace(llama_sim(Strategy::offload));
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::pair<int64_t, int64_t>, double> last_end;  // (pid, tid) -> end of the previous X event
  std::map<int64_t, double> last_counter;
  int complete = 0, counters = 0, names = 0;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("name") && e["name"].is_string());
    ASSERT_TRUE(e.contains("ph") && e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "M") {
      ++names;
      EXPECT_TRUE(e["args"]["name"].is_string());
      continue;
    }
    ASSERT_TRUE(e["ts"].is_number());
    EXPECT_GE(e["ts"].get<double>(), 0);
    if (ph == "X") {
      ++complete;
      ASSERT_TRUE(e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
      auto key = std::make_pair(e["pid"].get<int64_t>(), e["tid"].get<int64_t>());
      const double ts = e["ts"], end = ts + e["dur"].get<double>();
      if (last_end.count(key)) EXPECT_GE(ts, last_end[key] - 1e-6) << e.dump();  // no overlap on one stream
      last_end[key] = end;
    } else {
      ASSERT_EQ(ph, "C");
      ++counters;
      const int64_t pid = e["pid"];
      if (last_counter.count(pid)) EXPECT_GE(e["ts"].get<double>(), last_counter[pid]);
      last_counter[pid] = e["ts"];
      for (const auto& [k, v] : e["args"].items()) EXPECT_GE(v.get<double>(), -1e-9) << k;
    }
  }
  EXPECT_EQ(names, 4 * (1 + kSimStreams));  // process + thread names per stage
  EXPECT_GT(complete, 16 * 4 * 20 * 2);     // forward and backward of every layer, microbatch, stage
  EXPECT_GT(counters, 100);
  // offload: both host-link directions carry copies on every stage
  for (int64_t pid = 0; pid < 4; ++pid) {
    EXPECT_TRUE(last_end.count({pid, int64_t(SimStream::offload_out)}));
    EXPECT_TRUE(last_end.count({pid, int64_t(SimStream::offload_in)}));
  }
}

// A small XML well-formedness check: balanced tags, quoted attributes, one root.
bool well_formed_xml(const std::string& s, std::string& why) {
  std::vector<std::string> stack;
  int roots = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '<') {
      if (stack.empty() && !isspace(static_cast<unsigned char>(s[i]))) return why = "text outside the root", false;
      ++i;
      continue;
    }
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return why = "unclosed tag", false;
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return why = "empty tag", false;
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return why = "mismatched </" + tag.substr(1) + ">", false;
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return why = "unbalanced quotes in <" + tag + ">", false;
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (stack.empty()) ++roots;
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty()) return why = "unclosed <" + stack.back() + ">", false;
  if (roots != 1) return why = "not one root", false;
  return true;
}

void expect_plot(const std::string& svg, const std::string& what) {
  std::string why;
  EXPECT_TRUE(well_formed_xml(svg, why)) << what << ": " << why;
  EXPECT_NE(svg.find("class=\"axes\""), std::string::npos) << what;
  EXPECT_NE(svg.find("class=\"y-label\""), std::string::npos) << what;
  EXPECT_NE(svg.find("class=\"legend\""), std::string::npos) << what;
}

TEST(SimSvg, PlotsAreWellFormedWithAxesLabelsAndLegend) {
  const Simulation full = llama_sim(Strategy::full), eagle = llama_sim(Strategy::eagle);
  const std::string timeline = memory_timeline_svg(eagle, "eagle");
  expect_plot(timeline, "timeline");
  EXPECT_NE(timeline.find("time (s)"), std::string::npos);
  EXPECT_NE(timeline.find("activations"), std::string::npos);
  const std::string bars = stage_memory_bars_svg({{Strategy::full, &full}, {Strategy::eagle, &eagle}}, "bars");
  expect_plot(bars, "bars");
  EXPECT_NE(bars.find("first stage (0)"), std::string::npos);
  EXPECT_NE(bars.find("last stage (3)"), std::string::npos);
  const std::vector<RecomputeSweepPoint> pts = {{Strategy::full, 0, 50, 60e9}, {Strategy::full, 10, 60, 40e9}};
  const std::string sweep = recompute_sweep_svg(pts, "sweep");
  expect_plot(sweep, "sweep");
  EXPECT_NE(sweep.find("recomputed layers per stage R"), std::string::npos);
}

std::string find_chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    if (i + 2 < in.size()) v |= uint32_t(uint8_t(in[i + 2]));
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? k[v & 63] : '=';
  }
  return out;
}

std::string run(const std::string& cmd) { return remat::test::run_shell(cmd).out; }

// Renders the per-stage bars with headless chromium (--screenshot), then
// counts the PNG's non-white pixels with chromium's own canvas (the PNG goes
// in as a data: URL, so the canvas stays readable): no PNG decoder needed.
TEST(SimSvg, ChromiumRendersTheBarsNotBlank) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium not installed (apt-get install -y chromium): render check skipped";
  const Simulation full = llama_sim(Strategy::full), eagle = llama_sim(Strategy::eagle);
  const auto dir = std::filesystem::temp_directory_path() / ("remat_svg_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bars.svg") << stage_memory_bars_svg({{Strategy::full, &full}, {Strategy::eagle, &eagle}}, "b");
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update"
      " --disable-sync --no-first-run --user-data-dir=" +
      (dir / "profile").string();
  run(chromium + flags + " --window-size=900,420 --screenshot=" + (dir / "bars.png").string() + " file://" +
      (dir / "bars.svg").string() + " 2>/dev/null");
  const std::string png = remat::test::read_text((dir / "bars.png").string());
  ASSERT_GT(png.size(), 8u) << "no screenshot written";
  ASSERT_EQ(png.substr(1, 3), "PNG");
  std::ofstream(dir / "count.html")
      << "<html><body><script>const i=new Image();i.onload=()=>{const c=document.createElement('canvas');"
         "c.width=i.width;c.height=i.height;const x=c.getContext('2d');x.drawImage(i,0,0);"
         "const d=x.getImageData(0,0,c.width,c.height).data;let n=0;"
         "for(let k=0;k<d.length;k+=4)if(d[k]<240||d[k+1]<240||d[k+2]<240)n++;"
         "document.body.textContent='nonwhite='+n+' of '+(c.width*c.height)+';';};"
         "i.src='data:image/png;base64,"
      << base64(png) << "';</script></body></html>";
  const std::string dom = run(chromium + flags + " --virtual-time-budget=10000 --dump-dom file://" +
                              (dir / "count.html").string() + " 2>/dev/null");
  const size_t at = dom.find("nonwhite=");
  ASSERT_NE(at, std::string::npos) << dom.substr(0, 300);
  const long nonwhite = std::strtol(dom.c_str() + at + 9, nullptr, 10);
  const long total = std::strtol(dom.c_str() + dom.find(" of ", at) + 4, nullptr, 10);
  EXPECT_EQ(total, 900L * 420L);
  EXPECT_GT(nonwhite, total / 20) << "the rendered plot is (nearly) blank";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace remat

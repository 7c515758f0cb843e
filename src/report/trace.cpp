#include "remat/report/trace.hpp"

#include <algorithm>
#include <cmath>

namespace remat {

namespace {

constexpr double kUs = 1e6;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool wanted(int64_t stage, int64_t only) { return only < 0 || stage == only; }

Json metadata(const char* what, int64_t pid, int64_t tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

Json complete_event(const SimEvent& e) {
  Json args = {{"chunk", e.chunk}};
  if (e.microbatch >= 0) args["microbatch"] = e.microbatch;
  if (e.layer >= 0) args["layer"] = e.layer;
  std::string name = to_string(e.op);
  if (e.layer >= 0) name += " L" + std::to_string(e.layer);
  if (e.microbatch >= 0) name += " mb" + std::to_string(e.microbatch);
  return {{"name", name},
          {"cat", to_string(e.op)},
          {"ph", "X"},
          {"pid", e.stage},
          {"tid", int64_t(e.stream)},
          {"ts", e.start_s * kUs},
          {"dur", (e.end_s - e.start_s) * kUs},
          {"args", args}};
}

Json counter_event(int64_t stage, const MemoryPoint& p) {
  Json args = Json::object();
  for (int c = 0; c < kMemCategories; ++c) args[to_string(MemCategory(c))] = std::max(0.0, p.bytes[size_t(c)]) / kGiB;
  return {{"name", "memory GiB"}, {"ph", "C"}, {"pid", stage}, {"ts", p.t_s * kUs}, {"args", args}};
}

int64_t bytes_int(double b) { return int64_t(std::llround(b)); }

Json categories_json(const CategoryBytes& b) {
  Json out = Json::object();
  for (int c = 0; c < kMemCategories; ++c) out[to_string(MemCategory(c))] = bytes_int(b[size_t(c)]);
  return out;
}

Json stage_json(const StageTimeline& st, const Simulation& sim) {
  Json top = Json::array();
  for (const SimBuffer& b : st.peak.top)
    top.push_back({{"name", b.name},
                   {"category", to_string(b.category)},
                   {"bytes", bytes_int(b.bytes)},
                   {"alloc_s", b.alloc_s},
                   {"free_s", b.free_s}});
  Json out = {{"index", st.index},
              {"peak_bytes", bytes_int(st.peak.bytes)},
              {"peak_time_s", st.peak.t_s},
              {"peak_by_category_bytes", categories_json(st.peak.by_category)},
              {"top_buffers", top},
              {"compute_busy_s", st.compute_busy_s},
              {"exposed_copy_s", st.exposed_copy_s}};
  if (sim.virtual_stages == 1 && size_t(st.index) < sim.estimate.stages.size())
    out["estimate_peak_bytes"] = bytes_int(sim.estimate.stages[size_t(st.index)].memory_bytes.peak);
  return out;
}

}  // namespace

Json chrome_trace(const Simulation& sim, int64_t only_stage) {
  Json events = Json::array();
  for (const StageTimeline& st : sim.stages) {
    if (!wanted(st.index, only_stage)) continue;
    events.push_back(metadata("process_name", st.index, 0, "stage " + std::to_string(st.index)));
    for (int s = 0; s < kSimStreams; ++s)
      events.push_back(metadata("thread_name", st.index, s, to_string(SimStream(s))));
  }
  std::vector<const SimEvent*> sorted;
  for (const SimEvent& e : sim.events)
    if (wanted(e.stage, only_stage)) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const SimEvent* a, const SimEvent* b) {
    if (a->stage != b->stage) return a->stage < b->stage;
    if (a->stream != b->stream) return a->stream < b->stream;
    return a->start_s < b->start_s;
  });
  for (const SimEvent* e : sorted) events.push_back(complete_event(*e));
  for (const StageTimeline& st : sim.stages)
    if (wanted(st.index, only_stage))
      for (const MemoryPoint& p : st.memory) events.push_back(counter_event(st.index, p));
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

Json simulate_report(const ReportMeta& meta, const ModelSpec& m, const HardwareSpec& hw, const TrainingSpec& t,
                     const Plan& p, const Simulation& sim, int64_t only_stage) {
  Json stages = Json::array();
  for (const StageTimeline& st : sim.stages)
    if (wanted(st.index, only_stage)) stages.push_back(stage_json(st, sim));
  Json s = {{"schedule", sim.virtual_stages > 1 ? "interleaved-1f1b" : "1f1b"},
            {"virtual_stages", sim.virtual_stages},
            {"microbatches", sim.microbatches},
            {"iteration_time_s", sim.iteration_s},
            {"estimate_iteration_time_s", sim.estimate.iteration.time_s},
            {"budget_bytes", bytes_int(sim.estimate.budget_bytes)},
            {"fits", fits_budget(sim)},
            {"events", int64_t(sim.events.size())},
            {"buffers", int64_t(sim.buffers.size())},
            {"stages", stages}};
  return {{"meta", meta_json(meta)},      {"model", model_json(m)}, {"hardware", hardware_json(hw)},
          {"training", training_json(t)}, {"plan", plan_json(p)},   {"simulation", s}};
}

}  // namespace remat

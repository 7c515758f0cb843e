#pragma once
// remat plan's JSON report and tables.
#include <optional>
#include <string>

#include "remat/report/json_report.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/search/planner.hpp"

namespace remat {

Json candidate_json(const Candidate& c, const SearchSpace& space);
Json shortfall_json(const Shortfall& s, const SearchSpace& space);

// The plan the report describes: the best, or when nothing fits the
// smallest footprint searched (empty when not even that exists).
std::optional<Plan> reported_plan(const PlanSearchResult& result, const SearchSpace& space);

// `estimate`: of reported_plan (nullptr when there is none); its stages,
// iteration and peak go into the report. `runnable`: the best plan
// Megatron-LM runs as-is, printed with its flags beside the exact plan.
Json plan_search_report(const ReportMeta& meta, const SearchSpace& space, const SearchOptions& opts,
                        const PlanSearchResult& result, const Estimate* estimate,
                        const RunnablePlan* runnable = nullptr, bool transformer_engine = false);
std::string plan_search_table(const SearchSpace& space, const SearchOptions& opts, const PlanSearchResult& result,
                              const Estimate* estimate, const RunnablePlan* runnable = nullptr,
                              bool transformer_engine = false);

}  // namespace remat

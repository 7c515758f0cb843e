#pragma once
// remat plan's JSON report and tables.
#include <string>

#include "remat/report/json_report.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/search/planner.hpp"

namespace remat {

Json candidate_json(const Candidate& c, const SearchSpace& space);
// `runnable`: the best plan Megatron-LM runs as-is, printed with its flags beside the exact plan.
Json plan_search_report(const ReportMeta& meta, const SearchSpace& space, const SearchOptions& opts,
                        const PlanSearchResult& result, const Estimate* best_estimate,
                        const RunnablePlan* runnable = nullptr, bool transformer_engine = false);
std::string plan_search_table(const SearchSpace& space, const SearchOptions& opts, const PlanSearchResult& result,
                              const Estimate* best_estimate, const RunnablePlan* runnable = nullptr,
                              bool transformer_engine = false);

}  // namespace remat

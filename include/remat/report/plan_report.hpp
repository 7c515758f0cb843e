#pragma once
// remat plan's JSON report and tables.
#include <string>

#include "remat/report/json_report.hpp"
#include "remat/search/megatron_flags.hpp"
#include "remat/search/planner.hpp"

namespace remat {

Json candidate_json(const Candidate& c, const SearchSpace& space);
Json plan_search_report(const ReportMeta& meta, const SearchSpace& space, const SearchOptions& opts,
                        const PlanSearchResult& result, const Estimate* best_estimate);
std::string plan_search_table(const SearchSpace& space, const SearchOptions& opts, const PlanSearchResult& result,
                              const Estimate* best_estimate);

}  // namespace remat

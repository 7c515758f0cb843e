#!/usr/bin/env bash
# Refreshes reports/perf/latest.md from the planner benchmarks (tests/bench_estimate.cpp):
# medians of 5 repetitions, CPU time, pinned to one core where taskset exists. Reports only:
# CI machines are too noisy to fail on time.
#   tests/perf_table.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bench="$build/tests/remat_bench_planner"
[ -x "$bench" ] || { echo "no $bench (configure with -DREMAT_BUILD_BENCHMARKS=ON)" >&2; exit 1; }
pin=()
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi
raw=$("${pin[@]}" "$bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>/dev/null)
{
  echo "# Planner benchmarks, latest run"
  echo
  echo "Written by \`tests/perf_table.sh\` (CI runs it after the tests) on $(date -u +%Y-%m-%d), commit"
  echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores${pin[*]:+, pinned to one}: medians of 5, CPU time."
  echo "The goals are issue 26's; README.md beside this file says where the time goes."
  echo
  echo "| benchmark | goal | median CPU time |"
  echo "|---|---|---|"
  echo "$raw" | awk '/_median/ {
    name = $1; sub(/_median$/, "", name)
    goal = ""
    if (name ~ /^estimate_deepseek_v3_pp16/) goal = "<= 50 us"
    if (name ~ /^plan_deepseek_v3_pp16/) goal = "<= 20 ms"
    if (name ~ /^sweep_deepseek_v3/) goal = "100,000 layouts in 2 s"
    extra = ""
    for (i = 1; i <= NF; ++i) if ($i ~ /^(layouts|planned)=/) extra = extra (extra == "" ? " (" : ", ") $i
    if (extra != "") extra = extra ")"
    printf "| `%s` | %s | %s %s%s |\n", name, goal, $4, $5, extra
  }'
} > reports/perf/latest.md
cat reports/perf/latest.md

#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS,
# two at a time, from seed corpora built out of models/, hardware/,
# tests/data, tests/bad_inputs and tests/fuzz/seeds (trimmed reports/gpu
# measurements, CLI argument lists). Prints executions and executions/s per
# target; exits non-zero when a target crashed, hung or leaked.
#   tests/fuzz/run_fuzzers.sh SECONDS [TARGET...]
# Environment: BUILD (default build-fuzz), JOBS (parallel targets, default 2), SKIP_BUILD=1 to run
# the binaries already in BUILD/tests/fuzz (built elsewhere and copied, e.g. to a many-core machine).
set -euo pipefail
seconds=${1:?usage: run_fuzzers.sh SECONDS [TARGET...]}
shift
cd "$(dirname "$0")/../.."
root=$PWD
build=${BUILD:-build-fuzz}
jobs=${JOBS:-2}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_model_yaml fuzz_hardware_yaml fuzz_hf_config fuzz_measurements fuzz_megatron_log fuzz_hf_run fuzz_cli)

if [ -z "${SKIP_BUILD:-}" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREMAT_FUZZ=ON \
    -DREMAT_ENABLE_CUDA=OFF -DREMAT_BUILD_TESTS=OFF -DREMAT_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$build" --target "${targets[@]}"
fi

seed() {  # seed TARGET: copy the committed inputs into the working corpus
  local dir="$build/corpus/$1"
  mkdir -p "$dir"
  case "$1" in
    fuzz_model_yaml) cp models/*.yaml tests/bad_inputs/*.yaml "$dir/" ;;
    fuzz_hardware_yaml) cp hardware/*.yaml tests/bad_inputs/*.yaml "$dir/" ;;
    fuzz_hf_config) cp tests/data/*.json tests/data/hf_configs/*.json tests/bad_inputs/*.json "$dir/" ;;
    fuzz_measurements) cp tests/fuzz/seeds/measurements/*.json "$dir/" ;;
    fuzz_cli) cp tests/fuzz/seeds/cli/*.txt "$dir/" ;;
    fuzz_megatron_log) cp reports/megatron/logs/*.log reports/megatron/plans/*.log "$dir/" ;;
    fuzz_hf_run) : ;;  # seeds/hostile/fuzz_hf_run holds the first records of reports/hf/steps-h100.jsonl
  esac
  # hostile seeds (deep nesting, long lines, bytes not UTF-8, huge integers) per target
  if [ -d "tests/fuzz/seeds/hostile/$1" ]; then cp tests/fuzz/seeds/hostile/"$1"/* "$dir/"; fi
}

run() {  # run TARGET: SECONDS of fuzzing in its own folder (crash files land there)
  local t=$1 work="$build/fuzz-work/$1" extra=()
  mkdir -p "$work"
  # fuzz_cli runs whole commands: `remat plan`'s per-layer search takes seconds under ASan on a busy machine
  [ "$t" = fuzz_cli ] && extra=(-dict="$root/tests/fuzz/cli.dict" -timeout=60)
  [ "$t" = fuzz_measurements ] && extra=(-max_len=16384)
  [ "$t" = fuzz_megatron_log ] && extra=(-max_len=131072)
  [ "$t" = fuzz_hf_run ] && extra=(-max_len=65536)
  (cd "$work" && ASAN_OPTIONS=detect_leaks=1 "$root/$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 "${extra[@]}" "$root/$build/corpus/$t") \
     >"$build/fuzz-work/$t.log" 2>&1
}

status=0
pids=()
names=()
for t in "${targets[@]}"; do
  seed "$t"
  run "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done

printf '%-20s %10s %14s %8s  %s\n' target seconds executions exec/s result
for t in "${names[@]}"; do
  log="$build/fuzz-work/$t.log"
  execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log" | tail -1)
  rate=$(awk '/stat::average_exec_per_sec/{print $2}' "$log" | tail -1)
  result=clean
  [ -n "$execs" ] || result="FAILED (no run: see $log)"
  grep -qE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: ' "$log" && result="FAILED (see $log)"
  printf '%-20s %10s %14s %8s  %s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "$result"
done
exit $status

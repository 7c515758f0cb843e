#!/bin/bash
# Builds remat-bench on its own (a wrapper project around src/cuda, so the planner's sources
# are not needed) into /tmp/remat-wrap/build. Used on the GPU machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
W=/tmp/remat-wrap
mkdir -p "$W"
cat > "$W/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(remat_wrap LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_BUILD_TYPE Release)
enable_testing()
add_subdirectory($ROOT/src/cuda cuda)
CM
cmake -S "$W" -B "$W/build" -DCMAKE_CUDA_COMPILER="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" >/dev/null
cmake --build "$W/build" -j"$(nproc)" --target remat-bench
echo "built $W/build/cuda/remat-bench"

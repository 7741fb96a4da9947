#!/usr/bin/env bash
# The CUDA checks that need an NVIDIA GPU and its driver (CI has neither; there kiln_cuda_tests
# runs on tests/gen/fake_cuda.cpp): kiln_cuda_tests through the real libcuda.so.1, then the
# consumer project, whose app runs its whole suite through kiln::Device::cuda(0), then the GPU
# benchmarks' CUDA rows (kiln_bench --benchmark_filter=Gpu/cuda: kiln against cuBLAS and the copy).
# Usage: scripts/gpu-check.sh [kiln build dir, default build/dev]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build/dev}"
(($(ldconfig -p 2>/dev/null | grep -c 'libcuda[.]so[.]1 ' || true) > 0)) || { echo "gpu-check: no libcuda.so.1 here (no NVIDIA driver)" >&2; exit 1; }
[[ -f "$build/CMakeCache.txt" ]] || cmake --preset dev
cmake --build "$build" --target kiln kiln_cuda_tests
KILN_CUDA_LIBRARY=libcuda.so.1 "$build/kiln_cuda_tests"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
bash tests/consumer/run.sh "$build" "$scratch"
cmake --build "$build" --target kiln_bench
"$build/kiln_bench" --benchmark_filter=Gpu/cuda --benchmark_min_time=0.3 --benchmark_counters_tabular=true 2>&1 |
  tee "$scratch/bench"
grep -q "^Gpu/cuda/.*manual_time" "$scratch/bench" || { echo "gpu-check: the CUDA benchmarks did not run" >&2; exit 1; }
! grep -q "ERROR OCCURRED" "$scratch/bench" || { echo "gpu-check: a CUDA benchmark failed" >&2; exit 1; }
echo "gpu-check: OK"

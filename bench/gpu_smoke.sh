#!/usr/bin/env bash
# The GPU benchmarks' small rows, once each, on the OpenCL device here (PoCL in CI): every row must
# run, agree with the library's CPU variant and report its ratio to the device's copy.
# Usage: bench/gpu_smoke.sh <kiln_bench>
set -euo pipefail
bench="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export POCL_CACHE_DIR="$scratch/pocl-cache"
"$bench" --benchmark_filter='^Gpu/opencl/(sgemm/m:256/|bias_relu/n:1048576/|softmax/r:256/)' \
  --benchmark_min_time=0.05 --benchmark_counters_tabular=true >"$scratch/out" 2>&1 || { cat "$scratch/out"; exit 1; }
cat "$scratch/out"
rows=$(grep -c '^Gpu/opencl/.*manual_time' "$scratch/out" || true)
[[ "$rows" == 3 ]] || { echo "gpu_smoke: expected 3 rows, got $rows" >&2; exit 1; }
! grep -q 'ERROR OCCURRED' "$scratch/out" || { echo "gpu_smoke: a row failed" >&2; exit 1; }
grep -q 'x_copy' "$scratch/out" || { echo "gpu_smoke: no ratio to the copy" >&2; exit 1; }
echo "gpu_smoke: OK"

// What the generated entry point costs on top of the kernel it calls: the same tiny kernel (4
// floats) through kiln_bench_dispatch::add1 (argument checks, dim binding, the first variant whose
// guard holds) and through its variant's kernel function directly, with the views made per call
// and kept. Goal: <= 10 ns per call more.
// Run: kiln_bench --benchmark_filter=Dispatch
#include <benchmark/benchmark.h>

#include "kiln_bench_dispatch.h"

extern "C" void kiln_bench_dispatch_add1_any_0_cpu(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);

namespace {

void BM_DispatchEntryPoint(benchmark::State& state) {
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  for (auto _ : state) {
    kiln::Status s = kiln_bench_dispatch::add1(kiln::TensorView(x, {4}), kiln::TensorView(y, {4}));
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  if (y[3] != 5.0f) state.SkipWithError("wrong result");
}
BENCHMARK(BM_DispatchEntryPoint)->Name("Dispatch/entry_point");

// the same with the views made once (an app that keeps them): the dispatch alone
void BM_DispatchEntryPointKeptViews(benchmark::State& state) {
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  const kiln::TensorView vx(x, {4}), vy(y, {4});
  for (auto _ : state) {
    kiln::Status s = kiln_bench_dispatch::add1(vx, vy);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
  }
  if (y[3] != 5.0f) state.SkipWithError("wrong result");
}
BENCHMARK(BM_DispatchEntryPointKeptViews)->Name("Dispatch/entry_point_views_kept");

void BM_DispatchDirect(benchmark::State& state) {
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  for (auto _ : state) {
    void* bufs[] = {y, x};
    int64_t vars[] = {4};
    benchmark::DoNotOptimize(bufs);
    kiln_bench_dispatch_add1_any_0_cpu(bufs, vars, 0, 1);
    benchmark::ClobberMemory();
  }
  if (y[3] != 5.0f) state.SkipWithError("wrong result");
}
BENCHMARK(BM_DispatchDirect)->Name("Dispatch/kernel_directly");

}  // namespace

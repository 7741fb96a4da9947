// The generator's speed on whole programs: tensor program -> schedule -> every stage of the
// codegen pipeline -> linearize -> C source (everything but the C compiler), from a fresh
// Context each iteration. `time_per_kernel` divides by the number of scheduled kernels.
//   Codegen/matmul     1024x1024 @ 1024x1024
//   Codegen/conv2d     relu(conv2d(x[8,64,56,56], w[64,64,3,3], bias, padding 1))
//   Codegen/softmax    softmax over the rows of [4096, 4096]
//   Codegen/attention  causal scaled dot-product attention, q/k/v [8, S<=2048, 64]
// tinygrad on this machine kind: 126 ms (matmul), 449 ms (conv2d), ~230 ms per attention kernel.
// Run: kiln_bench --benchmark_filter=Codegen --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <functional>

#include "generator/codegen/pipeline.h"
#include "generator/schedule/schedule.h"

namespace kiln {
namespace {

using Build = std::function<void(Context&, std::vector<Tensor>&, std::vector<Tensor>&)>;

void run(benchmark::State& state, const Build& build) {
  size_t kernels = 0, bytes = 0;
  for (auto _ : state) {
    Context ctx;
    std::vector<Tensor> ins, outs;
    build(ctx, ins, outs);
    schedule::Schedule s = schedule::schedule(ins, outs, "k");
    kernels = s.kernels.size();
    for (const auto& k : s.kernels) bytes += codegen::compile_to_c(k.ast, s.vars).source.size();
  }
  benchmark::DoNotOptimize(bytes);
  state.counters["kernels"] = double(kernels);
  state.counters["time_per_kernel"] =
      benchmark::Counter(double(kernels), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Matmul(benchmark::State& state) {
  run(state, [](Context& ctx, auto& ins, auto& outs) {
    ins = {Tensor::input(ctx, "a", dtypes::float32, {1024, 1024}),
           Tensor::input(ctx, "b", dtypes::float32, {1024, 1024})};
    outs = {ins[0].matmul(ins[1])};
  });
}

void BM_Conv2d(benchmark::State& state) {
  run(state, [](Context& ctx, auto& ins, auto& outs) {
    ins = {Tensor::input(ctx, "x", dtypes::float32, {8, 64, 56, 56}),
           Tensor::input(ctx, "w", dtypes::float32, {64, 64, 3, 3}), Tensor::input(ctx, "b", dtypes::float32, {64})};
    outs = {ins[0].conv2d(ins[1], &ins[2], 1, {1, 1}, {1, 1}, {1, 1}).relu()};
  });
}

void BM_Softmax(benchmark::State& state) {
  run(state, [](Context& ctx, auto& ins, auto& outs) {
    ins = {Tensor::input(ctx, "x", dtypes::float32, {4096, 4096})};
    outs = {ins[0].softmax(-1)};
  });
}

void BM_Attention(benchmark::State& state) {
  run(state, [](Context& ctx, auto& ins, auto& outs) {
    const UOp* s = ctx.var("S", 1, 2048);
    for (const char* n : {"q", "k", "v"}) ins.push_back(Tensor::input(ctx, n, dtypes::float32, {8, s, 64}));
    outs = {ins[0].scaled_dot_product_attention(ins[1], ins[2], nullptr, true)};
  });
}

BENCHMARK(BM_Matmul)->Name("Codegen/matmul")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2d)->Name("Codegen/conv2d")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax)->Name("Codegen/softmax")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Attention)->Name("Codegen/attention")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kiln

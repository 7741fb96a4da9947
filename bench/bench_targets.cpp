// The object targets against the C they replace, side by side in one run, on the user's path: the
// entry points of three libraries kiln_add_library() builds from bench/targets.kiln (declared
// ranges and buckets), called with a kiln::Context of 1 or 2 threads.
//   Targets/<kernel>/object/<threads>   x86_64-avx512 as kiln's LLVM objects (kiln_bench_obj)
//   Targets/<kernel>/c/<threads>        x86_64-avx512 as C with its flags (kiln_bench_c, C_SOURCES)
//   Targets/<kernel>/cpu/<threads>      the portable cpu target's C, no ISA flags (kiln_bench_cpu)
// Kernels: sgemm 1024^3 (the M % 16, N % 64 bucket) and 1000^3 (the generic variant), relu(a*b+c)
// and the sum over 16M floats, softplus log(exp(x) + 1) over 16M floats (against a plain loop
// over libm: Targets/softplus/libm_loop), softmax and layernorm over the rows of 4096 x 4096, conv2d 3x3
// 64 -> 64 channels over 1 x 64 x 56 x 56 (padding 1). On a CPU without AVX-512 the object and c
// rows run the libraries' generic path, which has no other target: they are skipped.
// Run: kiln_bench --benchmark_filter=Targets
#include <benchmark/benchmark.h>

#include <cmath>
#include <map>
#include <vector>

#include "bench/random.h"
#include "kiln_bench_c.h"
#include "kiln_bench_cpu.h"
#include "kiln_bench_obj.h"

namespace {

using kiln::bench::random_floats;

// Runs `call` (a kiln::Status(kiln::Context*)) with a context of state.range(0) threads; flops and
// bytes per call give the GFLOP/s and GB/s counters.
template <class Call> void measure(benchmark::State& state, Call call, bool avx512, double flops, double bytes) {
  if (avx512 && !(kiln::cpu_features() & KILN_CPU_X86_AVX512)) {
    state.SkipWithError("this CPU has no AVX-512: the library's only target does not run");
    return;
  }
  kiln::Context ctx(int(state.range(0)));
  kiln::Status s = call(&ctx);  // warm: the pool's threads, the workspace
  if (!s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  for (auto _ : state) {
    s = call(&ctx);
    benchmark::ClobberMemory();
  }
  if (!s.ok()) state.SkipWithError(s.message().c_str());
  if (flops > 0) state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

struct Gemm {
  int64_t n;
  std::vector<float> a = random_floats(size_t(n * n), 1), b = random_floats(size_t(n * n), 2),
                     c = random_floats(size_t(n * n), 3);
};
struct Stream {
  static constexpr int64_t kN = 16 << 20;
  std::vector<float> a = random_floats(kN, 4), b = random_floats(kN, 5), c = random_floats(kN, 6),
                     y = random_floats(kN, 7);
  float s = 0;
};
struct Rows {
  static constexpr int64_t kR = 4096, kD = 4096;
  std::vector<float> x = random_floats(size_t(kR * kD), 8), y = random_floats(size_t(kR * kD), 9);
};
struct Conv {
  std::vector<float> x = random_floats(64 * 56 * 56, 10), w = random_floats(64 * 64 * 9, 11),
                     y = random_floats(64 * 56 * 56, 12);
};

// one library's benchmarks: its namespace, its row name, whether it needs AVX-512
#define KILN_TARGET_BENCHMARKS(LIB, ROW, AVX512)                                                           \
  void BM_Sgemm_##ROW(benchmark::State& state) {                                                           \
    static std::map<int64_t, Gemm> gemms; /* one per size: a row measures the size it names */             \
    Gemm& g = gemms.try_emplace(state.range(1), Gemm{state.range(1)}).first->second;                       \
    const int64_t n = g.n;                                                                                 \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::sgemm(kiln::TensorView(g.a.data(), {n, n}), kiln::TensorView(g.b.data(), {n, n}),    \
                            kiln::TensorView(g.c.data(), {n, n}), ctx);                                    \
        },                                                                                                 \
        AVX512, 2.0 * double(n) * double(n) * double(n), 12.0 * double(n) * double(n));                    \
  }                                                                                                        \
  BENCHMARK(BM_Sgemm_##ROW)                                                                                \
      ->Name("Targets/sgemm/" #ROW)                                                                        \
      ->Args({1, 1024})                                                                                    \
      ->Args({2, 1024})                                                                                    \
      ->Args({1, 1000})                                                                                    \
      ->Unit(benchmark::kMillisecond)                                                                      \
      ->UseRealTime();                                                                                     \
  void BM_FmaRelu_##ROW(benchmark::State& state) {                                                         \
    static Stream d;                                                                                       \
    const int64_t n = Stream::kN;                                                                          \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::fma_relu(kiln::TensorView(d.a.data(), {n}), kiln::TensorView(d.b.data(), {n}),       \
                               kiln::TensorView(d.c.data(), {n}), kiln::TensorView(d.y.data(), {n}), ctx); \
        },                                                                                                 \
        AVX512, 0, 16.0 * double(n));                                                                      \
  }                                                                                                        \
  BENCHMARK(BM_FmaRelu_##ROW)->Name("Targets/fma_relu/" #ROW)->Arg(1)->Arg(2)->UseRealTime();              \
  void BM_Sum_##ROW(benchmark::State& state) {                                                             \
    static Stream d;                                                                                       \
    const int64_t n = Stream::kN;                                                                          \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::total(kiln::TensorView(d.a.data(), {n}), kiln::TensorView(&d.s, {1}), ctx);          \
        },                                                                                                 \
        AVX512, 0, 4.0 * double(n));                                                                       \
  }                                                                                                        \
  BENCHMARK(BM_Sum_##ROW)->Name("Targets/sum/" #ROW)->Arg(1)->Arg(2)->UseRealTime();                       \
  void BM_Softplus_##ROW(benchmark::State& state) {                                                        \
    static Stream d;                                                                                       \
    const int64_t n = Stream::kN;                                                                          \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::softplus(kiln::TensorView(d.a.data(), {n}), kiln::TensorView(d.y.data(), {n}), ctx); \
        },                                                                                                 \
        AVX512, 0, 8.0 * double(n));                                                                       \
  }                                                                                                        \
  BENCHMARK(BM_Softplus_##ROW)->Name("Targets/softplus/" #ROW)->Arg(1)->Arg(2)->UseRealTime();             \
  void BM_Softmax_##ROW(benchmark::State& state) {                                                         \
    static Rows d;                                                                                         \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::softmax_rows(kiln::TensorView(d.x.data(), {Rows::kR, Rows::kD}),                     \
                                   kiln::TensorView(d.y.data(), {Rows::kR, Rows::kD}), ctx);               \
        },                                                                                                 \
        AVX512, 0, 8.0 * double(Rows::kR * Rows::kD));                                                     \
  }                                                                                                        \
  BENCHMARK(BM_Softmax_##ROW)->Name("Targets/softmax/" #ROW)->Arg(1)->Arg(2)->UseRealTime();               \
  void BM_Layernorm_##ROW(benchmark::State& state) {                                                       \
    static Rows d;                                                                                         \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::layernorm_rows(kiln::TensorView(d.x.data(), {Rows::kR, Rows::kD}),                   \
                                     kiln::TensorView(d.y.data(), {Rows::kR, Rows::kD}), ctx);             \
        },                                                                                                 \
        AVX512, 0, 8.0 * double(Rows::kR * Rows::kD));                                                     \
  }                                                                                                        \
  BENCHMARK(BM_Layernorm_##ROW)->Name("Targets/layernorm/" #ROW)->Arg(1)->Arg(2)->UseRealTime();           \
  void BM_Conv_##ROW(benchmark::State& state) {                                                            \
    static Conv d;                                                                                         \
    measure(                                                                                               \
        state,                                                                                             \
        [&](kiln::Context* ctx) {                                                                          \
          return LIB::conv3x3(kiln::TensorView(d.x.data(), {1, 64, 56, 56}),                               \
                              kiln::TensorView(d.w.data(), {64, 64, 3, 3}),                                \
                              kiln::TensorView(d.y.data(), {1, 64, 56, 56}), ctx);                         \
        },                                                                                                 \
        AVX512, 2.0 * 64 * 56 * 56 * 64 * 9, 4.0 * (2 * 64 * 56 * 56 + 64 * 64 * 9));                      \
  }                                                                                                        \
  BENCHMARK(BM_Conv_##ROW)->Name("Targets/conv2d/" #ROW)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// the baseline for softplus: a plain loop over libm's logf and expf, one call each per element
// (GCC does not vectorize them without -ffast-math), on one thread
void BM_Softplus_libm(benchmark::State& state) {
  static Stream d;
  for (auto _ : state) {
    for (int64_t i = 0; i < Stream::kN; ++i) d.y[size_t(i)] = std::log(std::exp(d.a[size_t(i)]) + 1.0f);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(8.0 * double(Stream::kN), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Softplus_libm)->Name("Targets/softplus/libm_loop/1")->UseRealTime();

KILN_TARGET_BENCHMARKS(kiln_bench_obj, object, true)
KILN_TARGET_BENCHMARKS(kiln_bench_c, c, true)
KILN_TARGET_BENCHMARKS(kiln_bench_cpu, cpu, false)

}  // namespace

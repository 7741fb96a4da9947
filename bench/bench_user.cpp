// kiln on the user's path against a baseline in the same process: the entry points of
// kiln_bench_user, which kiln_add_library() builds from bench/user.kiln (declared ranges and
// buckets; TARGETS cpu x86_64-avx2 x86_64-avx512, so the dispatch takes this CPU's best), called
// with a kiln::Context of 1 or 2 threads, at shapes inside each bucket and at shapes only the
// generic variant takes. Each iteration times one kiln call and one baseline call, interleaved, so
// both see the same machine; the baseline gets the same threads.
//   User/<kernel>/<shape>/threads:<t>   time: kiln's call. Counters: GFLOP/s (GB/s for the row
//                                       kernels), the baseline's as base_GFLOP/s (base_GB/s), and
//                                       x_<baseline> = baseline time / kiln time (above 1: kiln is
//                                       faster than the baseline)
// Baselines: OpenBLAS sgemm (sgemm; a loop of them for the batch of small ones; attention as two
// sgemms and a softmax loop per head), oneDNN (softmax, layernorm, conv2d NCHW), or bench/baselines.c's
// plain C loops where those are not installed. Each row checks once that kiln's result and the
// baseline's agree. Run: kiln_bench --benchmark_filter=User
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "bench/baselines.h"
#include "bench/interleaved.h"
#include "bench/random.h"
#include "kiln_bench_user.h"

namespace {

using kiln::bench::difference;
using kiln::bench::interleave;
using kiln::bench::random_floats;

void baseline_threads(int threads) {
#if KILN_BENCH_OPENBLAS
  openblas_set_num_threads(threads);
#endif
#if KILN_BENCH_DNNL
  omp_set_num_threads(threads);
#endif
  (void)threads;
}

// Times `kiln_call` (a kiln::Status(kiln::Context*)) and `base_call` one after the other per
// iteration; `work` is the flops (or bytes) of one call, reported as GFLOP/s (GB/s).
template <class KilnCall, class BaseCall>
void side_by_side(benchmark::State& state, int threads, const char* base, KilnCall kiln_call, BaseCall base_call,
                  std::vector<float>& kiln_out, const std::vector<float>& base_out, double work, bool flops,
                  double tolerance = 1e-3) {
  kiln::Context ctx(threads);
  baseline_threads(threads);
  std::fill(kiln_out.begin(), kiln_out.end(), std::nanf(""));  // poisoned: what kiln skips shows
  kiln::Status s = kiln_call(&ctx);                            // warm: the pool's threads, the workspace
  base_call();
  if (!s.ok()) return state.SkipWithError(s.message().c_str());
  if (double d = difference(kiln_out, base_out); !(d <= tolerance))
    return state.SkipWithError(("kiln's result and the baseline's differ by " + std::to_string(d)).c_str());
  const std::string unit = flops ? "GFLOP/s" : "GB/s";
  interleave(
      state, [&] { return kiln_call(&ctx); }, base_call, work, flops, "base_" + unit, std::string("x_") + base);
}

// ---------------------------------------------------------------- sgemm

void BM_Sgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int threads = int(state.range(3));
  std::vector<float> a = random_floats(size_t(m * k), 1), b = random_floats(size_t(k * n), 2);
  std::vector<float> c(size_t(m * n)), want(size_t(m * n));
#if KILN_BENCH_OPENBLAS
  const char* base = "openblas";
  auto base_call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.0f, a.data(), int(k), b.data(),
                int(n), 0.0f, want.data(), int(n));
  };
#else
  const char* base = "plain_c";
  auto base_call = [&] { baseline_sgemm(a.data(), b.data(), want.data(), m, n, k); };
#endif
  side_by_side(
      state, threads, base,
      [&](kiln::Context* ctx) {
        return kiln_bench_user::sgemm(kiln::TensorView(a.data(), {m, k}), kiln::TensorView(b.data(), {k, n}),
                                      kiln::TensorView(c.data(), {m, n}), ctx);
      },
      base_call, c, want, 2.0 * double(m) * double(n) * double(k), true);
}
BENCHMARK(BM_Sgemm)
    ->Name("User/sgemm")
    ->ArgNames({"m", "n", "k", "threads"})
    ->ArgsProduct({{1024}, {1024}, {1024}, {1, 2}})  // the M % 16, N % 16 bucket
    ->ArgsProduct({{2048}, {2048}, {2048}, {1, 2}})  // the same bucket, out of L2
    ->ArgsProduct({{1000}, {1000}, {1000}, {1, 2}})  // the generic variant
    ->ArgsProduct({{1023}, {1023}, {1023}, {1, 2}})  // the generic variant, odd
    ->ArgsProduct({{4096}, {1024}, {4096}, {1, 2}})  // wide and deep
    ->ArgsProduct({{1}, {4096}, {4096}, {1, 2}})     // M = 1: a vector-matrix product
    ->ArgsProduct({{4096}, {16}, {1024}, {1, 2}})    // tall and skinny
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// ---------------------------------------------------------------- many small matmuls

void BM_Bgemm(benchmark::State& state) {
  const int64_t g = state.range(0), p = state.range(1);
  const int threads = int(state.range(2));
  std::vector<float> a = random_floats(size_t(g * p * p), 3), b = random_floats(size_t(g * p * p), 4);
  std::vector<float> c(size_t(g * p * p)), want(size_t(g * p * p));
  const size_t tile = size_t(p * p);
#if KILN_BENCH_OPENBLAS
  const char* base = "openblas_loop";
  auto base_call = [&] {
    for (int64_t i = 0; i < g; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(p), int(p), int(p), 1.0f, a.data() + size_t(i) * tile,
                  int(p), b.data() + size_t(i) * tile, int(p), 0.0f, want.data() + size_t(i) * tile, int(p));
  };
#else
  const char* base = "plain_c";
  auto base_call = [&] {
    for (int64_t i = 0; i < g; ++i)
      baseline_sgemm(a.data() + size_t(i) * tile, b.data() + size_t(i) * tile, want.data() + size_t(i) * tile, p, p, p);
  };
#endif
  side_by_side(
      state, threads, base,
      [&](kiln::Context* ctx) {
        return kiln_bench_user::bgemm(kiln::TensorView(a.data(), {g, p, p}), kiln::TensorView(b.data(), {g, p, p}),
                                      kiln::TensorView(c.data(), {g, p, p}), ctx);
      },
      base_call, c, want, 2.0 * double(g) * double(p) * double(p) * double(p), true);
}
BENCHMARK(BM_Bgemm)
    ->Name("User/bgemm")
    ->ArgNames({"g", "p", "threads"})
    ->ArgsProduct({{4096}, {16, 32, 64}, {1, 2}})  // the P % 16 bucket
    ->ArgsProduct({{4096}, {24}, {1, 2}})          // the generic variant
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// ---------------------------------------------------------------- attention

#if KILN_BENCH_OPENBLAS
// softmax(q k^T / 8) v per head: two sgemms and a softmax over the rows of the scores
void attention_openblas(const float* q, const float* k, const float* v, float* o, int64_t h, int64_t s,
                        std::vector<float>& scores) {
  constexpr int64_t kD = 64;
  scores.resize(size_t(s * s));
  for (int64_t i = 0; i < h; ++i) {
    const size_t at = size_t(i * s * kD);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(s), int(s), int(kD), 0.125f, q + at, int(kD), k + at,
                int(kD), 0.0f, scores.data(), int(s));
    baseline_softmax_rows(scores.data(), scores.data(), s, s);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s), int(kD), int(s), 1.0f, scores.data(), int(s), v + at,
                int(kD), 0.0f, o + at, int(kD));
  }
}

void BM_Attention(benchmark::State& state) {
  const int64_t h = state.range(0), s = state.range(1);
  const int threads = int(state.range(2));
  const size_t n = size_t(h * s * 64);
  std::vector<float> q = random_floats(n, 5), k = random_floats(n, 6), v = random_floats(n, 7);
  std::vector<float> o(n), want(n), scores;
  side_by_side(
      state, threads, "openblas_softmax",
      [&](kiln::Context* ctx) {
        return kiln_bench_user::attention(
            kiln::TensorView(q.data(), {h, s, 64}), kiln::TensorView(k.data(), {h, s, 64}),
            kiln::TensorView(v.data(), {h, s, 64}), kiln::TensorView(o.data(), {h, s, 64}), ctx);
      },
      [&] { attention_openblas(q.data(), k.data(), v.data(), want.data(), h, s, scores); }, o, want,
      4.0 * double(h) * double(s) * double(s) * 64.0, true);
}
BENCHMARK(BM_Attention)
    ->Name("User/attention")
    ->ArgNames({"h", "s", "threads"})
    ->ArgsProduct({{8}, {1024}, {1, 2}})  // the S % 64 bucket
    ->ArgsProduct({{8}, {1000}, {1, 2}})  // the generic variant
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
#endif

// ---------------------------------------------------------------- rows: softmax, layernorm

void BM_Rows(benchmark::State& state, bool softmax) {
  const int64_t r = state.range(0), d = state.range(1);
  const int threads = int(state.range(2));
  std::vector<float> x = random_floats(size_t(r * d), 8);
  std::vector<float> y(size_t(r * d)), want(size_t(r * d));
#if KILN_BENCH_DNNL
  const char* base = "onednn";
  DnnlRows dnnl(softmax, r, d, x.data(), want.data());
  auto base_call = [&] { dnnl(); };
#else
  const char* base = "plain_c";
  auto base_call = [&] { (softmax ? baseline_softmax_rows : baseline_layernorm_rows)(x.data(), want.data(), r, d); };
#endif
  side_by_side(
      state, threads, base,
      [&](kiln::Context* ctx) {
        kiln::TensorView in(x.data(), {r, d}), out(y.data(), {r, d});
        return softmax ? kiln_bench_user::softmax_rows(in, out, ctx) : kiln_bench_user::layernorm_rows(in, out, ctx);
      },
      base_call, y, want, 8.0 * double(r) * double(d), false);
}
BENCHMARK_CAPTURE(BM_Rows, softmax, true)
    ->Name("User/softmax")
    ->ArgNames({"r", "d", "threads"})
    ->ArgsProduct({{4096}, {4096}, {1, 2}})  // the R % 16, D % 64 bucket
    ->ArgsProduct({{4095}, {4000}, {1, 2}})  // the generic variant
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_Rows, layernorm, false)
    ->Name("User/layernorm")
    ->ArgNames({"r", "d", "threads"})
    ->ArgsProduct({{4096}, {4096}, {1, 2}})
    ->ArgsProduct({{4095}, {4000}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// ---------------------------------------------------------------- conv2d

#if KILN_BENCH_DNNL
void BM_Conv(benchmark::State& state) {
  const int64_t b = state.range(0);
  const int threads = int(state.range(1));
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::data_type f32 = dnnl::memory::data_type::f32;
  std::vector<float> x = random_floats(size_t(b * 64 * 56 * 56), 10), w = random_floats(64 * 64 * 9, 11);
  std::vector<float> y(x.size()), want(x.size());
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  dnnl::memory::desc x_md({b, 64, 56, 56}, f32, tag::nchw), w_md({64, 64, 3, 3}, f32, tag::oihw),
      y_md({b, 64, 56, 56}, f32, tag::nchw);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_md,
                                       w_md, y_md, {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_forward conv(dnnl::convolution_forward::primitive_desc(desc, eng));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(x_md, eng, x.data())},
                                             {DNNL_ARG_WEIGHTS, dnnl::memory(w_md, eng, w.data())},
                                             {DNNL_ARG_DST, dnnl::memory(y_md, eng, want.data())}};
  side_by_side(
      state, threads, "onednn_nchw",
      [&](kiln::Context* ctx) {
        return kiln_bench_user::conv3x3(kiln::TensorView(x.data(), {b, 64, 56, 56}),
                                        kiln::TensorView(w.data(), {64, 64, 3, 3}),
                                        kiln::TensorView(y.data(), {b, 64, 56, 56}), ctx);
      },
      [&] {
        conv.execute(stream, args);
        stream.wait();
      },
      y, want, 2.0 * double(b) * 64 * 56 * 56 * 64 * 9, true);
}
BENCHMARK(BM_Conv)
    ->Name("User/conv2d")
    ->ArgNames({"b", "threads"})
    ->ArgsProduct({{1}, {1, 2}})  // the B == 1 bucket
    ->ArgsProduct({{2}, {1, 2}})  // the generic variant
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();
#endif

}  // namespace

// What the side-by-side benchmarks share (bench_user.cpp on the CPU, bench_gpu.cpp on devices): the
// check of kiln's result against another's, and the timing loop that runs kiln and its baseline in
// turn each iteration, so both see the same machine state, and reports their rates and ratio.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::bench {

// the largest difference between kiln's result and the reference's, relative to the largest value;
// NaN where either has one (an element kiln left unwritten keeps the poison)
inline double difference(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(want[i]));
    if (!(e <= worst)) worst = e;  // NaN sticks
    scale = std::fmax(scale, std::fabs(double(want[i])));
  }
  return worst / scale;
}

// Times `kiln_call` (returns a kiln::Status) and then `base_call` (where `base_rate` is not empty)
// in each iteration; the benchmark's time is kiln's. `work` is the flops or bytes of one call,
// reported as GFLOP/s or GB/s, the baseline's rate under `base_rate` ("base_GFLOP/s", "copy_GB/s")
// and kiln's speed relative to it under `ratio` ("x_openblas"). A failed call skips the benchmark.
template <class KilnCall, class BaseCall>
void interleave(benchmark::State& state, KilnCall kiln_call, BaseCall base_call, double work, bool flops,
                const std::string& base_rate, const std::string& ratio) {
  using Clock = std::chrono::steady_clock;
  kiln::Status s;
  double kiln_s = 0, base_s = 0;
  for (auto _ : state) {
    Clock::time_point t0 = Clock::now();
    s = kiln_call();
    benchmark::ClobberMemory();
    Clock::time_point t1 = Clock::now();
    if (!base_rate.empty()) base_call();
    benchmark::ClobberMemory();
    Clock::time_point t2 = Clock::now();
    const double k = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(k);
    kiln_s += k;
    base_s += std::chrono::duration<double>(t2 - t1).count();
  }
  if (!s.ok()) return state.SkipWithError(s.message().c_str());
  state.counters[flops ? "GFLOP/s" : "GB/s"] =
      benchmark::Counter(work * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (base_rate.empty()) return;
  state.counters[base_rate] = work * 1e-9 * double(state.iterations()) / base_s;
  state.counters[ratio] = base_s / kiln_s;
}

}  // namespace kiln::bench

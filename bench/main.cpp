// kiln_bench's main: Google Benchmark's, with the GPU benchmarks of the devices found here, after
// making the baselines' thread pools sleep between calls. OpenBLAS's threads spin for up to 2^28
// cycles after a call and libgomp's (oneDNN's) for 300,000 spins: in a run that interleaves a kiln
// call with a baseline call, a baseline's spinning thread takes one of the two cores while kiln's
// call runs (sgemm 1024^3 at 2 threads measured 0.59x OpenBLAS that way, 0.73x with both asleep;
// softmax 0.70x against 1.00x). Both libraries read their settings once, when they are loaded, so
// the process starts itself again with them set unless the caller set them.
//
// OpenBLAS also picks its kernels by the CPU's model number when it loads, and a model newer than
// it knows gets its SSE3 kernels: on a Xeon of family 6 model 207 (AVX-512), Debian 12's OpenBLAS
// says "Core: Prescott" and runs sgemm 1024^3 at 21 GFLOP/s on one core, 107 with
// OPENBLAS_CORETYPE=SkylakeX. So a run whose OpenBLAS chose kernels older than the CPU's vector
// instructions starts once more with the core named (unless the caller named one).
#include <benchmark/benchmark.h>
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "bench/bench_gpu.h"

#if KILN_BENCH_OPENBLAS
extern "C" char* openblas_get_corename(void);

namespace {

// the core OpenBLAS should have chosen on this CPU, where the one it chose has no AVX2 kernels
const char* openblas_core_to_name() {
  const char* chose = openblas_get_corename();
  for (const char* old : {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge", "Katmai", "Coppermine",
                          "Northwood", "Atom", "Banias"})
    if (chose != nullptr && strcasecmp(chose, old) == 0) {
#if defined(__x86_64__)
      if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
      if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    }
  return nullptr;
}

}  // namespace
#endif

int main(int argc, char** argv) {
  if (std::getenv("KILN_BENCH_BASELINES_SET") == nullptr) {
    setenv("KILN_BENCH_BASELINES_SET", "1", 1);
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);  // 2^4 cycles (the least it takes)
    setenv("OMP_WAIT_POLICY", "passive", 0);
    execv("/proc/self/exe", argv);  // returns only where it failed: then run with the spinning baselines
  }
#if KILN_BENCH_OPENBLAS
  if (const char* core = openblas_core_to_name(); core != nullptr && std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
  }
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kiln::bench::register_gpu_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

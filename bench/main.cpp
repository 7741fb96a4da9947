// kiln_bench's main: Google Benchmark's, after making the baselines' thread pools sleep between
// calls. OpenBLAS's threads spin for up to 2^28 cycles after a call and libgomp's (oneDNN's) for
// 300,000 spins: in a run that interleaves a kiln call with a baseline call, a baseline's spinning
// thread takes one of the two cores while kiln's call runs (sgemm 1024^3 at 2 threads measured
// 0.59x OpenBLAS that way, 0.73x with both asleep; softmax 0.70x against 1.00x). Both libraries
// read their settings once, when they are loaded, so the process starts itself again with them
// set unless the caller set them.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (std::getenv("KILN_BENCH_BASELINES_SET") == nullptr) {
    setenv("KILN_BENCH_BASELINES_SET", "1", 1);
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);  // 2^4 cycles (the least it takes)
    setenv("OMP_WAIT_POLICY", "passive", 0);
    execv("/proc/self/exe", argv);  // returns only where it failed: then run with the spinning baselines
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

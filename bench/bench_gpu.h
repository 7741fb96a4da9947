// The GPU benchmarks (bench/bench_gpu.cpp): registered by main, after Google Benchmark has read
// its flags, only for the devices whose context opens here.
#pragma once

namespace kiln::bench {

// Registers Gpu/<device>/... for each GPU that kiln::Context reaches (OpenCL, and CUDA where the
// library has CUDA variants); prints one line to stderr for each it does not, with the reason.
void register_gpu_benchmarks();

}  // namespace kiln::bench

// The baselines the kernel benchmarks compare with: OpenBLAS and oneDNN where the build found
// them (KILN_BENCH_OPENBLAS, KILN_BENCH_DNNL), and the plain C loops of bench/baselines.c.
#pragma once

#include <cstdint>

#if KILN_BENCH_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif
#if KILN_BENCH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

extern "C" {
// bench/baselines.c, compiled like the generated C kernels (-O3 -march=native)
void baseline_sgemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);
void baseline_fma_relu(const float* a, const float* b, const float* c, float* y, int64_t n);
float baseline_sum(const float* x, int64_t n);
void baseline_softmax_rows(const float* x, float* y, int64_t m, int64_t n);
void baseline_layernorm_rows(const float* x, float* y, int64_t m, int64_t n);
}

// The baselines the kernel benchmarks compare with: OpenBLAS and oneDNN where the build found
// them (KILN_BENCH_OPENBLAS, KILN_BENCH_DNNL), and the plain C loops of bench/baselines.c.
#pragma once

#include <cstdint>
#include <unordered_map>

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

#if KILN_BENCH_DNNL
// oneDNN's softmax or layernorm over the rows of an r x d matrix, from x into y, on the threads
// omp_set_num_threads gave it
struct DnnlRows {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  DnnlRows(bool softmax, int64_t r, int64_t d, float* x, float* y) {
    dnnl::memory::desc md({r, d}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    args = {{DNNL_ARG_SRC, dnnl::memory(md, eng, x)}, {DNNL_ARG_DST, dnnl::memory(md, eng, y)}};
    if (softmax) {
      dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md, 1);
      prim = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, eng));
    } else {
      dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, md, 1e-5f,
                                                   dnnl::normalization_flags::none);
      prim = dnnl::layer_normalization_forward(dnnl::layer_normalization_forward::primitive_desc(desc, eng));
    }
  }
  void operator()() {
    prim.execute(stream, args);
    stream.wait();
  }
};
#endif

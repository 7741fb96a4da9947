/* Baselines for bench_kernels.cpp: the plain C loops a user would write, compiled like the
 * generated kernels (-O3 -march=native, no -ffast-math). */
#include <math.h>
#include <stdint.h>

void baseline_sgemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) c[i * n + j] = 0.0f;
    for (int64_t p = 0; p < k; p++) {
      float av = a[i * k + p];
      for (int64_t j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
    }
  }
}

void baseline_fma_relu(const float* a, const float* b, const float* c, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = a[i] * b[i] + c[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

float baseline_sum(const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; i++) s += x[i];
  return s;
}

void baseline_softmax_rows(const float* x, float* y, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++) {
    const float* r = x + i * n;
    float mx = -INFINITY, s = 0.0f;
    for (int64_t j = 0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
    for (int64_t j = 0; j < n; j++) s += expf(r[j] - mx);
    for (int64_t j = 0; j < n; j++) y[i * n + j] = expf(r[j] - mx) / s;
  }
}

void baseline_layernorm_rows(const float* x, float* y, int64_t m, int64_t n) {
  for (int64_t i = 0; i < m; i++) {
    const float* r = x + i * n;
    float mean = 0.0f, var = 0.0f;
    for (int64_t j = 0; j < n; j++) mean += r[j];
    mean /= (float)n;
    for (int64_t j = 0; j < n; j++) var += (r[j] - mean) * (r[j] - mean);
    float rstd = 1.0f / sqrtf(var / (float)n + 1e-5f);
    for (int64_t j = 0; j < n; j++) y[i * n + j] = (r[j] - mean) * rstd;
  }
}

// A user's app: one call per kernel of the library, each checked against a plain loop, with the
// variant it took. Exit status 0 only when every result matched.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hz.h"

int main() {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t m = 1, k = 256, n = 128;
  std::vector<float> a(m * k), b(k * n), c(m * n, NAN);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  kiln::TensorView va(a.data(), {m, k}), vb(b.data(), {k, n}), vc(c.data(), {m, n});
  kiln::Status st = hz::gemm(va, vb, vc);
  if (!st.ok()) {
    std::printf("gemm failed: %s\n", st.message().c_str());
    return 1;
  }
  int bad = 0;
  for (int64_t j = 0; j < n; ++j) {
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += double(a[size_t(p)]) * b[size_t(p * n + j)];
    bad += !(std::abs(c[size_t(j)] - want) <= 1e-4 * std::max(1.0, std::abs(want)));
  }
  std::printf("gemm 1x256x128: %s\n%s", bad ? "MISMATCH" : "ok", hz::gemm_explain(va, vb, vc).c_str());

  const int64_t r = 4, d = 640;
  std::vector<float> x(r * d), y(r * d, NAN);
  for (float& v : x) v = u(rng);
  st = hz::softmax_rows(kiln::TensorView(x.data(), {r, d}), kiln::TensorView(y.data(), {r, d}));
  if (!st.ok()) {
    std::printf("softmax_rows failed: %s\n", st.message().c_str());
    return 1;
  }
  for (int64_t i = 0; i < r; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < d; ++j) sum += y[size_t(i * d + j)];
    bad += !(std::abs(sum - 1.0) <= 1e-4);
  }
  std::printf("softmax_rows 4x640: rows sum to 1: %s\n", bad ? "NO" : "ok");
  return bad ? 1 : 0;
}

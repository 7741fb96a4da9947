// The kernels of mlp.kiln and norm.kiln, built by kiln_library(), against plain C++ references
// (double accumulation) on random inputs, outputs poisoned with NaN first, at shapes in every
// variant's bucket and between them; and the statuses of bad calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hz.h"

namespace {

std::vector<float> random_vector(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> poisoned(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

// every element within a relative 1e-4 of the reference (a NaN, a value never written, fails)
void expect_near(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    ASSERT_TRUE(err <= 1e-4) << what << " at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

std::vector<double> ref_gemm(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k,
                             int64_t n) {
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
  return c;
}

// the variant a call takes: the line of its explanation that says "taken"
std::string taken(const std::string& explanation) {
  size_t end = explanation.find(": taken");
  if (end == std::string::npos) return explanation;
  size_t start = explanation.rfind('\n', end);
  return explanation.substr(start + 3, end - start - 3);
}

TEST(Hz, GemmMatchesTheReferenceInEveryBucket) {
  struct Shape {
    int64_t m, k, n;
    const char* bucket;  // the guard the call's variant has
  };
  for (Shape s : {Shape{1, 7, 64, "M == 1 && N % 64 == 0"}, Shape{1, 300, 5, "M == 1"},
                  Shape{32, 17, 128, "M % 16 == 0 && N % 64 == 0"}, Shape{48, 9, 3, "M % 16 == 0"},
                  Shape{5, 33, 192, "N % 64 == 0"}, Shape{37, 50, 70, "any shape in range"},
                  Shape{512, 3, 512, "M % 16 == 0 && N % 64 == 0"}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n));
    std::vector<float> a = random_vector(size_t(s.m * s.k), 1), b = random_vector(size_t(s.k * s.n), 2);
    std::vector<float> c = poisoned(size_t(s.m * s.n));
    kiln::TensorView va(a.data(), {s.m, s.k}), vb(b.data(), {s.k, s.n}), vc(c.data(), {s.m, s.n});
    kiln::Status st = hz::gemm(va, vb, vc);
    ASSERT_TRUE(st.ok()) << st.message();
    expect_near(c, ref_gemm(a, b, s.m, s.k, s.n), "gemm");
    EXPECT_NE(taken(hz::gemm_explain(va, vb, vc)).find(std::string("[") + s.bucket + "]"), std::string::npos)
        << hz::gemm_explain(va, vb, vc);
  }
}

TEST(Hz, MlpMatchesTheReferenceWithThreads) {
  const int64_t m = 20;
  std::vector<float> x = random_vector(m * 32, 3), w1 = random_vector(32 * 64, 4), b1 = random_vector(64, 5),
                     w2 = random_vector(64 * 10, 6), b2 = random_vector(10, 7), y = poisoned(m * 10);
  std::vector<double> h(m * 64), want(m * 10);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < 64; ++j) {
      double s = b1[size_t(j)];
      for (int64_t p = 0; p < 32; ++p) s += double(x[size_t(i * 32 + p)]) * w1[size_t(p * 64 + j)];
      h[size_t(i * 64 + j)] = std::max(s, 0.0);
    }
    for (int64_t j = 0; j < 10; ++j) {
      double s = b2[size_t(j)];
      for (int64_t p = 0; p < 64; ++p) s += h[size_t(i * 64 + p)] * w2[size_t(p * 10 + j)];
      want[size_t(i * 10 + j)] = s;
    }
  }
  kiln::Context ctx(3);
  kiln::Status st = hz::mlp(kiln::TensorView(x.data(), {m, 32}), kiln::TensorView(w1.data(), {32, 64}),
                            kiln::TensorView(b1.data(), {64}), kiln::TensorView(w2.data(), {64, 10}),
                            kiln::TensorView(b2.data(), {10}), kiln::TensorView(y.data(), {m, 10}), &ctx);
  ASSERT_TRUE(st.ok()) << st.message();
  expect_near(y, want, "mlp");
  EXPECT_GT(hz::mlp_workspace_size(m), 0u);  // the hidden layer lives in the workspace
}

TEST(Hz, RowStatisticsMatchTheReference) {
  for (int64_t d : {1, 63, 64, 100, 2048}) {
    SCOPED_TRACE("D = " + std::to_string(d));
    const int64_t r = 3;
    std::vector<float> x = random_vector(size_t(r * d), 8), y = poisoned(size_t(r * d)), z = poisoned(size_t(r * d));
    std::vector<double> soft(size_t(r * d)), norm(size_t(r * d));
    for (int64_t i = 0; i < r; ++i) {
      const float* row = x.data() + i * d;
      double mx = -INFINITY, sum = 0, mean = 0, var = 0;
      for (int64_t j = 0; j < d; ++j) mx = std::max(mx, double(row[j]));
      for (int64_t j = 0; j < d; ++j) sum += std::exp(double(row[j]) - mx);
      for (int64_t j = 0; j < d; ++j) mean += row[j];
      mean /= double(d);
      for (int64_t j = 0; j < d; ++j) var += (row[j] - mean) * (row[j] - mean);
      var /= double(d);
      for (int64_t j = 0; j < d; ++j) {
        soft[size_t(i * d + j)] = std::exp(double(row[j]) - mx) / sum;
        norm[size_t(i * d + j)] = (row[j] - mean) / std::sqrt(var + 1e-5);
      }
    }
    kiln::TensorView vx(x.data(), {r, d});
    kiln::Status st = hz::softmax_rows(vx, kiln::TensorView(y.data(), {r, d}));
    ASSERT_TRUE(st.ok()) << st.message();
    expect_near(y, soft, "softmax_rows");
    st = hz::layernorm_rows(vx, kiln::TensorView(z.data(), {r, d}));
    ASSERT_TRUE(st.ok()) << st.message();
    expect_near(z, norm, "layernorm_rows");
  }
}

TEST(Hz, BadCallsAreStatusesAndWriteNothing) {
  std::vector<float> a = random_vector(4 * 8, 9), b = random_vector(8 * 2, 10), c = poisoned(4 * 2);
  kiln::Status st = hz::gemm(kiln::TensorView(a.data(), {4, 8}), kiln::TensorView(b.data(), {7, 2}),
                             kiln::TensorView(c.data(), {4, 2}));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gemm"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("K"), std::string::npos) << st.message();
  std::vector<float> x = random_vector(2 * 4096, 11), y = poisoned(2 * 4096);
  st = hz::softmax_rows(kiln::TensorView(x.data(), {2, 4096}), kiln::TensorView(y.data(), {2, 4096}));
  EXPECT_FALSE(st.ok());  // D is declared 1..2048
  EXPECT_NE(st.message().find("2048"), std::string::npos) << st.message();
  for (float v : c) EXPECT_TRUE(std::isnan(v));
  for (float v : y) EXPECT_TRUE(std::isnan(v));
}

}  // namespace

// Helpers shared by the tensor tests: evaluation through the oracle, tolerances, inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "generator/frontend/tensor.h"
#include "tests/unit/oracle.h"

namespace kiln::tensor_testing {

using oracle::Bindings;

inline std::vector<double> eval(const Tensor& t, const Bindings& b = {}) {
  return oracle::evaluate(t.uop(), b).doubles();
}
inline std::vector<int64_t> eval_shape(const Tensor& t, const Bindings& b = {}) {
  return oracle::evaluate(t.uop(), b).shape;
}

inline void expect_near(const std::vector<double>& got, const std::vector<double>& want,
                        double tol = 1e-6) {  // float32 graphs: their constants are float32
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
  }
}

inline std::vector<double> random_values(size_t n, uint64_t seed, double lo = -2, double hi = 2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "(no error)";
}

struct TensorTest : ::testing::Test {
  Context ctx;
  Tensor in(std::string_view name, std::vector<Dim> dims, DType d = dtypes::float32) {
    return Tensor::input(ctx, name, d, dims);
  }
};

}  // namespace kiln::tensor_testing

// Scheduled kernels compute what the tensor program means: every kernel AST runs in the
// kernel-AST interpreter (typed bytes, bounds-checked indices, intermediates in one poisoned
// arena) and its outputs are compared with the float64 oracle. Canonical programs first, then
// random tensor programs (op chains over random shapes, dtypes and symbolic dims).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "generator/ir/text.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/kernel_interp.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;

namespace {

// Schedules `outs`, runs the kernels and compares with the oracle. Returns "" or what differed.
std::string run_and_compare(const std::vector<Tensor>& ins, const std::vector<Tensor>& outs,
                            const std::map<std::string, int64_t>& vars, uint64_t seed, size_t* kernels = nullptr) {
  std::mt19937_64 rng(seed);
  oracle::Bindings b;
  b.vars = vars;
  std::vector<std::vector<double>> inputs = random_inputs(ins, b, rng);
  schedule::Schedule s = schedule::schedule(ins, outs, "p");
  if (kernels) *kernels = s.kernels.size();
  std::vector<interp::Output> got;
  try {
    got = interp::run_schedule(s, vars, inputs);
  } catch (const std::exception& e) {
    return std::string("interpreter: ") + e.what() + "\n" + schedule::describe(s);
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    oracle::Array want = oracle::evaluate(outs[i].uop(), b);
    std::vector<double> w = want.doubles();
    if (got[i].shape != want.shape) return "output " + std::to_string(i) + ": shape differs";
    double tol = tolerance(got[i].dtype);
    for (size_t j = 0; j < w.size(); ++j) {
      double g = got[i].values[j];
      bool same = std::isnan(w[j])   ? std::isnan(g)
                  : std::isinf(w[j]) ? g == w[j]
                                     : std::abs(g - w[j]) <= tol * std::max(1.0, std::abs(w[j]));
      if (!same) {
        std::ostringstream os;
        os << "output " << i << " at " << j << ": got " << g << ", want " << w[j] << "\n" << schedule::describe(s);
        return os.str();
      }
    }
  }
  return "";
}

struct ExecTest : ::testing::Test {
  Context ctx;
  std::vector<Tensor> ins;
  Tensor input(std::string_view name, std::vector<Dim> dims, DType d = dtypes::float32) {
    ins.push_back(Tensor::input(ctx, name, d, dims));
    return ins.back();
  }
  void expect_matches(const std::vector<Tensor>& outs, const std::map<std::string, int64_t>& vars = {}) {
    EXPECT_EQ(run_and_compare(ins, outs, vars, 1234), "");
  }
};

}  // namespace

// ---------------------------------------------------------------- canonical programs

TEST_F(ExecTest, ElementwiseAndBroadcast) {
  Tensor a = input("a", {5, 7}), b = input("b", {7}), c = input("c", {5, 1});
  expect_matches({(a * b + c).relu(), (a - c).exp() / (b.abs() + 1)});
}

TEST_F(ExecTest, ReductionsOverEachAxis) {
  Tensor x = input("x", {3, 4, 5});
  for (int axis = 0; axis < 3; ++axis)
    expect_matches({x.sum({axis}), x.max({axis}, true), x.min({axis}), x.mean({axis}), x.prod({axis})});
  expect_matches({x.sum(), x.argmax(1), x.sum({0, 2})});
}

TEST_F(ExecTest, SoftmaxLayernormRmsnormOverRowsAndColumns) {
  const UOp* m = ctx.var("M", 1, 9);
  Tensor x = input("x", {m, 6});
  for (int64_t mv : {1, 4, 9}) {
    expect_matches({x.softmax(-1), x.log_softmax(-1), x.layernorm(-1), x.rmsnorm(-1)}, {{"M", mv}});
    expect_matches({x.softmax(0), x.layernorm(0)}, {{"M", mv}});
  }
}

TEST_F(ExecTest, MlpAtTheBoundsOfItsBatch) {
  const UOp* m = ctx.var("M", 1, 6);
  Tensor x = input("x", {m, 20}), w1 = input("w1", {20, 16}), b1 = input("b1", {16}), w2 = input("w2", {16, 10});
  Tensor y = (x.matmul(w1) + b1).relu().matmul(w2).softmax(-1);
  for (int64_t mv : {1, 3, 6}) expect_matches({y}, {{"M", mv}});
}

TEST_F(ExecTest, MatmulShapes) {
  for (auto [m, k, n] : {std::tuple{1, 7, 5}, {6, 1, 4}, {5, 7, 1}, {13, 11, 7}}) {
    Context local;
    Tensor a = Tensor::input(local, "a", dtypes::float32, {m, k}),
           b = Tensor::input(local, "b", dtypes::float32, {k, n});
    EXPECT_EQ(run_and_compare({a, b}, {a.matmul(b)}, {}, 7), "") << m << "x" << k << "x" << n;
  }
  Tensor a = input("a", {2, 1, 3, 4}), b = input("b", {3, 4, 5});
  expect_matches({a.matmul(b)});  // batch broadcasting
}

TEST_F(ExecTest, ConvolutionsAndPooling) {
  Tensor x = input("x", {2, 4, 7, 6}), w = input("w", {6, 2, 3, 2}), bias = input("bias", {6});
  expect_matches({x.conv2d(w, &bias, 2, {2, 1}, {1, 2}, {1, 1}).relu()});
  expect_matches({x.max_pool2d({2, 2}), x.avg_pool2d({3, 3}, {2, 2}), x.max_pool2d({3, 3}, {2, 2}, {1, 1})});
}

TEST_F(ExecTest, AttentionCausalAndMasked) {
  const UOp* s = ctx.var("S", 1, 6);
  Tensor q = input("q", {2, s, 8}), k = input("k", {2, s, 8}), v = input("v", {2, s, 8});
  Tensor mask = input("mask", {s, s}, dtypes::bool_);
  for (int64_t sv : {1, 4, 6}) {
    expect_matches({q.scaled_dot_product_attention(k, v, nullptr, true)}, {{"S", sv}});
    expect_matches({q.scaled_dot_product_attention(k, v, &mask)}, {{"S", sv}});
  }
}

TEST_F(ExecTest, MovementOps) {
  const UOp* n = ctx.var("N", 1, 5);
  Tensor x = input("x", {3, n}), y = input("y", {2, n});
  for (int64_t nv : {1, 2, 5}) {
    std::map<std::string, int64_t> vars{{"N", nv}};
    expect_matches({Tensor::cat({x, y}, 0), Tensor::stack({x, x}, 1), x.flip({0, 1})}, vars);
    expect_matches({x.pad({{Dim(1), Dim(2)}, {Dim(0), Dim(3)}}).exp(), x.transpose().reshape({n, 3}).sin()}, vars);
    expect_matches({x.pad({{Dim(2), Dim(0)}, {Dim(1), Dim(1)}}).sum({1}), x.reshape({Dim(n), Dim(3)}).max({0})}, vars);
  }
  Tensor z = input("z", {4, 6});
  expect_matches({z.shrink({{Dim(1), Dim(3)}, {Dim(2), Dim(6)}}), z.reshape({2, 12}).reshape({8, 3}) * 2,
                  z.reshape({24}).flip({0}).reshape({3, 8})},
                 {{"N", 5}});
}

TEST_F(ExecTest, IntegersAndBools) {
  Tensor a = input("a", {4, 5}, dtypes::int32), b = input("b", {5}, dtypes::int8),
         c = input("c", {4, 5}, dtypes::bool_);
  expect_matches({a.idiv(b), a.mod(b), (a * b).sum({1}), c.where(a, b.cast(dtypes::int32)), (a < 3).logical_and(c),
                  a.maximum(b.cast(dtypes::int32)), a.cast(dtypes::float16) * 0.5});
  expect_matches({Tensor::arange(ctx, 3, 40, 4) * 2, Tensor::iota(ctx, 7, dtypes::float32).exp(), a.tril(1)});
}

// ---------------------------------------------------------------- random programs

namespace {}  // namespace

TEST(ScheduleRandomPrograms, AgreeWithTheOracle) {
  constexpr int kPrograms = 400;
  int mismatches = 0, rejected = 0;
  size_t total_kernels = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    Context ctx;
    std::vector<Tensor> ins, outs;
    std::map<std::string, int64_t> vars;
    try {
      RandomProgram(uint64_t(seed)).build(ctx, ins, outs, vars);
    } catch (const ShapeError& e) {
      ++rejected;  // a generator bug, not a scheduler bug: counted and bounded below
      continue;
    }
    size_t kernels = 0;
    std::string diff = run_and_compare(ins, outs, vars, uint64_t(seed) * 7919 + 1, &kernels);
    total_kernels += kernels;
    if (!diff.empty()) {
      ++mismatches;
      if (mismatches <= 3) ADD_FAILURE() << "program " << seed << ": " << diff;
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(rejected, 0);
  EXPECT_GT(total_kernels, size_t(kPrograms));  // some programs need more than one kernel
  std::cout << kPrograms << " random programs, " << total_kernels << " kernels\n";
}

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

using namespace kiln;

namespace {

double tolerance(DType d) {
  if (d == dtypes::float16) return 2e-2;
  if (d == dtypes::bfloat16) return 6e-2;
  if (d == dtypes::float32) return 2e-4;
  return 1e-9;
}

// Random inputs, never zero: floats in +-[0.1, 2], ints in +-[1, 9], bools both ways.
std::vector<double> random_input(DType d, size_t n, std::mt19937_64& rng) {
  std::vector<double> v(n);
  std::uniform_real_distribution<double> mag(0.1, 2.0);
  std::uniform_int_distribution<int> ints(1, 9), coin(0, 1);
  for (double& x : v) {
    if (is_bool(d)) {
      x = coin(rng);
    } else if (is_float(d)) {
      x = mag(rng) * (coin(rng) ? 1 : -1);
      x = double(truncate_to(d, ConstValue::of_float(x)).f);  // exactly representable in d
    } else {
      x = ints(rng) * (is_unsigned(d) || coin(rng) ? 1 : -1);
    }
  }
  return v;
}

// Schedules `outs`, runs the kernels and compares with the oracle. Returns "" or what differed.
std::string run_and_compare(const std::vector<Tensor>& ins, const std::vector<Tensor>& outs,
                            const std::map<std::string, int64_t>& vars, uint64_t seed, size_t* kernels = nullptr) {
  std::mt19937_64 rng(seed);
  oracle::Bindings b;
  b.vars = vars;
  std::vector<std::vector<double>> inputs;
  for (const Tensor& t : ins) {
    auto shape = oracle::eval_shape(t.shape(), b);
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    inputs.push_back(random_input(t.dtype(), n, rng));
    b.inputs[t.uop()->arg<ParamArg>().slot] = inputs.back();
  }
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

namespace {

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed) : rng_(seed) {}

  // Builds a program into ctx; returns "" if it could not be built (a rejected shape).
  void build(Context& ctx, std::vector<Tensor>& ins, std::vector<Tensor>& outs, std::map<std::string, int64_t>& vars) {
    ctx_ = &ctx;
    int rank = pick(1, 3);
    for (int i = 0; i < rank; ++i) {
      if (pick(0, 4) == 0 && vars.empty()) {
        int64_t hi = pick(2, 6);
        dims_.push_back(ctx.var("N", 1, hi));
        int64_t v = std::vector<int64_t>{1, hi, pick(1, int(hi))}[size_t(pick(0, 2))];
        vars["N"] = v;
      } else {
        dims_.push_back(ctx.cint(std::vector<int64_t>{1, 2, 3, 4, 5, 7}[size_t(pick(0, 5))]));
      }
    }
    is_int_ = pick(0, 3) == 0;
    DType d = is_int_ ? dtypes::int32 : dtypes::float32;
    int n_in = pick(1, 3);
    for (int i = 0; i < n_in; ++i) {
      ins.push_back(Tensor::input(ctx, "in" + std::to_string(i), d, dims_of()));
      pool_.push_back(ins.back());
    }
    int steps = pick(2, 9);
    for (int i = 0; i < steps; ++i) pool_.push_back(step());
    outs.push_back(pool_.back());
    if (pick(0, 2) == 0) outs.push_back(pool_[size_t(pick(int(n_in), int(pool_.size()) - 1))]);
    if (pick(0, 3) == 0) outs.push_back(pool_.back().sum({pick(0, rank - 1)}));
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<Dim> dims_of() const {
    std::vector<Dim> r;
    for (const UOp* d : dims_) r.push_back(d);
    return r;
  }
  Tensor any() { return pool_[size_t(pick(0, int(pool_.size()) - 1))]; }
  int axis() { return pick(0, int(dims_.size()) - 1); }
  bool const_dim(int a, int64_t at_least) const {
    return dims_[size_t(a)]->op == Op::CONST && dims_[size_t(a)]->ival() >= at_least;
  }

  // One op on the pool, giving a tensor of the program's shape and dtype.
  Tensor step() {
    Tensor x = any();
    switch (pick(0, 11)) {
      case 0:  // binary elementwise
      case 1: {
        Tensor y = any();
        switch (pick(0, 4)) {
          case 0:
            return x + y;
          case 1:
            return x - y;
          case 2:
            return is_int_ ? x * y.maximum(x.lift(-3)).minimum(x.lift(3)) : x * y;
          case 3:
            return x.maximum(y);
          default:
            return (x < y).where(x, y * 2);
        }
      }
      case 2: {  // unary, kept bounded
        if (is_int_) return pick(0, 1) ? x.abs() - 1 : x.idiv(x.lift(pick(2, 4)));
        switch (pick(0, 6)) {
          case 0:
            return x.tanh().exp();
          case 1:
            return x.sin() + x.cos();
          case 2:
            return x.sigmoid();
          case 3:
            return x.relu() - x;
          case 4:
            return (x.abs() + 1).log() * x.abs().sqrt();
          case 5:
            return x.cast(dtypes::float16).cast(dtypes::float32) * 0.5;
          default:
            return (x.abs() + 0.5).reciprocal();
        }
      }
      case 3:  // a reduction broadcast back (the softmax/layernorm pattern)
      case 4: {
        int a = axis();
        Tensor r = is_int_ || pick(0, 1) ? x.max({a}, true) : x.mean({a}, true);
        if (pick(0, 2) == 0) r = x.sum({a}, true) * (is_int_ ? x.lift(1) : x.lift(0.25));
        return x - r;
      }
      case 5: {  // a reduction of a product: a matmul-like contraction over one axis
        int a = axis();
        Tensor y = any();
        Tensor r = (x * y).sum({a}, true);
        return is_int_ ? r.maximum(x.lift(-50)).minimum(x.lift(50)) + x : (r * 0.25).tanh() + x;
      }
      case 6: {  // flip
        return x.flip({axis()}) + any();
      }
      case 7: {  // pad, transform, shrink back shifted
        int a = axis();
        if (!const_dim(a, 1)) return x * 2;
        std::vector<std::pair<Dim, Dim>> pads(dims_.size(), {Dim(0), Dim(0)}), keep;
        pads[size_t(a)] = {Dim(1), Dim(2)};
        Tensor p = is_int_ ? x.pad(pads) + 1 : x.pad(pads).exp();
        for (size_t i = 0; i < dims_.size(); ++i)
          keep.push_back(int(i) == a ? std::pair<Dim, Dim>{Dim(pick(0, 3)), Dim(0)}
                                     : std::pair<Dim, Dim>{Dim(0), dims_[i]});
        keep[size_t(a)].second = Dim(keep[size_t(a)].first.v + dims_[size_t(a)]->ival());
        return p.shrink(keep);
      }
      case 8: {  // rotate along an axis with shrink + cat
        int a = axis();
        if (!const_dim(a, 2)) return x + 1;
        int64_t n = dims_[size_t(a)]->ival(), k = pick(1, int(n) - 1);
        return Tensor::cat({x.slice(a, k, n), x.slice(a, 0, k)}, a);
      }
      case 9: {  // reshape to one axis and back
        if (dims_.size() < 2) return x.reshape({Dim(dims_[0])}) * 3;
        return (x.flatten() * 3).reshape(dims_of());
      }
      case 10: {  // a square transpose, or a matmul with a fresh-shaped contraction
        if (dims_.size() >= 2 && dims_[dims_.size() - 1] == dims_[dims_.size() - 2]) return x.transpose() + x;
        if (is_int_) return x * 2;
        Tensor w = x.unsqueeze(-1) * any().unsqueeze(-2);  // (..., n, n)
        return w.sum({int(dims_.size())}) * 0.1;
      }
      default: {  // casts through other dtypes
        if (is_int_) return x.cast(dtypes::int8).cast(dtypes::int32) + x.cast(dtypes::uint8).cast(dtypes::int32);
        return x.cast(dtypes::float64).exp2().cast(dtypes::float32).minimum(x.lift(4.0));
      }
    }
  }

  std::mt19937_64 rng_;
  Context* ctx_ = nullptr;
  std::vector<const UOp*> dims_;
  std::vector<Tensor> pool_;
  bool is_int_ = false;
};

}  // namespace

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

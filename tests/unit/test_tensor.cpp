// kiln::Tensor: shapes, dtypes and values (through the float64 oracle) of every op.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "generator/frontend/tensor.h"
#include "generator/ir/text.h"
#include "generator/ir/verify.h"
#include "tests/unit/tensor_testing.h"

using namespace kiln;
using namespace kiln::tensor_testing;

// ---------------------------------------------------------------- shapes and errors

TEST_F(TensorTest, InputShapeIsAStackOfDims) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 784});
  EXPECT_EQ(shape_str(x.shape()), "[M, 784]");
  EXPECT_EQ(x.uop()->op, Op::PARAM);
  EXPECT_EQ(x.uop()->src(0)->op, Op::STACK);
  Tensor s = Tensor::constant(ctx, 2, dtypes::float32);
  EXPECT_EQ(s.ndim(), 0u);
  Tensor v = in("v", {5});
  EXPECT_EQ(v.uop()->src(0)->op, Op::STACK);  // rank 1 is a STACK too
  EXPECT_EQ(v.uop()->arg<ParamArg>().slot, 1);
  EXPECT_EQ(shape_str(in("z", {}).shape()), "[]");
}

TEST_F(TensorTest, ShapeErrors) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 784});
  EXPECT_EQ(error_of([&] {
              x.reshape({m, 785});
            }),
            "reshape: expected a shape with as many elements as [M, 784], got [M, 785]");
  EXPECT_EQ(error_of([&] {
              x.reshape({28, 28});
            }),
            "reshape: expected a shape with as many elements as [M, 784], got [28, 28]");
  EXPECT_EQ(error_of([&] {
              x.expand({m, 784, 2});
            }),
            "expand: expected dim 1 of [1, M, 784] to be 1 or equal, got [M, 784, 2]");
  EXPECT_EQ(error_of([&] {
              in("y", {3, 1}).expand({4, 5});
            }),
            "expand: expected dim 0 of [3, 1] to be 1 or equal, got [4, 5]");
  EXPECT_EQ(error_of([&] {
              x.permute({0, 0});
            }),
            "permute: expected a permutation of the 2 axes of [M, 784], got (0, 0)");
  EXPECT_EQ(error_of([&] { x.permute({0}); }), "permute: expected 2 axes for shape [M, 784], got 1");
  EXPECT_EQ(error_of([&] { x.sum({2}); }), "axis: expected an axis in [-2, 2) for shape [M, 784], got 2");
  EXPECT_EQ(error_of([&] {
              x.shrink({{0, m}, {0, 785}});
            }),
            "shrink: expected 0 <= begin <= end <= 784 on axis 1, got (0, 785)");
  EXPECT_EQ(error_of([&] {
              x.shrink({{2, 1}, {0, 784}});
            }),
            "shrink: expected 0 <= begin <= end <= M on axis 0, got (2, 1)");
  EXPECT_EQ(error_of([&] { x.pad({{0, -1}, {0, 0}}); }), "pad: expected non-negative pads, got (0, -1) on axis 0");
  EXPECT_EQ(error_of([&] {
              x + in("y2", {784, 3});
            }),
            "broadcast: expected compatible shapes, got [M, 784] and [784, 3]");
  EXPECT_EQ(error_of([&] {
              x + in("n", {ctx.var("N", 1, 16), 784});
            }),
            "broadcast: expected compatible shapes, got [M, 784] and [N, 784]");
  EXPECT_EQ(error_of([&] {
              in("a", {2, 3}).matmul(in("b", {4, 5}));
            }),
            "matmul: expected the inner dims to match, got [2, 3] @ [4, 5]");
  EXPECT_EQ(error_of([&] { in("c", {2}).squeeze(0); }), "squeeze: expected dim 0 of [2] to be 1, got 2");
  // graphs built without the Tensor API are checked by shape_of
  const UOp* a = in("p", {2, 3}).uop();
  const UOp* b = in("q", {3}).uop();
  EXPECT_EQ(error_of([&] {
              shape_of(ctx.make(Op::ADD, dtypes::float32, {a, b}));
            }),
            "ADD: expected operands of equal shape, got [2, 3] and [3]");
  const UOp* axes = ctx.make(Op::STACK, dtypes::void_, {ctx.cint(2)});
  EXPECT_EQ(error_of([&] {
              shape_of(ctx.make(Op::REDUCE, dtypes::float32, {a, axes}, ReduceArg{Op::ADD, 0}));
            }),
            "reduce: expected an axis in [0, 2) for shape [2, 3], got 2");
}

TEST_F(TensorTest, GraphText) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 3});
  const UOp* u = (x.sum({1}) + 1.0).uop();
  std::string text =
      "(ADD:float (RESHAPE:float (REDUCE:float add (PARAM:float slot=0 name=x (STACK:void (VAR:weakint M 1 16) "
      "(CONST:weakint 3))) (STACK:void (CONST:weakint 1))) (STACK:void (VAR:weakint M 1 16))) (EXPAND:float "
      "(RESHAPE:float (CONST:float 1.0) (STACK:void (CONST:weakint 1))) (STACK:void (VAR:weakint M 1 16))))";
  EXPECT_EQ(print(u), text);
  EXPECT_EQ(parse(ctx, text), u);  // the tensor graph round-trips through the text form
  EXPECT_EQ(shape_str(shape_of(parse(ctx, text))), "[M]");
}

TEST_F(TensorTest, ShapeCacheMemoizesAndIsIterative) {
  Tensor x = in("x", {3});
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = y + 1.0;
  ShapeCache cache;
  EXPECT_EQ(shape_str(cache.shape_of(y.uop())), "[3]");
  EXPECT_EQ(&cache.shape_of(y.uop()), &cache.shape_of(y.uop()));
}

TEST_F(TensorTest, SymbolicShapes) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 3});
  EXPECT_EQ(shape_str(x.flatten().shape()), "[M*3]");
  EXPECT_EQ(shape_str(x.flatten().reshape({m, 3}).shape()), "[M, 3]");
  EXPECT_EQ(shape_str(x.reshape({-1}).shape()), "[M*3]");
  EXPECT_EQ(shape_str(x.pad({{1, 2}, {0, 0}}).shape()), "[M+3, 3]");
  EXPECT_EQ(shape_str(Tensor::cat({x, in("y", {2, 3})}, 0).shape()), "[M+2, 3]");
  EXPECT_EQ(shape_str(x.sum({0}, true).shape()), "[1, 3]");
  EXPECT_EQ(shape_str(x.sum({0}).shape()), "[3]");
  EXPECT_EQ(shape_str(x.transpose().shape()), "[3, M]");
}

// ---------------------------------------------------------------- dtype promotion

TEST_F(TensorTest, Promotion) {
  Tensor i32 = in("a", {2}, dtypes::int32), i8 = in("b", {2}, dtypes::int8), u8 = in("c", {2}, dtypes::uint8);
  Tensor f16 = in("d", {2}, dtypes::float16), bl = in("e", {2}, dtypes::bool_);
  EXPECT_EQ((i32 + 2.5).dtype(), dtypes::float32);
  EXPECT_EQ((i8 + 1).dtype(), dtypes::int8);  // weak scalars adopt
  EXPECT_EQ((bl + 1).dtype(), dtypes::int32);
  EXPECT_EQ((i32 / i32).dtype(), dtypes::float32);
  EXPECT_EQ((f16 * 2).dtype(), dtypes::float16);
  EXPECT_EQ((f16 * 2.0).dtype(), dtypes::float16);
  EXPECT_EQ((i8 + i32).dtype(), dtypes::int32);
  EXPECT_EQ((u8 + i8).dtype(), least_upper_dtype(dtypes::uint8, dtypes::int8));
  EXPECT_EQ((i32 < 2).dtype(), dtypes::bool_);
  EXPECT_EQ(bl.sum().dtype(), dtypes::int32);
  EXPECT_EQ(u8.sum().dtype(), dtypes::uint32);
  EXPECT_EQ(f16.sum().dtype(), dtypes::float16);
  EXPECT_EQ(i32.mean().dtype(), dtypes::float32);
  EXPECT_EQ(i32.exp().dtype(), dtypes::float32);
  EXPECT_EQ(bl.where(i8, i8.lift(1.5)).dtype(), dtypes::float32);
  // the weak scalar becomes a CONST of the tensor's dtype, not a CAST
  const UOp* add = (i8 + 1).uop();
  EXPECT_EQ(add->src(1)->op, Op::EXPAND);
}

TEST_F(TensorTest, IntegersAreExact) {
  Tensor x = in("x", {3}, dtypes::int32);
  Bindings b{{}, {{0, {2147483647, -7, 7}}}};
  EXPECT_EQ(eval(x + 1, b), (std::vector<double>{-2147483648.0, -6, 8}));
  EXPECT_EQ(eval(x * 2, b), (std::vector<double>{-2, -14, 14}));
  Tensor u = in("u", {2}, dtypes::uint8);
  EXPECT_EQ(eval(u + 10, {{}, {{1, {250, 3}}}}), (std::vector<double>{4, 13}));
  EXPECT_EQ(eval(x.cast(dtypes::int8), b), (std::vector<double>{-1, -7, 7}));
  EXPECT_EQ(eval(x.max(), b), (std::vector<double>{2147483647}));
  EXPECT_EQ(eval(x.min(), b), (std::vector<double>{-7}));
  EXPECT_EQ(eval(x.abs(), b), (std::vector<double>{2147483647, 7, 7}));
  EXPECT_EQ(eval(x.minimum(x * 0 + 3), b), (std::vector<double>{3, -7, 3}));
  EXPECT_EQ(eval(u.min(), {{}, {{1, {250, 3}}}}), (std::vector<double>{3}));
}

// ---------------------------------------------------------------- elementwise, hand-computed

TEST_F(TensorTest, Elementwise) {
  Tensor x = in("x", {4});
  Bindings b{{}, {{0, {1.0, -2.0, 2.5, 0.25}}}};
  expect_near(eval(-x, b), {-1, 2, -2.5, -0.25});
  expect_near(eval(x.abs(), b), {1, 2, 2.5, 0.25});
  expect_near(eval(x.relu(), b), {1, 0, 2.5, 0.25});
  expect_near(eval(x.exp(), b), {std::exp(1.0), std::exp(-2.0), std::exp(2.5), std::exp(0.25)});
  expect_near(eval(x.exp2(), b), {2, 0.25, std::exp2(2.5), std::exp2(0.25)});
  expect_near(eval(x.abs().log(), b), {0, std::log(2.0), std::log(2.5), std::log(0.25)});
  expect_near(eval(x.abs().log2(), b), {0, 1, std::log2(2.5), -2});
  expect_near(eval(x.abs().sqrt(), b), {1, std::sqrt(2.0), std::sqrt(2.5), 0.5});
  expect_near(eval(x.abs().rsqrt(), b), {1, 1 / std::sqrt(2.0), 1 / std::sqrt(2.5), 2});
  expect_near(eval(x.reciprocal(), b), {1, -0.5, 0.4, 4});
  expect_near(eval(x.sin(), b), {std::sin(1.0), std::sin(-2.0), std::sin(2.5), std::sin(0.25)});
  expect_near(eval(x.cos(), b), {std::cos(1.0), std::cos(-2.0), std::cos(2.5), std::cos(0.25)});
  expect_near(eval(x.tanh(), b), {std::tanh(1.0), std::tanh(-2.0), std::tanh(2.5), std::tanh(0.25)});
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  expect_near(eval(x.sigmoid(), b), {sig(1), sig(-2), sig(2.5), sig(0.25)});
  expect_near(eval(x.silu(), b), {sig(1), -2 * sig(-2), 2.5 * sig(2.5), 0.25 * sig(0.25)});
  auto gelu = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.141592653589793) * (v + 0.044715 * v * v * v)));
  };
  expect_near(eval(x.gelu(), b), {gelu(1), gelu(-2), gelu(2.5), gelu(0.25)});
  expect_near(eval(x * 2 - 1, b), {1, -5, 4, -0.5});
  expect_near(eval(1.0 / x, b), {1, -0.5, 0.4, 4});
  expect_near(eval(x.maximum(x * 0 + 0.5), b), {1, 0.5, 2.5, 0.5});
  expect_near(eval(x.minimum(x * 0 + 0.5), b), {0.5, -2, 0.5, 0.25});
}

TEST_F(TensorTest, Float64GraphsAreExactInTheOracle) {
  Tensor x = in("x", {3}, dtypes::float64);
  Bindings b{{}, {{0, {1.0, -2.0, 0.3}}}};
  expect_near(eval(x.exp(), b), {std::exp(1.0), std::exp(-2.0), std::exp(0.3)}, 1e-14);
  expect_near(eval(x.cos(), b), {std::cos(1.0), std::cos(-2.0), std::cos(0.3)}, 1e-14);
  expect_near(eval(x.tanh(), b), {std::tanh(1.0), std::tanh(-2.0), std::tanh(0.3)}, 1e-14);
}

TEST_F(TensorTest, Rounding) {
  Tensor x = in("x", {8});
  Bindings b{{}, {{0, {2.5, 3.5, -2.5, -0.5, 2.3, -2.7, 0.5, -3.5}}}};
  expect_near(eval(x.trunc(), b), {2, 3, -2, -0, 2, -2, 0, -3});
  expect_near(eval(x.floor(), b), {2, 3, -3, -1, 2, -3, 0, -4});
  expect_near(eval(x.ceil(), b), {3, 4, -2, -0, 3, -2, 1, -3});
  expect_near(eval(x.round(), b), {2, 4, -2, -0, 2, -3, 0, -4});
}

TEST_F(TensorTest, Pow) {
  Tensor x = in("x", {6}), e = in("e", {6});
  Bindings b{{}, {{0, {2, -2, -2, 3, 0, -8}}, {1, {3, 3, 2, 0.5, 0, 1.0 / 3}}}};
  expect_near(eval(x.pow(e), b), {8, -8, 4, std::sqrt(3.0), 1, NAN});
  expect_near(eval(x.pow(x * 0 + 2), b), {4, 4, 4, 9, 0, 64});
}

TEST_F(TensorTest, ComparisonsAndLogic) {
  Tensor x = in("x", {4}), y = in("y", {4});
  Bindings b{{}, {{0, {1, 2, 3, 4}}, {1, {4, 2, 1, 4}}}};
  EXPECT_EQ(eval(x < y, b), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(eval(x <= y, b), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(eval(x > y, b), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(eval(x >= y, b), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(eval(x == y, b), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(eval(x != y, b), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(eval((x < y).logical_or(x == y), b), (std::vector<double>{1, 1, 0, 1}));
  EXPECT_EQ(eval((x <= y).logical_and(x >= y), b), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(eval((x < y).logical_not(), b), (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(eval((x < 3).where(x, y * 10), b), (std::vector<double>{1, 2, 10, 40}));
  EXPECT_EQ(eval(x.cast(dtypes::bool_), {{}, {{0, {0, 2, -1, 0.5}}}}), (std::vector<double>{0, 1, 1, 1}));
}

TEST_F(TensorTest, CastAndBitcast) {
  Tensor x = in("x", {3});
  Bindings b{{}, {{0, {1.0, -2.75, 3.5}}}};
  EXPECT_EQ(eval(x.cast(dtypes::int32), b), (std::vector<double>{1, -2, 3}));
  EXPECT_EQ(eval(x.bitcast(dtypes::int32), b), (std::vector<double>{1065353216, -1070596096, 1080033280}));
  EXPECT_EQ(eval(x.bitcast(dtypes::uint32).bitcast(dtypes::float32), b), (std::vector<double>{1.0, -2.75, 3.5}));
  EXPECT_EQ(error_of([&] { x.bitcast(dtypes::int16); }), "bitcast: expected a dtype of 4 bytes like float, got short");
}

// ---------------------------------------------------------------- movement

TEST_F(TensorTest, Movement) {
  Tensor x = in("x", {2, 3});
  Bindings b{{}, {{0, {1, 2, 3, 4, 5, 6}}}};
  EXPECT_EQ(eval(x.transpose(), b), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(eval(x.flip({1}), b), (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(eval(x.flip({0, 1}), b), (std::vector<double>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(eval(x.slice(1, 1, 3), b), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(eval(x.pad({{0, 1}, {1, 0}}), b), (std::vector<double>{0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0}));
  EXPECT_EQ(eval(x.reshape({3, 2}).transpose(), b), (std::vector<double>{1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(eval(x.slice(0, 1, 2).expand({3, 3}), b), (std::vector<double>{4, 5, 6, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(eval(x.reshape({2, 1, 3}).expand({2, 2, 3}), b), (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_EQ(eval(Tensor::cat({x, x * 10}, 1), b), (std::vector<double>{1, 2, 3, 10, 20, 30, 4, 5, 6, 40, 50, 60}));
  EXPECT_EQ(eval(Tensor::cat({x, x.slice(0, 0, 1)}, 0), b), (std::vector<double>{1, 2, 3, 4, 5, 6, 1, 2, 3}));
  Tensor s = Tensor::stack({x, x + 1}, 1);
  EXPECT_EQ(eval_shape(s, b), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(eval(s, b), (std::vector<double>{1, 2, 3, 2, 3, 4, 4, 5, 6, 5, 6, 7}));
  EXPECT_EQ(eval(x.reshape({1, 2, 3}).squeeze(0).unsqueeze(-1), b), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(eval(x.permute({1, 0}).permute({1, 0}), b), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST_F(TensorTest, Creation) {
  EXPECT_EQ(eval(Tensor::arange(ctx, 5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(eval(Tensor::arange(ctx, 1)), (std::vector<double>{0}));
  EXPECT_EQ(eval(Tensor::arange(ctx, 2, 11, 3)), (std::vector<double>{2, 5, 8}));
  EXPECT_EQ(eval(Tensor::arange(ctx, 5, 0, -2)), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(eval_shape(Tensor::arange(ctx, 3, 3)), (std::vector<int64_t>{0}));
  EXPECT_EQ(Tensor::arange(ctx, 4).dtype(), dtypes::int32);
  const UOp* m = ctx.var("M", 1, 16);
  Tensor f = Tensor::full(ctx, {m, 2}, 1.5, dtypes::float32);
  EXPECT_EQ(eval(f, {{{"M", 2}}, {}}), (std::vector<double>{1.5, 1.5, 1.5, 1.5}));
  EXPECT_EQ(eval(Tensor::constant(ctx, 3, dtypes::int8)), (std::vector<double>{3}));
}

// ---------------------------------------------------------------- reductions

TEST_F(TensorTest, Reductions) {
  Tensor x = in("x", {2, 3});
  Bindings b{{}, {{0, {1, -2, 3, 4, 5, -6}}}};
  EXPECT_EQ(eval(x.sum(), b), (std::vector<double>{5}));
  EXPECT_EQ(eval(x.sum({0}), b), (std::vector<double>{5, 3, -3}));
  EXPECT_EQ(eval(x.sum({1}, true), b), (std::vector<double>{2, 3}));
  EXPECT_EQ(eval_shape(x.sum({1}, true), b), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(eval(x.sum({-1, 0}), b), (std::vector<double>{5}));
  EXPECT_EQ(eval(x.max({1}), b), (std::vector<double>{3, 5}));
  EXPECT_EQ(eval(x.min({0}), b), (std::vector<double>{1, -2, -6}));
  EXPECT_EQ(eval(x.prod({1}), b), (std::vector<double>{-6, -120}));
  expect_near(eval(x.mean({1}), b), {2.0 / 3, 1});
  expect_near(eval(x.mean(), b), {5.0 / 6});
  EXPECT_EQ(eval(x.argmax(1), b), (std::vector<double>{2, 1}));
  EXPECT_EQ(eval(x.argmax(0, true), b), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(eval(in("t", {5}).argmax(0), {{}, {{1, {3, 7, 7, 1, 7}}}}), (std::vector<double>{1}));  // first max
  Tensor bl = in("bl", {4}, dtypes::bool_);
  EXPECT_EQ(eval(bl.sum(), {{}, {{2, {1, 0, 1, 1}}}}), (std::vector<double>{3}));
  EXPECT_EQ(eval(bl.max(), {{}, {{2, {0, 0, 1, 0}}}}), (std::vector<double>{1}));
  EXPECT_EQ(eval(bl.min(), {{}, {{2, {1, 0, 1, 1}}}}), (std::vector<double>{0}));
  const UOp* m = ctx.var("M", 1, 16);
  Tensor sx = in("s", {2, m});
  Tensor am = sx.argmax(1), io = Tensor::iota(ctx, m);
  EXPECT_EQ(shape_str(io.shape()), "[M]");
  for (int64_t mv : {1, 7, 16}) {
    Bindings sb{{{"M", mv}}, {{3, random_values(size_t(2 * mv), uint64_t(mv) + 5)}}};
    auto v = sb.inputs[3];
    std::vector<double> want;
    for (int r = 0; r < 2; ++r) {
      size_t best = 0;
      for (size_t i = 1; i < size_t(mv); ++i)
        if (v[size_t(r) * size_t(mv) + i] > v[size_t(r) * size_t(mv) + best]) best = i;
      want.push_back(double(best));
    }
    EXPECT_EQ(eval(am, sb), want);
    std::vector<double> iv(static_cast<size_t>(mv));
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = double(i);
    EXPECT_EQ(eval(io, sb), iv);
  }
}

// ---------------------------------------------------------------- symbolic dims at several values

TEST_F(TensorTest, SymbolicEvaluation) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 3});
  Tensor w = in("w", {3, 2});
  Tensor y = in("y", {2, 3});
  Tensor mm = x.matmul(w), mean0 = x.mean({0}), sm = x.softmax(0), cat = Tensor::cat({x, y}, 0);
  Tensor rs = x.flatten().reshape({m, 3}).flip({0});
  for (int64_t mv : {1, 7, 16}) {
    auto xv = random_values(size_t(mv) * 3, uint64_t(mv)), wv = random_values(6, 99), yv = random_values(6, 98);
    Bindings b{{{"M", mv}}, {{0, xv}, {1, wv}, {2, yv}}};
    std::vector<double> want(size_t(mv) * 2, 0.0), mean(3, 0.0), smax(size_t(mv) * 3), flip(size_t(mv) * 3);
    for (int64_t i = 0; i < mv; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k) want[size_t(i * 2 + j)] += xv[size_t(i * 3 + k)] * wv[size_t(k * 2 + j)];
    for (int k = 0; k < 3; ++k) {
      double mx = -INFINITY, s = 0;
      for (int64_t i = 0; i < mv; ++i) mean[size_t(k)] += xv[size_t(i * 3 + k)] / double(mv);
      for (int64_t i = 0; i < mv; ++i) mx = std::max(mx, xv[size_t(i * 3 + k)]);
      for (int64_t i = 0; i < mv; ++i) s += std::exp(xv[size_t(i * 3 + k)] - mx);
      for (int64_t i = 0; i < mv; ++i) smax[size_t(i * 3 + k)] = std::exp(xv[size_t(i * 3 + k)] - mx) / s;
      for (int64_t i = 0; i < mv; ++i) flip[size_t(i * 3 + k)] = xv[size_t((mv - 1 - i) * 3 + k)];
    }
    expect_near(eval(mm, b), want);
    EXPECT_EQ(eval_shape(mm, b), (std::vector<int64_t>{mv, 2}));
    expect_near(eval(mean0, b), mean);
    expect_near(eval(sm, b), smax);
    EXPECT_EQ(eval(rs, b), flip);
    auto catv = xv;
    catv.insert(catv.end(), yv.begin(), yv.end());
    EXPECT_EQ(eval(cat, b), catv);
    EXPECT_EQ(eval_shape(cat, b), (std::vector<int64_t>{mv + 2, 3}));
  }
}

// ---------------------------------------------------------------- composites vs loops

TEST_F(TensorTest, BatchedMatmulBroadcasts) {
  Tensor a = in("a", {2, 1, 3, 4}), b = in("b", {5, 4, 7});
  Tensor c = a.matmul(b);
  EXPECT_EQ(shape_str(c.shape()), "[2, 5, 3, 7]");
  auto av = random_values(24, 1), bv = random_values(140, 2);
  auto got = eval(c, {{}, {{0, av}, {1, bv}}});
  std::vector<double> want(2 * 5 * 3 * 7, 0.0);
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 7; ++j)
          for (int k = 0; k < 4; ++k)
            want[size_t(((p * 5 + q) * 3 + i) * 7 + j)] +=
                av[size_t((p * 3 + i) * 4 + k)] * bv[size_t((q * 4 + k) * 7 + j)];
  expect_near(got, want);
  // vector cases
  Tensor v = in("v", {4}), m = in("m", {4, 3});
  Bindings vb{{}, {{2, {1, 2, 3, 4}}, {3, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}}}};
  EXPECT_EQ(eval(v.matmul(m), vb), (std::vector<double>{5, 6, 7}));
  EXPECT_EQ(eval(v.matmul(v), vb), (std::vector<double>{30}));
  EXPECT_EQ(v.matmul(v).ndim(), 0u);
  EXPECT_EQ(eval(m.transpose().matmul(v), vb), (std::vector<double>{5, 6, 7}));
}

TEST_F(TensorTest, NormsAndSoftmaxAgainstFormulas) {
  Tensor x = in("x", {3, 5});
  auto xv = random_values(15, 7, -3, 3);
  Bindings b{{}, {{0, xv}}};
  std::vector<double> sm(15), lsm(15), ln(15), rms(15);
  for (int r = 0; r < 3; ++r) {
    double mx = -INFINITY, s = 0, mean = 0, var = 0, sq = 0;
    for (int c = 0; c < 5; ++c) mx = std::max(mx, xv[size_t(r * 5 + c)]);
    for (int c = 0; c < 5; ++c) s += std::exp(xv[size_t(r * 5 + c)] - mx);
    for (int c = 0; c < 5; ++c) mean += xv[size_t(r * 5 + c)] / 5;
    for (int c = 0; c < 5; ++c) var += (xv[size_t(r * 5 + c)] - mean) * (xv[size_t(r * 5 + c)] - mean) / 5;
    for (int c = 0; c < 5; ++c) sq += xv[size_t(r * 5 + c)] * xv[size_t(r * 5 + c)] / 5;
    for (int c = 0; c < 5; ++c) {
      double v = xv[size_t(r * 5 + c)];
      sm[size_t(r * 5 + c)] = std::exp(v - mx) / s;
      lsm[size_t(r * 5 + c)] = v - mx - std::log(s);
      ln[size_t(r * 5 + c)] = (v - mean) / std::sqrt(var + 1e-5);
      rms[size_t(r * 5 + c)] = v / std::sqrt(sq + 1e-6);
    }
  }
  expect_near(eval(x.softmax(), b), sm);
  expect_near(eval(x.log_softmax(), b), lsm);
  expect_near(eval(x.layernorm(), b), ln);
  expect_near(eval(x.rmsnorm(), b), rms);
  // softmax over axis 0 of the transpose is the same numbers
  expect_near(eval(x.transpose().softmax(0).transpose(), b), sm);
}

TEST_F(TensorTest, BroadcastingAndSizeOneDims) {
  Tensor a = in("a", {3, 1}), b = in("b", {1, 4}), s = in("s", {});
  Bindings bb{{}, {{0, {1, 2, 3}}, {1, {10, 20, 30, 40}}, {2, {0.5}}}};
  Tensor c = a + b;
  EXPECT_EQ(shape_str(c.shape()), "[3, 4]");
  EXPECT_EQ(eval(c, bb), (std::vector<double>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  EXPECT_EQ(eval(b * s, bb), (std::vector<double>{5, 10, 15, 20}));
  Tensor one = in("one", {1, 1});
  EXPECT_EQ(eval(one.sum({0}), {{}, {{3, {2.5}}}}), (std::vector<double>{2.5}));
  EXPECT_EQ(eval(one.expand({2, 3}) + 1, {{}, {{3, {2.5}}}}), (std::vector<double>(6, 3.5)));
}

// Random shapes (size-1 dims, rank 0..3) against NumPy broadcasting done by hand.
TEST_F(TensorTest, RandomBroadcastingBinaryOps) {
  std::mt19937_64 rng(42);
  auto rand_shape = [&](size_t rank) {
    std::vector<int64_t> s;
    for (size_t i = 0; i < rank; ++i) s.push_back(int64_t(rng() % 3) + 1);
    return s;
  };
  for (int iter = 0; iter < 60; ++iter) {
    Context local;
    auto out = rand_shape(rng() % 4);
    std::vector<int64_t> sa = out, sb = out;
    for (auto* s : {&sa, &sb}) {
      for (auto& d : *s)
        if (rng() % 3 == 0) d = 1;
      s->erase(s->begin(), s->begin() + long(rng() % (s->size() + 1)));  // drop leading dims
    }
    auto to_dims = [](const std::vector<int64_t>& s) { return std::vector<Dim>(s.begin(), s.end()); };
    Tensor a = Tensor::input(local, "a", dtypes::float32, to_dims(sa));
    Tensor b = Tensor::input(local, "b", dtypes::float32, to_dims(sb));
    auto count = [](const std::vector<int64_t>& s) {
      size_t n = 1;
      for (int64_t d : s) n *= size_t(d);
      return n;
    };
    auto av = random_values(count(sa), uint64_t(iter) * 2 + 1), bv = random_values(count(sb), uint64_t(iter) * 2 + 2);
    // the broadcast result shape is the elementwise max (every dim is 1 or the full size)
    std::vector<int64_t> full(std::max(sa.size(), sb.size()), 1);
    for (size_t i = 0; i < sa.size(); ++i) full[full.size() - sa.size() + i] = sa[i];
    for (size_t i = 0; i < sb.size(); ++i)
      full[full.size() - sb.size() + i] = std::max(full[full.size() - sb.size() + i], sb[i]);
    auto read = [&](const std::vector<double>& v, const std::vector<int64_t>& s, const std::vector<int64_t>& idx) {
      size_t off = 0;
      for (size_t i = 0; i < s.size(); ++i)
        off = off * size_t(s[i]) + size_t(s[i] == 1 ? 0 : idx[idx.size() - s.size() + i]);
      return v[off];
    };
    int op = int(rng() % 5);
    Tensor r = op == 0 ? a + b : op == 1 ? a - b : op == 2 ? a * b : op == 3 ? a.maximum(b) : (a < b).where(a, b * 2);
    std::vector<double> want;
    std::vector<int64_t> idx(full.size(), 0);
    for (size_t flat = 0; flat < count(full); ++flat) {
      double x = read(av, sa, idx), y = read(bv, sb, idx);
      want.push_back(op == 0   ? x + y
                     : op == 1 ? x - y
                     : op == 2 ? x * y
                     : op == 3 ? std::max(x, y)
                     : x < y   ? x
                               : 2 * y);
      for (size_t i = idx.size(); i-- > 0;) {
        if (++idx[i] < full[i]) break;
        idx[i] = 0;
      }
    }
    Bindings bb{{}, {{0, av}, {1, bv}}};
    EXPECT_EQ(eval_shape(r, bb), full) << iter;
    expect_near(eval(r, bb), want);
  }
}

TEST_F(TensorTest, FloorDivisionAndModulo) {
  Tensor x = in("x", {6}, dtypes::int32), y = in("y", {6}, dtypes::int32);
  Bindings b{{}, {{0, {7, -7, 7, -7, 6, -6}}, {1, {2, 2, -2, -2, 3, 4}}}};
  EXPECT_EQ(eval(x.idiv(y), b), (std::vector<double>{3, -4, -4, 3, 2, -2}));
  EXPECT_EQ(eval(x.mod(y), b), (std::vector<double>{1, 1, -1, -1, 0, 2}));
  EXPECT_EQ(eval(x.idiv(x * 0 + 3), b), (std::vector<double>{2, -3, 2, -3, 2, -2}));
  EXPECT_EQ(error_of([&] { in("f", {2}).idiv(x.slice(0, 0, 2)); }),
            "idiv: expected integer operands, got float and int");
  EXPECT_EQ(eval(in("m", {2, 3}).mean({1, -1}), {{}, {{3, {1, 2, 3, 4, 5, 9}}}}), (std::vector<double>{2, 6}));
}

TEST_F(TensorTest, IntegerReductionsAccumulateWide) {
  Tensor x = in("x", {4}, dtypes::int8);
  Bindings b{{}, {{0, {100, 100, 100, -7}}}};
  EXPECT_EQ(x.sum().dtype(), dtypes::int32);
  EXPECT_EQ(eval(x.sum(), b), (std::vector<double>{293}));
  EXPECT_EQ(eval(x + x, b), (std::vector<double>{-56, -56, -56, -14}));  // int8 wraps
  EXPECT_EQ(eval(x.prod(), b), (std::vector<double>{-7000000}));
  EXPECT_EQ(eval(x.argmax(0), b), (std::vector<double>{0}));
}

TEST_F(TensorTest, GraphsPassTheVerifier) {
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = in("x", {m, 8}, dtypes::float16), i = in("i", {m, 8}, dtypes::int8);
  for (const Tensor& t : {x.softmax(), x.layernorm(), x.matmul(x.transpose()), x.gelu().round(), i.idiv(i + 1),
                          i.argmax(1), x.pow(x), Tensor::cat({x, x}, 1).flip({0}), (i < 3).where(x, i)})
    EXPECT_EQ(verify(t.uop()), std::nullopt) << print(t.uop());
}

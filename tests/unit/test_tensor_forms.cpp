// kiln::Tensor: tinygrad's call forms (separate values or one list, -1 sizes, one axis or a list),
// slicing, bitwise ops and shifts, argmin, erf and gelu(approximate="none"), pooling options and
// 64-bit argument checks, each against a float64 reference computed here by plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tests/unit/tensor_testing.h"

using namespace kiln;
using namespace kiln::tensor_testing;

namespace {

// x[i][j][k] of a row-major (2, 3, 4) array.
double at3(const std::vector<double>& v, int i, int j, int k) { return v[size_t((i * 3 + j) * 4 + k)]; }

}  // namespace

TEST_F(TensorTest, ReshapeTakesSeparateSizesOrOneList) {
  Tensor x = in("x", {2, 3, 4});
  auto v = random_values(24, 1);
  Bindings b{{}, {{0, v}}};
  EXPECT_EQ(x.reshape(4, 6).uop(), x.reshape({4, 6}).uop());
  EXPECT_EQ(x.reshape(-1, 6).uop(), x.reshape({4, 6}).uop());
  EXPECT_EQ(x.reshape(2, -1).uop(), x.reshape({2, 12}).uop());
  EXPECT_EQ(shape_str(x.reshape(1, -1, 1).shape()), "[1, 24, 1]");
  EXPECT_EQ(eval(x.reshape(-1, 6), b), v);
  const UOp* m = ctx.var("M", 1, 16);
  Tensor s = in("s", {m, 6});
  EXPECT_EQ(shape_str(s.reshape(-1, 3).shape()), "[M*2, 3]");
  EXPECT_EQ(shape_str(s.reshape(m, -1).shape()), "[M, 6]");
  EXPECT_EQ(error_of([&] { x.reshape(-1, 5); }),
            "reshape: cannot infer the -1 in (-1, 5) for [2, 3, 4]: expected 24 elements to be a multiple of 5");
  EXPECT_EQ(error_of([&] { x.reshape(-1, -1); }), "reshape: expected sizes >= 0 and at most one -1, got (-1, -1)");
  EXPECT_EQ(error_of([&] { x.reshape(-2, -12); }), "reshape: expected sizes >= 0 and at most one -1, got (-2, -12)");
  EXPECT_EQ(error_of([&] { s.reshape(-1, 4); }),
            "reshape: cannot infer the -1 in (-1, 4) for [M, 6]: expected M*6 elements to be a multiple of 4");
}

TEST_F(TensorTest, ExpandKeepsMinusOne) {
  Tensor x = in("x", {3});
  auto v = random_values(3, 2);
  Bindings b{{}, {{0, v}}};
  EXPECT_EQ(x.expand(4, -1).uop(), x.expand({4, 3}).uop());
  std::vector<double> want;
  for (int r = 0; r < 4; ++r) want.insert(want.end(), v.begin(), v.end());
  EXPECT_EQ(eval(x.expand(4, -1), b), want);
  EXPECT_EQ(shape_str(x.expand(-1, -1).shape()), "[1, 3]");  // a new axis kept is 1, as tinygrad
  EXPECT_EQ(error_of([&] { x.expand(-2, 3); }), "expand: expected sizes >= 0 or -1, got (-2, 3)");
}

TEST_F(TensorTest, PermuteFlipAndAxesTakeBothForms) {
  Tensor x = in("x", {2, 3, 4});
  auto v = random_values(24, 3);
  Bindings b{{}, {{0, v}}};
  EXPECT_EQ(x.permute(0, 2, 1).uop(), x.permute({0, 2, 1}).uop());
  EXPECT_EQ(x.permute(-3, -1, 1).uop(), x.permute({0, 2, 1}).uop());
  std::vector<double> perm, flipped;
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 3; ++j) perm.push_back(at3(v, i, j, k));
  EXPECT_EQ(eval(x.permute(0, 2, 1), b), perm);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) flipped.push_back(at3(v, 1 - i, j, 3 - k));
  EXPECT_EQ(x.flip(0, 2).uop(), x.flip({0, 2}).uop());
  EXPECT_EQ(eval(x.flip(0, -1), b), flipped);
  EXPECT_EQ(x.sum(1).uop(), x.sum({1}).uop());
  EXPECT_EQ(x.max(-1, true).uop(), x.max({2}, true).uop());
  EXPECT_EQ(error_of([&] { x.flip(0, -3); }), "flip: expected each axis at most once, got -3 again");
  // axes are 64-bit: a large one is out of range, not a small one after truncation
  EXPECT_EQ(error_of([&] { x.sum(int64_t(4294967296)); }),
            "axis: expected an axis in [-3, 3) for shape [2, 3, 4], got 4294967296");
  EXPECT_EQ(error_of([&] {
              in("y", {2, 2}).permute(int64_t(4294967297), int64_t(4294967296));
            }),
            "axis: expected an axis in [-2, 2) for shape [2, 2], got 4294967297");
  EXPECT_EQ(error_of([&] { x.unsqueeze(int64_t(1) << 40); }),
            "axis: expected an axis in [-4, 4) for shape [2, 3, 4], got 1099511627776");
  EXPECT_EQ(shape_str(x.flatten(1).shape()), "[2, 12]");
  EXPECT_EQ(shape_str(x.flatten(0, 1).shape()), "[6, 4]");
  EXPECT_EQ(eval(x.flatten(1), b), v);
}

// Python's x[start:stop:step] on a length-7 axis, written out by hand for each case.
TEST_F(TensorTest, SlicingHasPythonBounds) {
  Tensor x = in("x", {7});
  auto v = random_values(7, 4);
  Bindings b{{}, {{0, v}}};
  auto pick = [&](std::vector<int> idx) {
    std::vector<double> r;
    for (int i : idx) r.push_back(v[size_t(i)]);
    return r;
  };
  std::optional<Dim> none;
  struct Case {
    std::optional<Dim> start, stop;
    int64_t step;
    std::vector<int> want;
  };
  for (const Case& c :
       {Case{2, 15, 1, {2, 3, 4, 5, 6}}, Case{-3, none, 1, {4, 5, 6}}, Case{none, none, -2, {6, 4, 2, 0}},
        Case{5, 1, -2, {5, 3}}, Case{-10, none, -1, {}}, Case{10, -10, -3, {6, 3, 0}}, Case{none, none, 100, {0}},
        Case{none, none, -100, {6}}, Case{1, -1, 2, {1, 3, 5}}, Case{4, 2, 1, {}},
        Case{none, -9223372036854775807, -1, {6, 5, 4, 3, 2, 1, 0}}, Case{int64_t(9223372036854775807), none, 1, {}},
        Case{none, none, std::numeric_limits<int64_t>::min(), {6}}}) {
    Tensor y = x.getitem({Slice{c.start, c.stop, c.step}});
    EXPECT_EQ(eval(y, b), pick(c.want));
  }
  Tensor m = in("m", {3, 7});
  auto mv = random_values(21, 5);
  Bindings mb{{}, {{1, mv}}};
  std::vector<double> want;
  for (int r = 1; r < 3; ++r)
    for (int c = 6; c >= 0; c -= 3) want.push_back(mv[size_t(r * 7 + c)]);
  EXPECT_EQ(eval(m.getitem({Slice{1, 3}, Slice{none, none, -3}}), mb), want);
  EXPECT_EQ(eval(m.getitem({-1}), mb), std::vector<double>(mv.begin() + 14, mv.end()));
  EXPECT_EQ(eval(m.getitem({1, -2}), mb), std::vector<double>{mv[12]});
  EXPECT_EQ(shape_str(m.getitem({1, -2}).shape()), "[]");
  EXPECT_EQ(error_of([&] { m.getitem({3}); }), "index: expected an index in [-3, 3) on axis 0 of [3, 7], got 3");
  EXPECT_EQ(error_of([&] { m.getitem({0, 0, 0}); }), "index: expected at most 2 indices for shape [3, 7], got 3");
  EXPECT_EQ(error_of([&] { m.getitem({Slice{none, none, 0}}); }), "index: expected a non-zero slice step, got 0");
  // symbolic axes: bounds count from the end and are checked over the dim's whole range
  const UOp* n = ctx.var("N", 3, 9);
  Tensor s = in("s", {n, 2});
  EXPECT_EQ(shape_str(s.getitem({Slice{-2, none}}).shape()), "[2, 2]");
  EXPECT_EQ(shape_str(s.getitem({Slice{1, -1}}).shape()), "[N-2, 2]");
  auto sv = random_values(10, 6);
  EXPECT_EQ(eval(s.getitem({Slice{-2, none}, 1}), {{{"N", 5}}, {{2, sv}}}), (std::vector<double>{sv[7], sv[9]}));
  EXPECT_EQ(error_of([&] {
              s.getitem({Slice{0, 4}});
            }),
            "index: expected a slice within [0, N] on axis 0 of [N, 2], got [0, 4)");
  EXPECT_EQ(error_of([&] {
              s.getitem({Slice{int64_t(9223372036854775807), none}});
            }),
            "index: expected a slice within [0, N] on axis 0 of [N, 2], got [9223372036854775807, N)");
  EXPECT_EQ(error_of([&] {
              s.getitem({Slice{-4, none}});
            }),
            "index: expected a slice within [0, N] on axis 0 of [N, 2], got [N-4, N)");
  EXPECT_EQ(error_of([&] {
              s.getitem({Slice{none, none, 2}});
            }),
            "index: expected a constant length for a slice with step 2 on axis 0, got N");
}

TEST_F(TensorTest, NoneIndexInsertsAnAxis) {
  Tensor x = in("x", {3, 4});
  auto v = random_values(12, 14);
  Bindings b{{}, {{0, v}}};
  EXPECT_EQ(shape_str(x.getitem({std::nullopt}).shape()), "[1, 3, 4]");
  EXPECT_EQ(shape_str(x.getitem({Slice{}, std::nullopt}).shape()), "[3, 1, 4]");
  EXPECT_EQ(shape_str(x.getitem({1, std::nullopt, Slice{1, 3}, std::nullopt}).shape()), "[1, 2, 1]");
  EXPECT_EQ(eval(x.getitem({1, std::nullopt, Slice{1, 3}, std::nullopt}), b), (std::vector<double>{v[5], v[6]}));
  EXPECT_EQ(shape_str(x.getitem({std::nullopt, std::nullopt, 0, 0, std::nullopt}).shape()), "[1, 1, 1]");
  // an ellipsis stands for the axes the other indices leave
  EXPECT_EQ(x.getitem({Ellipsis{}, 2}).uop(), x.getitem({Slice{}, 2}).uop());
  EXPECT_EQ(x.getitem({1, Ellipsis{}}).uop(), x.getitem({1}).uop());
  EXPECT_EQ(x.getitem({1, Ellipsis{}, 2}).uop(), x.getitem({1, 2}).uop());
  EXPECT_EQ(shape_str(x.getitem({Ellipsis{}, std::nullopt}).shape()), "[3, 4, 1]");
  EXPECT_EQ(eval(x.getitem({Ellipsis{}, 2}), b), (std::vector<double>{v[2], v[6], v[10]}));
  EXPECT_EQ(error_of([&] { x.getitem({Ellipsis{}, 0, Ellipsis{}}); }), "index: expected at most one ..., got 2");
}

// tinygrad's div(rounding_mode=): integers by CDIV or floor division, floats by truncating or
// flooring the quotient.
TEST_F(TensorTest, DivRoundingModes) {
  Tensor a = in("a", {12}, dtypes::int32), f = in("f", {12});
  std::vector<double> av, fv = random_values(12, 15, -9, 9);
  std::mt19937 rng(16);
  for (int i = 0; i < 12; ++i) av.push_back(double(int(rng() % 41) - 20));
  Bindings b{{}, {{0, av}, {1, fv}}};
  std::vector<double> trunc, floor, ftrunc, ffloor;
  for (size_t i = 0; i < 12; ++i) {
    int x = int(av[i]);
    trunc.push_back(x / -3);
    floor.push_back(std::floor(double(x) / -3));
    ftrunc.push_back(std::trunc(fv[i] / 2.5));
    ffloor.push_back(std::floor(fv[i] / 2.5));
  }
  EXPECT_EQ(eval(a.div(a.lift(-3), "trunc"), b), trunc);
  EXPECT_EQ(eval(a.div(a.lift(-3), "floor"), b), floor);
  EXPECT_EQ(a.div(a.lift(-3), "floor").dtype(), dtypes::int32);
  expect_near(eval(f.div(f.lift(2.5), "trunc"), b), ftrunc);
  expect_near(eval(f.div(f.lift(2.5), "floor"), b), ffloor);
  EXPECT_EQ(f.div(f.lift(2.5), "").uop(), (f / 2.5).uop());
  EXPECT_EQ(error_of([&] { f.div(f, "round"); }), "div: expected rounding_mode \"trunc\" or \"floor\", got \"round\"");
}

// tinygrad's pad modes as numpy defines them: output position j of [-before, n + after) reads
// x[reflect(j)], x[clamp(j)] or x[j mod n]; a negative pad cuts (circular: before it wraps).
TEST_F(TensorTest, PadModesAgainstIndexMaps) {
  struct Case {
    std::string mode;
    int64_t b0, a0, b1, a1;
  };
  for (const Case& c :
       {Case{"reflect", 2, 1, 0, 3}, Case{"reflect", 3, 3, 1, -2}, Case{"replicate", 4, 2, 5, 0},
        Case{"replicate", -1, 3, 2, -3}, Case{"circular", 4, 4, 1, 2}, Case{"circular", -2, 2, 3, -1}}) {
    Context local;
    const int64_t r = 4, w = 5;
    Tensor x = Tensor::input(local, "x", dtypes::float32, {r, w});
    auto v = random_values(size_t(r * w), 17);
    auto map = [&](int64_t j, int64_t n, int64_t b, int64_t a, int64_t& off) {
      if (c.mode == "circular") {  // cut first, then wrap what is left
        off = std::max<int64_t>(-b, 0);
        int64_t m = n - off - std::max<int64_t>(-a, 0);
        return off + ((j % m) + m) % m;
      }
      if (c.mode == "reflect") return j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
      return std::clamp<int64_t>(j, 0, n - 1);
    };
    std::vector<double> want;
    int64_t off = 0;
    auto range = [&](int64_t n, int64_t b, int64_t a) {
      std::vector<int64_t> js;
      if (c.mode == "circular") {
        int64_t m = n - std::max<int64_t>(-b, 0) - std::max<int64_t>(-a, 0);
        for (int64_t j = -std::max<int64_t>(b, 0); j < m + std::max<int64_t>(a, 0); ++j) js.push_back(j);
      } else {
        for (int64_t j = -b; j < n + a; ++j) js.push_back(j);
      }
      return js;
    };
    for (int64_t i : range(r, c.b0, c.a0))
      for (int64_t j : range(w, c.b1, c.a1))
        want.push_back(v[size_t(map(i, r, c.b0, c.a0, off) * w + map(j, w, c.b1, c.a1, off))]);
    Tensor y = x.pad_mode({{c.b0, c.a0}, {c.b1, c.a1}}, c.mode);
    EXPECT_EQ(eval(y, {{}, {{0, v}}}), want) << c.mode << " " << c.b0 << " " << c.a0 << " " << c.b1 << " " << c.a1;
  }
  Tensor x = in("x", {3, 4});
  EXPECT_EQ(x.pad_mode({{1, 1}, {0, 0}}, "constant", 2).uop(), x.pad_value({{1, 1}, {0, 0}}, 2).uop());
  EXPECT_EQ(error_of([&] {
              x.pad_mode({{3, 0}, {0, 0}}, "reflect");
            }),
            "pad: expected pads of at most 2 with mode \"reflect\" on axis 0 of size 3, got (3, 0)");
  EXPECT_EQ(error_of([&] {
              x.pad_mode({{0, 0}, {0, 5}}, "circular");
            }),
            "pad: expected pads of at most 4 with mode \"circular\" on axis 1 of size 4, got (0, 5)");
  EXPECT_EQ(error_of([&] {
              x.pad_mode({{0, 0}, {0, 0}}, "edge");
            }),
            "pad: expected mode \"constant\", \"reflect\", \"replicate\" or \"circular\", got \"edge\"");
  EXPECT_EQ(error_of([&] {
              in("s", {ctx.var("S", 2, 9)}).pad_mode({{1, 1}}, "replicate");
            }),
            "pad: expected constant sizes and pads with mode \"replicate\", got [S]");
}

TEST_F(TensorTest, BitwiseOpsAndShifts) {
  Tensor a = in("a", {16}, dtypes::int32), c = in("c", {16}, dtypes::int32);
  std::vector<double> av, cv;
  std::mt19937 rng(7);
  for (int i = 0; i < 16; ++i) {
    av.push_back(double(int32_t(rng()) >> 4));
    cv.push_back(double(int32_t(rng() % 2001) - 1000));
  }
  Bindings b{{}, {{0, av}, {1, cv}}};
  auto each = [&](auto f) {
    std::vector<double> r;
    for (int i = 0; i < 16; ++i) r.push_back(double(f(int32_t(av[size_t(i)]), int32_t(cv[size_t(i)]))));
    return r;
  };
  EXPECT_EQ(eval(a & c, b), each([](int32_t x, int32_t y) { return x & y; }));
  EXPECT_EQ(eval(a | c, b), each([](int32_t x, int32_t y) { return x | y; }));
  EXPECT_EQ(eval(a ^ c, b), each([](int32_t x, int32_t y) { return x ^ y; }));
  EXPECT_EQ(eval(~a, b), each([](int32_t x, int32_t) { return ~x; }));
  EXPECT_EQ(eval(a >> 3, b), each([](int32_t x, int32_t) { return x >> 3; }));  // arithmetic
  EXPECT_EQ(eval((a & 0xffff) << 4, b), each([](int32_t x, int32_t) { return (x & 0xffff) << 4; }));
  EXPECT_EQ((a << 2).dtype(), dtypes::int32);
  Tensor u = in("u", {4}, dtypes::uint8);
  Bindings ub{{}, {{2, {0, 1, 200, 255}}}};
  EXPECT_EQ(eval(~u, ub), (std::vector<double>{255, 254, 55, 0}));
  EXPECT_EQ(eval(u << 1, ub), (std::vector<double>{0, 2, 144, 254}));  // wraps at uint8
  Tensor p = in("p", {4}, dtypes::bool_), q = in("q", {4}, dtypes::bool_);
  Bindings pb{{}, {{3, {1, 1, 0, 0}}, {4, {1, 0, 1, 0}}}};
  EXPECT_EQ(eval(p & q, pb), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(eval(p ^ q, pb), (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(eval(~p, pb), (std::vector<double>{0, 0, 1, 1}));
  Tensor f = in("f", {4});
  EXPECT_EQ(error_of([&] { f & 1; }), "bitwise_and: expected integer or bool operands, got float and weakint");
  EXPECT_EQ(error_of([&] { p << q; }), "lshift: expected integer operands, got bool and bool");
  EXPECT_EQ(error_of([&] { ~f; }), "bitwise_not: expected an integer or bool operand, got float");
}

TEST_F(TensorTest, ArgminAndArgmax) {
  Tensor x = in("x", {3, 5});
  std::vector<double> v;
  std::mt19937 rng(9);
  for (int i = 0; i < 15; ++i) v.push_back(double(int(rng() % 5)) - 2);  // ties: the first index wins
  Bindings b{{}, {{0, v}}};
  std::vector<double> rows, cols;
  for (int r = 0; r < 3; ++r) {
    int best = 0;
    for (int c = 1; c < 5; ++c)
      if (v[size_t(r * 5 + c)] < v[size_t(r * 5 + best)]) best = c;
    rows.push_back(best);
  }
  for (int c = 0; c < 5; ++c) {
    int best = 0;
    for (int r = 1; r < 3; ++r)
      if (v[size_t(r * 5 + c)] < v[size_t(best * 5 + c)]) best = r;
    cols.push_back(best);
  }
  EXPECT_EQ(eval(x.argmin(1), b), rows);
  EXPECT_EQ(eval(x.argmin(0), b), cols);
  EXPECT_EQ(shape_str(x.argmin(1, true).shape()), "[3, 1]");
  auto lo = std::min_element(v.begin(), v.end()), hi = std::max_element(v.begin(), v.end());
  EXPECT_EQ(eval(x.argmin(), b), std::vector<double>{double(lo - v.begin())});
  EXPECT_EQ(eval(x.argmax(), b), std::vector<double>{double(hi - v.begin())});
  EXPECT_EQ(x.argmin(1).dtype(), dtypes::int32);
  Tensor i = in("i", {4}, dtypes::int32);
  EXPECT_EQ(eval(i.argmin(0), {{}, {{1, {3, -7, 5, -7}}}}), std::vector<double>{1});
}

TEST_F(TensorTest, ErfAndExactGelu) {
  Tensor x = in("x", {64});
  auto v = random_values(64, 10, -4, 4);
  Bindings b{{}, {{0, v}}};
  std::vector<double> erf, gelu;
  for (double t : v) {
    erf.push_back(std::erf(t));
    gelu.push_back(0.5 * t * (1 + std::erf(t / std::sqrt(2.0))));
  }
  expect_near(eval(x.erf(), b), erf, 1e-6);
  expect_near(eval(x.gelu("none"), b), gelu, 1e-6);
  EXPECT_EQ(x.gelu().uop(), x.gelu("tanh").uop());
  EXPECT_EQ(error_of([&] { x.gelu("erf"); }), "gelu: expected approximate \"tanh\" or \"none\", got \"erf\"");
}

namespace {

struct PoolCase {
  int h, w, k, s, d;
  std::vector<int64_t> padding;  // as passed: 1, 2 (per axis) or 4 (left, right, top, bottom) values
  bool ceil, include_pad;
};

// Direct pooling of one (h, w) plane with PyTorch's rules (tinygrad's): the window at output
// (oy, ox) reads rows oy*s + ky*d - top; ceil_mode adds a last window unless it would start in
// the padding after the input; the average divides by the positions inside the padded input
// (count_include_pad) or by the real ones.
void pool_ref(const std::vector<double>& x, const PoolCase& c, bool max, std::vector<double>& out, int& oh, int& ow) {
  int top = 0, bottom = 0, left = 0, right = 0;
  if (c.padding.size() == 1) top = bottom = left = right = int(c.padding[0]);
  if (c.padding.size() == 2) top = bottom = int(c.padding[0]), left = right = int(c.padding[1]);
  if (c.padding.size() == 4)
    left = int(c.padding[0]), right = int(c.padding[1]), top = int(c.padding[2]), bottom = int(c.padding[3]);
  int ext = c.d * (c.k - 1) + 1;
  auto outs = [&](int n, int b, int a) {
    int span = n + b + a - ext;
    int o = (c.ceil ? (span + c.s - 1) / c.s : span / c.s) + 1;
    if (c.ceil && (o - 1) * c.s >= n + b) --o;
    return o;
  };
  oh = outs(c.h, top, bottom), ow = outs(c.w, left, right);
  out.clear();
  for (int oy = 0; oy < oh; ++oy)
    for (int ox = 0; ox < ow; ++ox) {
      double best = -INFINITY, sum = 0;
      int counted = 0, real = 0;
      for (int ky = 0; ky < c.k; ++ky)
        for (int kx = 0; kx < c.k; ++kx) {
          int iy = oy * c.s + ky * c.d - top, ix = ox * c.s + kx * c.d - left;
          if (iy >= -top && iy < c.h + bottom && ix >= -left && ix < c.w + right) ++counted;
          if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
          double t = x[size_t(iy * c.w + ix)];
          best = std::max(best, t), sum += t, ++real;
        }
      out.push_back(max ? best : sum / (c.include_pad ? counted : real));
    }
}

}  // namespace

TEST_F(TensorTest, PoolingOptionsAgainstLoops) {
  for (const PoolCase& c :
       {PoolCase{5, 5, 3, 2, 1, {1}, false, true}, PoolCase{7, 6, 3, 2, 1, {1, 0}, true, true},
        PoolCase{7, 7, 2, 3, 1, {0}, true, false}, PoolCase{9, 8, 3, 1, 2, {2, 1, 0, 1}, false, false},
        PoolCase{6, 7, 3, 2, 2, {1}, true, false}, PoolCase{5, 6, 2, 2, 1, {1, 0, 1, 1}, true, true},
        PoolCase{8, 8, 3, 3, 1, {1}, true, true}}) {
    Context local;
    Tensor x = Tensor::input(local, "x", dtypes::float32, {1, 1, c.h, c.w});
    auto v = random_values(size_t(c.h * c.w), uint64_t(c.h * 31 + c.w));
    Bindings b{{}, {{0, v}}};
    std::vector<double> want;
    int oh = 0, ow = 0;
    pool_ref(v, c, true, want, oh, ow);
    std::vector<int64_t> k{c.k}, s{c.s}, d{c.d};
    Tensor mx = x.max_pool2d(k, s, c.padding, d, c.ceil);
    EXPECT_EQ(eval_shape(mx, b), (std::vector<int64_t>{1, 1, oh, ow})) << c.h << "x" << c.w;
    EXPECT_EQ(eval(mx, b), want);
    pool_ref(v, c, false, want, oh, ow);
    Tensor avg = x.avg_pool2d(k, s, c.padding, d, c.ceil, c.include_pad);
    EXPECT_EQ(eval_shape(avg, b), (std::vector<int64_t>{1, 1, oh, ow})) << c.h << "x" << c.w;
    expect_near(eval(avg, b), want);
  }
  Tensor x = in("x", {1, 1, 4, 4}), i = in("i", {1, 1, 4, 4}, dtypes::int32);
  std::vector<double> iv;
  for (int t = 0; t < 16; ++t) iv.push_back(-100 - t);
  // an integer tensor pads with its dtype's minimum, so negative values still win
  EXPECT_EQ(eval(i.max_pool2d({2}, {2}, {1}), {{}, {{1, iv}}}),
            (std::vector<double>{-100, -101, -103, -104, -105, -107, -112, -113, -115}));
  EXPECT_EQ(error_of([&] { x.max_pool2d({2}, {}, {1, 2, 3}); }), "max_pool2d: expected 1, 2 or 4 paddings, got 3");
  EXPECT_EQ(error_of([&] { x.avg_pool2d({2, 2, 2, 2, 2}); }), "avg_pool2d: expected at least 5 axes, got [1, 1, 4, 4]");
  EXPECT_EQ(error_of([&] {
              in("s", {1, ctx.var("H", 4, 8)}).max_pool2d({2}, {}, {0}, {1}, true);
            }),
            "max_pool2d: expected constant spatial sizes with ceil_mode, got [1, H]");
}

// Arguments as large as int64 holds are range-checked or handled, never wrapped.
TEST_F(TensorTest, HugeArgumentsAreCheckedNotTruncated) {
  Tensor x = in("x", {1, 1, 8, 8}), w = in("w", {1, 1, 3, 3});
  auto xv = random_values(64, 12), wv = random_values(9, 13);
  Bindings b{{}, {{0, xv}, {1, wv}}};
  const int64_t big = std::numeric_limits<int64_t>::max();
  // a stride past the row leaves one window, at 0
  Tensor y = x.conv2d(w, nullptr, 1, {big, big});
  double want = 0;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) want += xv[size_t(r * 8 + c)] * wv[size_t(r * 3 + c)];
  EXPECT_EQ(shape_str(y.shape()), "[1, 1, 1, 1]");
  expect_near(eval(y, b), {want});
  EXPECT_EQ(eval(x.max_pool2d({8}, {big}), b), std::vector<double>{*std::max_element(xv.begin(), xv.end())});
  EXPECT_EQ(error_of([&] { x.avg_pool2d({3}, {-1}); }),
            "pool: expected positive kernel, stride and dilation on axis 2, got 3, -1 and 1");
  // one tap: a huge dilation spaces nothing, and builds nothing huge
  EXPECT_EQ(eval(x.max_pool2d({1, 1}, {1}, {0}, {big}), b), xv);
  EXPECT_EQ(error_of([&] { x.max_pool2d({3}, {1}, {0}, {int64_t(1) << 62}); }),
            "pool: expected a kernel of extent over 2^63 to fit in [1, 1, 8, 8] on axis 2");
  EXPECT_EQ(error_of([&] { x.conv2d(w, nullptr, 1, {1}, {1}, {int64_t(1) << 62}); }),
            "pad: expected a shape of at most 9223372036854775807 elements, got [1, 1, "
            "4611686018427387912+4611686018427387904, 4611686018427387912+4611686018427387904]");
  EXPECT_EQ(error_of([&] { in("v", {4}).expand(int64_t(1) << 62, 4); }),
            "expand: expected a shape of at most 9223372036854775807 elements, got [4611686018427387904, 4]");
  EXPECT_EQ(error_of([&] {
              in("p", {4}).pad({{Dim(big - 2), Dim(0)}});
            }),
            "pad: expected a shape of at most 9223372036854775807 elements, got [4+9223372036854775805]");
  EXPECT_EQ(error_of([&] {
              in("n", {4}).pad_value({{Dim(-3), Dim(-2)}}, 0);
            }),
            "pad: expected negative pads that cut at most the 4 elements of axis 0, got (-3, -2)");
  EXPECT_EQ(error_of([&] {
              in("o", {4}).pad_value({{Dim(std::numeric_limits<int64_t>::min()), Dim(0)}}, 0);
            }),
            "pad: expected negative pads that cut at most the 4 elements of axis 0, got (-9223372036854775808, 0)");
  Tensor t = in("t", {3, 3});
  Bindings tb{{}, {{6, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}};  // slot 6: after the inputs above
  EXPECT_EQ(eval(t.tril(big), tb), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(eval(t.tril(-big), tb), std::vector<double>(9, 0.0));
  EXPECT_EQ(eval(t.tril(int64_t(4294967296)), tb), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

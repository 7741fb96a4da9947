// kiln::Tensor: convolution, pooling and attention against direct loops.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/tensor_testing.h"

using namespace kiln;
using namespace kiln::tensor_testing;

// ---------------------------------------------------------------- conv, pooling, attention

namespace {

// Direct convolution: out[n][o][y][x] = b[o] + sum over c in o's group, ky, kx.
std::vector<double> conv_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                             int n, int cin, int h, int wd, int cout, int kh, int kw, int groups, int s, int d, int p,
                             int& oh, int& ow) {
  oh = (h + 2 * p - d * (kh - 1) - 1) / s + 1;
  ow = (wd + 2 * p - d * (kw - 1) - 1) / s + 1;
  int cg = cin / groups, og = cout / groups;
  std::vector<double> out(size_t(n * cout * oh * ow), 0.0);
  for (int in = 0; in < n; ++in)
    for (int o = 0; o < cout; ++o)
      for (int y = 0; y < oh; ++y)
        for (int xx = 0; xx < ow; ++xx) {
          double acc = b.empty() ? 0.0 : b[size_t(o)];
          for (int c = 0; c < cg; ++c)
            for (int ky = 0; ky < kh; ++ky)
              for (int kx = 0; kx < kw; ++kx) {
                int iy = y * s + ky * d - p, ix = xx * s + kx * d - p;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                int ci = (o / og) * cg + c;
                acc += x[size_t(((in * cin + ci) * h + iy) * wd + ix)] * w[size_t(((o * cg + c) * kh + ky) * kw + kx)];
              }
          out[size_t(((in * cout + o) * oh + y) * ow + xx)] = acc;
        }
  return out;
}

}  // namespace

TEST_F(TensorTest, Conv2dAgainstLoops) {
  struct Case {
    int n, cin, h, w, cout, kh, kw, groups, s, d, p;
  };
  for (Case c : {Case{1, 1, 5, 5, 1, 3, 3, 1, 1, 1, 0}, Case{2, 4, 7, 6, 6, 3, 2, 2, 2, 1, 1},
                 Case{1, 3, 9, 9, 2, 3, 3, 1, 1, 2, 0}, Case{1, 2, 5, 4, 4, 1, 1, 2, 3, 1, 2}}) {
    Context local;
    Tensor x = Tensor::input(local, "x", dtypes::float32, {c.n, c.cin, c.h, c.w});
    Tensor w = Tensor::input(local, "w", dtypes::float32, {c.cout, c.cin / c.groups, c.kh, c.kw});
    Tensor b = Tensor::input(local, "b", dtypes::float32, {c.cout});
    Tensor y = x.conv2d(w, &b, c.groups, {c.s, c.s}, {c.d, c.d}, {c.p, c.p});
    auto xv = random_values(size_t(c.n * c.cin * c.h * c.w), 11);
    auto wv = random_values(size_t(c.cout * c.cin / c.groups * c.kh * c.kw), 12);
    auto bv = random_values(size_t(c.cout), 13);
    int oh = 0, ow = 0;
    auto want = conv_ref(xv, wv, bv, c.n, c.cin, c.h, c.w, c.cout, c.kh, c.kw, c.groups, c.s, c.d, c.p, oh, ow);
    Bindings bb{{}, {{0, xv}, {1, wv}, {2, bv}}};
    EXPECT_EQ(eval_shape(y, bb), (std::vector<int64_t>{c.n, c.cout, oh, ow}));
    expect_near(eval(y, bb), want);
  }
}

TEST_F(TensorTest, SymbolicConv2d) {
  const UOp* h = ctx.var("H", 3, 12);
  Tensor x = in("x", {1, 1, h, 4}), w = in("w", {1, 1, 3, 3});
  Tensor y = x.conv2d(w);
  EXPECT_EQ(shape_str(y.shape()), "[1, 1, H-2, 2]");
  for (int64_t hv : {3, 7, 12}) {
    auto xv = random_values(size_t(hv * 4), uint64_t(hv)), wv = random_values(9, 3);
    int oh = 0, ow = 0;
    auto want = conv_ref(xv, wv, {}, 1, 1, int(hv), 4, 1, 3, 3, 1, 1, 1, 0, oh, ow);
    expect_near(eval(y, {{{"H", hv}}, {{0, xv}, {1, wv}}}), want);
  }
}

TEST_F(TensorTest, Pooling) {
  Tensor x = in("x", {1, 1, 4, 4});
  std::vector<double> v(16);
  for (size_t i = 0; i < 16; ++i) v[i] = double((i * 7) % 16) - 5;  // 0..15 scrambled, shifted
  Bindings b{{}, {{0, v}}};
  auto at = [&](int r, int c) { return v[size_t(r * 4 + c)]; };
  std::vector<double> mx, avg;
  for (int r = 0; r < 4; r += 2)
    for (int c = 0; c < 4; c += 2) {
      mx.push_back(std::max({at(r, c), at(r, c + 1), at(r + 1, c), at(r + 1, c + 1)}));
      avg.push_back((at(r, c) + at(r, c + 1) + at(r + 1, c) + at(r + 1, c + 1)) / 4);
    }
  EXPECT_EQ(eval(x.max_pool2d(), b), mx);
  expect_near(eval(x.avg_pool2d(), b), avg);
  // 3x3, stride 1, padding 1 (padded with -inf)
  std::vector<double> mp;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      double m = -INFINITY;
      for (int dr = -1; dr <= 1; ++dr)
        for (int dc = -1; dc <= 1; ++dc)
          if (r + dr >= 0 && r + dr < 4 && c + dc >= 0 && c + dc < 4) m = std::max(m, at(r + dr, c + dc));
      mp.push_back(m);
    }
  EXPECT_EQ(eval(x.max_pool2d({3, 3}, {1, 1}, {1, 1}), b), mp);
  EXPECT_EQ(error_of([&] {
              x.max_pool2d({5, 5});
            }),
            "pool: expected a kernel of extent 5 to fit in [1, 1, 4, 4] on axis 2");
}

TEST_F(TensorTest, TrilAndAttention) {
  Tensor x = in("x", {3, 3});
  Bindings b{{}, {{0, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}};
  EXPECT_EQ(eval(x.tril(), b), (std::vector<double>{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(eval(x.tril(1), b), (std::vector<double>{1, 2, 0, 4, 5, 6, 7, 8, 9}));
  const int L = 4, S = 4, D = 3;
  Tensor q = in("q", {2, L, D}), k = in("k", {2, S, D}), v = in("v", {2, S, D});
  auto qv = random_values(2 * L * D, 21), kv = random_values(2 * S * D, 22), vv = random_values(2 * S * D, 23);
  Bindings ab{{}, {{1, qv}, {2, kv}, {3, vv}}};
  for (bool causal : {false, true}) {
    std::vector<double> want;
    for (int bt = 0; bt < 2; ++bt)
      for (int i = 0; i < L; ++i) {
        std::vector<double> sc(S);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < S; ++j) {
          double dot = 0;
          for (int e = 0; e < D; ++e) dot += qv[size_t((bt * L + i) * D + e)] * kv[size_t((bt * S + j) * D + e)];
          sc[size_t(j)] = causal && j > i ? -INFINITY : dot / std::sqrt(double(D));
          mx = std::max(mx, sc[size_t(j)]);
        }
        for (double& s : sc) sum += (s = std::exp(s - mx));
        for (int e = 0; e < D; ++e) {
          double acc = 0;
          for (int j = 0; j < S; ++j) acc += sc[size_t(j)] / sum * vv[size_t((bt * S + j) * D + e)];
          want.push_back(acc);
        }
      }
    expect_near(eval(q.scaled_dot_product_attention(k, v, nullptr, causal), ab), want);
  }
}

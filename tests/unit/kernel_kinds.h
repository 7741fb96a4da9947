// The kernel kinds every renderer is checked on against the oracle: the C renderer
// (test_codegen_c.cpp) and the LLVM objects (test_llvm.cpp) run the same programs. Each is one
// function over a test fixture with input(), ins, ctx and expect_matches(outs, bindings).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "generator/frontend/tensor.h"
#include "generator/schedule/schedule.h"

namespace kiln::kinds {

// c = a @ b over symbolic M in 1..40, N in 1..80 and K in 1..700, one kernel: the matmul whose
// tiles, cleanup nests and blocks (test_codegen_c.cpp) and packed blocks (test_pack.cpp) are
// checked. `c` is the product, for the oracle.
struct SymbolicMatmul {
  Tensor c;
  schedule::Schedule s;
};
inline SymbolicMatmul symbolic_matmul(Context& ctx) {
  const UOp* m = ctx.var("M", 1, 40);
  const UOp* n = ctx.var("N", 1, 80);
  const UOp* k = ctx.var("K", 1, 700);
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {m, k}), b = Tensor::input(ctx, "b", dtypes::float32, {k, n});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  return {outs[0], schedule::schedule(ins, outs, "k")};
}

template <class F> void elementwise_and_broadcast(F& f) {
  Tensor a = f.input("a", {5, 7}), b = f.input("b", {7}), c = f.input("c", {5, 1});
  f.expect_matches({(a * b + c).relu(), (a - c).exp() / (b.abs() + 1), a.sigmoid() * a.tanh() + a.sin().sqrt()});
}

template <class F> void reductions_over_each_axis(F& f) {
  Tensor x = f.input("x", {3, 4, 5});
  for (int axis = 0; axis < 3; ++axis)
    f.expect_matches({x.sum({axis}), x.max({axis}, true), x.min({axis}), x.mean({axis}), x.prod({axis})});
  f.expect_matches({x.sum(), x.argmax(1), x.sum({0, 2})});
}

// long reductions of few outputs (a GPU target shares each over a work group, padded to its
// multiple): rows of a symbolic length about the group's multiples, a matrix-vector product, a
// column sum (the reduction strided) and an integer sum
template <class F> void long_reductions_of_few_outputs(F& f) {
  const UOp* n = f.ctx.var("N", 1, 5000);
  Tensor x = f.input("x", {4, n}), v = f.input("v", {n});
  const std::vector<std::map<std::string, int64_t>> lengths = {{{"N", 1}},   {{"N", 127}},  {{"N", 128}},
                                                               {{"N", 129}}, {{"N", 1000}}, {{"N", 4999}}};
  f.expect_matches({x.sum({1})}, lengths);
  f.expect_matches({x.max({1})}, lengths);
  f.expect_matches({(x * v).mean({1})}, lengths);
  f.ins.clear();
  Tensor a = f.input("a", {16, 4096}), y = f.input("y", {4096});
  f.expect_matches({a.matmul(y)});
  f.ins.clear();
  Tensor c = f.input("c", {300, 16});
  f.expect_matches({c.sum({0})});
  f.ins.clear();
  Tensor i = f.input("i", {3, 1000}, dtypes::int32);
  f.expect_matches({i.sum({1})});
}

template <class F> void softmax_layernorm_at_symbolic_bounds(F& f) {
  const UOp* m = f.ctx.var("M", 1, 9);
  Tensor x = f.input("x", {m, 6});
  f.expect_matches({x.softmax(-1), x.log_softmax(-1), x.layernorm(-1), x.rmsnorm(-1), x.softmax(0)},
                   {{{"M", 1}}, {{"M", 4}}, {{"M", 9}}});
}

// an mlp at the bounds of its batch
template <class F> void mlp(F& f) {
  const UOp* m = f.ctx.var("M", 1, 64);
  Tensor x = f.input("x", {m, 784}), w1 = f.input("w1", {784, 128}), b1 = f.input("b1", {128}),
         w2 = f.input("w2", {128, 10});
  f.expect_matches({(x.matmul(w1) + b1).relu().matmul(w2).softmax(-1)}, {{{"M", 1}}, {{"M", 17}}, {{"M", 64}}});
}

template <class F> void matmul_shapes(F& f) {
  // the last three tile (4 rows x 16 / 8 columns): the register-tiled path
  for (auto [m, k, n] :
       {std::tuple{1, 7, 5}, {6, 1, 4}, {5, 7, 1}, {13, 11, 7}, {31, 37, 29}, {32, 24, 48}, {4, 3, 16}, {12, 64, 40}}) {
    f.ins.clear();
    Tensor a = f.input("a", {m, k}), b = f.input("b", {k, n});
    f.expect_matches({a.matmul(b)});
  }
  f.ins.clear();
  Tensor a = f.input("a", {2, 1, 3, 4}), b = f.input("b", {3, 4, 5});
  f.expect_matches({a.matmul(b)});
}

// M and N declared multiples of 64, as a bucket's dims are: on a GPU target, each work item a 4 x 4
// register tile and 16 x 16 items a work group; K symbolic (1 included), and a batch of them
template <class F> void tiled_matmul_buckets(F& f) {
  const UOp* m = f.ctx.var("M", 64, 256, dtypes::weakint, 64);
  const UOp* n = f.ctx.var("N", 64, 256, dtypes::weakint, 64);
  const UOp* k = f.ctx.var("K", 1, 100);
  Tensor a = f.input("a", {m, k}), b = f.input("b", {k, n});
  f.expect_matches(
      {a.matmul(b)},
      {{{"M", 64}, {"N", 64}, {"K", 1}}, {{"M", 128}, {"N", 192}, {"K", 37}}, {{"M", 256}, {"N", 64}, {"K", 100}}});
  f.ins.clear();
  Tensor x = f.input("x", {3, 64, 12}), y = f.input("y", {3, 12, 128});
  f.expect_matches({x.matmul(y)});
  // the generic variant's dims, of any length: padded to the tiles, the items past the ends gated
  f.ins.clear();
  const UOp* m2 = f.ctx.var("M2", 1, 300);
  const UOp* n2 = f.ctx.var("N2", 1, 300);
  Tensor c = f.input("c", {m2, k}), d = f.input("d", {k, n2});
  f.expect_matches({c.matmul(d)}, {{{"M2", 1}, {"N2", 1}, {"K", 1}},
                                   {{"M2", 65}, {"N2", 130}, {"K", 7}},
                                   {{"M2", 300}, {"N2", 257}, {"K", 3}},
                                   {{"M2", 64}, {"N2", 300}, {"K", 100}}});
}

template <class F> void convolutions_pooling_attention(F& f) {
  Tensor x = f.input("x", {2, 4, 7, 6}), w = f.input("w", {6, 2, 3, 2}), bias = f.input("bias", {6});
  f.expect_matches(
      {x.conv2d(w, &bias, 2, {2, 1}, {1, 2}, {1, 1}).relu(), x.max_pool2d({2, 2}), x.avg_pool2d({3, 3}, {2, 2})});
  f.ins.clear();
  // tiled: 16 columns x 4 rows of output, where padding makes some copies independent of a loop
  Tensor x2 = f.input("x2", {1, 4, 8, 16}), w2 = f.input("w2", {8, 4, 3, 3});
  f.expect_matches({x2.conv2d(w2, nullptr, 1, {1, 1}, {1, 1}, {1, 1}), x2.max_pool2d({3, 3}, {1, 1}, {1, 1})});
  f.ins.clear();
  const UOp* s = f.ctx.var("S", 1, 6);
  Tensor q = f.input("q", {2, s, 8}), k = f.input("k", {2, s, 8}), v = f.input("v", {2, s, 8});
  f.expect_matches({q.scaled_dot_product_attention(k, v, nullptr, true)}, {{{"S", 1}}, {{"S", 6}}});
}

// movement ops: gated and padded loads
template <class F> void movement_ops(F& f) {
  const UOp* n = f.ctx.var("N", 1, 5);
  Tensor x = f.input("x", {3, n}), y = f.input("y", {2, n});
  f.expect_matches({Tensor::cat({x, y}, 0), x.flip({0, 1}), x.pad({{Dim(1), Dim(2)}, {Dim(0), Dim(3)}}).exp(),
                    x.transpose().reshape({n, 3}).sin()},
                   {{{"N", 1}}, {{"N", 5}}});
}

template <class F> void integers_bools_half_and_bfloat16(F& f) {
  Tensor a = f.input("a", {4, 5}, dtypes::int32), b = f.input("b", {5}, dtypes::int8),
         c = f.input("c", {4, 5}, dtypes::bool_);
  Tensor h = f.input("h", {4, 5}, dtypes::float16), g = f.input("g", {4, 5}, dtypes::bfloat16);
  f.expect_matches({a.idiv(b), a.mod(b), (a * b).sum({1}), c.where(a, b.cast(dtypes::int32)), (a < 3).logical_and(c),
                    a.cast(dtypes::float16) * 0.5, (h * h + 1).sqrt(), Tensor::arange(f.ctx, 3, 40, 4) * 2,
                    (g * g + 1).sqrt(), g.max({1}), h.cast(dtypes::bfloat16) + g,
                    a.cast(dtypes::float32).bitcast(dtypes::int32) + 1});
}

}  // namespace kiln::kinds

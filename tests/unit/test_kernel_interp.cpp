// The kernel-AST interpreter against hand-computed values: loops, reduces, gated loads, exact
// dtype semantics, bounds checks, and the workspace arena model of whole schedules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/unit/kernel_interp.h"
#include "tests/unit/kernel_testing.h"

namespace kiln::interp {
namespace {

using schedule::Buffer;
using namespace kiln::kernel_testing;  // NOLINT: buffer(), filled(), poisoned()

// Kernel builders in the scheduler's form.
const UOp* param(Context& ctx, int32_t slot, DType elem, const UOp* count, std::string_view name) {
  return ctx.make(Op::PARAM, elem.as_ptr(), {count}, ParamArg{slot, -1, ctx.intern(name)});
}
const UOp* param(Context& ctx, int32_t slot, DType elem, int64_t count, std::string_view name) {
  return param(ctx, slot, elem, ctx.cint(count), name);
}
const UOp* at(const UOp* p, const UOp* idx) { return p->ctx().make(Op::INDEX, p->dtype.elem(), {p, idx}); }
const UOp* store(const UOp* p, const UOp* idx, const UOp* v) {
  return p->ctx().make(Op::STORE, dtypes::void_, {at(p, idx), v});
}
const UOp* end(const UOp* st, std::initializer_list<const UOp*> ranges) {
  std::vector<const UOp*> src{st};
  src.insert(src.end(), ranges);
  return st->ctx().make(Op::END, dtypes::void_, src);
}
const UOp* kernel(Context& ctx, std::string_view name, std::initializer_list<const UOp*> stmts) {
  return ctx.make(Op::SINK, dtypes::void_, stmts, Name{ctx.intern(name)});
}
const UOp* reduce(Op op, const UOp* v, std::initializer_list<const UOp*> ranges) {
  std::vector<const UOp*> src{v};
  src.insert(src.end(), ranges);
  return v->ctx().make(Op::REDUCE, v->dtype, src, ReduceArg{op, 0});
}

void run(const UOp* sink, std::vector<Buf*> params, const Vars& vars = {}) { run_kernel(sink, params, vars); }

// The InterpError's message, or "" when none is thrown.
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const InterpError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelInterpLoops, ElementwiseAddOver2dRange) {
  Context ctx;
  const UOp *c = param(ctx, 0, dtypes::float32, 6, "c"), *a = param(ctx, 1, dtypes::float32, 6, "a"),
            *b = param(ctx, 2, dtypes::float32, 6, "b");
  const UOp *r0 = ctx.range(2, 0), *r1 = ctx.range(3, 1);
  const UOp* i = Expr(r0) * 3 + r1;
  const UOp* k = kernel(ctx, "add", {end(store(c, i, Expr(at(a, i)) + at(b, i)), {r0, r1})});
  Buf bc = poisoned(dtypes::float32, 6), ba = filled(dtypes::float32, {1, 2, 3, 4, 5, 6}),
      bb = filled(dtypes::float32, {10, 20, 30, 40, 50, 60});
  run(k, {&bc, &ba, &bb});
  EXPECT_EQ(bc.doubles(), (std::vector<double>{11, 22, 33, 44, 55, 66}));
}

TEST(KernelInterpLoops, TransposeVisitsEveryPointInOrder) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int32, 6, "out"), *x = param(ctx, 1, dtypes::int32, 6, "x");
  const UOp *r0 = ctx.range(3, 0), *r1 = ctx.range(2, 1);  // out[3,2] = x[2,3]^T
  const UOp* k = kernel(ctx, "t", {end(store(out, Expr(r0) * 2 + r1, at(x, Expr(r1) * 3 + r0)), {r0, r1})});
  Buf bo = poisoned(dtypes::int32, 6), bx = filled(dtypes::int32, {0, 1, 2, 3, 4, 5});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(KernelInterpReduce, RowSum) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float32, 3, "out"), *x = param(ctx, 1, dtypes::float32, 12, "x");
  const UOp *r = ctx.range(3, 0), *k4 = ctx.range(4, 1, AxisType::Reduce);
  const UOp* k = kernel(ctx, "rowsum", {end(store(out, r, reduce(Op::ADD, at(x, Expr(r) * 4 + k4), {k4})), {r})});
  Buf bo = poisoned(dtypes::float32, 3), bx = filled(dtypes::float32, {1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{10, 26, -10}));
}

TEST(KernelInterpReduce, MaxOfNegativesStartsFromLowest) {
  Context ctx;
  for (DType d : {dtypes::float32, dtypes::int32}) {
    const UOp *out = param(ctx, 0, d, 2, "out"), *x = param(ctx, 1, d, 6, "x");
    const UOp *r = ctx.range(2, 0), *k3 = ctx.range(3, 1, AxisType::Reduce);
    const UOp* k = kernel(ctx, "rowmax", {end(store(out, r, reduce(Op::MAX, at(x, Expr(r) * 3 + k3), {k3})), {r})});
    Buf bo = poisoned(d, 2), bx = filled(d, {-5, -2, -9, 7, -1, 3});
    run(k, {&bo, &bx});
    EXPECT_EQ(bo.doubles(), (std::vector<double>{-2, 7})) << to_string(d);
  }
}

TEST(KernelInterpReduce, ProductAndReduceOverTwoRanges) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int64, 2, "out"), *x = param(ctx, 1, dtypes::int64, 4, "x");
  const UOp *a = ctx.range(2, 0, AxisType::Reduce), *b = ctx.range(2, 1, AxisType::Reduce);
  const UOp* v = at(x, Expr(a) * 2 + b);
  const UOp* k = kernel(
      ctx, "prod",
      {store(out, ctx.cint(0), reduce(Op::MUL, v, {a, b})), store(out, ctx.cint(1), reduce(Op::ADD, v, {a, b}))});
  Buf bo = poisoned(dtypes::int64, 2), bx = filled(dtypes::int64, {2, 3, 5, 7});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{210, 17}));
}

TEST(KernelInterpReduce, MatmulMatchesDirectLoops) {
  Context ctx;  // 4096 outputs of a 64-long dot product: about the size the scheduler tests run
  const int64_t n = 64;
  const UOp *c = param(ctx, 0, dtypes::int32, n * n, "c"), *a = param(ctx, 1, dtypes::int32, n * n, "a"),
            *b = param(ctx, 2, dtypes::int32, n * n, "b");
  const UOp *i = ctx.range(n, 0), *j = ctx.range(n, 1), *k = ctx.range(n, 2, AxisType::Reduce);
  const UOp* dot = reduce(Op::ADD, Expr(at(a, Expr(i) * n + k)) * at(b, Expr(k) * n + j), {k});
  const UOp* kern = kernel(ctx, "matmul", {end(store(c, Expr(i) * n + j, dot), {i, j})});
  std::vector<double> av, bv;
  for (int64_t e = 0; e < n * n; ++e) {
    av.push_back(double(e % 7 - 3));
    bv.push_back(double(e % 5 - 2));
  }
  Buf bc = poisoned(dtypes::int32, n * n), ba = filled(dtypes::int32, av), bb = filled(dtypes::int32, bv);
  run(kern, {&bc, &ba, &bb});
  std::vector<double> want;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t q = 0; q < n; ++q) {
      double acc = 0;
      for (int64_t e = 0; e < n; ++e) acc += av[size_t(r * n + e)] * bv[size_t(e * n + q)];
      want.push_back(acc);
    }
  EXPECT_EQ(bc.doubles(), want);
}

TEST(KernelInterpLoads, GatedPaddedLoadReadsZero) {
  Context ctx;  // out[i] = pad(x, (1, 2))[i]: x has 3 elements, out 6
  const UOp *out = param(ctx, 0, dtypes::float32, 6, "out"), *x = param(ctx, 1, dtypes::float32, 3, "x");
  const UOp* r = ctx.range(6, 0);
  const UOp* valid = (Expr(r) >= 1) & (Expr(r) < 4);
  const UOp* idx = where(valid, Expr(r) - 1, ctx.invalid());
  const UOp* k = kernel(ctx, "pad", {end(store(out, r, at(x, idx)), {r})});
  Buf bo = poisoned(dtypes::float32, 6), bx = filled(dtypes::float32, {7, 8, 9});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{0, 7, 8, 9, 0, 0}));
  // the same index without its gate reads x[-1]
  const UOp* ungated = kernel(ctx, "pad_bad", {end(store(out, r, at(x, Expr(r) - 1)), {r})});
  EXPECT_NE(error_of([&] { run(ungated, {&bo, &bx}); }), "");
}

TEST(KernelInterpLoads, StoreThroughInvalidIndexDoesNothing) {
  Context ctx;
  const UOp* out = param(ctx, 0, dtypes::int32, 4, "out");
  const UOp* r = ctx.range(4, 0);
  const UOp* k = kernel(ctx, "gated_store", {end(store(out, where(Expr(r) < 2, r, ctx.invalid()), r), {r})});
  Buf bo = filled(dtypes::int32, {-1, -1, -1, -1});
  run(k, {&bo});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{0, 1, -1, -1}));
}

TEST(KernelInterpLoads, ExplicitLoadOfIndex) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float64, 1, "out"), *x = param(ctx, 1, dtypes::float64, 2, "x");
  const UOp* ld = ctx.make(Op::LOAD, dtypes::float64, {at(x, ctx.cint(1))});
  const UOp* k = kernel(ctx, "ld", {store(out, ctx.cint(0), ld)});
  Buf bo = poisoned(dtypes::float64, 1), bx = filled(dtypes::float64, {1.5, 2.5});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{2.5}));
}

TEST(KernelInterpStores, ScalarStoreWithoutRanges) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float32, 1, "out"), *x = param(ctx, 1, dtypes::float32, 2, "x");
  const UOp* v = Expr(at(x, ctx.cint(0))) * Expr(ctx.cfloat(2.0)) + at(x, ctx.cint(1));
  const UOp* k = kernel(ctx, "scalar", {store(out, ctx.cint(0), v)});
  Buf bo = poisoned(dtypes::float32, 1), bx = filled(dtypes::float32, {3, 0.5});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{6.5}));
}

TEST(KernelInterpStores, BoolStoresAreBytes) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::bool_, 4, "out"), *x = param(ctx, 1, dtypes::int32, 4, "x");
  const UOp* r = ctx.range(4, 0);
  const UOp* k = kernel(ctx, "lt", {end(store(out, r, Expr(at(x, r)) < 2), {r})});
  Buf bo = poisoned(dtypes::bool_, 4), bx = filled(dtypes::int32, {0, 5, 1, 2});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.bytes(), 4u);
  std::vector<uint8_t> raw(4);
  std::memcpy(raw.data(), bo.data(), 4);
  EXPECT_EQ(raw, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(bo.doubles(), (std::vector<double>{1, 0, 1, 0}));
}

TEST(KernelInterpStores, PoisonedBoolReadsAsNeverWritten) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::bool_, 1, "out"), *x = param(ctx, 1, dtypes::bool_, 1, "x");
  const UOp* k = kernel(ctx, "copy", {store(out, ctx.cint(0), at(x, ctx.cint(0)))});
  Buf bo(dtypes::bool_, 1), bx = poisoned(dtypes::bool_, 1);
  EXPECT_TRUE(std::isnan(bx.doubles()[0]));
  EXPECT_NE(error_of([&] { run(k, {&bo, &bx}); }).find("never written"), std::string::npos);
}

TEST(KernelInterpSemantics, Int32WrapsAround) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int32, 2, "out"), *x = param(ctx, 1, dtypes::int32, 2, "x");
  const UOp* r = ctx.range(2, 0);
  const UOp* k = kernel(ctx, "wrap", {end(store(out, r, Expr(at(x, r)) + 1), {r})});
  Buf bo = poisoned(dtypes::int32, 2), bx = filled(dtypes::int32, {2147483647, -5});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{-2147483648.0, -4}));

  const UOp *o8 = param(ctx, 0, dtypes::uint8, 1, "o8"), *x8 = param(ctx, 1, dtypes::uint8, 1, "x8");
  const UOp* k8 = kernel(ctx, "wrap8", {store(o8, ctx.cint(0), Expr(at(x8, ctx.cint(0))) + 10)});
  Buf b8 = poisoned(dtypes::uint8, 1), bx8 = filled(dtypes::uint8, {250});
  run(k8, {&b8, &bx8});
  EXPECT_EQ(b8.doubles(), (std::vector<double>{4}));
}

TEST(KernelInterpSemantics, Float32RoundsAtEveryOp) {
  Context ctx;
  for (DType d : {dtypes::float32, dtypes::float64}) {
    const UOp *out = param(ctx, 0, d, 1, "out"), *x = param(ctx, 1, d, 1, "x");
    const UOp* v = Expr(at(x, ctx.cint(0))) + Expr(ctx.cfloat(1.0));
    const UOp* k = kernel(ctx, "round", {store(out, ctx.cint(0), v)});
    Buf bo = poisoned(d, 1), bx = filled(d, {16777216.0});
    run(k, {&bo, &bx});
    EXPECT_EQ(bo.doubles()[0], d == dtypes::float32 ? 16777216.0 : 16777217.0) << to_string(d);
  }
}

TEST(KernelInterpSemantics, HalfAndBfloat16Bytes) {
  Buf h = filled(dtypes::float16, {1.0 / 3.0, -2.0, 65504.0, 1e-7});
  uint16_t hb[4];
  std::memcpy(hb, h.data(), 8);
  EXPECT_EQ(hb[0], 0x3555);  // 0.333251953125
  EXPECT_EQ(hb[1], 0xC000);
  EXPECT_EQ(hb[2], 0x7BFF);
  EXPECT_EQ(hb[3], 0x0002);  // subnormal: 1e-7 / 2^-24 = 1.68 -> 2
  EXPECT_EQ(h.doubles()[0], 0.333251953125);
  EXPECT_EQ(h.doubles()[3], std::ldexp(2.0, -24));
  Buf b = filled(dtypes::bfloat16, {1.0, 1.0 + 1.0 / 256});  // a tie: rounds to even (1.0)
  uint16_t bb[2];
  std::memcpy(bb, b.data(), 4);
  EXPECT_EQ(bb[0], 0x3F80);
  EXPECT_EQ(bb[1], 0x3F80);
}

TEST(KernelInterpSemantics, BitcastAndCast) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int32, 2, "out"), *x = param(ctx, 1, dtypes::float32, 1, "x");
  const UOp* xv = at(x, ctx.cint(0));
  const UOp* k =
      kernel(ctx, "bits",
             {store(out, ctx.cint(0), xv->bitcast(dtypes::int32)), store(out, ctx.cint(1), xv->cast(dtypes::int32))});
  Buf bo = poisoned(dtypes::int32, 2), bx = filled(dtypes::float32, {-2.75});
  run(k, {&bo, &bx});
  EXPECT_EQ(bo.values()[0].i, int32_t(0xC0300000u));
  EXPECT_EQ(bo.values()[1].i, -2);
}

TEST(KernelInterpSemantics, SymbolicRangeEnd) {
  Context ctx;
  const UOp* n = ctx.var("n", 1, 8);
  const UOp *out = param(ctx, 0, dtypes::int32, n, "out"), *x = param(ctx, 1, dtypes::int32, n, "x");
  const UOp* r = ctx.range(n, 0);
  const UOp* k = kernel(ctx, "sym", {end(store(out, r, Expr(at(x, r)) * 2 + n), {r})});
  Buf bo = poisoned(dtypes::int32, 5), bx = filled(dtypes::int32, {0, 1, 2, 3, 4});
  run(k, {&bo, &bx}, {{"n", 5}});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{5, 7, 9, 11, 13}));
  // the buffers' sizes must agree with the PARAMs' counts under the bindings
  EXPECT_NE(error_of([&] { run(k, {&bo, &bx}, {{"n", 4}}); }).find("element count 4"), std::string::npos);
  EXPECT_NE(error_of([&] { run(k, {&bo, &bx}); }).find("no value for n"), std::string::npos);
}

TEST(KernelInterpSemantics, SharedDagNodesAreEvaluatedOncePerPoint) {
  Context ctx;  // v_{k+1} = v_k + v_k, 60 levels: exponential without memoization
  const UOp *out = param(ctx, 0, dtypes::float64, 4, "out"), *x = param(ctx, 1, dtypes::float64, 4, "x");
  const UOp* r = ctx.range(4, 0);
  Expr v = at(x, r);
  for (int i = 0; i < 60; ++i) v = v + v;
  const UOp* k = kernel(ctx, "deep", {end(store(out, r, v), {r})});
  Buf bo = poisoned(dtypes::float64, 4), bx = filled(dtypes::float64, {1, 2, 3, -1});
  run(k, {&bo, &bx});
  double p = std::ldexp(1.0, 60);
  EXPECT_EQ(bo.doubles(), (std::vector<double>{p, 2 * p, 3 * p, -p}));
}

TEST(KernelInterpErrors, OutOfBoundsIndexNamesKernelParamAndIndex) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::float32, 4, "out"), *x = param(ctx, 1, dtypes::float32, 4, "x");
  const UOp* r = ctx.range(4, 0);
  const UOp* k = kernel(ctx, "shift", {end(store(out, r, at(x, Expr(r) + 1)), {r})});
  Buf bo = poisoned(dtypes::float32, 4), bx = filled(dtypes::float32, {1, 2, 3, 4});
  std::string e = error_of([&] { run(k, {&bo, &bx}); });
  EXPECT_NE(e.find("kernel shift"), std::string::npos) << e;
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("index 4"), std::string::npos) << e;
  // a store past the end is caught too
  const UOp* k2 = kernel(ctx, "wide", {end(store(out, Expr(r) * 2, at(x, r)), {r})});
  EXPECT_NE(error_of([&] { run(k2, {&bo, &bx}); }).find("'out'"), std::string::npos);
}

TEST(KernelInterpErrors, UnknownOpIsNotSupported) {
  Context ctx;
  const UOp* out = param(ctx, 0, dtypes::int32, 4, "out");
  const UOp* r = ctx.range(4, 0);
  const UOp* gid = ctx.special(ctx.cint(4), "gidx0");
  const UOp* k = kernel(ctx, "special", {end(store(out, r, gid->cast(dtypes::int32)), {r})});
  Buf bo = poisoned(dtypes::int32, 4);
  EXPECT_NE(error_of([&] { run(k, {&bo}); }).find("SPECIAL: not supported"), std::string::npos);
  const UOp* barrier = kernel(ctx, "barrier", {ctx.make(Op::BARRIER, dtypes::void_)});
  EXPECT_NE(error_of([&] { run(barrier, {&bo}); }).find("BARRIER: not supported"), std::string::npos);
}

TEST(KernelInterpErrors, IntegerDivisionByZeroNamesTheNode) {
  Context ctx;
  const UOp *out = param(ctx, 0, dtypes::int32, 2, "out"), *x = param(ctx, 1, dtypes::int32, 2, "x");
  const UOp* r = ctx.range(2, 0);
  const UOp* q = ctx.make(Op::CDIV, dtypes::int32, {ctx.cint(7, dtypes::int32), at(x, r)});
  const UOp* k = kernel(ctx, "div", {end(store(out, r, q), {r})});
  Buf bo = poisoned(dtypes::int32, 2), ok = filled(dtypes::int32, {2, -3}), zero = filled(dtypes::int32, {2, 0});
  run(k, {&bo, &ok});
  EXPECT_EQ(bo.doubles(), (std::vector<double>{3, -2}));
  std::string e = error_of([&] { run(k, {&bo, &zero}); });
  EXPECT_NE(e.find("CDIV"), std::string::npos) << e;
  EXPECT_NE(e.find("axis0=1"), std::string::npos) << e;
}

TEST(KernelInterpErrors, RangeOutsideItsLoop) {
  Context ctx;
  const UOp* out = param(ctx, 0, dtypes::int32, 4, "out");
  const UOp* r = ctx.range(4, 0);
  const UOp* k = kernel(ctx, "unbound", {store(out, r, ctx.cint(1, dtypes::int32))});
  Buf bo = poisoned(dtypes::int32, 4);
  EXPECT_NE(error_of([&] { run(k, {&bo}); }).find("outside the loop"), std::string::npos);
}

// ---------------------------------------------------------------- schedules

// out[i] = x[i] * c as a kernel with PARAM 0 = out, PARAM 1 = x
const UOp* scale(Context& ctx, std::string_view name, const UOp* n, double c) {
  const UOp *o = param(ctx, 0, dtypes::float32, n, "o"), *x = param(ctx, 1, dtypes::float32, n, "x");
  const UOp* r = ctx.range(n, 0);
  return kernel(ctx, name, {end(store(o, r, Expr(at(x, r)) * Expr(ctx.cfloat(c))), {r})});
}

// out[i] = a[i] + b[rev ? n-1-i : i], PARAM 0 = out, 1 = a, 2 = b
const UOp* add(Context& ctx, std::string_view name, const UOp* n, bool rev) {
  const UOp *o = param(ctx, 0, dtypes::float32, n, "o"), *a = param(ctx, 1, dtypes::float32, n, "a"),
            *b = param(ctx, 2, dtypes::float32, n, "b");
  const UOp* r = ctx.range(n, 0);
  const UOp* j = rev ? (Expr(n) - 1 - Expr(r)).get() : r;
  return kernel(ctx, name, {end(store(o, r, Expr(at(a, r)) + at(b, j)), {r})});
}

TEST(KernelInterpSchedule, IntermediatesShareArenaAcrossDisjointLifetimes) {
  Context ctx;
  const UOp* n = ctx.var("n", 1, 16);
  using K = Buffer::Kind;
  // 0 x, 1 out0, 2 out1, 3 t0 (kernels 0-1), 4 t1 (kernels 2-3): t0 and t1 share offset 0
  schedule::Schedule s;
  s.buffers = {buffer(K::Input, "x", n, 0), buffer(K::Output, "out0", n, 0), buffer(K::Output, "out1", n, 1),
               buffer(K::Intermediate, "t0", n, -1, ctx.cint(0)), buffer(K::Intermediate, "t1", n, -1, ctx.cint(0))};
  s.kernels = {{"p_0", scale(ctx, "p_0", n, 2.0), {3, 0}},     // t0 = 2x
               {"p_1", add(ctx, "p_1", n, false), {1, 3, 3}},  // out0 = t0 + t0
               {"p_2", scale(ctx, "p_2", n, 3.0), {4, 0}},     // t1 = 3x
               {"p_3", add(ctx, "p_3", n, true), {2, 4, 4}}};  // out1[i] = t1[i] + t1[n-1-i]
  s.workspace_bytes = ctx.cint(64);
  s.vars = {n};
  auto outs = run_schedule(s, {{"n", 4}}, {{1, 2, 3, 4}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].name, "out0");
  EXPECT_EQ(outs[0].shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(outs[0].values, (std::vector<double>{4, 8, 12, 16}));
  EXPECT_EQ(outs[1].values, (std::vector<double>{15, 15, 15, 15}));
  // 17 floats do not fit the 64-byte workspace
  EXPECT_NE(error_of([&] { run_schedule(s, {{"n", 17}}, {std::vector<double>(17, 1.0)}); }), "");
}

TEST(KernelInterpSchedule, OverlappingLiveIntermediatesAreCaught) {
  Context ctx;
  const UOp* n = ctx.cint(8);
  using K = Buffer::Kind;
  // t0 = 2x (kernel 0), t1 = 3x (kernel 1), out = t0 + t1 (kernel 2): t0 and t1 are live together
  auto plan = [&](int64_t t1_offset) {
    schedule::Schedule s;
    s.buffers = {buffer(K::Input, "x", n, 0), buffer(K::Output, "out", n, 0),
                 buffer(K::Intermediate, "t0", n, -1, ctx.cint(0)),
                 buffer(K::Intermediate, "t1", n, -1, ctx.cint(t1_offset))};
    s.kernels = {{"q_0", scale(ctx, "q_0", n, 2.0), {2, 0}},
                 {"q_1", scale(ctx, "q_1", n, 3.0), {3, 0}},
                 {"q_2", add(ctx, "q_2", n, false), {1, 2, 3}}};
    s.workspace_bytes = ctx.cint(128);
    return s;
  };
  std::vector<std::vector<double>> in{{1, 2, 3, 4, 5, 6, 7, 8}};
  std::vector<double> want{5, 10, 15, 20, 25, 30, 35, 40};
  EXPECT_EQ(run_schedule(plan(64), {}, in)[0].values, want);
  std::string e = error_of([&] { run_schedule(plan(0), {}, in); });
  EXPECT_NE(e.find("t0 and t1"), std::string::npos) << e;
  // unchecked, the bad plan runs and t1 overwrites t0: out = 6x
  auto outs = run_schedule(plan(0), {}, in, RunOptions{.check_workspace_overlap = false, .guard = std::nullopt});
  EXPECT_EQ(outs[0].values, (std::vector<double>{6, 12, 18, 24, 30, 36, 42, 48}));
  // misaligned and out-of-arena offsets are rejected
  EXPECT_NE(error_of([&] { run_schedule(plan(32), {}, in); }), "");
  EXPECT_NE(error_of([&] { run_schedule(plan(128), {}, in); }), "");
}

TEST(KernelInterpSchedule, UnwrittenOutputStaysPoisoned) {
  Context ctx;
  const UOp* n = ctx.cint(2);
  using K = Buffer::Kind;
  schedule::Schedule s;
  s.buffers = {buffer(K::Input, "x", n, 0), buffer(K::Output, "out", n, 0)};
  s.workspace_bytes = ctx.cint(0);
  auto outs = run_schedule(s, {}, {{1, 2}});
  EXPECT_TRUE(std::isnan(outs[0].values[0]) && std::isnan(outs[0].values[1]));
}

}  // namespace
}  // namespace kiln::interp

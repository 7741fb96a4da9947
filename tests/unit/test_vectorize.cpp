// The vectorize stage (codegen/vectorize.cpp) and the vector IR it makes (ops.def): a Lane loop
// becomes vector loads, stores and lanewise ops of the target's width; every rule that keeps a
// loop scalar keeps it scalar; the verifier accepts the vector forms and rejects malformed ones;
// the vectorized program computes what the scalar one does (the linear interpreter).
#include <gtest/gtest.h>

#include <set>

#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/ir/verify.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/target/target.h"
#include "tests/unit/kernel_interp.h"

using namespace kiln;

namespace {

constexpr DType i32 = dtypes::int32, f32 = dtypes::float32;

interp::Buf buf(DType d, const std::vector<double>& v) {
  interp::Buf b(d, int64_t(v.size()));
  b.fill(v);
  return b;
}
void run(const UOp* sink, std::vector<interp::Buf*> params) {
  interp::run_linear(codegen::linearize(sink), params, {});
}

// the dtypes of the vector values of a graph (pointers to vectors included)
std::set<std::string> vector_dtypes(const UOp* sink) {
  std::set<std::string> s;
  for (const UOp* u : toposort(sink))
    if (u->dtype.count > 1) s.insert(to_string(u->dtype));
  return s;
}

size_t count(const UOp* sink, Op op, int lanes) {
  size_t n = 0;
  for (const UOp* u : toposort(sink)) {
    int l = u->op == Op::STORE ? u->src(1)->dtype.count : u->dtype.count;
    n += u->op == op && l == lanes;
  }
  return n;
}

// A hand-built final graph (int32 index math, committed dtypes), as vectorize gets it.
struct Graph {
  Context ctx;
  int32_t axis = 0;
  const UOp* c(int64_t v) { return ctx.cint(v, i32); }
  const UOp* param(int32_t slot, DType d, int64_t n) {
    return ctx.make(Op::PARAM, d.as_ptr(), {c(n)}, ParamArg{slot, -1, ctx.intern("p" + std::to_string(slot))});
  }
  const UOp* range(int64_t n, AxisType t = AxisType::Lane) {
    return ctx.make(Op::RANGE, i32, {c(n)}, RangeArg{axis++, t, -1});
  }
  const UOp* index(const UOp* buf, const UOp* i) {
    const UOp* b = buf;
    while (b->op == Op::AFTER) b = b->src(0);
    return ctx.make(Op::INDEX, b->dtype.elem(), {buf, i});
  }
  const UOp* load(const UOp* buf, const UOp* i) { return ctx.make(Op::LOAD, index(buf, i)->dtype, {index(buf, i)}); }
  const UOp* store(const UOp* buf, const UOp* i, const UOp* v) {
    return ctx.make(Op::STORE, dtypes::void_, {index(buf, i), v});
  }
  const UOp* end(const UOp* body, const UOp* r) { return ctx.make(Op::END, dtypes::void_, {body, r}); }
  const UOp* sink(std::initializer_list<const UOp*> s) { return ctx.make(Op::SINK, dtypes::void_, s, Name{"k"}); }
  const UOp* after(std::vector<const UOp*> s) { return ctx.make(Op::AFTER, s[0]->dtype, s); }
  const UOp* acc(int32_t slot, DType d, int64_t n) {
    return ctx.make(Op::BUFFER, d.as_ptr(AddrSpace::Reg), {c(n)}, ParamArg{slot, n, {}});
  }
};

// y[r] = x[r] * 2 + 1 over one Lane loop of `w` lanes
const UOp* axpb(Graph& g, int64_t w, DType d = f32) {
  const UOp *x = g.param(1, d, w), *y = g.param(0, d, w);
  const UOp* r = g.range(w);
  const UOp* v = g.load(x, r);
  const UOp* two = is_float(d) ? g.ctx.cfloat(2.0, d) : g.ctx.cint(2, d);
  const UOp* one = is_float(d) ? g.ctx.cfloat(1.0, d) : g.ctx.cint(1, d);
  return g.sink({g.end(g.store(y, r, v->alu(Op::MUL, two)->alu(Op::ADD, one)), r)});
}

}  // namespace

// ---------------------------------------------------------------- what becomes vectors

TEST(Vectorize, ALaneLoopBecomesVectorsOfTheTargetWidth) {
  for (int bytes : {16, 32, 64}) {
    Graph g;
    const UOp* v = codegen::vectorize_lanes(axpb(g, 64), bytes);
    int n = bytes / 4;
    ASSERT_EQ(verify(v), std::nullopt) << print_graph(v);
    std::string vt = to_string(f32.vec(n));
    EXPECT_EQ(vector_dtypes(v), (std::set<std::string>{vt})) << print_graph(v);
    EXPECT_EQ(count(v, Op::LOAD, n), 1u) << print_graph(v);
    EXPECT_EQ(count(v, Op::STORE, n), 1u);
    EXPECT_EQ(count(v, Op::MUL, n), 1u);
    EXPECT_EQ(count(v, Op::STACK, n), 2u);  // the broadcast constants 2 and 1
    // the loop: 64 / n iterations, the first lane of each at r * n
    const UOp* r = nullptr;
    for (const UOp* u : toposort(v))
      if (u->op == Op::RANGE) r = u;
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->src(0)->ival(), 64 / n);
    for (const UOp* u : toposort(v))
      if (u->op == Op::INDEX) {
        EXPECT_EQ(u->src(1), r->ctx().make(Op::MUL, i32, {r, g.c(n)})) << print(u);
      }
  }
}

TEST(Vectorize, VectorProgramsComputeWhatTheScalarOnesDo) {
  // the same kernel before and after, run by the linear interpreter lane by lane
  for (DType d : {f32, dtypes::int64, dtypes::float64}) {
    Graph g;
    const UOp* scalar = axpb(g, 32, d);
    const UOp* vec = codegen::vectorize_lanes(scalar, 32);
    ASSERT_NE(vec, scalar) << to_string(d);
    std::vector<double> in(32);
    for (size_t i = 0; i < in.size(); ++i) in[i] = double(i) - 7;
    interp::Buf x = buf(d, in), y0(d, 32), y1(d, 32);
    run(scalar, {&y0, &x});
    run(vec, {&y1, &x});
    EXPECT_EQ(y0.doubles(), y1.doubles()) << to_string(d);
  }
}

TEST(Vectorize, AccumulatorsOfLanesBecomeBuffersOfVectors) {
  // acc[r] = 0; for k { acc[r] += x[k * 16 + r] }; y[r] = acc[r]: a column sum, 16 lanes
  Graph g;
  const UOp *x = g.param(1, f32, 64), *y = g.param(0, f32, 16), *acc = g.acc(0, f32, 16);
  const UOp* r0 = g.range(16);
  const UOp* init = g.end(g.store(acc, r0, g.ctx.cfloat(0.0, f32)), r0);
  const UOp *k = g.range(4, AxisType::Reduce), *r1 = g.range(16);
  const UOp* in = g.after({acc, init, k});
  const UOp* upd = g.store(in, r1, g.load(in, r1)->alu(Op::ADD, g.load(x, Expr(k) * 16 + r1)));
  const UOp* loop = g.end(g.end(upd, r1), k);
  const UOp* r2 = g.range(16);
  const UOp* out = g.end(g.store(y, r2, g.load(g.after({acc, loop}), r2)), r2);
  const UOp* v = codegen::vectorize_lanes(g.sink({out}), 32);
  ASSERT_EQ(verify(v), std::nullopt) << print_graph(v);
  size_t buffers = 0;
  for (const UOp* u : toposort(v))
    if (u->op == Op::BUFFER) {
      ++buffers;
      EXPECT_EQ(u->dtype, f32.vec(8).as_ptr(AddrSpace::Reg));
      EXPECT_EQ(u->arg<ParamArg>().size, 2);  // counted in vectors
    }
  EXPECT_EQ(buffers, 1u);
  EXPECT_EQ(count(v, Op::STORE, 8), 3u) << print_graph(v);  // init, update, output
  std::vector<double> in_v(64);
  for (size_t i = 0; i < in_v.size(); ++i) in_v[i] = double(i % 7);
  interp::Buf xb = buf(f32, in_v), yb(f32, 16);
  run(v, {&yb, &xb});
  for (size_t j = 0; j < 16; ++j) {
    double want = 0;
    for (size_t kk = 0; kk < 4; ++kk) want += in_v[kk * 16 + j];
    EXPECT_EQ(yb.doubles()[j], want) << j;
  }
}

// ---------------------------------------------------------------- what stays scalar

TEST(Vectorize, LoopsVectorsCannotExpressStayScalar) {
  auto stays_scalar = [](Graph&, const UOp* sink, int bytes = 32) {
    const UOp* v = codegen::vectorize_lanes(sink, bytes);
    EXPECT_EQ(v, sink) << print_graph(v);
  };
  {  // a read at stride 2
    Graph g;
    const UOp *x = g.param(1, f32, 64), *y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, g.load(x, Expr(r) * 2)), r)}));
  }
  {  // a gated read (padding)
    Graph g;
    const UOp *x = g.param(1, f32, 32), *y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    const UOp* gated = g.ctx.make(Op::WHERE, i32, {Expr(r) < 20, r, g.ctx.invalid()});
    const UOp* ld = g.ctx.make(Op::LOAD, f32, {g.index(x, gated)});
    stays_scalar(g, g.sink({g.end(g.store(y, r, ld), r)}));
  }
  {  // float64 next to float32 in one loop: one element size per loop
    Graph g;
    const UOp *x = g.param(1, dtypes::float64, 32), *y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, g.load(x, r)->cast(f32)), r)}));
  }
  {  // elements of 2 bytes
    Graph g;
    stays_scalar(g, axpb(g, 64, dtypes::float16));
  }
  {  // 4 lanes of 4 bytes are not a whole vector of 32 bytes (but are one of 16)
    Graph g;
    const UOp* s = axpb(g, 4);
    stays_scalar(g, s, 32);
    EXPECT_NE(codegen::vectorize_lanes(s, 16), s);
  }
  {  // lanes must not see each other's elements: y[r] = y[r + 1]
    Graph g;
    const UOp* y = g.param(0, f32, 33);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, g.load(y, Expr(r) + 1)), r)}));
  }
  {  // ... and read where stored, the loop is elementwise: y[r] = y[r] * 2
    Graph g;
    const UOp* y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    const UOp* s = g.sink({g.end(g.store(y, r, g.load(y, r)->alu(Op::MUL, g.ctx.cfloat(2.0, f32))), r)});
    EXPECT_NE(codegen::vectorize_lanes(s, 32), s);
  }
  {  // a lane's index stored as a value is not a vector of its lanes: y[r] = r
    Graph g;
    const UOp* y = g.param(0, i32, 32);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, r), r)}));
  }
  {  // index math that is not affine in the lane: x[r / 2]
    Graph g;
    const UOp *x = g.param(1, f32, 16), *y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, g.load(x, r->alu(Op::CDIV, g.c(2)))), r)}));
  }
  {  // a loop inside the Lane loop
    Graph g;
    const UOp *x = g.param(1, f32, 128), *y = g.param(0, f32, 128);
    const UOp *r = g.range(32), *q = g.range(4, AxisType::Loop);
    const UOp* i = Expr(r) * 4 + q;
    stays_scalar(g, g.sink({g.end(g.end(g.store(y, i, g.load(x, i)), q), r)}));
  }
  {  // an op with no lanewise form here (sqrt: a libm call)
    Graph g;
    const UOp *x = g.param(1, f32, 32), *y = g.param(0, f32, 32);
    const UOp* r = g.range(32);
    stays_scalar(g, g.sink({g.end(g.store(y, r, g.ctx.make(Op::SQRT, f32, {g.load(x, r)})), r)}));
  }
}

TEST(Vectorize, RowsStoredApartBecomeVectorsAndOverlappingOnesStayScalar) {
  // a register tile's epilogue: y[(2o + i) * N + 16n + r] = x[...] * 2 for rows i = 0, 1, the
  // columns n over N / c (N a var), 16 lanes. Rows N apart are apart where the loop runs only if
  // it runs at N >= 16 (c = 16, not c = 8); rows 8 apart (a constant) always overlap 16 lanes.
  auto build = [](Graph& g, int64_t c, bool by_var) {
    const UOp* n_var = g.ctx.var("N", 1, 64, i32);
    const UOp *x = g.param(1, f32, 64 * 64), *y = g.param(0, f32, 64 * 64);
    const UOp* o = g.range(2, AxisType::Loop);
    const UOp* n = g.ctx.make(Op::RANGE, i32, {n_var->alu(Op::CDIV, g.c(c))}, RangeArg{g.axis++, AxisType::Loop, -1});
    const UOp* r = g.range(16);
    std::vector<const UOp*> stores;
    for (int64_t i = 0; i < 2; ++i) {
      const UOp* row = by_var ? Expr(o) * 2 * Expr(n_var) + Expr(n_var) * i : Expr(o) * 32 + Expr(g.c(8 * i));
      const UOp* at = Expr(row) + Expr(n) * 16 + r;
      stores.push_back(g.store(y, at, g.load(x, at)->alu(Op::MUL, g.ctx.cfloat(2.0, f32))));
    }
    const UOp* body = g.ctx.make(Op::GROUP, dtypes::void_, stores);
    return g.sink({g.end(g.end(g.end(body, r), n), o)});
  };
  {
    Graph g;
    const UOp* s = build(g, 16, true);
    const UOp* v = codegen::vectorize_lanes(s, 32);
    ASSERT_NE(v, s);
    ASSERT_EQ(verify(v), std::nullopt) << print_graph(v);
    EXPECT_EQ(count(v, Op::STORE, 8), 2u) << print_graph(v);
    // the same numbers at N = 48 (3 tiles of columns), every element the rows store
    std::vector<double> in(64 * 64);
    for (size_t i = 0; i < in.size(); ++i) in[i] = double(i % 97) + 0.5;
    interp::Buf xb = buf(f32, in), y0 = buf(f32, std::vector<double>(in.size(), -1.0)),
                y1 = buf(f32, std::vector<double>(in.size(), -1.0));
    interp::run_linear(codegen::linearize(s), std::vector<interp::Buf*>{&y0, &xb}, {{"N", 48}});
    interp::run_linear(codegen::linearize(v), std::vector<interp::Buf*>{&y1, &xb}, {{"N", 48}});
    EXPECT_EQ(y0.doubles(), y1.doubles());
    EXPECT_EQ(y0.doubles()[48 * 3 + 47], (191 % 97 + 0.5) * 2);  // row 3's last column is stored
  }
  {
    Graph g;
    const UOp* s = build(g, 8, true);  // N >= 8 where it runs: rows 8 apart overlap 16 lanes
    EXPECT_EQ(codegen::vectorize_lanes(s, 32), s);
  }
  {
    Graph g;
    const UOp* s = build(g, 16, false);  // rows 8 elements apart
    EXPECT_EQ(codegen::vectorize_lanes(s, 32), s);
  }
}

TEST(Vectorize, AnAccumulatorAScalarLoopStoresStaysScalarWithTheLoopsThatUseIt) {
  // acc[r] = 0 (a Lane loop); acc[i] = x[i] (a scalar loop); y[r] = acc[r] (a Lane loop)
  auto build = [](Graph& g, AxisType middle) {
    const UOp *x = g.param(1, f32, 16), *y = g.param(0, f32, 16), *acc = g.acc(0, f32, 16);
    const UOp* r0 = g.range(16);
    const UOp* init = g.end(g.store(acc, r0, g.ctx.cfloat(0.0, f32)), r0);
    const UOp* i = g.range(16, middle);
    const UOp* in = g.after({acc, init});
    const UOp* fill = g.end(g.store(in, i, g.load(x, i)), i);
    const UOp* r2 = g.range(16);
    return g.sink({g.end(g.store(y, r2, g.load(g.after({acc, fill}), r2)), r2)});
  };
  Graph scalar;
  const UOp* s = build(scalar, AxisType::Loop);
  EXPECT_EQ(codegen::vectorize_lanes(s, 32), s);
  Graph lanes;  // the same with the middle loop a Lane loop too: all three are vectors
  const UOp* l = build(lanes, AxisType::Lane);
  const UOp* v = codegen::vectorize_lanes(l, 32);
  EXPECT_EQ(count(v, Op::STORE, 8), 3u) << print_graph(v);
}

TEST(Vectorize, AScalarLoopReadsAnAccumulatorOfVectorsByElement) {
  // acc[r] += x[k * 16 + r] as vectors; then s = sum over i of acc[i], a scalar loop: lane i % n of
  // vector i / n (a horizontal sum)
  Graph g;
  const UOp *x = g.param(1, f32, 64), *y = g.param(0, f32, 1), *acc = g.acc(0, f32, 16), *tot = g.acc(1, f32, 1);
  const UOp* r0 = g.range(16);
  const UOp* init = g.end(g.store(acc, r0, g.ctx.cfloat(0.0, f32)), r0);
  const UOp *k = g.range(4, AxisType::Reduce), *r1 = g.range(16);
  const UOp* in = g.after({acc, init, k});
  const UOp* loop = g.end(g.end(g.store(in, r1, g.load(in, r1)->alu(Op::ADD, g.load(x, Expr(k) * 16 + r1))), r1), k);
  const UOp* t0 = g.ctx.make(Op::STORE, dtypes::void_, {tot, g.ctx.cfloat(0.0, f32)});
  const UOp* i = g.range(16, AxisType::Loop);
  const UOp* t_in = g.after({tot, t0, i});
  const UOp* sum = g.ctx.make(Op::LOAD, f32, {t_in})->alu(Op::ADD, g.load(g.after({acc, loop}), i));
  const UOp* hsum = g.end(g.ctx.make(Op::STORE, dtypes::void_, {t_in, sum}), i);
  const UOp* out = g.store(y, g.c(0), g.ctx.make(Op::LOAD, f32, {g.after({tot, hsum})}));
  const UOp* v = codegen::vectorize_lanes(g.sink({out}), 16);
  ASSERT_EQ(verify(v), std::nullopt) << print_graph(v);
  EXPECT_EQ(count(v, Op::STORE, 4), 2u) << print_graph(v);  // the init and the update
  std::vector<double> in_v(64);
  for (size_t j = 0; j < in_v.size(); ++j) in_v[j] = double(j);
  interp::Buf xb = buf(f32, in_v), yb(f32, 1);
  run(v, {&yb, &xb});
  EXPECT_EQ(yb.doubles()[0], 63.0 * 64 / 2);
  std::string c = render::render_c(codegen::linearize(v), "k", {});
  EXPECT_NE(c.find("kiln_vf32x4 acc0[4];"), std::string::npos) << c;        // 16 lanes: 4 vectors
  EXPECT_NE(c.find("acc0[ridx3 / 4][ridx3 % 4]"), std::string::npos) << c;  // lane i % 4 of vector i / 4
}

// ---------------------------------------------------------------- the pipeline and the verifier

TEST(Vectorize, ThePipelineVectorizesAtItsTargetsWidth) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", f32, {64, 256}), b = Tensor::input(ctx, "b", f32, {256});
  std::vector<Tensor> ins{a, b}, outs{(a * b).relu()};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  for (const target::Target* tp : target::cpu_targets()) {
    const target::Target& t = *tp;
    codegen::PipelineOptions o;
    o.target = &t;
    const UOp* sink = codegen::full_rewrite_to_sink(s.kernels[0].ast, o);
    if (t.vector_bytes / 4 >= 2) {
      std::string want = to_string(f32.vec(t.vector_bytes / 4));
      EXPECT_TRUE(vector_dtypes(sink).contains(want)) << t.name << "\n" << print_graph(sink);
    } else {  // a register holds one float (Cortex-M4): no vectors at all
      EXPECT_TRUE(vector_dtypes(sink).empty()) << t.name << "\n" << print_graph(sink);
    }
    EXPECT_EQ(codegen::check_vector_widths(sink, t.vector_bytes), sink);
  }
  codegen::PipelineOptions avx512;
  avx512.target = target::find("x86_64-avx512");
  const UOp* wide = codegen::full_rewrite_to_sink(s.kernels[0].ast, avx512);
  EXPECT_THROW(codegen::check_vector_widths(wide, 32), InternalError);  // 64-byte vectors on a 32-byte target
}

TEST(Vectorize, TheVerifierAcceptsVectorFormsAndRejectsMalformedOnes) {
  Graph g;
  const UOp* p = g.param(0, f32, 64);
  const UOp* i = g.ctx.var("i", 0, 56, i32);
  const UOp* v8 = g.ctx.make(Op::LOAD, f32.vec(8), {g.index(p, i)});
  const UOp* x = g.ctx.fvar("x", 0.0, 1.0, f32);
  std::vector<const UOp*> eight(8, x), four(4, x);
  const UOp* splat = g.ctx.make(Op::STACK, f32.vec(8), eight);
  const UOp* sum = g.ctx.make(Op::ADD, f32.vec(8), {v8, splat});
  const UOp* mask = g.ctx.make(Op::CMPLT, dtypes::bool_.vec(8), {v8, splat});
  const UOp* sel = g.ctx.make(Op::WHERE, f32.vec(8), {mask, v8, sum});
  const UOp* bits = g.ctx.make(Op::BITCAST, i32.vec(8), {sel});
  const UOp* st = g.ctx.make(Op::STORE, dtypes::void_, {g.index(p, i), g.ctx.make(Op::BITCAST, f32.vec(8), {bits})});
  EXPECT_EQ(verify(st), std::nullopt);
  auto rejects = [](const UOp* u, std::string_view why) {
    auto e = verify_node(u);
    ASSERT_TRUE(e.has_value()) << print(u);
    EXPECT_NE(e->find(why), std::string::npos) << *e;
  };
  rejects(g.ctx.make(Op::STACK, f32.vec(8), four), "takes 8 source(s)");                          // lanes missing
  rejects(g.ctx.make(Op::STACK, f32.vec(4), {x, x, x, g.c(1)}), "scalars of its element dtype");  // mixed dtypes
  const UOp* v4 = g.ctx.make(Op::STACK, f32.vec(4), four);
  rejects(g.ctx.make(Op::ADD, f32.vec(8), {v8, v4}), "lane(s)");          // widths differ
  rejects(g.ctx.make(Op::ADD, f32.vec(8), {v8, x}), "lane(s)");           // a scalar operand
  rejects(g.ctx.make(Op::CMPLT, dtypes::bool_, {v8, splat}), "lane(s)");  // a scalar mask
  rejects(g.ctx.make(Op::WHERE, f32.vec(8), {g.ctx.make(Op::CMPLT, dtypes::bool_, {x, x}), v8, sum}),
          "lane(s)");  // a scalar condition
  rejects(g.ctx.make(Op::CAST, f32.vec(4), {v8}), "keeps the number of lanes");
  rejects(g.ctx.make(Op::INDEX, f32.vec(8), {p, i}), "a scalar element");
  rejects(g.ctx.make(Op::LOAD, f32.vec(8), {g.ctx.make(Op::AFTER, p->dtype, {p})}), "consecutive elements");
  rejects(g.ctx.make(Op::LOAD, dtypes::int32.vec(8), {g.index(p, i)}), "consecutive elements");
  rejects(g.ctx.make(Op::STORE, dtypes::void_, {g.index(p, i), bits}), "consecutive elements");
}

// ---------------------------------------------------------------- the C renderer writes it as it is

TEST(Vectorize, TheCRendererWritesVectorsOfTheirOwnWidth) {
  Graph g;
  const UOp* v = codegen::vectorize_lanes(axpb(g, 16), 32);
  std::string c = render::render_c(codegen::linearize(v), "k", {});
  size_t fn = c.find("void k(");
  ASSERT_NE(fn, std::string::npos) << c;
  EXPECT_NE(c.find("typedef float kiln_vf32x8 __attribute__((vector_size(32)));"), std::string::npos) << c;
  EXPECT_EQ(c.find("vector_size(16)"), std::string::npos) << c;  // only the widths the kernel uses
  EXPECT_EQ(c.substr(fn),
            "void k(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n"
            "  (void)bufs;\n"
            "  (void)vars;\n"
            "  (void)cores;\n"
            "  if (core != 0) return;  /* not shared among cores: core 0 does it all */\n"
            "  float* restrict data0 = (float*)bufs[0];  /* p0 */\n"
            "  const float* restrict data1 = (const float*)bufs[1];  /* p1 */\n"
            "  #pragma GCC unroll 2\n"
            "  for (int32_t ridx0 = 0; ridx0 < 2; ridx0++) {\n"
            "    const int32_t alu0 = ridx0 * 8;\n"
            "    const kiln_vf32x8 val1 = kiln_load_vf32x8(&data1[alu0]);\n"
            "    kiln_store_vf32x8(&data0[alu0], ((val1 * kiln_splat_vf32x8(2.0f)) + kiln_splat_vf32x8(1.0f)));\n"
            "  }\n"
            "}\n");
}

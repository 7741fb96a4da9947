// prove bounds (codegen/bounds.cpp): every load and store of a lowered kernel is proven inside its
// buffer for every dim value in the declared ranges, and an access that is not is an internal
// error naming the kernel, the buffer and the index, before anything is rendered.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "generator/codegen/bounds.h"
#include "generator/codegen/opt/opts.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/rewrite/rewrite.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;
using codegen::AccessProof;
using How = codegen::AccessProof::How;

namespace {

struct BoundsTest : ::testing::Test, ProgramInputs {
  schedule::Schedule schedule_of(const std::vector<Tensor>& outs) {
    return schedule::schedule(ins, outs, "p" + std::to_string(programs++));
  }

  // the kernel as lowered for `target` (the heuristics' opts when `optimize`)
  static const UOp* lower(const UOp* ast, const char* target, bool optimize = true) {
    codegen::PipelineOptions po;
    po.target = target::find(target);
    po.optimize = optimize;
    return codegen::full_rewrite_to_sink(ast, po);
  }

  // the kernel with the address of every INDEX into `buffer` made `f(address)`
  template <class F> static const UOp* with_address(const UOp* sink, std::string_view buffer, F f) {
    std::unordered_map<const UOp*, const UOp*> map;
    for (const UOp* u : toposort(sink)) {
      if (u->op != Op::INDEX) continue;
      const UOp* buf = u->src(0);
      while (buf->op == Op::AFTER) buf = buf->src(0);
      if (buf->op != Op::PARAM || buf->arg<ParamArg>().name != buffer) continue;
      std::vector<const UOp*> src(u->src().begin(), u->src().end());
      src[1] = f(src[1]);
      map[u] = u->with_src(src);
    }
    return map.empty() ? nullptr : substitute(sink, map);
  }

  // a symbolic matmul's kernel, and the same with b read at its index + 1: at k = K - 1 and
  // n = N - 1 that is b[K * N]
  struct Wrong {
    schedule::Schedule s;
    const UOp* ast;
    const UOp* wrong;
  };
  Wrong matmul_reading_b_one_past() {
    const UOp* m = ctx.var("M", 1, 64);
    const UOp* k = ctx.var("K", 1, 64);
    const UOp* n = ctx.var("N", 1, 64);
    Tensor a = input("a", {m, k}), b = input("b", {k, n});
    schedule::Schedule s = schedule_of({a.matmul(b)});
    const UOp* ast = s.kernels[0].ast;
    return {s, ast, with_address(ast, "b", [](const UOp* i) { return i->alu(Op::ADD, i->const_like(int64_t(1))); })};
  }

  static size_t count(const std::vector<AccessProof>& ps, How how) {
    return size_t(std::count_if(ps.begin(), ps.end(), [&](const AccessProof& p) { return p.how == how; }));
  }
  static size_t count(const std::vector<AccessProof>& ps, How how, std::string_view buffer) {
    return size_t(
        std::count_if(ps.begin(), ps.end(), [&](const AccessProof& p) { return p.how == how && p.buffer == buffer; }));
  }
};

}  // namespace

TEST_F(BoundsTest, GemmWithSymbolicDimsIsProvedOnEveryTarget) {
  const UOp* m = ctx.var("M", 1, 4096);
  const UOp* k = ctx.var("K", 1, 4096);
  const UOp* n = ctx.var("N", 1, 4096);
  Tensor a = input("a", {m, k}), b = input("b", {k, n});
  schedule::Schedule s = schedule_of({a.matmul(b)});
  ASSERT_EQ(s.kernels.size(), 1u);
  for (const char* t : {"cpu", "x86_64-avx2", "x86_64-avx512", "cortex-m4"}) {
    for (bool optimize : {false, true}) {
      std::vector<AccessProof> ps = codegen::prove_bounds(lower(s.kernels[0].ast, t, optimize));
      EXPECT_EQ(count(ps, How::Unproven), 0u) << t;
      EXPECT_EQ(count(ps, How::Ranges), ps.size()) << t;  // nothing gated in a matmul
      std::set<std::string> buffers;
      for (const AccessProof& p : ps) buffers.insert(p.buffer);
      EXPECT_TRUE(buffers.contains("a") && buffers.contains("b")) << t;
      // the output is the schedule's own buffer: loaded and stored
      EXPECT_GE(std::count_if(ps.begin(), ps.end(), [](const AccessProof& p) { return p.store; }), 1) << t;
      for (const AccessProof& p : ps) {
        if (p.buffer == "a") {
          EXPECT_EQ(p.size, "K*M") << t;  // the prover's atoms in the order it meets them
        }
      }
    }
  }
  // compile_to_c proves the same kernel, so it renders
  EXPECT_FALSE(codegen::compile_to_c(s.kernels[0].ast, s.vars).source.empty());
}

TEST_F(BoundsTest, APaddedAccessIsProvedOnlyThanksToItsGate) {
  const UOp* m = ctx.var("M", 1, 9);
  Tensor x = input("x", {m, 6});
  schedule::Schedule s = schedule_of({x * 2.0});
  ASSERT_EQ(s.kernels.size(), 1u);
  // rows padded to a multiple of 4, then split by 4: the loop reaches past M, each access gated on row < M
  std::string why;
  const UOp* padded = codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Padto, 0, 4}, &why);
  ASSERT_NE(padded, nullptr) << why;
  padded = codegen::apply_opt(padded, {codegen::Opt::Kind::Upcast, 0, 4}, &why);
  ASSERT_NE(padded, nullptr) << why;
  codegen::PipelineOptions po;
  po.optimize = false;
  const UOp* sink = codegen::full_rewrite_to_sink(padded, po);
  std::vector<AccessProof> ps = codegen::prove_bounds(sink);
  EXPECT_EQ(count(ps, How::Unproven), 0u);
  ASSERT_GE(count(ps, How::Gate), 2u) << print_graph(sink);  // the load of x and the store
  for (const AccessProof& p : ps) EXPECT_NE(p.index.find("where"), std::string::npos) << p.index;
  // the same loads without their gate: row 4 * r + 0 stays below M, rows 4 * r + 1 .. 3 may not
  const UOp* ungated = with_address(
      sink, "x", [](const UOp* a) { return a->op == Op::WHERE && a->src(2)->is_invalid() ? a->src(1) : a; });
  ASSERT_NE(ungated, nullptr);
  std::vector<AccessProof> bad = codegen::prove_bounds(ungated);
  EXPECT_EQ(count(bad, How::Unproven), 3u) << print_graph(ungated);
  EXPECT_EQ(count(bad, How::Unproven, "x"), 3u);
  EXPECT_EQ(count(bad, How::Ranges, "x"), 1u);
  EXPECT_THROW(codegen::check_bounds("padded", bad, ungated), InternalError);
  // and through the padded kernel: it compiles, proven (the opts test runs it in bounds-checked buffers)
  EXPECT_FALSE(codegen::compile_to_c(padded, s.vars, po).source.empty());
}

TEST_F(BoundsTest, AnIndexOnePastTheEndIsCaughtNamingKernelBufferAndIndex) {
  auto [s, ast, wrong] = matmul_reading_b_one_past();
  std::string kernel(ast->arg<Name>().s);
  ASSERT_NE(wrong, nullptr) << print_graph(ast);
  for (bool optimize : {false, true}) {
    codegen::PipelineOptions po;
    po.optimize = optimize;
    try {
      codegen::compile_to_c(wrong, s.vars, po);
      ADD_FAILURE() << "an index one past the end of b was emitted (optimize " << optimize << ")";
    } catch (const InternalError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("stage 'prove bounds'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("kernel " + kernel), std::string::npos) << msg.substr(0, 400);
      EXPECT_NE(msg.find("load from buffer b at index "), std::string::npos) << msg.substr(0, 400);
      EXPECT_NE(msg.find("inside its K*N elements"), std::string::npos) << msg.substr(0, 400);
    }
    // the right index, and the same one minus 1 at its start, are both fine where they stay inside
    EXPECT_NO_THROW(codegen::compile_to_c(ast, s.vars, po));
  }
  // one before the start is caught as well
  const UOp* before = with_address(lower(ast, "cpu", false), "a",
                                   [](const UOp* i) { return i->alu(Op::ADD, i->const_like(int64_t(-1))); });
  ASSERT_NE(before, nullptr);
  std::vector<AccessProof> ps = codegen::prove_bounds(before);
  ASSERT_EQ(count(ps, How::Unproven), 1u);
  EXPECT_THROW(codegen::check_bounds(kernel, ps, before), InternalError);
}

TEST_F(BoundsTest, WhatGenEmitsIsProvenOrRefused) {
  // compile_proven, kiln gen's and codegen's path: a kernel whose index is wrong with and without
  // opts is an internal error naming both accesses; a right one compiles with its opts
  auto [s, ast, wrong] = matmul_reading_b_one_past();
  ASSERT_NE(wrong, nullptr);
  std::vector<std::string> applied;
  codegen::PipelineOptions po;
  po.applied_opts = &applied;
  std::string fallback = "untouched";
  try {
    codegen::compile_proven(wrong, s.vars, po, {}, &fallback);
    ADD_FAILURE() << "an index one past the end of b was emitted";
  } catch (const InternalError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find("kernel " + std::string(ast->arg<Name>().s) + ": the load from buffer b at index "), 0u) << msg;
    EXPECT_NE(msg.find(", and without opts the load from buffer b at index "), std::string::npos) << msg;
    EXPECT_NE(msg.find("nothing is emitted that may address outside its buffer"), std::string::npos) << msg;
  }
  EXPECT_EQ(fallback, "untouched");
  applied.clear();
  codegen::CKernel ck = codegen::compile_proven(ast, s.vars, po, {}, &fallback);
  EXPECT_EQ(fallback, "untouched");  // proven with its opts: no fallback
  EXPECT_FALSE(applied.empty());
  EXPECT_EQ(codegen::first_unproven(ck.bounds), nullptr);
}

TEST_F(BoundsTest, ADimOfFewValuesIsSplitIntoCases) {
  // x[i] of 255 x M x 256 halves, i taken apart by M and put back ((i / 256M) * 256M + ((i / 256)
  // % M) * 256 + i % 256): products and divisions by M are nonlinear, and Z3 alone gives up; with M
  // in 1..16 each value of M is a linear case. One further is caught in a case.
  const UOp* m = ctx.var("M", 1, 16);
  Tensor x = input("x", {ctx.cint(255), m, ctx.cint(256)}, dtypes::float16);
  schedule::Schedule s = schedule_of({x * 3.0});
  const UOp* sink = lower(s.kernels[0].ast, "cpu", false);
  auto apart = [&](int64_t shift) {
    return [&, shift](const UOp* i) -> const UOp* {
      Expr e = Expr(i) + shift, mm(m);
      return (e / (mm * 256)) * (mm * 256) + ((e / 256) % mm) * 256 + e % 256;
    };
  };
  std::vector<AccessProof> ps = codegen::prove_bounds(with_address(sink, "x", apart(0)));
  EXPECT_EQ(count(ps, How::Solver, "x"), 1u);
  EXPECT_EQ(count(ps, How::Unproven), 0u);
  std::vector<AccessProof> bad = codegen::prove_bounds(with_address(sink, "x", apart(1)));
  EXPECT_EQ(count(bad, How::Unproven, "x"), 1u);
}

TEST_F(BoundsTest, WhatRangeAnalysisLeavesOpenZ3Decides) {
  // x[i] of 5 x 403 elements, the index taken apart into rows of 31 and put back together (as a
  // reshape of a flattened window does): range analysis bounds each piece alone, only Z3 sees the
  // sum is i again. One further and Z3 finds the last element's successor.
  const UOp* m = ctx.var("M", 1, 400);
  Tensor x = input("x", {m, 403});
  schedule::Schedule s = schedule_of({x * 3.0});
  const UOp* sink = lower(s.kernels[0].ast, "cpu", false);
  auto apart = [](int64_t shift) {
    return [shift](const UOp* i) -> const UOp* {
      Expr e = Expr(i) + 448;
      return (e / 2015) * 2015 + ((e / 31) % 65) * 31 + e % 31 - (448 - shift);
    };
  };
  const UOp* same = with_address(sink, "x", apart(0));
  ASSERT_NE(same, nullptr);
  std::vector<AccessProof> ps = codegen::prove_bounds(same);
  EXPECT_EQ(count(ps, How::Solver, "x"), 1u) << print_graph(same);
  EXPECT_EQ(count(ps, How::Unproven), 0u);
  std::vector<AccessProof> bad = codegen::prove_bounds(with_address(sink, "x", apart(1)));
  EXPECT_EQ(count(bad, How::Unproven, "x"), 1u);
}

TEST_F(BoundsTest, AVectorAccessCountsEveryLane) {
  // 16 columns as 16-lane vectors on avx512: the last lane of the last vector is the last column
  const UOp* m = ctx.var("M", 1, 100);
  Tensor x = input("x", {m, 16});
  schedule::Schedule s = schedule_of({x * 3.0});
  const UOp* sink = lower(s.kernels[0].ast, "x86_64-avx512");
  std::vector<AccessProof> ps = codegen::prove_bounds(sink);
  ASSERT_EQ(count(ps, How::Unproven), 0u);
  bool vector = false;
  for (const AccessProof& p : ps) vector |= p.lanes > 1;
  ASSERT_TRUE(vector) << print_graph(sink);
  // one element further, the vector's last lane is past the end
  const UOp* shifted = with_address(sink, "x", [](const UOp* i) { return i->alu(Op::ADD, i->const_like(int64_t(1))); });
  ASSERT_NE(shifted, nullptr);
  // every access of x (at every row, the last row's reaches past the end), and nothing else
  size_t loads = count(ps, How::Ranges, "x");
  ASSERT_GE(loads, 1u);
  std::vector<AccessProof> bad = codegen::prove_bounds(shifted);
  EXPECT_EQ(count(bad, How::Unproven, "x"), loads);
  EXPECT_EQ(count(bad, How::Unproven), loads);
}

TEST_F(BoundsTest, AScratchRegionPerCoreIsProvedByRanges) {
  // a packed matmul (block_for_caches): each core copies B's blocks into its own region of the
  // scratch, .core * stride + ..., in a buffer of .cores regions. The prover's .core <= .cores - 1
  // proves those accesses without Z3; one element further is outside for the last core.
  const UOp* m = ctx.var("M", 1, 4096);
  const UOp* k = ctx.var("K", 1, 4096);
  const UOp* n = ctx.var("N", 1, 4096);
  Tensor a = input("a", {m, k}), b = input("b", {k, n});
  schedule::Schedule s = schedule_of({a.matmul(b)});
  for (const char* t : {"x86_64-avx2", "x86_64-avx512"}) {
    codegen::PipelineOptions po;
    po.target = target::find(t);
    po.scratch = true;
    const UOp* sink = codegen::full_rewrite_to_sink(s.kernels[0].ast, po);
    std::vector<AccessProof> ps = codegen::prove_bounds(sink);
    EXPECT_GT(count(ps, How::Ranges, ".pack"), 0u) << t;
    EXPECT_EQ(count(ps, How::Ranges), ps.size()) << t;
    const UOp* past =
        with_address(sink, ".pack", [](const UOp* i) { return i->alu(Op::ADD, i->const_like(int64_t(1))); });
    ASSERT_NE(past, nullptr);
    EXPECT_GT(count(codegen::prove_bounds(past), How::Unproven, ".pack"), 0u) << t;
  }
}

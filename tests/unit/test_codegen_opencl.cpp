// The codegen pipeline to OpenCL C: scheduled kernels through the GPU stages (Global loops, gpu dims'
// work-item ids) and the OpenCL dialect of the C renderer, built for the first OpenCL device (PoCL
// in CI) and run there on poisoned outputs, compared with the float64 oracle: the kernel kinds the
// C and LLVM paths run, random programs, and launches fitted to small grid limits. Without an
// OpenCL device the tests that need one fail and say why (CI installs PoCL); under Bazel, whose
// sandbox may hide the ICD, they are skipped with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "generator/codegen/bounds.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/target/target.h"
#include "tests/unit/kernel_kinds.h"
#include "tests/unit/ocl_device.h"
#include "tests/unit/ocl_runner.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;

namespace {

int64_t kernels_run = 0;  // kernels run on the device and compared, for the summary line

struct Summary : ::testing::Environment {
  void TearDown() override {
    if (kernels_run > 0) std::cout << kernels_run << " kernels run on OpenCL against the oracle\n";
  }
};
[[maybe_unused]] auto* const summary = ::testing::AddGlobalTestEnvironment(new Summary);

const target::Target& opencl() { return *target::find("opencl"); }

struct Compiled {
  std::vector<codegen::CKernel> kernels;
  std::string source;  // the preamble and every kernel
};

Compiled compile(const schedule::Schedule& s, const target::Target& t = opencl(),
                 const std::optional<codegen::TunedOpts>& tuned = {}) {
  codegen::PipelineOptions o;
  o.target = &t;
  o.tuned = tuned;
  Compiled c;
  c.source = render::opencl_preamble();
  for (const auto& k : s.kernels) {
    c.kernels.push_back(codegen::compile_to_c(k.ast, s.vars, o));
    c.source += c.kernels.back().source;
  }
  return c;
}

struct Program {
  std::vector<Tensor> ins, outs;
  schedule::Schedule sched;
};

using EditInputs = std::function<void(std::vector<std::vector<double>>&)>;

// Runs the compiled schedule on the device and compares with the oracle; "" or what differed.
// `edit` (where given) changes the random inputs first: edge values.
std::string compare(const Program& p, const Compiled& c, const oclrun::Program& prog,
                    const std::map<std::string, int64_t>& vars, uint64_t seed, const EditInputs& edit = {}) {
  std::mt19937_64 rng(seed);
  oracle::Bindings b;
  b.vars = vars;
  std::vector<std::vector<double>> inputs = random_inputs(p.ins, b, rng);
  if (edit) {
    edit(inputs);
    for (size_t i = 0; i < p.ins.size(); ++i) b.inputs[p.ins[i].uop()->arg<ParamArg>().slot] = inputs[i];
  }
  std::vector<interp::Output> got = oclrun::run_schedule(p.sched, c.kernels, prog, vars, inputs);
  kernels_run += int64_t(p.sched.kernels.size());
  for (size_t i = 0; i < p.outs.size(); ++i) {
    std::vector<double> want = oracle::evaluate(p.outs[i].uop(), b).doubles();
    std::string d = compare_output(i, got[i].values, want, tolerance(got[i].dtype));
    if (!d.empty()) return d;
  }
  return "";
}

// the source with line numbers, as the device compiler's messages count them
std::string numbered(const std::string& src) {
  std::istringstream in(src);
  std::string line, out;
  for (int n = 1; std::getline(in, line); ++n) out += std::to_string(n) + ": " + line + "\n";
  return out;
}

struct OpenclTest : ::testing::Test, ProgramInputs {
  const target::Target* target = &opencl();
  EditInputs edit;                          // edge values in the random inputs
  std::optional<codegen::TunedOpts> tuned;  // a database's opts for every kernel, instead of the heuristics'
  // compiles once, runs at every binding of the vars
  void expect_matches(const std::vector<Tensor>& outs,
                      const std::vector<std::map<std::string, int64_t>>& bindings = {{}}) {
    Program p{ins, outs, schedule::schedule(ins, outs, "k" + std::to_string(programs++))};
    Compiled c = compile(p.sched, *target, tuned);
    oclrun::Device* dev = oclrun::test_device();
    if (!dev) return;
    std::optional<oclrun::Program> prog;
    try {
      prog.emplace(*dev, c.source);
    } catch (const oclrun::Error& e) {
      ADD_FAILURE() << e.what() << "\n" << numbered(c.source);
      return;
    }
    for (const auto& vars : bindings) EXPECT_EQ(compare(p, c, *prog, vars, 99, edit), "") << c.source;
  }
  // why a database's opts `t` do not apply to out's first kernel on `tgt`, or "applied"
  std::string refusal(const Tensor& out, const codegen::TunedOpts& t, const target::Target& tgt = opencl()) {
    const std::vector<Tensor> outs{out};
    schedule::Schedule s = schedule::schedule(ins, outs, "r");
    codegen::PipelineOptions o;
    o.target = &tgt;
    o.tuned = t;
    try {
      codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
    } catch (const codegen::OptError& e) {
      return std::string(e.what());
    }
    return "applied";
  }
};

size_t count_op(const UOp* sink, Op op) {
  size_t n = 0;
  for (const UOp* u : toposort(sink)) n += u->op == op;
  return n;
}

// a schedule's one kernel compiled for opencl by the heuristics: the opts they applied, the graph
// after each stage, the kernel
struct Observed {
  std::vector<std::string> applied;
  std::map<std::string, const UOp*> after;
  codegen::CKernel k;
};

Observed observe(const schedule::Schedule& s) {
  Observed ob;
  codegen::PipelineOptions o;
  o.target = &opencl();
  o.applied_opts = &ob.applied;
  o.after_stage = [&](std::string_view n, const UOp* sink) { ob.after[std::string(n)] = sink; };
  ob.k = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
  return ob;
}

}  // namespace

// ---------------------------------------------------------------- the kernel kinds, on the device

TEST_F(OpenclTest, ElementwiseAndBroadcast) { kinds::elementwise_and_broadcast(*this); }
TEST_F(OpenclTest, ReductionsOverEachAxis) { kinds::reductions_over_each_axis(*this); }
TEST_F(OpenclTest, LongReductionsOfFewOutputs) { kinds::long_reductions_of_few_outputs(*this); }
TEST_F(OpenclTest, SoftmaxLayernormAtSymbolicBounds) { kinds::softmax_layernorm_at_symbolic_bounds(*this); }
TEST_F(OpenclTest, MlpAtTheBoundsOfItsBatch) { kinds::mlp(*this); }
TEST_F(OpenclTest, MatmulShapes) { kinds::matmul_shapes(*this); }
TEST_F(OpenclTest, TiledMatmulBuckets) { kinds::tiled_matmul_buckets(*this); }
TEST_F(OpenclTest, ConvolutionsPoolingAttention) { kinds::convolutions_pooling_attention(*this); }
TEST_F(OpenclTest, MovementOps) { kinds::movement_ops(*this); }
TEST_F(OpenclTest, IntegersBoolsHalfAndBfloat16) { kinds::integers_bools_half_and_bfloat16(*this); }

TEST(OpenclRandomPrograms, AgreeWithTheOracle) {
  constexpr int kPrograms = 60;
  struct Case {
    std::unique_ptr<Context> ctx;
    Program p;
    std::map<std::string, int64_t> vars;
    Compiled c;
  };
  std::vector<Case> cases;
  std::string src = render::opencl_preamble();
  for (int seed = 0; seed < kPrograms; ++seed) {
    Case c{std::make_unique<Context>(), {}, {}, {}};
    RandomProgram(uint64_t(seed)).build(*c.ctx, c.p.ins, c.p.outs, c.vars);
    c.p.sched = schedule::schedule(c.p.ins, c.p.outs, "r" + std::to_string(seed));
    c.c = compile(c.p.sched);
    for (const auto& k : c.c.kernels) src += k.source;
    cases.push_back(std::move(c));
  }
  oclrun::Device* dev = oclrun::test_device();
  if (!dev) return;
  oclrun::Program prog(*dev, src);  // one build for all programs
  int mismatches = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    const Case& c = cases[size_t(seed)];
    std::string diff = compare(c.p, c.c, prog, c.vars, uint64_t(seed) * 7919 + 1);
    if (!diff.empty() && ++mismatches <= 3) ADD_FAILURE() << "program " << seed << ": " << diff << "\n" << c.c.source;
  }
  EXPECT_EQ(mismatches, 0);
}

// ---------------------------------------------------------------- gpu dims

// Every output loop becomes a work-item id, innermost first, and the launch is the loops' extent:
// a 3-D permuted sum has three ids, and no Global loop is left after "gpu dims"
TEST(OpenclGpuDims, OutputLoopsBecomeIdsInnermostFirst) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {3, 4, 5, 6});
  // (5, 4, 3) from x[c][b][a][k]: no two output loops are contiguous in x, so none merge
  std::vector<Tensor> ins{x}, outs{x.permute({2, 1, 0, 3}).sum({3})};
  schedule::Schedule s = schedule::schedule(ins, outs, "p");
  const UOp* after = nullptr;
  codegen::PipelineOptions o;
  o.target = &opencl();
  o.tuned = codegen::TunedOpts{};  // the output loops on the grid and no opts (the heuristic would add work groups)
  o.after_stage = [&](std::string_view n, const UOp* sink) {
    if (n == "gpu dims") after = sink;
  };
  codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(count_op(after, Op::SPECIAL), 3u) << print_graph(after);
  for (const UOp* u : toposort(after))
    if (u->op == Op::RANGE) {
      EXPECT_EQ(u->arg<RangeArg>().type, AxisType::Reduce) << print_graph(after);
    }
  // the output is (5, 4, 3): dim 0 runs over the last axis
  ASSERT_TRUE(k.global_size[0] && k.global_size[1] && k.global_size[2]);
  EXPECT_EQ(k.global_size[0]->ival(), 3);
  EXPECT_EQ(k.global_size[1]->ival(), 4);
  EXPECT_EQ(k.global_size[2]->ival(), 5);
  EXPECT_NE(k.source.find("get_global_id(2)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("__kernel void p_0(__global float* restrict data0, __global const float* restrict data1)"),
            std::string::npos)
      << k.source;
}

// A softmax's columns stay a loop: its row max and sum depend on the row only, so with one work
// item per element each would run them all again (256x1024 took 860 ms on PoCL, 1 ms with one work
// item per row); a transposed copy's loops both become ids. The output loops on the grid as
// mark_global_axes leaves them, without the heuristics' opts (which share softmax's columns among a
// work group per row: SoftmaxAndLayernormTakeAWorkGroupPerRow)
TEST(OpenclGpuDims, LoopsNoReductionDependsOnStayLoops) {
  Context ctx;
  const UOp* r = ctx.var("R", 1, 4096);
  const UOp* d = ctx.var("D", 1, 4096);
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {r, d});
  auto ids_of = [&](const Tensor& out) {
    std::vector<Tensor> ins{x}, outs{out};
    schedule::Schedule s = schedule::schedule(ins, outs, "p");
    std::vector<size_t> ids;
    for (const auto& kernel : s.kernels) {
      const UOp* after = nullptr;
      codegen::PipelineOptions o;
      o.target = &opencl();
      o.tuned = codegen::TunedOpts{};
      o.after_stage = [&](std::string_view n, const UOp* sink) {
        if (n == "gpu dims") after = sink;
      };
      codegen::compile_to_c(kernel.ast, s.vars, o);
      ids.push_back(after ? count_op(after, Op::SPECIAL) : 0);
    }
    return ids;
  };
  EXPECT_EQ(ids_of(x.softmax(-1)), (std::vector<size_t>{1}));
  EXPECT_EQ(ids_of(x.permute({1, 0}).relu()), (std::vector<size_t>{2}));  // transposed: loops do not merge
  EXPECT_EQ(ids_of(x.sum({1})), (std::vector<size_t>{1}));
}

// Launches fitted to a small grid: four loops on three dims merge the two innermost that fit; a
// loop too long for its dim gives its smallest factors to the next dim (48 = 12 x 4, as tinygrad's
// _split_dims); a prime too long for its dim stays a loop, and each agrees with the oracle
TEST_F(OpenclTest, LaunchesAreFittedToTheGridLimits) {
  target::Target small = opencl();
  small.global_max = {16, 4, 4};
  target = &small;
  auto ids = [&](const std::vector<Tensor>& outs) {
    schedule::Schedule s = schedule::schedule(ins, outs, "probe");
    codegen::PipelineOptions o;
    o.target = &small;
    std::vector<int64_t> g;
    for (const UOp* d : codegen::compile_to_c(s.kernels[0].ast, s.vars, o).global_size) g.push_back(d ? d->ival() : 0);
    return g;
  };
  Tensor x = input("x", {2, 3, 2, 4});
  // a permutation keeps the four loops apart: (3, 2, 4, 2) -> ids (2*4=8, 2, 3)
  std::vector<Tensor> four{x.permute({1, 0, 3, 2}).exp()};
  EXPECT_EQ(ids(four), (std::vector<int64_t>{8, 2, 3}));
  expect_matches(four);
  ins.clear();
  Tensor y = input("y", {48});
  EXPECT_EQ(ids({y * 2}), (std::vector<int64_t>{12, 4, 0}));
  expect_matches({y * 2});
  ins.clear();
  Tensor z = input("z", {5, 17});
  // out (17, 5): 5 fits dim 0; 17 fits neither dim 1 nor, merged (85), dim 0, and is prime: a loop
  EXPECT_EQ(ids({z.transpose() + 1}), (std::vector<int64_t>{5, 0, 0}));
  expect_matches({z.transpose() + 1});
}

// Symbolic loops that do not fit in order take one dim each in another order rather than merge
// (merged, each would be a quotient and remainder by a symbolic end, which the prover does not
// bound): out [G, M] with G up to 10 and M up to 4 on dims of 16, 4, 4 puts G on dim 0, M on dim 1
TEST_F(OpenclTest, SymbolicLoopsThatDoNotFitInOrderArePermutedNotMerged) {
  target::Target small = opencl();
  small.global_max = {16, 4, 4};
  target = &small;
  const UOp* g = ctx.var("G", 1, 10);
  const UOp* m = ctx.var("M", 1, 4);
  Tensor x = input("x", {g, m});
  std::vector<Tensor> outs{x.exp() + 1};
  schedule::Schedule s = schedule::schedule(ins, outs, "perm");
  codegen::PipelineOptions o;
  o.target = &small;
  codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
  ASSERT_TRUE(k.global_size[0] && k.global_size[1]);
  EXPECT_EQ(codegen::index_text(k.global_size[0]), "G") << k.source;
  EXPECT_EQ(codegen::index_text(k.global_size[1]), "M") << k.source;
  EXPECT_EQ(k.source.find("/ var_"), std::string::npos) << k.source;  // no id divided by a dim
  expect_matches(outs, {{{"G", 1}, {"M", 1}}, {{"G", 10}, {"M", 4}}, {{"G", 7}, {"M", 3}}});
}

// Symbolic extents: the ids run over the dims' values, the launch is an expression of the dims
TEST_F(OpenclTest, SymbolicLaunchSizes) {
  const UOp* m = ctx.var("M", 1, 100);
  const UOp* n = ctx.var("N", 1, 70000);
  Tensor x = input("x", {m, n}), b = input("b", {n});
  expect_matches({(x + b).relu(), x.sum({1})},
                 {{{"M", 1}, {"N", 1}}, {{"M", 7}, {"N", 300}}, {{"M", 2}, {"N", 70000}}});
}

// The GPU path leaves the CPU's alone: the same kernel on the cpu target has no work-item ids
TEST(OpenclGpuDims, CpuTargetsGetNoIds) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {64, 64});
  std::vector<Tensor> ins{x}, outs{x.exp()};
  schedule::Schedule s = schedule::schedule(ins, outs, "c");
  codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars);
  EXPECT_EQ(k.global_size[0], nullptr);
  EXPECT_EQ(k.source.find("get_global_id"), std::string::npos);
  for (const UOp* u : k.linear) EXPECT_NE(u->op, Op::SPECIAL);
}

// ---------------------------------------------------------------- work groups and local memory

// A long reduction of few outputs is shared by a work group (GROUP): a local buffer after "remove
// reduces" ("local buffers" checks it), the group's ids after "gpu dims" (gidx for the groups,
// lidx for the items), a barrier between the local stores and the reads after "implicit
// barriers" (and before each of the 8 steps that halve the partials), and a launch of 16 groups of
// 256; one work item stores each result
TEST(OpenclGroup, ALongReductionOfFewOutputsIsSharedByAWorkGroup) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {16, 4096}), x = Tensor::input(ctx, "x", dtypes::float32, {4096});
  std::vector<Tensor> ins{a, x}, outs{a.matmul(x)};
  schedule::Schedule s = schedule::schedule(ins, outs, "mv");
  ASSERT_EQ(s.kernels.size(), 1u);
  const Observed ob = observe(s);
  const auto& [applied, after, k] = ob;
  EXPECT_EQ(applied, (std::vector<std::string>{"GROUP(1, 256)"}));
  size_t local_buffers = 0;
  for (const UOp* u : toposort(after.at("local buffers")))
    local_buffers += u->op == Op::BUFFER && u->dtype.addrspace == AddrSpace::Local;
  EXPECT_EQ(local_buffers, 1u) << print_graph(after.at("local buffers"));
  std::vector<std::string> ids;
  for (const UOp* u : toposort(after.at("gpu dims")))
    if (u->op == Op::SPECIAL) ids.push_back(std::string(u->arg<Name>().s));
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"gidx0", "lidx0"}));
  EXPECT_EQ(count_op(after.at("remove reduces"), Op::BARRIER), 0u);
  EXPECT_EQ(count_op(after.at("implicit barriers"), Op::BARRIER), 9u);  // the partials', 8 halving steps'
  ASSERT_TRUE(k.global_size[0] && k.local_size[0]);
  EXPECT_EQ(k.global_size[0]->ival(), 16);
  EXPECT_EQ(k.local_size[0]->ival(), 256);
  EXPECT_EQ(k.local_size[1], nullptr);
  for (const char* text : {"__local float temp0[256];", "barrier(CLK_LOCAL_MEM_FENCE);", "get_local_id(0)",
                           "get_group_id(0)", "= temp0[0];", "if (alu0) data0[gidx0] = " /* gated to item 0 */})
    EXPECT_NE(k.source.find(text), std::string::npos) << text << "\n" << k.source;
  // the store is the only global one, and the barrier comes before the partials are read back
  EXPECT_LT(k.source.find("barrier("), k.source.find("= temp0["));
}

// What is not grouped: many outputs (each work item has its own reduction to do), a short
// reduction, and a CPU target
TEST(OpenclGroup, ManyOutputsShortReductionsAndTheCpuAreNotGrouped) {
  Context ctx;
  const UOp* n = ctx.var("N", 1, 4096);
  Tensor big = Tensor::input(ctx, "big", dtypes::float32, {4096, n});
  Tensor shorter = Tensor::input(ctx, "shorter", dtypes::float32, {16, 100});
  Tensor rows = Tensor::input(ctx, "rows", dtypes::float32, {4, 4096});
  auto opts_of = [&](const Tensor& in, const Tensor& out, const target::Target& t) {
    const std::vector<Tensor> ins{in}, outs{out};
    schedule::Schedule s = schedule::schedule(ins, outs, "g");
    std::vector<std::string> applied;
    codegen::PipelineOptions o;
    o.target = &t;
    o.applied_opts = &applied;
    std::string all;
    for (const auto& k : s.kernels) {
      codegen::compile_to_c(k.ast, s.vars, o);
      for (const std::string& a : applied) all += a + " ";
      applied.clear();
    }
    return all;
  };
  EXPECT_EQ(opts_of(big, big.sum({1}), opencl()), "");
  EXPECT_EQ(opts_of(shorter, shorter.sum({1}), opencl()), "");
  // softmax's two reductions each GROUPed, its columns shared (SoftmaxAndLayernormTakeAWorkGroupPerRow)
  EXPECT_EQ(opts_of(rows, rows.softmax(-1), opencl()), "GROUP(2, 64) GROUP(3, 64) LOCAL(1, 64) ");
  EXPECT_EQ(opts_of(rows, rows.sum({1}), opencl()), "GROUP(1, 256) ");
  EXPECT_EQ(opts_of(rows, rows.sum({1}), *target::find("cpu")).find("GROUP"), std::string::npos);
}

// Softmax and layernorm: a work group per row. Each reduction (max and sum, mean and variance) is
// GROUPed by one group of 64 items (about the square root of the rows' 4096) and the stored columns
// are shared among them (LOCAL): after "gpu dims" every item id is lidx0, the local buffers (one
// per reduction) each have a barrier before each halving step, and the store is every item's, at
// its own columns (no gate to item 0)
TEST(OpenclGroup, SoftmaxAndLayernormTakeAWorkGroupPerRow) {
  Context ctx;
  const UOp* d = ctx.var("D", 1, 4096);
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {64, d});
  for (const Tensor& out : {x.softmax(-1), x.layernorm(-1)}) {
    std::vector<Tensor> ins{x}, outs{out};
    schedule::Schedule s = schedule::schedule(ins, outs, "rows");
    ASSERT_EQ(s.kernels.size(), 1u);
    const Observed ob = observe(s);
    const auto& [applied, after, k] = ob;
    std::string all;
    for (const std::string& a : applied) all += a + " ";
    ASSERT_EQ(applied.size(), 4u) << all;  // two GROUPs, PADTO and LOCAL of the columns
    EXPECT_EQ(applied[0].rfind("GROUP(", 0), 0u) << all;
    EXPECT_EQ(applied[1].rfind("GROUP(", 0), 0u) << all;
    EXPECT_EQ(applied[2].rfind("PADTO(", 0), 0u) << all;
    EXPECT_EQ(applied[3].rfind("LOCAL(", 0), 0u) << all;
    for (const std::string& a : applied) EXPECT_NE(a.find(", 64)"), std::string::npos) << all;
    size_t local_buffers = 0;
    for (const UOp* u : toposort(after.at("local buffers")))
      local_buffers += u->op == Op::BUFFER && u->dtype.addrspace == AddrSpace::Local;
    EXPECT_EQ(local_buffers, 2u);
    std::set<std::string> ids;
    for (const UOp* u : toposort(after.at("gpu dims")))
      if (u->op == Op::SPECIAL) ids.insert(std::string(u->arg<Name>().s));
    EXPECT_EQ(ids, (std::set<std::string>{"gidx0", "lidx0"}));
    EXPECT_EQ(count_op(after.at("implicit barriers"), Op::BARRIER), 2u * 7u);  // each: the partials, 6 halvings
    ASSERT_TRUE(k.global_size[0] && k.local_size[0]);
    EXPECT_EQ(k.global_size[0]->ival(), 64);
    EXPECT_EQ(k.local_size[0]->ival(), 64);
    EXPECT_EQ(k.source.find("if ((lidx0 < 1)) data0"), std::string::npos) << k.source;  // every item stores
  }
}

// Against the oracle: softmax, log-softmax and layernorm over rows of lengths about the group's
// multiples (1 and 2 leave most items idle, 255..257 pad), softmax over the columns (the reductions
// read a column, the items rows apart), with edge values: a NaN, +inf, a row of -inf (its softmax
// is NaN), halves; and a database's GROUP and LOCAL of 48 items (the columns padded to 48's
// multiples)
TEST_F(OpenclTest, RowsSharedByAWorkGroup) {
  const UOp* d = ctx.var("D", 1, 3000);
  Tensor x = input("x", {4, d});
  const std::vector<std::map<std::string, int64_t>> lengths = {{{"D", 1}},   {{"D", 2}},   {{"D", 255}},
                                                               {{"D", 256}}, {{"D", 257}}, {{"D", 3000}}};
  expect_matches({x.softmax(-1)}, lengths);
  expect_matches({x.log_softmax(-1)}, lengths);
  expect_matches({x.layernorm(-1)}, lengths);
  Tensor cols = input("cols", {d, 5});
  expect_matches({cols.softmax(0)}, lengths);
  edit = [](std::vector<std::vector<double>>& in) {
    std::vector<double>& v = in[0];
    const size_t len = v.size() / 4;
    v[len - 1] = NAN;
    v[len] = INFINITY;
    for (size_t j = 0; j < len; ++j) v[2 * len + j] = -INFINITY, v[3 * len + j] = 0.5;
  };
  expect_matches({x.softmax(-1)}, lengths);
  expect_matches({x.layernorm(-1)}, lengths);
  edit = nullptr;
  // the heuristic's opts for out's kernel
  auto heuristic = [&](const Tensor& out) {
    const std::vector<Tensor> outs{out};
    std::vector<codegen::Opt> opts;
    for (const std::string& a : observe(schedule::schedule(ins, outs, "h")).applied) {
      std::optional<codegen::Opt> opt = codegen::parse_opt(a);
      EXPECT_TRUE(opt) << a;
      if (opt) opts.push_back(*opt);
    }
    return opts;
  };
  std::vector<codegen::Opt> with48 = heuristic(x.softmax(-1));
  ASSERT_EQ(with48.size(), 4u);
  for (codegen::Opt& o : with48) o.amount = 48;
  tuned = codegen::TunedOpts{with48, 0};
  expect_matches({x.softmax(-1)}, lengths);
  tuned.reset();
  // a nest of two loops after a reduction of all of y (transposed: the loops do not merge): only
  // the inner one is shared (two on lidx0 would store only where they are equal), and a
  // database's LOCAL of the outer one as well is refused
  Tensor y = input("y", {6, d});
  const Tensor centred = y.permute({1, 0}) - y.max();
  expect_matches({centred}, lengths);
  std::vector<codegen::Opt> opts = heuristic(centred);
  ASSERT_FALSE(opts.empty());
  ASSERT_EQ(opts.back().kind, codegen::Opt::Kind::Local);
  opts.push_back({codegen::Opt::Kind::Local, 1 - opts.back().axis, opts.back().amount});
  EXPECT_NE(refusal(centred, {opts, 0}).find("is shared among the group's items already"), std::string::npos);
}

// Grouped reductions propagate NaN and infinities and pad with each reduction's identity: a NaN in
// the last element (the last group's lanes past it are padding), +inf, a row of -inf (max's
// padding must not win) and a row of halves, at lengths about the group's multiples
TEST_F(OpenclTest, GroupedReductionsOfEdgeValues) {
  const UOp* n = ctx.var("N", 1, 3000);
  Tensor x = input("x", {4, n});
  edit = [](std::vector<std::vector<double>>& in) {
    std::vector<double>& v = in[0];
    const size_t len = v.size() / 4;
    v[len - 1] = NAN;
    v[len] = INFINITY;
    for (size_t j = 0; j < len; ++j) v[2 * len + j] = -INFINITY, v[3 * len + j] = 0.5;
  };
  const std::vector<std::map<std::string, int64_t>> lengths = {{{"N", 1}},   {{"N", 2}},   {{"N", 767}},
                                                               {{"N", 768}}, {{"N", 769}}, {{"N", 3000}}};
  expect_matches({x.sum({1})}, lengths);
  expect_matches({x.max({1})}, lengths);
  expect_matches({x.min({1})}, lengths);
}

// A database's GROUP and GROUPTOP on a GPU target: a group of 48 (not a power of two: the
// reduction padded to 48's multiples), GROUPTOP's contiguous runs, each against the oracle; a
// group larger than the target's work group, GROUP of an output axis, two GROUPs of different
// sizes in one kernel (softmax's), and a CPU target's reduction block are refused with the reason
TEST_F(OpenclTest, TunedGroupAndGroupTop) {
  const UOp* n = ctx.var("N", 1, 2000);
  Tensor x = input("x", {3, n});
  const std::vector<std::map<std::string, int64_t>> lengths = {{{"N", 1}}, {{"N", 47}}, {{"N", 97}}, {{"N", 2000}}};
  for (codegen::Opt o : {codegen::Opt{codegen::Opt::Kind::Group, 1, 48},
                         {codegen::Opt::Kind::GroupTop, 1, 16},
                         {codegen::Opt::Kind::GroupTop, 1, 48}}) {
    tuned = codegen::TunedOpts{{o}, 0};
    SCOPED_TRACE(o.str());
    expect_matches({x.sum({1})}, lengths);
    expect_matches({x.max({1})}, lengths);
  }
  using K = codegen::Opt::Kind;
  EXPECT_NE(refusal(x.sum({1}), {{{K::Group, 1, 4096}}, 0}).find("does not fit opencl's"), std::string::npos);
  EXPECT_NE(refusal(x.sum({1}), {{{K::Group, 0, 2}}, 0}).find("GROUP splits reductions"), std::string::npos);
  // softmax: its reductions are axes 2 and 3, its stored columns axis 1
  EXPECT_NE(refusal(x.softmax(-1), {{{K::Group, 2, 16}, {K::Group, 3, 32}}, 0}).find("has 16 items already"),
            std::string::npos);
  EXPECT_NE(refusal(x.softmax(-1), {{{K::Group, 1, 16}}, 0}).find("GROUP splits reductions"), std::string::npos);
  EXPECT_NE(refusal(x.softmax(-1), {{{K::Group, 2, 16}, {K::Group, 2, 16}}, 0}).find("grouped already"),
            std::string::npos);
  EXPECT_NE(refusal(x.sum({1}), {{}, 64}).find("a reduction block is for CPU targets"), std::string::npos);
}

// A matmul whose M and N are declared multiples of 64: the heuristic gives each work item a 4 x 4
// tile (LANES of N, then UPCAST of M: each load of a and b serves 4 outputs) and groups 16 x 16
// items (LOCAL), the columns' items dim 0; the launch is the groups' count of 16 x 16 items. The
// columns are OpenCL's float4: b is read and c written 4 floats at a time (vload4, vstore4), and
// the tile's products are float4 arithmetic. Where M and N are not multiples (the generic variant)
// they are padded first, and the columns' tile is UPCAST (its stores are gated one by one).
TEST(OpenclLocal, ABucketsMatmulGetsRegisterTilesAndWorkGroups) {
  Context ctx;
  const UOp* m = ctx.var("M", 64, 2048, dtypes::weakint, 64);
  const UOp* n = ctx.var("N", 64, 2048, dtypes::weakint, 64);
  const UOp* k = ctx.var("K", 1, 2048);
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {m, k}), b = Tensor::input(ctx, "b", dtypes::float32, {k, n});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "mm");
  ASSERT_EQ(s.kernels.size(), 1u);
  const UOp* after = nullptr;
  std::vector<std::string> applied;
  codegen::PipelineOptions o;
  o.target = &opencl();
  o.applied_opts = &applied;
  o.after_stage = [&](std::string_view st, const UOp* sink) {
    if (st == "gpu dims") after = sink;
  };
  codegen::CKernel kern = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
  EXPECT_EQ(applied, (std::vector<std::string>{"LANES(1, 4)", "UPCAST(0, 4)", "LOCAL(0, 16)", "LOCAL(1, 16)"}));
  ASSERT_NE(after, nullptr);
  std::vector<std::string> ids;
  for (const UOp* u : toposort(after))
    if (u->op == Op::SPECIAL) ids.push_back(std::string(u->arg<Name>().s));
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"gidx0", "gidx1", "lidx0", "lidx1"})) << print_graph(after);
  ASSERT_TRUE(kern.local_size[0] && kern.local_size[1]);
  EXPECT_EQ(kern.local_size[0]->ival(), 16);
  EXPECT_EQ(kern.local_size[1]->ival(), 16);
  EXPECT_EQ(kern.local_size[2], nullptr);
  for (const char* text :
       {"get_local_id(0)", "get_local_id(1)", "get_group_id(0)", "get_group_id(1)", "float4 acc",
        "= kiln_load_vf32x4(&data2[", "kiln_store_vf32x4(&data0[", "#define kiln_load_vf32x4(p) vload4(0, p)"})
    EXPECT_NE(kern.source.find(text), std::string::npos) << text << "\n" << kern.source;
  EXPECT_EQ(kern.source.find("kiln_load_vf32x4(&data1["), std::string::npos) << kern.source;  // a's: broadcast
  // one vector of columns is no loop; b's row is loaded once for the tile's 4 rows
  EXPECT_EQ(kern.source.find("< 1;"), std::string::npos) << kern.source;
  size_t loads = 0;
  for (size_t at = kern.source.find("kiln_load_vf32x4(&data2["); at != std::string::npos;
       at = kern.source.find("kiln_load_vf32x4(&data2[", at + 1))
    ++loads;
  EXPECT_EQ(loads, 1u) << kern.source;

  // M and N of any length up to 2048 (the generic variant): padded to multiples of 64 first, the
  // items past the ends gated off; dims that are never 256 long are left alone
  Tensor a2 = Tensor::input(ctx, "a2", dtypes::float32, {ctx.var("M2", 1, 2048), k});
  Tensor b2 = Tensor::input(ctx, "b2", dtypes::float32, {k, ctx.var("N2", 1, 2048)});
  Tensor b3 = Tensor::input(ctx, "b3", dtypes::float32, {k, ctx.var("N3", 1, 255)});
  std::vector<Tensor> ins2{a2, b2, b3}, outs2{a2.matmul(b2), a2.matmul(b3)};
  schedule::Schedule s2 = schedule::schedule(ins2, outs2, "mm2");
  ASSERT_EQ(s2.kernels.size(), 2u);
  o.after_stage = nullptr;
  applied.clear();
  codegen::CKernel generic = codegen::compile_to_c(s2.kernels[0].ast, s2.vars, o);
  EXPECT_EQ(applied, (std::vector<std::string>{"PADTO(1, 64)", "PADTO(0, 64)", "UPCAST(1, 4)", "UPCAST(0, 4)",
                                               "LOCAL(0, 16)", "LOCAL(1, 16)"}));
  EXPECT_NE(generic.source.find(" < var_N2;"), std::string::npos) << generic.source;  // the gates
  applied.clear();
  codegen::compile_to_c(s2.kernels[1].ast, s2.vars, o);
  for (const std::string& opt : applied) EXPECT_EQ(opt.find("(1, "), std::string::npos) << opt;  // N3 untouched
}

// A database's LANES on OpenCL: the lane loop becomes OpenCL C's own vectors (float4, int4 and
// their masks), every op the vectorizer takes rendered in the OpenCL dialect: loads and stores
// (vload4, vstore4), splats, comparisons and selects, NaN-propagating max, exp's polynomial (bit
// casts between float4 and int4, integer shifts), casts to and from int, integer math that wraps.
// Against the oracle on NaN, infinities, -0 and halves. (CUDA's vectors: test_codegen_cuda.cpp.)
TEST_F(OpenclTest, LanesAreOpenclVectors) {
  // z: finite (a NaN's or an infinity's int is undefined, in the oracle as in C)
  Tensor x = input("x", {6, 32}), y = input("y", {6, 32}), i = input("i", {6, 32}, dtypes::int32),
         z = input("z", {6, 32});
  edit = [](std::vector<std::vector<double>>& in) {
    in[0][0] = NAN, in[0][1] = INFINITY, in[0][2] = -INFINITY, in[0][3] = -0.0, in[0][4] = 0.5, in[0][5] = -2.5;
    in[1][0] = 1.0, in[1][1] = NAN, in[1][4] = 0.5, in[1][5] = -2.5;
    in[2][0] = 2147483647, in[2][1] = -2147483647 - 1;
  };
  using K = codegen::Opt::Kind;
  tuned = codegen::TunedOpts{{{K::Lane, 0, 8}}, 0};  // the loops merged: one of 6 * 32
  const std::vector<Tensor> outs{x.maximum(y), x.gt(y).where(x, y.exp()) + z.cast(dtypes::int32).cast(dtypes::float32),
                                 (i * 3 + i).cast(dtypes::float32) + x.relu(), x.exp2() * y.neg()};
  expect_matches(outs);
  schedule::Schedule s = schedule::schedule(ins, outs, "v");
  Compiled c = compile(s, opencl(), tuned);
  for (const char* text : {"float4 ", "int4 ", "vload4(0, p)", "vstore4(v, 0, p)", "kiln_max_vf32x4(", "select(",
                           "convert_int4(", "convert_float4(", "as_int4(", "as_float4("})
    EXPECT_NE(c.source.find(text), std::string::npos) << text << "\n" << c.source;
  for (const char* text : {"__attribute__((vector_size", "__builtin_convertvector", "){"})
    EXPECT_EQ(c.source.find(text), std::string::npos) << text << "\n" << c.source;
}

// An elementwise kernel whose innermost loop is a long whole multiple of 4 (a bucket's): each work
// item takes 4 neighbouring elements (LANES), one float4 load per input and store per output, no
// loop; as tinygrad's GPU heuristic upcasts such a loop by 4 for its float4s. A dim of any length,
// or a short one, keeps one item per element. Against the oracle at the bucket's bounds.
TEST_F(OpenclTest, ElementwiseKernelsTakeFourNeighboursAnItem) {
  const UOp* e = ctx.var("E", 1024, 1 << 20, dtypes::weakint, 1024);
  Tensor a = input("a", {e}), b = input("b", {e}), c = input("c", {e});
  const Tensor y = (a * b + c).relu();
  std::vector<Tensor> outs{y};
  Observed ob = observe(schedule::schedule(ins, outs, "bias_relu"));
  EXPECT_EQ(ob.applied, (std::vector<std::string>{"LANES(0, 4)"}));
  for (const char* text : {"kiln_load_vf32x4(&data1[", "kiln_load_vf32x4(&data3[", "kiln_store_vf32x4(&data0["})
    EXPECT_NE(ob.k.source.find(text), std::string::npos) << text << "\n" << ob.k.source;
  EXPECT_EQ(ob.k.source.find("for ("), std::string::npos) << ob.k.source;
  ASSERT_TRUE(ob.k.global_size[0]);
  EXPECT_EQ(print(ob.k.global_size[0]), "(CDIV:int (VAR:int E 1024 1048576 mul=1024) (CONST:int 4))");  // E / 4 items
  expect_matches(outs, {{{"E", 1024}}, {{"E", 5120}}});
  Tensor f = input("f", {ctx.var("F", 1, 1 << 20)}), g = input("g", {256});
  std::vector<Tensor> any{f.exp()}, shorter{g * 2.0f};
  EXPECT_TRUE(observe(schedule::schedule(ins, any, "any")).applied.empty());
  EXPECT_TRUE(observe(schedule::schedule(ins, shorter, "short")).applied.empty());
}

// A database's LOCAL: work groups of an elementwise kernel's two loops against the oracle; a group
// past the target's items, LOCAL of a reduction, LOCAL of a grid loop beside GROUP, GROUP after
// LOCAL, LOCAL of softmax's columns not of the group's size, and LOCAL on a CPU target are refused
// with the reason
TEST_F(OpenclTest, TunedLocal) {
  // y transposed: the two loops stay two (contiguous ones would be merged into one)
  Tensor x = input("x", {32, 48}), y = input("y", {48, 32});
  const Tensor xy = x * y.permute({1, 0}) + x;
  using K = codegen::Opt::Kind;
  tuned = codegen::TunedOpts{{{K::Local, 1, 16}, {K::Local, 0, 4}}, 0};
  expect_matches({xy.relu()});
  tuned = codegen::TunedOpts{{{K::Local, 0, 8}}, 0};
  expect_matches({x.sum({1}), x * 2.0f});
  EXPECT_NE(refusal(xy, {{{K::Local, 1, 16}, {K::Local, 0, 32}}, 0}).find("do not fit opencl's"), std::string::npos);
  EXPECT_NE(refusal(x.sum({1}), {{{K::Local, 1, 4}}, 0}).find("LOCAL splits a loop on the grid"), std::string::npos);
  EXPECT_NE(refusal(x.sum({1}), {{{K::Group, 1, 16}, {K::Local, 0, 4}}, 0}).find("LOCAL shares an output loop"),
            std::string::npos);
  EXPECT_NE(refusal(x.sum({1}), {{{K::Local, 0, 4}, {K::Group, 1, 16}}, 0}).find("GROUP comes before LOCAL"),
            std::string::npos);
  // softmax: LOCAL of its columns (axis 1) takes the group's size
  EXPECT_NE(refusal(x.softmax(-1), {{{K::Group, 2, 16}, {K::Group, 3, 16}, {K::Local, 1, 8}}, 0})
                .find("the kernel's work group has 16 items"),
            std::string::npos);
  EXPECT_EQ(refusal(x.softmax(-1), {{{K::Group, 2, 16}, {K::Group, 3, 16}, {K::Local, 1, 16}}, 0}), "applied");
  EXPECT_NE(refusal(xy, {{{K::Local, 0, 4}}, 0}, *target::find("cpu")).find("LOCAL needs a GPU target"),
            std::string::npos);
}

// The codegen pipeline to C: scheduled kernels rendered as C, compiled with the system compiler
// (-Wall -Wextra -Werror: the generated code is warning-free), loaded and run natively on
// poisoned outputs, and compared with the float64 oracle. Canonical programs at several shapes
// and symbolic bounds, then random tensor programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/target/host.h"
#include "generator/target/target.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/cast_cases.h"
#include "tests/unit/kernel_kinds.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;

namespace {

const std::vector<std::string> kStrict = {"-Wall", "-Wextra", "-Werror"};

// The target's flags added to a compile of `src`. GCC 12 with AVX-512 turned a gated load into an
// unmasked vblendps from memory, a read past the buffer the guard pages caught (program 141 of
// CodegenRandomPrograms: a 4-float input read at [2, 6)); render::c_preamble() turns GCC's loop
// if-conversion off where AVX-512 is on, so every kernel file has the fix and that program checks it.
std::string with_target_flags(const target::Target& t, std::vector<std::string>& flags, std::string src) {
  flags.insert(flags.end(), t.c_flags.begin(), t.c_flags.end());
  return src;
}

std::string c_source(const schedule::Schedule& s, const target::Target* t = target::find("cpu")) {
  codegen::PipelineOptions o;
  o.target = t;
  std::string src;
  for (const auto& k : s.kernels) src += codegen::compile_to_c(k.ast, s.vars, o).source;
  return src;
}

struct Program {
  std::vector<Tensor> ins, outs;
  schedule::Schedule sched;
};

oracle::Bindings bind(const std::vector<Tensor>& ins, const std::map<std::string, int64_t>& vars, uint64_t seed,
                      std::vector<std::vector<double>>& inputs) {
  std::mt19937_64 rng(seed);
  oracle::Bindings b;
  b.vars = vars;
  inputs = random_inputs(ins, b, rng);
  return b;
}

// Runs the compiled schedule natively and compares with the oracle; "" or what differed.
std::string compare(const Program& p, const crun::Library& lib, const std::map<std::string, int64_t>& vars,
                    uint64_t seed) {
  std::vector<std::vector<double>> inputs;
  oracle::Bindings b = bind(p.ins, vars, seed, inputs);
  std::vector<interp::Output> got = crun::run_schedule(p.sched, lib, vars, inputs);
  for (size_t i = 0; i < p.outs.size(); ++i) {
    std::vector<double> want = oracle::evaluate(p.outs[i].uop(), b).doubles();
    std::string d = compare_output(i, got[i].values, want, tolerance(got[i].dtype));
    if (!d.empty()) return d;
  }
  return "";
}

struct CodegenTest : ::testing::Test, ProgramInputs {
  // compiles once, runs at every binding of the vars
  void expect_matches(const std::vector<Tensor>& outs,
                      const std::vector<std::map<std::string, int64_t>>& bindings = {{}}) {
    Program p{ins, outs, schedule::schedule(ins, outs, "k" + std::to_string(programs++))};
    std::string src = c_source(p.sched);
    crun::Library lib = crun::Library::compile(render::c_preamble() + src, kStrict);
    for (auto vars : bindings)
      for (int64_t cores : {1, 3}) {  // the kernels' calls per core, one after another
        vars[".cores"] = cores;
        EXPECT_EQ(compare(p, lib, vars, 99), "") << cores << " cores\n" << src;
      }
  }
};

}  // namespace

// ---------------------------------------------------------------- canonical programs

TEST_F(CodegenTest, ElementwiseAndBroadcast) { kinds::elementwise_and_broadcast(*this); }

TEST_F(CodegenTest, ReductionsOverEachAxis) { kinds::reductions_over_each_axis(*this); }
TEST_F(CodegenTest, LongReductionsOfFewOutputs) { kinds::long_reductions_of_few_outputs(*this); }

TEST_F(CodegenTest, SoftmaxLayernormAtSymbolicBounds) { kinds::softmax_layernorm_at_symbolic_bounds(*this); }

TEST_F(CodegenTest, MlpAtTheBoundsOfItsBatch) { kinds::mlp(*this); }

TEST_F(CodegenTest, MatmulShapes) { kinds::matmul_shapes(*this); }

TEST_F(CodegenTest, ConvolutionsPoolingAttention) { kinds::convolutions_pooling_attention(*this); }

TEST_F(CodegenTest, MovementOps) { kinds::movement_ops(*this); }

TEST_F(CodegenTest, IntegersBoolsHalfAndBfloat16) { kinds::integers_bools_half_and_bfloat16(*this); }

TEST_F(CodegenTest, Int32ArithmeticWrapsWithoutUndefinedBehaviour) {
  Tensor a = input("a", {6}, dtypes::int32);
  Tensor big = a * 1000000000 * 7 + 2147483647;  // overflows int32 for every input
  expect_matches({big, -big, big.sum()});
}

// ---------------------------------------------------------------- the C itself

TEST_F(CodegenTest, FusedSoftmaxHoistsRowStatisticsOutOfTheRowLoop) {
  Tensor x = input("x", {8, 16});
  std::vector<Tensor> outs{x.softmax(-1)};
  schedule::Schedule s = schedule::schedule(ins, outs, "softmax");
  ASSERT_EQ(s.kernels.size(), 1u);
  codegen::PipelineOptions plain;
  plain.optimize = false;  // the loops as scheduled (opts would unroll the output loop)
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars, plain).source;
  // the max loop and the sum loop close before the output loop opens, inside the row loop
  size_t row = c.find("for (int32_t ridx0"), out = c.find("for (int32_t ridx1");
  size_t max_loop = c.find("for (int32_t ridx2"), sum_loop = c.find("for (int32_t ridx3");
  ASSERT_NE(out, std::string::npos) << c;
  EXPECT_LT(row, max_loop) << c;
  EXPECT_LT(max_loop, sum_loop) << c;
  EXPECT_LT(sum_loop, out) << c;
}

TEST_F(CodegenTest, AnUnrolledIntegerMaxIsWrittenOutOnce) {
  // C spells an integer max a > b ? a : b: an operand inlined there was written out twice, and the
  // chain of maxima of an unrolled reduction grew as 2^n (3 MB of C for UNROLL 16)
  Tensor x = input("x", {16}, dtypes::int32);
  std::vector<Tensor> outs{x.max({0}, true) * 3};
  Program p{ins, outs, schedule::schedule(ins, outs, "imax")};
  ASSERT_EQ(p.sched.kernels.size(), 1u);
  codegen::PipelineOptions po;
  po.tuned = codegen::TunedOpts{{{codegen::Opt::Kind::Unroll, 0, 16}}, 0};
  std::string c = codegen::compile_to_c(p.sched.kernels[0].ast, p.sched.vars, po).source;
  EXPECT_LT(c.size(), 4000u) << c;
  crun::Library lib = crun::Library::compile(render::c_preamble() + c, kStrict);
  EXPECT_EQ(compare(p, lib, {{".cores", 1}}, 3), "") << c;
}

TEST(CodegenOpts, MatmulIsRegisterTiled) {
  Context ctx;
  // the cpu target's tile (16-byte vectors, 16 registers): 6 rows of 8 lanes, 2 vectors each; 48
  // rows and 16 columns are whole tiles, so no cleanup nest
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {48, 32}), b = Tensor::input(ctx, "b", dtypes::float32, {32, 16});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  const UOp* sink = s.kernels[0].ast;
  std::vector<codegen::Opt> opts = codegen::hand_coded_optimizations(sink);
  ASSERT_EQ(opts.size(), 3u);
  EXPECT_EQ(opts[0].str(), "LANES(1, 8)");
  EXPECT_EQ(opts[1].str(), "UPCAST(0, 6)");
  EXPECT_EQ(opts[2].str(), "THREAD(0)");  // the 48 / 6 row tiles, shared among the cores
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
  // 6 rows of 8 lane accumulators (as vectors), one loop over K, the lane loops inside it
  EXPECT_NE(c.find("kiln_vf32x4 acc5[2];"), std::string::npos) << c;  // 8 lanes: 2 vectors of the cpu target
  EXPECT_EQ(c.find("kiln_vf32x4 acc6["), std::string::npos) << c;
  size_t k_loops = 0;
  for (size_t p = c.find("ridx2 < 32"); p != std::string::npos; p = c.find("ridx2 < 32", p + 1)) ++k_loops;
  EXPECT_EQ(k_loops, 1u) << c;
  size_t k = c.find("ridx2 < 32"), lane = c.find("acc0[alu10 / 4] = (val");
  EXPECT_LT(k, lane) << c;
  // each row's sums are stored as vectors: the rows are 16 elements apart, 2 vectors of 4
  size_t vector_stores = 0;
  for (size_t p = c.find("kiln_store_vf32x4(&data0["); p != std::string::npos;
       p = c.find("kiln_store_vf32x4(&data0[", p + 1))
    ++vector_stores;
  EXPECT_EQ(vector_stores, 6u) << c;
}

TEST(CodegenOpts, LongReductionsAreTiled) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {16, 1024}),
         b = Tensor::input(ctx, "b", dtypes::float32, {1024, 64});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  const UOp* tiled = codegen::tile_reduction(s.kernels[0].ast, 256);
  ASSERT_NE(tiled, nullptr);
  ASSERT_EQ(tiled->nsrc(), 2u);  // zero the output, then add each block's partial sums
  EXPECT_EQ(codegen::tile_reduction(s.kernels[0].ast, 1024), nullptr);  // one block only
  EXPECT_EQ(codegen::tile_reduction(s.kernels[0].ast, 300), nullptr);   // does not divide
  std::vector<Tensor> relu_outs{a.matmul(b).relu()};
  schedule::Schedule r = schedule::schedule(ins, relu_outs, "r");
  EXPECT_EQ(codegen::tile_reduction(r.kernels[0].ast, 256), nullptr);  // an epilogue needs the whole sum
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
  // the output zeroed (as vectors: its rows are stored apart), then the blocks
  size_t zero = c.find("kiln_store_vf32x4(&data0["), blocks = c.find("< 4; ridx");
  std::string zeroed = "kiln_store_vf32x4(&data0[alu7], kiln_splat_vf32x4(0.0f));";
  ASSERT_NE(zero, std::string::npos) << c;
  EXPECT_EQ(c.substr(zero, zeroed.size()), zeroed) << c;
  EXPECT_LT(zero, blocks) << c;
}

// found by the tune_opts fuzz target: a tune database's block=6148914691236517229 made 2 * block, a
// signed overflow, in the check of a symbolic length
TEST(CodegenOpts, ABlockPastHalfOfInt64TilesNothing) {
  Context ctx;
  const UOp* k = ctx.var("K", 1, 700);
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {16, k}), b = Tensor::input(ctx, "b", dtypes::float32, {k, 64});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  EXPECT_EQ(codegen::tile_reduction(s.kernels[0].ast, 6148914691236517229), nullptr);
  EXPECT_EQ(codegen::tile_reduction(s.kernels[0].ast, std::numeric_limits<int64_t>::max()), nullptr);
  EXPECT_EQ(codegen::tile_reduction(s.kernels[0].ast, 351), nullptr);  // 700 steps are not two blocks of 351
  EXPECT_NE(codegen::tile_reduction(s.kernels[0].ast, 350), nullptr);  // they are two of 350
}

// A matmul of symbolic M, N, K through the heuristics of each x86 target's C: the tile over the
// largest multiples of its rows and columns, cleanup nests for the rest, K in blocks of 64 and
// its last K % 64 steps on their own. Exact against the oracle on poisoned outputs at shapes
// across the ranges: the bounds, one past a tile or a block, one short of it, and 1, at 1 and 3
// cores.
TEST(CodegenOpts, CleanupTilesAndBlocksOfASymbolicMatmulAreExact) {
  Context ctx;
  auto [product, s] = kinds::symbolic_matmul(ctx);
  for (const char* name : {"cpu", "x86_64-avx2", "x86_64-avx512"}) {
    const target::Target& t = *target::find(name);
    codegen::PipelineOptions po;
    po.target = &t;
    std::vector<std::string> chosen;
    po.applied_opts = &chosen;
    std::string src = codegen::compile_to_c(s.kernels[0].ast, s.vars, po).source;
    // the tile, then the cleanup nests' own opts
    ASSERT_GE(chosen.size(), 4u) << name;
    EXPECT_EQ(chosen[0].rfind("LANES(1, ", 0), 0u) << name << ": " << chosen[0];
    // rows of the target's tile: 8 on AVX-512, 6 on 16 registers (6 x 16 floats on AVX2, 6 x 8 on cpu)
    EXPECT_EQ(chosen[1], t.vector_registers >= 32 ? "UPCAST(0, 8)" : "UPCAST(0, 6)") << name;
    EXPECT_NE(src.find("< 64;"), std::string::npos) << name << ": no block of K\n" << src;
    std::vector<std::string> flags = kStrict;
    std::string c = render::c_preamble() + src;
    if (target::runs_here(t)) c = with_target_flags(t, flags, c);
    crun::Library lib = crun::Library::compile(c, flags);
    std::mt19937_64 rng(11);
    for (auto [mm, nn, kk] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                                {5, 15, 63},
                                                                                {6, 16, 64},
                                                                                {7, 31, 255},
                                                                                {8, 32, 256},
                                                                                {9, 33, 257},
                                                                                {13, 17, 65},
                                                                                {17, 65, 512},
                                                                                {23, 70, 600},
                                                                                {40, 80, 700},
                                                                                {16, 64, 513}}) {
      oracle::Bindings bind;
      bind.vars = {{"M", mm}, {"N", nn}, {"K", kk}};
      std::vector<std::vector<double>> inputs = {random_input(dtypes::float32, size_t(mm * kk), rng),
                                                 random_input(dtypes::float32, size_t(kk * nn), rng)};
      bind.inputs[0] = inputs[0];
      bind.inputs[1] = inputs[1];
      std::vector<double> want = oracle::evaluate(product.uop(), bind).doubles();
      for (int64_t cores : {1, 3}) {
        std::map<std::string, int64_t> vars = bind.vars;
        vars[".cores"] = cores;
        std::vector<interp::Output> got = crun::run_schedule(s, lib, vars, inputs);
        ASSERT_EQ(got[0].values.size(), want.size());
        for (size_t j = 0; j < want.size(); ++j)
          ASSERT_NEAR(got[0].values[j], want[j], 1e-4 * std::max(1.0, std::abs(want[j])))
              << name << " M=" << mm << " N=" << nn << " K=" << kk << " cores=" << cores << " at " << j;
      }
    }
  }
}

TEST(CodegenOpts, OptsThatDoNotDivideAreRefused) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {6, 5}), b = Tensor::input(ctx, "b", dtypes::float32, {5, 7});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Upcast, 1, 4}), nullptr);  // 7 % 4
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Upcast, 2, 5}), nullptr);  // a reduce axis
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Unroll, 0, 2}), nullptr);  // an output axis
  EXPECT_NE(codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Unroll, 2, 5}), nullptr);  // K fully unrolled
  EXPECT_EQ(codegen::apply_opt(s.kernels[0].ast, {codegen::Opt::Kind::Upcast, 9, 2}), nullptr);  // no such axis
}

TEST(CodegenDecompositions, Exp2MatchesLibmAtTheEdges) {
  Context ctx;
  std::vector<double> xs = {0,      1,      -1,   0.5,      -0.5,      127.99, 128,    129,   1000,  -126,
                            -126.5, -140.2, -149, -149.5,   -150,      -151,   -1000,  1e-8,  -1e-8, 3.3219,
                            64.5,   -64.5,  NAN,  INFINITY, -INFINITY, 12.25,  -0.999, 0.999, 100.1, -100.1};
  const int n = int(xs.size());
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {n});
  std::vector<Tensor> ins{x}, outs{x.exp2()};
  schedule::Schedule s = schedule::schedule(ins, outs, "e");
  std::string src = c_source(s);
  ASSERT_EQ(src.find("exp2f"), std::string::npos) << src;  // decomposed, no libm call
  crun::Library lib = crun::Library::compile(render::c_preamble() + src, kStrict);
  std::vector<interp::Output> got = crun::run_schedule(s, lib, {}, {xs});
  for (int i = 0; i < n; ++i) {
    float want = std::exp2(float(xs[size_t(i)]));
    float g = float(got[0].values[size_t(i)]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(g)) << xs[size_t(i)];
    } else if (std::isinf(want) || want == 0) {
      EXPECT_EQ(g, want) << xs[size_t(i)];
    } else {
      // within 4 ulp (subnormals: within 4 units of the smallest subnormal)
      float ulp = std::max(std::nextafter(want, INFINITY) - want, std::numeric_limits<float>::denorm_min());
      EXPECT_LE(std::abs(g - want), 4 * ulp) << "exp2(" << xs[size_t(i)] << "): got " << g << ", want " << want;
    }
  }
}

TEST(CodegenGolden, ElementwiseKernelText) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {4, 3}), b = Tensor::input(ctx, "b", dtypes::float32, {3});
  std::vector<Tensor> ins{a, b}, outs{(a + b).relu()};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  codegen::PipelineOptions plain;
  plain.optimize = false;  // the loops as scheduled: not shared among cores, so core 0 does it all
  EXPECT_EQ(codegen::compile_to_c(s.kernels[0].ast, s.vars, plain).source,
            "void k_0(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n"
            "  (void)bufs;\n"
            "  (void)vars;\n"
            "  (void)cores;\n"
            "  if (core != 0) return;  /* not shared among cores: core 0 does it all */\n"
            "  float* restrict data0 = (float*)bufs[0];  /* out0 */\n"
            "  const float* restrict data1 = (const float*)bufs[1];  /* a */\n"
            "  const float* restrict data2 = (const float*)bufs[2];  /* b */\n"
            "  for (int32_t ridx0 = 0; ridx0 < 4; ridx0++) {\n"
            "    const int32_t alu0 = ridx0 * 3;\n"
            "    for (int32_t ridx1 = 0; ridx1 < 3; ridx1++) {\n"
            "      const int32_t alu1 = alu0 + ridx1;\n"
            "      const float val2 = data1[alu1];\n"
            "      const float val3 = data2[ridx1];\n"
            "      const float alu4 = val2 + val3;\n"
            "      data0[alu1] = ((0.0f < alu4) ? alu4 : 0.0f);\n"  // relu is a where: NaN gives 0
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(CodegenStages, EveryStageVerifiesAndIsNamed) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {5, 6});
  std::vector<Tensor> ins{x}, outs{x.layernorm(-1)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  std::vector<std::string> names;
  codegen::PipelineOptions o;
  o.after_stage = [&](std::string_view n, const UOp*) { names.emplace_back(n); };
  codegen::full_rewrite_to_sink(s.kernels[0].ast, o);
  names.emplace_back("linearize");
  const auto& want = codegen::stage_names();
  EXPECT_EQ(names, (std::vector<std::string>(want.begin(), want.end())));
}

TEST(CodegenStages, IndexDtypeWidensWhenBoundsNeedIt) {
  Context ctx;
  const UOp* n = ctx.var("N", 1, int64_t(1) << 20);
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {n, 4096});
  std::vector<Tensor> ins{x}, outs{x * 2};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
  EXPECT_NE(c.find("for (int64_t ridx0"), std::string::npos) << c;  // N*4096 exceeds int32
  Context small;
  Tensor y = Tensor::input(small, "y", dtypes::float32, {64, 64});
  std::vector<Tensor> yi{y}, yo{y * 2};
  schedule::Schedule t = schedule::schedule(yi, yo, "k");
  EXPECT_NE(codegen::compile_to_c(t.kernels[0].ast, t.vars).source.find("for (int32_t ridx0"), std::string::npos);
}

// ---------------------------------------------------------------- random programs

TEST(CodegenRandomPrograms, AgreeWithTheOracle) {
  constexpr int kPrograms = 300;
  struct Case {
    std::unique_ptr<Context> ctx;
    Program p;
    std::map<std::string, int64_t> vars;
  };
  std::vector<Case> cases;
  std::string src = render::c_preamble();
  for (int seed = 0; seed < kPrograms; ++seed) {
    Case c{std::make_unique<Context>(), {}, {}};
    RandomProgram(uint64_t(seed)).build(*c.ctx, c.p.ins, c.p.outs, c.vars);
    c.vars[".cores"] = 1 + seed % 3;  // every core's call, in turn
    c.p.sched = schedule::schedule(c.p.ins, c.p.outs, "r" + std::to_string(seed));
    // each width; a target without a library for the program's math (cortex-m4's for sin) says so,
    // and cpu stands in
    const target::Target* t = target::cpu_targets()[size_t(seed) % target::cpu_targets().size()];
    try {
      src += c_source(c.p.sched, t);
    } catch (const codegen::MathError&) {
      ASSERT_TRUE(t->freestanding) << t->name;
      src += c_source(c.p.sched, target::find("cpu"));
    }
    cases.push_back(std::move(c));
  }
  // one compile for all programs, with the flags of the best target this machine runs
  std::vector<std::string> flags = kStrict;
  for (const target::Target& t : target::targets())
    if (target::runs_here(t)) {
      src = with_target_flags(t, flags, src);
      break;
    }
  crun::Library lib = crun::Library::compile(src, flags);
  int mismatches = 0;
  size_t kernels = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    const Case& c = cases[size_t(seed)];
    kernels += c.p.sched.kernels.size();
    std::string diff = compare(c.p, lib, c.vars, uint64_t(seed) * 7919 + 1);
    if (!diff.empty() && ++mismatches <= 3) ADD_FAILURE() << "program " << seed << ": " << diff;
  }
  EXPECT_EQ(mismatches, 0);
  std::cout << kPrograms << " random programs, " << kernels << " kernels compiled to C and run\n";
}

// ---------------------------------------------------------------- the loop-structure stages

namespace {

// the IR after one stage of the optimizing pipeline
const UOp* after(const UOp* ast, std::string_view stage) {
  const UOp* got = nullptr;
  codegen::PipelineOptions o;
  o.after_stage = [&](std::string_view n, const UOp* s) {
    if (n == stage) got = s;
  };
  codegen::full_rewrite_to_sink(ast, o);
  return got;
}

size_t count_ops(const UOp* sink, Op op) {
  size_t n = 0;
  for (const UOp* u : toposort(sink)) n += u->op == op;
  return n;
}

}  // namespace

TEST_F(CodegenTest, SplitRangesReadATransposedReshapeWithoutDivision) {
  Tensor x = input("x", {4, 6});
  Tensor y = x.transpose().reshape({24}) * 2;  // y[r] = x[r % 4][r / 4]
  schedule::Schedule s = schedule::schedule(ins, std::vector<Tensor>{y}, "t");
  EXPECT_GT(count_ops(s.kernels[0].ast, Op::FLOORMOD), 0u)
      << "the kernel as given divides (else this test checks nothing)";
  codegen::PipelineOptions as_given;
  as_given.optimize = false;
  EXPECT_EQ(count_ops(codegen::full_rewrite_to_sink(s.kernels[0].ast, as_given), Op::FLOORMOD) +
                count_ops(codegen::full_rewrite_to_sink(s.kernels[0].ast, as_given), Op::CMOD),
            1u);
  const UOp* split = after(s.kernels[0].ast, "split ranges");
  EXPECT_EQ(count_ops(split, Op::RANGE), 2u);
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
  EXPECT_EQ(c.find('%'), std::string::npos) << c;
  EXPECT_EQ(c.find("/ 4"), std::string::npos) << c;  // (the cores' shares divide by `cores`)
  expect_matches({y});
}

TEST_F(CodegenTest, SimplifyRangesMergesWhatIsContiguousOnly) {
  Tensor x = input("x", {8, 16}), b = input("b", {16});
  // contiguous elementwise: one loop over all 128 elements
  schedule::Schedule e = schedule::schedule(ins, std::vector<Tensor>{x * 2 + 1}, "e");
  EXPECT_EQ(count_ops(after(e.kernels[0].ast, "simplify ranges"), Op::RANGE), 1u);
  // a broadcast row: merging would divide to find the column of b, so the two loops stay
  schedule::Schedule r = schedule::schedule(ins, std::vector<Tensor>{x + b}, "r");
  EXPECT_EQ(count_ops(after(r.kernels[0].ast, "simplify ranges"), Op::RANGE), 2u);
  ins.clear();
  // a sum over two contiguous axes reduces over one range; the output axis stays its own
  Tensor z = input("z", {4, 8, 16});
  schedule::Schedule t = schedule::schedule(ins, std::vector<Tensor>{z.sum({1, 2})}, "t");
  const UOp* merged = after(t.kernels[0].ast, "simplify ranges");
  EXPECT_EQ(count_ops(merged, Op::RANGE), 2u);
  for (const UOp* u : toposort(merged)) {
    if (u->op == Op::REDUCE) {
      EXPECT_EQ(u->nsrc(), 2u) << "one reduce range";
    }
  }
  expect_matches({z.sum({1, 2}), z.sum({0, 2}), (z * 3).sum({0, 1})});
  ins.clear();
  Tensor a = input("a", {8, 16});
  expect_matches({a * 2 + 1, a.transpose().reshape({16, 8}) - 1});
}

TEST(CodegenStages, RendererRulesUseCDivisionWhereItAgreesWithFloor) {
  Context ctx;
  const target::Target& cpu = *target::find("cpu");
  auto divides = [&](int64_t lo, int64_t hi, int64_t dlo, Op op) {
    const UOp* v = ctx.make(Op::CAST, dtypes::int32, {ctx.var("v" + std::to_string(lo), lo, hi)});
    const UOp* d = ctx.make(Op::CAST, dtypes::int32, {ctx.var("d" + std::to_string(dlo), dlo, 9)});
    return graph_rewrite(ctx.make(op, dtypes::int32, {v, d}), codegen::pm_renderer_rules(cpu))->op;
  };
  EXPECT_EQ(divides(0, 100, 1, Op::FLOORDIV), Op::CDIV);
  EXPECT_EQ(divides(0, 100, 1, Op::FLOORMOD), Op::CMOD);
  EXPECT_EQ(divides(-5, 100, 1, Op::FLOORDIV), Op::FLOORDIV);  // -5 // 2 is -3; C says -2
  EXPECT_EQ(divides(-5, 100, 1, Op::FLOORMOD), Op::FLOORMOD);
  EXPECT_EQ(divides(0, 100, -3, Op::FLOORDIV), Op::FLOORDIV);  // a divisor that may be negative
}

TEST(CodegenStages, SplitEndsClosesOnlyRanges) {
  // END(x, r0, r1) -> END(END(x, r1), r0); a range symbolic folded to its one value (END(x, 0))
  // closes nothing, and an END of nothing is its body
  Context ctx;
  const UOp* p = ctx.make(Op::PARAM, dtypes::float32.as_ptr(), {ctx.cint(64)}, ParamArg{0, -1, ctx.intern("y")});
  const UOp* r0 = ctx.make(Op::RANGE, dtypes::weakint, {ctx.cint(8)}, RangeArg{0, AxisType::Loop, -1});
  const UOp* r1 = ctx.make(Op::RANGE, dtypes::weakint, {ctx.cint(8)}, RangeArg{1, AxisType::Loop, -1});
  auto store_at = [&](const UOp* i) {
    return ctx.make(Op::STORE, dtypes::void_, {ctx.make(Op::INDEX, dtypes::float32, {p, i}), ctx.cfloat(1.0)});
  };
  auto end = [&](std::vector<const UOp*> s) { return ctx.make(Op::END, dtypes::void_, s); };
  const UOp* st = store_at(Expr(r0) * 8 + r1);
  EXPECT_EQ(graph_rewrite(end({st, r0, r1}), codegen::pm_split_ends()), end({end({st, r1}), r0}));
  EXPECT_EQ(graph_rewrite(end({st, r0, ctx.cint(0), r1}), codegen::pm_split_ends()), end({end({st, r1}), r0}));
  const UOp* one = store_at(ctx.cint(3));
  EXPECT_EQ(graph_rewrite(end({one, ctx.cint(0)}), codegen::pm_split_ends()), one);
}

TEST(CodegenStages, StagesTheCpuHasNoUseForRefuseWhatNeedsAnotherTarget) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {8, 16});
  std::vector<Tensor> ins{x}, outs{x.sum({1})};
  const UOp* ast = schedule::schedule(ins, outs, "k").kernels[0].ast;
  auto fails_at = [](const UOp* bad) -> std::string {
    try {
      codegen::PipelineOptions o;
      o.optimize = false;
      codegen::full_rewrite_to_sink(bad, o);
    } catch (const InternalError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(fails_at(ast), "");
  const UOp* r = nullptr;
  for (const UOp* u : toposort(ast))
    if (u->op == Op::RANGE && u->arg<RangeArg>().type == AxisType::Loop) r = u;
  ASSERT_NE(r, nullptr);
  RangeArg local = r->arg<RangeArg>();
  local.type = AxisType::Local;
  std::string why = fails_at(substitute(ast, {{r, ctx.make(Op::RANGE, r->dtype, r->src(), local)}}));
  EXPECT_NE(why.find("stage 'local buffers'"), std::string::npos) << why;
  // a vector wider than the target's vector registers (devectorize): 32 bytes on the 16 of cpu
  const UOp* param = nullptr;
  for (const UOp* u : toposort(ast))
    if (u->op == Op::PARAM && u->arg<ParamArg>().slot == 1) param = u;
  ASSERT_NE(param, nullptr);
  const UOp* vec_param = ctx.make(Op::PARAM, dtypes::float32.vec(8).as_ptr(), param->src(), param->arg());
  why = fails_at(substitute(ast, {{param, vec_param}}));
  EXPECT_NE(why.find("stage 'devectorize': a vector of 32 bytes"), std::string::npos) << why;
  // an Invalid used as a value, not as the address of an INDEX
  const UOp* v = ctx.var("v", 0, 9);
  const UOp* gated = ctx.make(Op::WHERE, dtypes::weakint, {Expr(v) < 5, v, ctx.invalid()});
  const UOp* read = ctx.make(Op::INDEX, dtypes::float32, {param, gated});
  EXPECT_NO_THROW(codegen::check_gates(ctx.make(Op::SINK, dtypes::void_, {read})));
  EXPECT_THROW(codegen::check_gates(ctx.make(Op::SINK, dtypes::void_, {Expr(gated) + 1})), InternalError);
  // a movement op left in the kernel
  const UOp* val = ast->src(0)->src(0)->src(1);
  const UOp* one = ctx.cfloat(1.0, dtypes::float32);
  const UOp* moved = ctx.make(Op::RESHAPE, val->dtype, {one, ctx.make(Op::STACK, dtypes::weakint, {})});
  why = fails_at(substitute(ast, {{val, moved}}));
  EXPECT_NE(why.find("stage 'early movement ops'"), std::string::npos) << why;
}

TEST_F(CodegenTest, LoadCollapseGathersWithoutALoopOverTheTable) {
  // an embedding lookup written the tensor way: out[b, d] = sum_v (v == idx[b]) * table[v, d]
  Tensor idx = input("idx", {5}, dtypes::int32), table = input("table", {11, 3});
  Tensor zero = Tensor::full(ctx, {}, 0.0, dtypes::float32);
  Tensor eq = Tensor::arange(ctx, 11).unsqueeze(0).eq(idx.unsqueeze(1));  // [5, 11]
  Tensor out = eq.unsqueeze(2).where(table.unsqueeze(0), zero).sum({1});
  Tensor out2 = eq.logical_not().unsqueeze(2).where(zero, table.unsqueeze(0) * 2).sum({1});
  schedule::Schedule s = schedule::schedule(ins, std::vector<Tensor>{out, out2}, "g");
  for (const auto& k : s.kernels) {
    EXPECT_EQ(count_ops(after(k.ast, "kernel ast"), Op::REDUCE), 1u);
    EXPECT_EQ(count_ops(after(k.ast, "load collapse"), Op::REDUCE), 0u) << print_graph(after(k.ast, "load collapse"));
  }
  // random int32 indices are +-1..9: the negative ones are outside the table (their rows are 0)
  expect_matches({out, out2});
}

TEST_F(CodegenTest, LoadCollapseKeepsASumWhoseMaskMatchesSeveralRows) {
  // v cast to int8 wraps past 127: (int8)v == idx holds for two v of 300, so this is a real sum
  Tensor idx = input("idx", {4}, dtypes::int8), table = input("table", {300});
  Tensor zero = Tensor::full(ctx, {}, 0.0, dtypes::float32);
  Tensor eq = Tensor::arange(ctx, 300).cast(dtypes::int8).unsqueeze(0).eq(idx.unsqueeze(1));  // [4, 300]
  Tensor out = eq.where(table.unsqueeze(0), zero).sum({1});
  schedule::Schedule s = schedule::schedule(ins, std::vector<Tensor>{out}, "w");
  EXPECT_EQ(count_ops(after(s.kernels[0].ast, "load collapse"), Op::REDUCE), 1u);
  expect_matches({out});
}

TEST(CodegenOpts, RowsAreUnrolledOnlyWhereTheyShareAReadOfTheReduction) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {48, 256}),
         w = Tensor::input(ctx, "w", dtypes::float32, {256, 64});
  std::vector<Tensor> ins{x, w};
  auto opts_of = [&](Tensor out) {
    std::vector<Tensor> outs{out};
    const UOp* sink = schedule::schedule(ins, outs, "k").kernels[0].ast;
    std::string s;
    for (const codegen::Opt& o : codegen::hand_coded_optimizations(sink)) s += o.str() + " ";
    return s;
  };
  EXPECT_EQ(opts_of(x.matmul(w)), "LANES(1, 8) UPCAST(0, 6) THREAD(0) ");  // 6 rows share each read of w
  EXPECT_EQ(opts_of(x.softmax(-1)), "LANES(1, 64) THREAD(0) ");            // each row reads its own
  EXPECT_EQ(opts_of(x.layernorm(-1)), "LANES(1, 64) THREAD(0) ");
}

TEST_F(CodegenTest, ReductionsOfSymbolicLengthRunInLanesWithATail) {
  const UOp* l = ctx.var("L", 1, 60000);
  Tensor x = input("x", {l});  // below 2^16: one kernel (longer ones are split among the cores)
  std::vector<Tensor> outs{x.sum({0}, true), x.max({0}, true), (x * x).sum({0})};
  schedule::Schedule s = schedule::schedule(ins, outs, "t");
  std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
  EXPECT_NE(c.find("kiln_vf32x4 acc0[16]"), std::string::npos) << c;  // 64 partial sums side by side
  EXPECT_NE(c.find("var_L % 64"), std::string::npos) << c;            // and the steps past the last 64
  std::vector<std::map<std::string, int64_t>> at;
  for (int64_t n : {1, 2, 63, 64, 65, 127, 128, 129, 1000, 60000}) at.push_back({{"L", n}});
  expect_matches(outs, at);
}

TEST_F(CodegenTest, SoftmaxComputesEachExpOnce) {
  const UOp* n = ctx.var("N", 1, 300);
  Tensor x = input("x", {5, n}), h = input("h", {4, 33}, dtypes::float16), v = input("v", {40});
  auto exps = [&](Tensor out) {  // EXP2 nodes after the opts, in all kernels
    std::vector<Tensor> outs{out};
    schedule::Schedule s = schedule::schedule(ins, outs, "k");
    size_t count = 0;
    for (const auto& k : s.kernels) count += count_ops(after(k.ast, "apply opts"), Op::EXP2);
    return count;
  };
  EXPECT_EQ(exps(x.softmax(-1)), 1u);
  EXPECT_EQ(exps(h.softmax(-1)), 2u);  // a float16 output would round the stored exp: recomputed
  EXPECT_EQ(exps(v.softmax(-1)), 2u);  // one row, shared among the cores: recomputed
  std::vector<std::map<std::string, int64_t>> at;
  for (int64_t len : {1, 2, 63, 64, 65, 300}) at.push_back({{"N", len}});
  expect_matches({x.softmax(-1), x.log_softmax(-1), (x.exp() - x.exp().sum({1}, true)).sin()}, at);
  expect_matches({h.softmax(-1), v.softmax(-1)}, {{{"N", 7}}});
}

TEST_F(CodegenTest, LongReductionsToOneValueAreSharedAmongTheCores) {
  // 2^17 + 3 elements: 256 parts of 513 (the last padded with the identity), then the parts
  Tensor x = input("x", {(1 << 17) + 3}), m = input("m", {64, 2048});
  std::vector<Tensor> outs{x.sum({0}), x.max({0}), m.sum(), (m * m).max({0, 1}, true)};
  for (const Tensor& out : outs) {
    std::vector<Tensor> one{out};
    schedule::Schedule s = schedule::schedule(ins, one, "r");
    ASSERT_EQ(s.kernels.size(), 2u) << schedule::describe(s);
    std::string c = codegen::compile_to_c(s.kernels[0].ast, s.vars).source;
    EXPECT_EQ(c.find("if (core != 0) return;"), std::string::npos) << c;  // the parts: every core's share
  }
  std::vector<Tensor> small{input("y", {1000}).sum({0})};
  EXPECT_EQ(schedule::schedule(ins, small, "s").kernels.size(), 1u);  // short: one kernel
  expect_matches(outs);
  // a symbolic length that may be long: 256 parts of ceil(L / 256), the last padded, at any L
  ins.clear();
  Tensor z = input("z", {ctx.var("L", 1, 1 << 20)});
  std::vector<Tensor> zs{z.sum({0}), z.max({0})};
  EXPECT_EQ(schedule::schedule(ins, zs, "z").kernels.size(), 4u);  // parts, then theirs, for each
  std::vector<std::map<std::string, int64_t>> at;
  for (int64_t n : {1, 2, 255, 256, 257, 1000, 70001}) at.push_back({{"L", n}});
  expect_matches(zs, at);
}

// ---------------------------------------------------------------- vector types

TEST_F(CodegenTest, ElementwiseLoopsRunAsVectorsWithATail) {
  const UOp* l = ctx.var("L", 1, 5000);
  Tensor a = input("a", {l}), b = input("b", {l}), c = input("c", {l});
  std::vector<Tensor> outs{(a * b + c).relu(), a.exp() * b};
  schedule::Schedule s = schedule::schedule(ins, outs, "v");
  std::string src = c_source(s);
  // 64 lanes as 16 vectors of the cpu target's 16 bytes, then the last L % 64 elements one at a time
  EXPECT_NE(src.find("#pragma GCC unroll 16\n    for (int32_t ridx2 = 0; ridx2 < 16; ridx2++) {"), std::string::npos)
      << src;
  EXPECT_NE(src.find("kiln_store_vf32x4(&data0["), std::string::npos) << src;
  EXPECT_NE(src.find("kiln_max_vf32x4("), std::string::npos) << src;
  EXPECT_NE(src.find("var_L % 64"), std::string::npos) << src;
  size_t tail = src.find("var_L % 64"), next = src.find("\n}\n", tail);
  EXPECT_EQ(src.substr(tail, next - tail).find("vf32"), std::string::npos) << src;  // the tail is scalar
  std::vector<std::map<std::string, int64_t>> at;
  for (int64_t n : {1, 63, 64, 65, 127, 128, 129, 1000, 5000}) at.push_back({{"L", n}});
  expect_matches(outs, at);
}

TEST_F(CodegenTest, VectorLoopsAreRightAtEveryTargetWidth) {
  // each target's C at its own vector width (16, 32, 64 bytes), compiled with its flags where this
  // machine runs it: Lane loops as vectors, accumulators of vectors, masks, selects, the exp
  // polynomial's bit casts, and reductions over lanes
  const UOp* n = ctx.var("N", 1, 300);
  Tensor x = input("x", {6, n}), a = input("a", {16, 40}), b = input("b", {40, 128}),
         i = input("i", {256}, dtypes::int32), d = input("d", {4, 64}, dtypes::float64);
  std::vector<Tensor> outs{x.softmax(-1),          x.layernorm(-1), a.matmul(b),     (i * i + 3).maximum(i),
                           (x > 0.5).where(x, -x), d.sum({1}) * 2,  (d * d).max({0})};
  Program p{ins, outs, schedule::schedule(ins, outs, "w")};
  int ran = 0;
  for (const target::Target* tp : target::cpu_targets()) {
    const target::Target& t = *tp;
    std::string src = c_source(p.sched, &t);
    std::string lanes = "x" + std::to_string(t.vector_bytes / 4);
    if (t.vector_bytes >= 8) {
      EXPECT_NE(src.find("kiln_vi32" + lanes), std::string::npos) << t.name << "\n" << src;
      EXPECT_NE(src.find("kiln_vf32" + lanes), std::string::npos) << t.name << "\n" << src;
    }
    if (t.vector_bytes >= 16) {
      EXPECT_NE(src.find("kiln_vf64x" + std::to_string(t.vector_bytes / 8)), std::string::npos) << t.name << "\n"
                                                                                                << src;
    }
    if (t.vector_bytes < 8) {  // one float a register (Cortex-M4): the loops stay scalar
      EXPECT_EQ(src.find("kiln_vf32"), std::string::npos) << t.name << "\n" << src;
    }
    // with its flags where this machine runs them, and without (any machine: the compiler lowers
    // vectors wider than its ISA's, and the C stays warning-free)
    std::vector<std::pair<std::vector<std::string>, std::string>> builds{{kStrict, render::c_preamble() + src}};
    if (target::runs_here(t) && !t.c_flags.empty()) {
      builds.emplace_back(kStrict, "");
      builds.back().second = with_target_flags(t, builds.back().first, render::c_preamble() + src);
      ++ran;
    }
    for (const auto& [flags, c] : builds) {
      crun::Library lib = crun::Library::compile(c, flags);
      for (int64_t len : {1, 64, 65, 300})
        for (int64_t cores : {1, 3})
          EXPECT_EQ(compare(p, lib, {{"N", len}, {".cores", cores}}, 7), "")
              << t.name << " (" << flags.size() - kStrict.size() << " ISA flags) N=" << len << "\n"
              << src;
    }
  }
  if (ran == 0) std::cout << "no x86 target runs here: their C was checked without ISA flags only\n";
}

// y = x.cast(to) * 2 for every cast of cast_cases.h, each its own program (no other dtype in its
// loop), in each target's C at its own vector width (compiled with its flags where this machine
// runs them): the cast is a vector conversion (__builtin_convertvector) where both dtypes are 32
// or both 64 bits wide (the other loops stay scalar), and agrees with the oracle and, bit for bit,
// with the host compiler's conversion, on random inputs and each cast's edge values, at a length
// of whole vectors and at one with a tail
TEST(CodegenCasts, CastsInLaneLoopsAgreeAtEveryTargetWidth) {
  const std::vector<cast_cases::CastCase> cases = cast_cases::cases();
  for (const char* name : {"cpu", "x86_64-avx2", "x86_64-avx512"}) {
    const target::Target& t = *target::find(name);
    std::vector<std::unique_ptr<Context>> ctxs;
    std::vector<Program> progs;
    std::string src = render::c_preamble();
    for (size_t i = 0; i < cases.size(); ++i) {
      const cast_cases::CastCase& c = cases[i];
      ctxs.push_back(std::make_unique<Context>());
      const UOp* n = ctxs.back()->var("N", 1, 1024);
      Tensor x = Tensor::input(*ctxs.back(), "x", c.from, {n});
      Program p{{x}, {x.cast(c.to) * 2}, {}};
      p.sched = schedule::schedule(p.ins, p.outs, "cast" + std::to_string(i));
      std::string k = c_source(p.sched, &t);
      // where both dtypes are 32 or both 64 bits wide, the loop runs in lanes: the cast is a vector's
      if (bitsize(c.from) == bitsize(c.to) && bitsize(c.from) >= 32) {
        EXPECT_NE(k.find("__builtin_convertvector("), std::string::npos) << name << " " << cast_cases::name(c) << "\n"
                                                                         << k;
      }
      src += k;
      progs.push_back(std::move(p));
    }
    std::vector<std::string> flags = kStrict;
    if (target::runs_here(t))
      src = with_target_flags(t, flags, src);
    else  // vectors wider than this CPU's, in GCC's generic code: its note that their ABI differs is no error
      flags.push_back("-Wno-psabi");
    crun::Library lib = crun::Library::compile(src, flags);
    for (size_t i = 0; i < cases.size(); ++i) {
      const cast_cases::CastCase& c = cases[i];
      for (int64_t len : {int64_t(512), int64_t(515)}) {
        std::vector<std::vector<double>> in{cast_cases::inputs(c, size_t(len), uint64_t(len) * 31 + i)};
        std::map<std::string, int64_t> vars{{"N", len}, {".cores", 1}};
        oracle::Bindings b;
        b.vars = vars;
        b.inputs[progs[i].ins[0].uop()->arg<ParamArg>().slot] = in[0];
        std::vector<interp::Output> got = crun::run_schedule(progs[i].sched, lib, vars, in);
        std::vector<double> want = oracle::evaluate(progs[i].outs[0].uop(), b).doubles();
        ASSERT_EQ(got[0].values.size(), want.size());
        double tol = tolerance(c.to);
        for (size_t j = 0; j < want.size(); ++j) {
          double g = got[0].values[j], w = want[j], exact = cast_cases::native_cast_times_two(c, in[0][j]);
          bool near = std::isnan(w)   ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
          // the oracle computes in float64: where float32 overflows, its infinity is right
          near |= std::isinf(g) && std::isinf(exact) && g == exact;
          bool same = std::isnan(exact) ? std::isnan(g) : std::memcmp(&g, &exact, sizeof g) == 0;
          ASSERT_TRUE(near && same) << name << " " << cast_cases::name(c) << " N=" << len << " at " << j
                                    << ": x = " << in[0][j] << ", got " << g << ", oracle " << w << ", C " << exact;
        }
      }
    }
  }
}

TEST_F(CodegenTest, ALanesIndexStoredAsAValueIsEveryLanesOwn) {
  // out[i] = i: the lane's index is index math, not a vector of the lanes (a broadcast of the
  // first lane's index stored 0, 0, ..., 16, 16, ...)
  Tensor x = input("x", {256}, dtypes::int32);
  expect_matches({Tensor::arange(ctx, 256).cast(dtypes::int32), Tensor::arange(ctx, 256).cast(dtypes::int32) + x});
}

TEST_F(CodegenTest, LoopsVectorsCannotExpressStayScalar) {
  // a transposed read (stride 128), a gated read (padding), float64 next to float32 in one loop:
  // the renderer keeps these loops scalar, and they still compute the right values
  Tensor t = input("t", {128, 128}), v = input("v", {200}), d = input("d", {128}, dtypes::float64);
  std::vector<Tensor> outs{t.transpose(0, 1) + t, v.pad({{3, 5}}) * 2, d.cast(dtypes::float32) + t.sum({0})};
  Program p{ins, outs, schedule::schedule(ins, outs, "s")};
  std::string src = c_source(p.sched);
  crun::Library lib = crun::Library::compile(render::c_preamble() + src, kStrict);
  EXPECT_EQ(compare(p, lib, {{".cores", 2}}, 5), "") << src;
}

// ---------------------------------------------------------------- sizes one past a multiple of the lanes

TEST_F(CodegenTest, SizesOnePastAMultipleOfTheLanesCompileAndAgree) {
  // 64k + 1 elements: one element past the last row of 64 lanes (a tail loop of one iteration,
  // which symbolic folds away); also where simplify ranges merges rows into such a length
  for (int64_t n : {129, 193, 257, 65}) {
    ins.clear();
    Tensor x = input("x", {n});
    expect_matches({x * 2, x.exp()});
  }
  ins.clear();
  Tensor a = input("a", {63, 127}), r = input("r", {31, 129});
  expect_matches({a * 2, r.sum({0}), r.max({0}, true)});
  ins.clear();
  const UOp* m = ctx.var("M", 1, 64);
  Tensor p = input("p", {m, 16}), q = input("q", {16, 129});
  expect_matches({p.matmul(q)}, {{{"M", 1}}, {{"M", 5}}, {{"M", 64}}});
}

TEST(CodegenCores, EveryElementIsStoredByExactlyOneCore) {
  // each core's call stores its share: run alone on an output of NaNs, the cores' shares must
  // cover every element once (a tail stored by every core is a race between them)
  for (std::vector<int64_t> shape : {std::vector<int64_t>{129}, {193}, {200}, {63, 127}, {31, 129}}) {
    Context ctx;
    std::vector<Dim> dims(shape.begin(), shape.end());
    Tensor x = Tensor::input(ctx, "x", dtypes::float32, dims);
    std::vector<Tensor> ins{x}, outs{shape.size() == 2 && shape[0] == 31 ? x.sum({0}) : x * 2};
    schedule::Schedule s = schedule::schedule(ins, outs, "k");
    ASSERT_EQ(s.kernels.size(), 1u);
    codegen::CKernel ck = codegen::compile_to_c(s.kernels[0].ast, s.vars);
    ASSERT_TRUE(ck.parallel) << ck.source;
    crun::Library lib = crun::Library::compile(render::c_preamble() + ck.source, kStrict);
    int64_t in_n = 1, out_n = 1;
    for (int64_t d : shape) in_n *= d;
    for (int64_t d : oracle::eval_shape(outs[0].shape(), {})) out_n *= d;
    const int32_t cores = 3;
    for (guard::Side side : guard::kSides) {  // the buffers against a guard page after their end, then before
      guard::Array<float> in(size_t(in_n), side, 1.0f);
      std::vector<int> writers(size_t(out_n), 0);
      for (int32_t core = 0; core < cores; ++core) {
        guard::Array<float> out(size_t(out_n), side, std::numeric_limits<float>::quiet_NaN());
        void* bufs[2] = {out.data(), in.data()};
        lib.get(ck.name)(bufs, nullptr, core, cores);
        guard::count_run(side);
        for (size_t i = 0; i < out.size(); ++i) writers[i] += !std::isnan(out[i]);
      }
      for (size_t i = 0; i < writers.size(); ++i)
        EXPECT_EQ(writers[i], 1) << "element " << i << " of " << out_n << "\n" << ck.source;
    }
  }
}

namespace {

// A target without threads (WebAssembly) gets no loop shared among cores; one with them does.
TEST(CodegenOpts, OnlyTargetsWithThreadsShareALoopAmongCores) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {256, 256}),
         b = Tensor::input(ctx, "b", dtypes::float32, {256, 256});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  auto opts = [&](const char* name) {
    std::vector<std::string> applied;
    codegen::PipelineOptions o;
    o.target = target::find(name);
    o.applied_opts = &applied;
    codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars, o);
    std::string all;
    for (const std::string& x : applied) all += x + " ";
    return std::make_pair(all, k.parallel);
  };
  auto [cpu, cpu_parallel] = opts("cpu");
  auto [wasm, wasm_parallel] = opts("wasm32-simd128");
  EXPECT_NE(cpu.find("THREAD"), std::string::npos) << cpu;
  EXPECT_TRUE(cpu_parallel);
  EXPECT_EQ(wasm.find("THREAD"), std::string::npos) << wasm;
  EXPECT_FALSE(wasm_parallel);
  EXPECT_FALSE(target::find("wasm32-simd128")->threads);
}

}  // namespace

// The LLVM path: scheduled kernels rendered as LLVM IR (render/llvm.h), compiled in-process into an
// object for x86_64-avx2 and x86_64-avx512 (target/llvm_compile.h), linked into a shared object and
// run natively on poisoned outputs against the float64 oracle, and against the same kernels as C:
// every kernel kind the C tests cover, edge values, every cast, vector IR built by hand, random
// programs. Then the object itself: deterministic, naming no path, and a broken module is an
// InternalError naming its kernel.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include "generator/codegen/pipeline.h"
#include "generator/render/c.h"
#include "generator/render/llvm.h"
#include "generator/schedule/schedule.h"
#include "generator/target/host.h"
#include "generator/target/llvm_compile.h"
#include "generator/target/target.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/cast_cases.h"
#include "tests/unit/guard_pages.h"
#include "tests/unit/kernel_kinds.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;

namespace {

const std::vector<std::string> kStrict = {"-Wall", "-Wextra", "-Werror"};

const target::Target& tgt(std::string_view name) {
  const target::Target* t = target::find(name);
  if (!t) throw std::runtime_error("no target " + std::string(name));
  return *t;
}

const char* const kTargets[] = {"x86_64-avx2", "x86_64-avx512"};

// The kernels of a schedule through the pipeline, their C and their LLVM module.
// A schedule's kernels: as the cpu target's C (the reference), and as any target's own programs
// (the pipeline takes the target: its vector width) rendered as one LLVM module.
struct Compiled {
  std::vector<const UOp*> asts;
  std::vector<codegen::CKernel> kernels;  // the cpu target's
  std::string c;
  std::vector<codegen::CKernel> programs(const target::Target& t, std::span<const UOp* const> vars) const {
    codegen::PipelineOptions po;
    po.target = &t;
    std::vector<codegen::CKernel> ks;
    for (const UOp* a : asts) ks.push_back(codegen::compile_to_c(a, vars, po));
    return ks;
  }
  std::string module(const target::Target& t, std::span<const UOp* const> vars, std::string_view name = "k") const {
    std::vector<codegen::CKernel> ks = programs(t, vars);
    std::vector<render::LlvmKernel> lk;
    for (const auto& k : ks) lk.push_back({k.linear, k.name, vars});
    return render::render_llvm_module(t, name, lk);
  }
};

Compiled compile(const schedule::Schedule& s) {
  Compiled c;
  for (const auto& k : s.kernels) {
    c.asts.push_back(k.ast);
    c.kernels.push_back(codegen::compile_to_c(k.ast, s.vars));
    c.c += c.kernels.back().source;
  }
  return c;
}

crun::Library object_library(const Compiled& c, const target::Target& t, std::span<const UOp* const> vars) {
  return crun::Library::link_object(target::compile_module(t, c.module(t, vars), target::Artifact::Object));
}

// the largest finite value of a float dtype
double finite_max(DType d) {
  if (d == dtypes::float16) return 65504.0;
  if (d == dtypes::bfloat16) return 0x1.fep127;
  if (d == dtypes::float32) return std::numeric_limits<float>::max();
  return std::numeric_limits<double>::max();
}

bool same_value(double g, double w, double tol, DType d) {
  if (std::isnan(w)) return std::isnan(g);
  if (std::isinf(w)) return g == w;
  // the oracle computes in float64: where the dtype overflows (past its largest finite value
  // rounded to nearest) the kernel's infinity is right
  if (is_float(d) && std::isinf(g) && (g > 0) == (w > 0) && std::abs(w) > finite_max(d)) return true;
  return std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
}

// "" or where `got` and `want` first differ beyond the dtype's tolerance (tol_scale 0: bit for bit,
// NaN equal to NaN, -0 unequal to +0)
std::string differ(const std::vector<interp::Output>& got, const std::vector<std::vector<double>>& want,
                   double tol_scale) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].values.size() != want[i].size()) return "output " + std::to_string(i) + ": size differs";
    double tol = tolerance(got[i].dtype) * tol_scale;
    for (size_t j = 0; j < want[i].size(); ++j) {
      double g = got[i].values[j], w = want[i][j];
      bool same = tol_scale == 0 ? (std::isnan(g) && std::isnan(w)) || std::memcmp(&g, &w, sizeof g) == 0
                                 : same_value(g, w, tol, got[i].dtype);
      if (!same) {
        std::ostringstream os;
        os << "output " << i << " (" << got[i].name << ") at " << j << ": got " << g << ", want " << w;
        return os.str();
      }
    }
  }
  return "";
}

std::vector<std::vector<double>> values_of(const std::vector<interp::Output>& outs) {
  std::vector<std::vector<double>> v;
  for (const auto& o : outs) v.push_back(o.values);
  return v;
}

struct LlvmTest : ::testing::Test, ProgramInputs {
  // Compiles once (C, and an object per target), runs at every binding of the vars on 1 and 3 cores:
  // each object agrees with the oracle and with the C. `inputs`, when given, replaces random ones
  // (and the C must agree bit for bit: the edge-value tests avoid what contraction changes).
  void expect_matches(const std::vector<Tensor>& outs,
                      const std::vector<std::map<std::string, int64_t>>& bindings = {{}},
                      const std::vector<std::vector<double>>& inputs = {}) {
    schedule::Schedule s = schedule::schedule(ins, outs, "k" + std::to_string(programs++));
    Compiled c = compile(s);
    crun::Library clib = crun::Library::compile(render::c_preamble() + c.c, kStrict);
    for (const char* name : kTargets) {
      const target::Target& t = tgt(name);
      crun::Library lib = object_library(c, t, s.vars);
      if (!target::runs_here(t)) continue;
      for (auto vars : bindings)
        for (int64_t cores : {1, 3}) {
          vars[".cores"] = cores;
          std::mt19937_64 rng(99);
          oracle::Bindings b;
          b.vars = vars;
          std::vector<std::vector<double>> in = inputs.empty() ? random_inputs(ins, b, rng) : inputs;
          for (size_t i = 0; i < ins.size(); ++i) b.inputs[ins[i].uop()->arg<ParamArg>().slot] = in[i];
          std::vector<std::vector<double>> want;
          for (const Tensor& o : outs) want.push_back(oracle::evaluate(o.uop(), b).doubles());
          std::vector<interp::Output> got = crun::run_schedule(s, lib, vars, in);
          std::vector<interp::Output> from_c = crun::run_schedule(s, clib, vars, in);
          EXPECT_EQ(differ(got, want, 1), "") << name << ", " << cores << " cores\n" << c.module(t, s.vars);
          EXPECT_EQ(differ(got, values_of(from_c), inputs.empty() ? 1 : 0), "")
              << name << " against the C, " << cores << " cores\n"
              << c.c;
        }
    }
  }
};

}  // namespace

// ---------------------------------------------------------------- canonical programs

TEST_F(LlvmTest, ElementwiseAndBroadcast) { kinds::elementwise_and_broadcast(*this); }

TEST_F(LlvmTest, ReductionsOverEachAxis) { kinds::reductions_over_each_axis(*this); }
TEST_F(LlvmTest, LongReductionsOfFewOutputs) { kinds::long_reductions_of_few_outputs(*this); }

TEST_F(LlvmTest, SoftmaxLayernormAtSymbolicBounds) { kinds::softmax_layernorm_at_symbolic_bounds(*this); }

TEST_F(LlvmTest, MatmulShapes) {
  kinds::matmul_shapes(*this);
  ins.clear();
  kinds::mlp(*this);
}

TEST_F(LlvmTest, ConvolutionsPoolingAttention) { kinds::convolutions_pooling_attention(*this); }

TEST_F(LlvmTest, GatedAndPaddedLoads) { kinds::movement_ops(*this); }

TEST_F(LlvmTest, IntegersBoolsHalfAndBfloat16) { kinds::integers_bools_half_and_bfloat16(*this); }

TEST_F(LlvmTest, IntegerDivisionAndModuloOfNegativeOperands) {
  for (DType d : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}) {
    ins.clear();
    Tensor a = input("a", {4, 4}, d), b = input("b", {4}, d);
    std::vector<double> as, bs;
    for (int i = 0; i < 16; ++i) as.push_back(double((i * 7) % 23 - 11));
    for (double v : {-3.0, 2.0, -7.0, 5.0}) bs.push_back(v);
    expect_matches({a.idiv(b), a.mod(b), (a * -3).idiv(b + 10), a.mod(a.lift(-4))}, {{}}, {as, bs});
  }
}

TEST_F(LlvmTest, IntegerArithmeticWrapsAsTheCDoes) {
  Tensor a = input("a", {6}, dtypes::int32), u = input("u", {6}, dtypes::uint8), s8 = input("s8", {6}, dtypes::int8);
  Tensor big = a * 1000000000 * 7 + 2147483647;  // overflows int32 for every input
  expect_matches({big, -big, big.sum(), u * 100 + 77, s8 * 50, (s8 * 30).idiv(s8)});
}

TEST_F(LlvmTest, CastsBetweenEveryDtype) {
  const std::vector<DType> all = {dtypes::bool_,    dtypes::int8,    dtypes::uint8,  dtypes::int16,  dtypes::uint16,
                                  dtypes::int32,    dtypes::uint32,  dtypes::int64,  dtypes::uint64, dtypes::float16,
                                  dtypes::bfloat16, dtypes::float32, dtypes::float64};
  for (DType from : all) {
    ins.clear();
    Tensor x = input("x", {9}, from);
    std::vector<Tensor> outs;
    for (DType to : all) {
      // a negative float has no unsigned value (C leaves it undefined): cast its magnitude
      Tensor src = is_float(from) && is_unsigned(to) ? x.abs() : x;
      outs.push_back(src.cast(to));
    }
    expect_matches(outs);
  }
}

// y = x.cast(to) * 2 for every cast of cast_cases.h in lane loops of each object target's width (32
// and 64 bytes), on random inputs and each cast's edge values, at a length of whole vectors and a
// tail: against the oracle and, bit for bit, the C (whose conversions the C tests check
// against the host compiler's); where both dtypes are 32 or both 64 bits wide the cast is a vector's
TEST_F(LlvmTest, CastsInLaneLoops) {
  for (const cast_cases::CastCase& c : cast_cases::cases()) {
    ins.clear();
    const UOp* n = ctx.var("N", 1, 1024);
    Tensor x = input("x", {n}, c.from);
    std::vector<Tensor> outs{x.cast(c.to) * 2};
    if (bitsize(c.from) == bitsize(c.to) && bitsize(c.from) >= 32) {
      schedule::Schedule s = schedule::schedule(ins, outs, "probe");
      Compiled compiled = compile(s);
      for (const char* name : kTargets) {
        std::string ir = compiled.module(tgt(name), s.vars);
        int lanes = tgt(name).vector_bytes * 8 / bitsize(c.from);
        EXPECT_NE(ir.find(" <" + std::to_string(lanes) + " x "), std::string::npos)
            << name << " " << cast_cases::name(c) << "\n"
            << ir;
      }
    }
    expect_matches(outs, {{{"N", 515}}}, {cast_cases::inputs(c, 515, 17)});
  }
}

// NaN, infinities, -0 and the extremes through the ops whose C the object must match bit for bit
TEST_F(LlvmTest, EdgeValuesAgreeWithTheCBitForBit) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // exactly representable in their dtype (the oracle reads them as given, the kernels as stored)
  std::vector<double> xs = {nan, inf, -inf, -0.0, 0.0, 1.5, -2.25, 0x1.fffffep127, -0x1p-140, 0x1p-149, 7.0, -7.0};
  std::vector<double> ys = {1.0, nan, -0.0, 0.0, -0.0, nan, inf, -inf, 2.0, -3.0, 7.0, 0.5};
  Tensor x = input("x", {12}), y = input("y", {12});
  expect_matches({x.maximum(y), x.minimum(y), x.relu(), x.max({0}), (x < y).where(x, y), x.ne(y).cast(dtypes::int32),
                  x.sqrt(), -x, x / y, x.abs(), x.cast(dtypes::bfloat16), x.cast(dtypes::float16), x.exp2()},
                 {{}}, {xs, ys});
  ins.clear();
  Tensor h = input("h", {6}, dtypes::bfloat16);
  std::vector<double> hs = {nan, inf, -0.0, 1.0 + 1.0 / 128, 0x1.2p127, -1.0 / 256};
  expect_matches({h * h, h + h, h.maximum(h * 2), h.cast(dtypes::float32)}, {{}}, {hs});
}

TEST_F(LlvmTest, LongReductionsAreSharedAmongTheCores) {
  Tensor x = input("x", {65536}), y = input("y", {300, 257});
  expect_matches({x.sum(), x.max(), y.sum({1}), y.sum({0})});
}

TEST_F(LlvmTest, VectorLoopsWithATail) {
  const UOp* n = ctx.var("N", 1, 1000);
  Tensor a = input("a", {n}), b = input("b", {n}), c = input("c", {n, 8}, dtypes::int32);
  expect_matches({(a * b + 1).relu(), a.maximum(b) - a, c * 3 + 1, (c < 2).where(c, -c)},
                 {{{"N", 1}}, {{"N", 15}}, {{"N", 17}}, {{"N", 1000}}});
}

// ---------------------------------------------------------------- the IR itself

TEST(LlvmGolden, ElementwiseKernelText) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {4, 3}), b = Tensor::input(ctx, "b", dtypes::float32, {3});
  std::vector<Tensor> ins{a, b}, outs{(a + b).relu()};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  codegen::PipelineOptions plain;
  plain.optimize = false;  // the loops as scheduled: not shared among cores, so core 0 does it all
  codegen::CKernel k = codegen::compile_to_c(s.kernels[0].ast, s.vars, plain);
  render::LlvmKernel lk{k.linear, k.name, s.vars};
  EXPECT_EQ(render::render_llvm_module(tgt("x86_64-avx2"), "golden", std::span(&lk, 1)),
            "; ModuleID = 'golden'\n"
            "source_filename = \"golden\"\n"
            "target triple = \"x86_64-unknown-linux-gnu\"\n"
            "\n"
            "define void @k_0(ptr noalias nocapture noundef readonly %bufs, ptr noalias nocapture noundef readonly "
            "%vars, i32 noundef %core, i32 noundef %cores) #0 {\n"
            "entry:\n"
            "  %not_core0 = icmp ne i32 %core, 0\n"
            "  br i1 %not_core0, label %done, label %start\n"
            "start:\n"
            "  %t0 = getelementptr inbounds ptr, ptr %bufs, i64 0\n"
            "  %data0.1 = load ptr, ptr %t0, align 8\n"
            "  %t1 = getelementptr inbounds ptr, ptr %bufs, i64 1\n"
            "  %data1.5 = load ptr, ptr %t1, align 8\n"
            "  %t2 = getelementptr inbounds ptr, ptr %bufs, i64 2\n"
            "  %data2.6 = load ptr, ptr %t2, align 8\n"
            "  br label %loop7\n"
            "loop7:\n"
            "  %r7 = phi i32 [ 0, %start ], [ %r7.next, %loop7.latch ]\n"
            "  %t3 = icmp slt i32 %r7, 4\n"
            "  br i1 %t3, label %loop7.body, label %loop7.exit\n"
            "loop7.body:\n"
            "  %t4 = mul nsw i32 %r7, 3\n"
            "  br label %loop9\n"
            "loop9:\n"
            "  %r9 = phi i32 [ 0, %loop7.body ], [ %r9.next, %loop9.latch ]\n"
            "  %t5 = icmp slt i32 %r9, 3\n"
            "  br i1 %t5, label %loop9.body, label %loop9.exit\n"
            "loop9.body:\n"
            "  %t6 = add nsw i32 %t4, %r9\n"
            // the address: the index widened term by term (see offset64)
            "  %t7 = sext i32 %r7 to i64\n"
            "  %t8 = mul nsw i64 %t7, 3\n"
            "  %t9 = sext i32 %r9 to i64\n"
            "  %t10 = add nsw i64 %t8, %t9\n"
            "  %t11 = getelementptr inbounds float, ptr %data1.5, i64 %t10\n"
            "  %t12 = load float, ptr %t11, align 4, !alias.scope !6, !noalias !7\n"
            "  %t13 = sext i32 %r9 to i64\n"
            "  %t14 = getelementptr inbounds float, ptr %data2.6, i64 %t13\n"
            "  %t15 = load float, ptr %t14, align 4, !alias.scope !8, !noalias !9\n"
            "  %t16 = fadd contract float %t12, %t15\n"
            "  %t17 = fcmp olt float 0x0000000000000000, %t16\n"  // relu is a where: NaN gives 0
            "  %t18 = select i1 %t17, float %t16, float 0x0000000000000000\n"
            "  %t19 = sext i32 %r7 to i64\n"
            "  %t20 = mul nsw i64 %t19, 3\n"
            "  %t21 = sext i32 %r9 to i64\n"
            "  %t22 = add nsw i64 %t20, %t21\n"
            "  %t23 = getelementptr inbounds float, ptr %data0.1, i64 %t22\n"
            "  store float %t18, ptr %t23, align 4, !alias.scope !4, !noalias !5\n"
            "  br label %loop9.latch\n"
            "loop9.latch:\n"
            "  %r9.next = add nuw nsw i32 %r9, 1\n"
            "  br label %loop9\n"
            "loop9.exit:\n"
            "  br label %loop7.latch\n"
            "loop7.latch:\n"
            "  %r7.next = add nuw nsw i32 %r7, 1\n"
            "  br label %loop7\n"
            "loop7.exit:\n"
            "  ret void\n"
            "done:\n"
            "  ret void\n"
            "}\n"
            "\n"
            "attributes #0 = { nounwind uwtable \"frame-pointer\"=\"none\" \"target-cpu\"=\"haswell\" "
            "\"target-features\"=\"+avx2,+fma\" \"prefer-vector-width\"=\"256\" \"min-legal-vector-width\"=\"0\" }\n"
            "\n"
            "!0 = distinct !{!0, !\"k_0\"}\n"  // one scope per buffer, none aliasing the others
            "!1 = distinct !{!1, !0, !\"bufs[0]\"}\n"
            "!2 = distinct !{!2, !0, !\"bufs[1]\"}\n"
            "!3 = distinct !{!3, !0, !\"bufs[2]\"}\n"
            "!4 = !{!1}\n"
            "!5 = !{!2, !3}\n"
            "!6 = !{!2}\n"
            "!7 = !{!1, !3}\n"
            "!8 = !{!3}\n"
            "!9 = !{!1, !2}\n");
}

// ---------------------------------------------------------------- random programs

TEST(LlvmRandomPrograms, AgreeWithTheOracle) {
  constexpr int kPrograms = 150;
  struct Case {
    std::unique_ptr<Context> ctx;
    std::vector<Tensor> ins, outs;
    schedule::Schedule sched;
    Compiled compiled;
    std::map<std::string, int64_t> vars;
  };
  std::vector<Case> cases;
  std::vector<render::LlvmKernel> lk;
  for (int seed = 0; seed < kPrograms; ++seed) {
    Case c{std::make_unique<Context>(), {}, {}, {}, {}, {}};
    RandomProgram(uint64_t(seed)).build(*c.ctx, c.ins, c.outs, c.vars);
    c.vars[".cores"] = 1 + seed % 3;
    c.sched = schedule::schedule(c.ins, c.outs, "r" + std::to_string(seed));
    c.compiled = compile(c.sched);
    cases.push_back(std::move(c));
  }
  // the widest target this machine runs, each program the target's own
  const target::Target& t = target::runs_here(tgt("x86_64-avx512")) ? tgt("x86_64-avx512") : tgt("x86_64-avx2");
  if (!target::runs_here(t)) GTEST_SKIP() << "this machine runs neither x86_64-avx512 nor x86_64-avx2";
  std::vector<std::vector<codegen::CKernel>> programs;
  for (const Case& c : cases) programs.push_back(c.compiled.programs(t, c.sched.vars));
  for (size_t i = 0; i < cases.size(); ++i)
    for (const auto& k : programs[i]) lk.push_back({k.linear, k.name, cases[i].sched.vars});
  auto start = std::chrono::steady_clock::now();
  crun::Library lib = crun::Library::link_object(
      target::compile_module(t, render::render_llvm_module(t, "random", lk), target::Artifact::Object));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  int mismatches = 0;
  for (int seed = 0; seed < kPrograms; ++seed) {
    const Case& c = cases[size_t(seed)];
    std::mt19937_64 rng(uint64_t(seed) * 7919 + 1);
    oracle::Bindings b;
    b.vars = c.vars;
    std::vector<std::vector<double>> inputs = random_inputs(c.ins, b, rng);
    std::vector<std::vector<double>> want;
    for (const Tensor& o : c.outs) want.push_back(oracle::evaluate(o.uop(), b).doubles());
    std::string diff = differ(crun::run_schedule(c.sched, lib, c.vars, inputs), want, 1);
    if (!diff.empty() && ++mismatches <= 3) ADD_FAILURE() << "program " << seed << ": " << diff;
  }
  EXPECT_EQ(mismatches, 0);
  std::cout << kPrograms << " random programs, " << lk.size() << " kernels in one module, built in " << ms << " ms\n";
}

// ---------------------------------------------------------------- the object

namespace {

schedule::Schedule softmax_schedule(Context& ctx) {
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {ctx.var("M", 1, 64), 100});
  std::vector<Tensor> ins{x}, outs{x.softmax(-1), x.matmul(x.transpose())};
  return schedule::schedule(ins, outs, "k");
}

}  // namespace

// every object target of the table, x86 and cross alike
TEST(LlvmObject, IsTheSameBytesEveryTimeAndNamesNoPath) {
  Context ctx;
  schedule::Schedule s = softmax_schedule(ctx);
  Compiled c = compile(s);
  int objects = 0;
  for (const target::Target& t : target::targets()) {
    if (t.output != target::Output::Object) continue;
    ++objects;
    const char* name = t.name.c_str();
    std::string ir = c.module(t, s.vars, "nn");
    EXPECT_EQ(ir, c.module(t, s.vars, "nn"));
    std::string a = target::compile_module(t, ir, target::Artifact::Object);
    std::string b = target::compile_module(t, ir, target::Artifact::Object);
    ASSERT_GT(a.size(), 64u);
    EXPECT_EQ(a.substr(0, 4), t.arch == "wasm32" ? std::string("\0asm", 4)
                                                 : std::string("\x7f"
                                                               "ELF"))
        << name;
    EXPECT_TRUE(a == b) << name << ": two compiles differ";
    // the machine's paths, absolute (Bazel gives KILN_SOURCE_DIR as "."): the sources, where the test runs
    std::string source = std::filesystem::absolute(KILN_SOURCE_DIR).lexically_normal().string();
    std::string cwd = std::filesystem::current_path().string();
    for (std::string_view path : {std::string_view(source), std::string_view(cwd), std::string_view("/tmp/"),
                                  std::string_view("/work/"), std::string_view("/home/")})
      if (path.size() > 1) {
        EXPECT_EQ(a.find(path), std::string::npos) << name << " names " << path;
      }
    if (t.arch != "wasm32") {                              // a wasm object has no file symbol
      EXPECT_NE(a.find("nn"), std::string::npos) << name;  // the module's name is its file name
    }
    std::string as = target::compile_module(t, ir, target::Artifact::Assembly);
    EXPECT_NE(as.find(".file\t\"nn\""), std::string::npos) << as.substr(0, 400);
    EXPECT_NE(as.find(c.kernels[0].name + ":"), std::string::npos);
  }
  EXPECT_GE(objects, 7);
}

// The emitter compiles a run's modules on many threads at once: the same bytes as one at a time
TEST(LlvmObject, CompilesOnManyThreadsAtOnce) {
  Context ctx;
  schedule::Schedule s = softmax_schedule(ctx);
  Compiled c = compile(s);
  std::vector<std::string> irs, want, got(8);
  for (int i = 0; i < 8; ++i) {
    const target::Target& t = tgt(kTargets[i % 2]);
    irs.push_back(c.module(t, s.vars, "m" + std::to_string(i)));
    want.push_back(target::compile_module(t, irs.back(), target::Artifact::Object));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      got[size_t(i)] = target::compile_module(tgt(kTargets[i % 2]), irs[size_t(i)], target::Artifact::Object);
    });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(got[size_t(i)] == want[size_t(i)]) << i;
}

// Names are the emitter's and the CLI's (a library's, a spec file's): any bytes are spelled as LLVM
// strings, never break the text
TEST(LlvmObject, ModuleAndKernelNamesAreEscaped) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {8}), b = Tensor::input(ctx, "b", dtypes::float32, {8});
  std::vector<Tensor> ins{a, b}, outs{a + b};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  Compiled c = compile(s);
  render::LlvmKernel k{c.kernels[0].linear, "odd \"name\"\\", s.vars};
  std::string ir = render::render_llvm_module(tgt("x86_64-avx2"), "my \"lib\"\n\\x.o", std::span(&k, 1));
  EXPECT_NE(ir.find("source_filename = \"my \\22lib\\22\\0A\\5Cx.o\"\n"), std::string::npos) << ir;
  EXPECT_NE(ir.find("define void @\"odd \\22name\\22\\5C\"("), std::string::npos) << ir;
  std::string obj = target::compile_module(tgt("x86_64-avx2"), ir, target::Artifact::Object);
  EXPECT_NE(obj.find("odd \"name\"\\"), std::string::npos);  // the symbol, as given
}

TEST(LlvmObject, Avx512KernelsUse512BitVectors) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {4096}), b = Tensor::input(ctx, "b", dtypes::float32, {4096});
  std::vector<Tensor> ins{a, b}, outs{(a * b + 1).relu()};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  Compiled c = compile(s);
  std::string avx512 =
      target::compile_module(tgt("x86_64-avx512"), c.module(tgt("x86_64-avx512"), s.vars), target::Artifact::Assembly);
  std::string avx2 =
      target::compile_module(tgt("x86_64-avx2"), c.module(tgt("x86_64-avx2"), s.vars), target::Artifact::Assembly);
  EXPECT_NE(avx512.find("zmm"), std::string::npos) << avx512;
  EXPECT_NE(avx512.find("vfmadd"), std::string::npos) << avx512;  // contracted a * b + 1
  EXPECT_EQ(avx2.find("zmm"), std::string::npos) << avx2;
  EXPECT_NE(avx2.find("ymm"), std::string::npos) << avx2;
}

// The register-tiled matmul's Lane loops read consecutive elements of B: once LLVM unrolls them,
// those are vector loads, not gathers (an int32 index sign-extended as a whole hid it: 3.4x slower)
TEST(LlvmObject, LaneLoopsOfATiledMatmulLoadVectorsNotGathers) {
  Context ctx;
  Tensor a = Tensor::input(ctx, "a", dtypes::float32, {256, 256}),
         b = Tensor::input(ctx, "b", dtypes::float32, {256, 256});
  std::vector<Tensor> ins{a, b}, outs{a.matmul(b)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  Compiled c = compile(s);
  for (const char* name : kTargets) {
    std::string as = target::compile_module(tgt(name), c.module(tgt(name), s.vars), target::Artifact::Assembly);
    EXPECT_EQ(as.find("gather"), std::string::npos) << name << "\n" << as;
    EXPECT_NE(as.find("vfmadd231ps"), std::string::npos) << name;
  }
}

// Every access to a buffer or an accumulator is in its own alias scope: LLVM's vectorizer then
// checks no overlap at run time (without the accumulators' scopes softmax and layernorm did)
TEST(LlvmObject, EveryAccessCarriesItsAliasScope) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {64, 1024});
  std::vector<Tensor> ins{x}, outs{x.softmax(-1), x.layernorm(-1)};
  schedule::Schedule s = schedule::schedule(ins, outs, "k");
  std::string ir = compile(s).module(tgt("x86_64-avx512"), s.vars);
  std::istringstream lines(ir);
  int accesses = 0;
  for (std::string l; std::getline(lines, l);) {
    bool access = l.find(" = load float, ptr") != std::string::npos || l.find("  store float ") == 0;
    if (!access) continue;
    ++accesses;
    EXPECT_NE(l.find("!alias.scope !"), std::string::npos) << l;
    EXPECT_NE(l.find("!noalias !"), std::string::npos) << l;
  }
  EXPECT_GT(accesses, 8);
}

TEST(LlvmObject, ABrokenModuleIsAnInternalErrorNamingTheKernel) {
  const target::Target& t = tgt("x86_64-avx2");
  const std::string broken =  // %x does not dominate its use
      "define void @bad_kernel(ptr %bufs, ptr %vars, i32 %core, i32 %cores) {\n"
      "entry:\n  br label %next\nnext:\n  %y = add i32 %x, 1\n  ret void\nlate:\n  %x = add i32 %core, 1\n"
      "  br label %next\n}\n";
  std::string e;
  try {
    target::compile_module(t, broken, target::Artifact::Object);
  } catch (const InternalError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("bad_kernel"), std::string::npos) << e;
  EXPECT_NE(e.find("does not verify"), std::string::npos) << e;
  EXPECT_NE(e.find("%y = add i32 %x, 1"), std::string::npos) << e;  // the IR
  const std::string unparsable =
      "define void @first() {\n  ret void\n}\n"
      "define void @second() {\n  ret i32 %nope\n}\n";
  e.clear();
  try {
    target::compile_module(t, unparsable, target::Artifact::Object);
  } catch (const InternalError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("kernel second does not parse"), std::string::npos) << e;
}

// ---------------------------------------------------------------- vector IR, built by hand

// What the vector IR will hand the renderer (T.vec(n) values, loads and stores of n consecutive
// elements, lanewise ALU, STACK, vector gates): out[i] = where(a < 0.5, -a, max(a, 0.5)) as float,
// bfloat16 and int32 (times 4), a gated vector load of the first 13 elements, 8 lanes at a time.
TEST(LlvmVectorIr, LanewiseNodesRenderAsVectors) {
  Context ctx;
  const DType f = dtypes::float32, i32 = dtypes::int32;
  auto param = [&](int32_t slot, DType d, std::string_view name) {
    return ctx.make(Op::PARAM, d.as_ptr(), {ctx.cint(16)}, ParamArg{slot, 16, ctx.intern(name)});
  };
  const UOp *out = param(0, f, "out"), *a = param(1, f, "a"), *outi = param(2, i32, "outi"),
            *outb = param(3, dtypes::bfloat16, "outb"), *outg = param(4, f, "outg");
  auto splat = [&](const UOp* c, int n) {
    return ctx.make(Op::STACK, c->dtype.vec(n), std::vector<const UOp*>(size_t(n), c));
  };
  const UOp* two = ctx.cint(2, i32);
  const UOp* r = ctx.make(Op::RANGE, i32, {two}, RangeArg{0, AxisType::Loop});
  const UOp* i = ctx.make(Op::MUL, i32, {r, ctx.cint(8, i32)});
  auto at = [&](const UOp* p, const UOp* idx) { return ctx.make(Op::INDEX, p->dtype.elem(), {p, idx}); };
  const DType v8 = f.vec(8);
  const UOp* la = ctx.make(Op::LOAD, v8, {at(a, i)});
  const UOp* half = ctx.make(Op::CONST, f.vec(8), {}, ConstValue::of_float(0.5));  // a vector CONST: a splat
  const UOp* mx = ctx.make(Op::MAX, v8, {la, half});
  const UOp* lt = ctx.make(Op::CMPLT, dtypes::bool_.vec(8), {la, half});
  const UOp* w = ctx.make(Op::WHERE, v8, {lt, ctx.make(Op::NEG, v8, {la}), mx});
  const UOp* ci = ctx.make(Op::CAST, i32.vec(8), {ctx.make(Op::MUL, v8, {w, splat(ctx.cfloat(4, f), 8)})});
  const UOp* cb = ctx.make(Op::CAST, dtypes::bfloat16.vec(8), {w});
  std::vector<const UOp*> lanes;
  for (int k = 0; k < 8; ++k) lanes.push_back(ctx.cint(k, i32));
  const UOp* iota = ctx.make(Op::STACK, i32.vec(8), lanes);
  const UOp* idx = ctx.make(Op::ADD, i32.vec(8), {iota, splat(i, 8)});
  const UOp* gate = ctx.make(Op::CMPLT, dtypes::bool_.vec(8), {idx, splat(ctx.cint(13, i32), 8)});
  const UOp* gated = ctx.make(Op::WHERE, i32, {gate, i, ctx.invalid()});
  const UOp* lg = ctx.make(Op::LOAD, v8, {at(a, gated)});
  const UOp* st1 = ctx.make(Op::STORE, dtypes::void_, {at(out, i), w});
  const UOp* st2 = ctx.make(Op::STORE, dtypes::void_, {at(outi, i), ci});
  const UOp* st3 = ctx.make(Op::STORE, dtypes::void_, {at(outb, i), cb});
  const UOp* st4 = ctx.make(Op::STORE, dtypes::void_, {at(outg, i), lg});
  const UOp* group = ctx.make(Op::GROUP, dtypes::void_, {st1, st2, st3, st4});
  const UOp* end = ctx.make(Op::END, dtypes::void_, {group, r});
  const UOp* sink = ctx.make(Op::SINK, dtypes::void_, {end}, Name{ctx.intern("vec")});
  // the linear order: every node after its sources
  std::vector<const UOp*> linear = toposort(sink);
  const target::Target& t = tgt("x86_64-avx512");
  render::LlvmKernel k{linear, "vec", {}};
  std::string ir = render::render_llvm_module(t, "vec", std::span(&k, 1));
  EXPECT_NE(ir.find("load <8 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fcmp olt <8 x float> %t"), std::string::npos) << ir;
  EXPECT_NE(ir.find(", splat (float 0x3FE0000000000000)"), std::string::npos) << ir;
  EXPECT_NE(ir.find("fptosi <8 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("@llvm.masked.load.v8f32.p0"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <8 x i16>"), std::string::npos) << ir;  // bfloat16 as its bits
  if (!target::runs_here(t)) GTEST_SKIP() << "this machine does not run AVX-512";
  crun::Library lib = crun::Library::link_object(target::compile_module(t, ir, target::Artifact::Object));
  // every buffer against a guard page after its end, then before its start
  for (guard::Side side : guard::kSides) {
    guard::Array<float> av(16, side), o(16, side, -NAN), og(16, side, -NAN);
    guard::Array<int32_t> oi(16, side, -1);
    guard::Array<uint16_t> ob(16, side, 0xffff);
    for (int j = 0; j < 16; ++j) av[j] = float(j % 5) * 0.375f - 0.6f + (j == 3 ? NAN : 0.0f);
    void* bufs[5] = {o.data(), av.data(), oi.data(), ob.data(), og.data()};
    lib.get("vec")(bufs, nullptr, 0, 1);
    guard::count_run(side);
    for (int j = 0; j < 16; ++j) {
      float x = av[j], want = x < 0.5f ? -x : ((x > 0.5f || x != x) ? x : 0.5f);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(o[j])) << j;
      } else {
        EXPECT_EQ(o[j], want) << j;
        EXPECT_EQ(oi[j], int32_t(want * 4)) << j;
      }
      uint32_t bits;
      std::memcpy(&bits, &want, 4);
      uint16_t wb = (bits & 0x7fffffffu) > 0x7f800000u ? uint16_t((bits >> 16) | 0x40u)
                                                       : uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
      EXPECT_EQ(ob[j], wb) << j;
      if (j < 13)
        EXPECT_TRUE(og[j] == av[j] || (std::isnan(og[j]) && std::isnan(av[j]))) << j;
      else
        EXPECT_EQ(og[j], 0.0f) << j;  // gated off: zero, and nothing read
    }
  }
}

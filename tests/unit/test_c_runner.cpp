// The native runner: hand-written C kernels that follow the kernel ABI, compiled with the system C
// compiler and run as whole schedules, against the kernel-AST interpreter's results.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <filesystem>

#include "generator/schedule/schedule.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/kernel_interp.h"
#include "tests/unit/kernel_testing.h"

namespace kiln::crun {
namespace {

using schedule::Buffer;
using namespace kiln::kernel_testing;  // NOLINT: buffer(), filled(), poisoned()

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- Library

TEST(CRunnerLibrary, CompilesAndCallsAKernel) {
  Library lib = Library::compile(R"(#include <stdint.h>
void add(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  (void)core; (void)cores;
  float* o = b[0];
  const float* x = b[1];
  for (int64_t i = 0; i < v[0]; i++) o[i] = x[i] + 1.0f;
})");
  float x[3] = {1.5f, -2.0f, 7.0f}, o[3] = {0, 0, 0};
  void* bufs[2] = {o, x};
  int64_t vars[1] = {3};
  lib.get("add")(bufs, vars, 0, 1);
  EXPECT_EQ(o[0], 2.5f);
  EXPECT_EQ(o[1], -1.0f);
  EXPECT_EQ(o[2], 8.0f);
}

TEST(CRunnerLibrary, CompileErrorCarriesTheDiagnostic) {
  std::string e;
  try {
    Library::compile("void broken(void* const* b, const int64_t* v) { return undeclared_name; }\n");
  } catch (const CompileError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("undeclared_name"), std::string::npos) << e;
  EXPECT_NE(e.find("-shared"), std::string::npos) << e;  // the command
}

TEST(CRunnerLibrary, ExtraFlagsReachTheCompiler) {
  const char* src =
      "#include <stdint.h>\nvoid k(void* const* b, const int64_t* v, int32_t c, int32_t n) {\n"
      "  (void)v; (void)c; (void)n; *(int32_t*)b[0] = N;\n}\n";
  Library lib = Library::compile(src, {"-DN=42"});
  int32_t out = 0;
  void* bufs[1] = {&out};
  lib.get("k")(bufs, nullptr, 0, 1);
  EXPECT_EQ(out, 42);
  EXPECT_THROW(Library::compile(src), CompileError);  // N undefined without the flag
}

TEST(CRunnerLibrary, MissingSymbolThrows) {
  Library lib = Library::compile("#include <stdint.h>\nvoid present(void* const* b, const int64_t* v) {}\n");
  EXPECT_NO_THROW(lib.get("present"));
  std::string e = error_of([&] { lib.get("absent"); });
  EXPECT_NE(e.find("absent"), std::string::npos) << e;
  EXPECT_NE(e.find(lib.source_path()), std::string::npos) << e;
}

TEST(CRunnerLibrary, MovesAndRemovesItsTemporaryDirectory) {
  std::filesystem::path dir;
  {
    Library a = Library::compile("#include <stdint.h>\nvoid f(void* const* b, const int64_t* v) {}\n");
    dir = std::filesystem::path(a.source_path()).parent_path();
    EXPECT_TRUE(std::filesystem::exists(a.source_path()));
    Library b = std::move(a);
    EXPECT_EQ(b.source_path(), (dir / "src.c").string());
    EXPECT_NO_THROW(b.get("f"));
    EXPECT_THROW(a.get("f"), std::runtime_error);  // NOLINT(bugprone-use-after-move): moved-from is empty
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

#if KILN_SANITIZE
// In a sanitized build the kernels are too: UBSan stops one whose int32 addition overflows.
TEST(CRunnerLibraryDeathTest, KernelsAreSanitizedInASanitizedBuild) {
  Library lib = Library::compile(
      "#include <stdint.h>\nvoid k(void* const* b, const int64_t* v, int32_t c, int32_t n) {\n"
      "  (void)c; (void)n; int32_t* o = b[0]; o[0] = (int32_t)v[0] + 2147483647;\n}\n");
  int32_t out = 0;
  void* bufs[1] = {&out};
  int64_t zero = 0, one = 1;
  lib.get("k")(bufs, &zero, 0, 1);
  EXPECT_EQ(out, 2147483647);
  EXPECT_DEATH(lib.get("k")(bufs, &one, 0, 1), "signed integer overflow");
}
#endif

// ---------------------------------------------------------------- schedules

// The scheduler's kernels for x.sum({0}, true) - x over x[M, 4], by hand in C:
// p_0: t0[j] = sum_i x[i*4+j] (t0 in the arena), p_1: out0[i*4+j] = t0[j] + x[i*4+j] * -1.
constexpr const char* kColumnSumMinusX = R"(#include <stdint.h>
void p_0(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {
  (void)core; (void)cores;
  if (core != 0) return;
  float* t0 = bufs[0];
  const float* x = bufs[1];
  for (int64_t j = 0; j < 4; j++) {
    float acc = 0.0f;
    for (int64_t i = 0; i < vars[0]; i++) acc += x[i * 4 + j];
    t0[j] = acc;
  }
}
void p_1(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {
  (void)core; (void)cores;
  if (core != 0) return;
  float* out0 = bufs[0];
  const float* t0 = bufs[1];
  const float* x = bufs[2];
  for (int64_t i = 0; i < vars[0]; i++)
    for (int64_t j = 0; j < 4; j++) out0[i * 4 + j] = t0[j] + x[i * 4 + j] * -1.0f;
}
)";

TEST(CRunnerSchedule, ScheduledProgramMatchesTheInterpreter) {
  Context ctx;
  const UOp* m = ctx.var("M", 1, 8);
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {m, 4});
  std::vector<Tensor> ins{x}, outs{x.sum({0}, true) - x};
  schedule::Schedule s = schedule::schedule(ins, outs, "p");
  // The C above is written for this plan: two kernels, t0 in the arena, M the only var.
  ASSERT_EQ(s.kernels.size(), 2u) << schedule::describe(s);
  ASSERT_EQ(s.kernels[0].name, "p_0");
  ASSERT_EQ(s.kernels[1].name, "p_1");
  ASSERT_EQ(s.kernels[0].buffers, (std::vector<int32_t>{2, 0})) << schedule::describe(s);
  ASSERT_EQ(s.kernels[1].buffers, (std::vector<int32_t>{1, 2, 0})) << schedule::describe(s);
  ASSERT_EQ(s.buffers[2].kind, Buffer::Kind::Intermediate);
  ASSERT_EQ(s.vars, (std::vector<const UOp*>{m}));

  Library lib = Library::compile(kColumnSumMinusX);
  for (int64_t mv : {1, 3, 8}) {
    std::vector<double> xs;
    for (int64_t i = 0; i < mv * 4; ++i) xs.push_back(0.1 * double(i * 7 % 11) - 0.45);
    interp::Vars vars{{"M", mv}};
    auto want = interp::run_schedule(s, vars, {xs});
    auto got = run_schedule(s, lib, vars, {xs});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].name, "out0");
    EXPECT_EQ(got[0].dtype, dtypes::float32);
    EXPECT_EQ(got[0].shape, (std::vector<int64_t>{mv, 4}));
    EXPECT_EQ(got[0].shape, want[0].shape);
    EXPECT_EQ(got[0].values, want[0].values) << "M=" << mv;  // bit for bit: float32 in the same order
    for (double v : got[0].values) EXPECT_FALSE(std::isnan(v)) << "M=" << mv;
  }
}

// Hand-built plans whose kernels exist both as ASTs (for the interpreter) and as C.
const UOp* param(Context& ctx, int32_t slot, const UOp* count, std::string_view name) {
  return ctx.make(Op::PARAM, dtypes::float32.as_ptr(), {count}, ParamArg{slot, -1, ctx.intern(name)});
}
const UOp* at(const UOp* p, const UOp* idx) { return p->ctx().make(Op::INDEX, p->dtype.elem(), {p, idx}); }
const UOp* loop_store(Context& ctx, std::string_view name, const UOp* o, const UOp* r, const UOp* v) {
  const UOp* st = ctx.make(Op::STORE, dtypes::void_, {at(o, r), v});
  return ctx.make(Op::SINK, dtypes::void_, {ctx.make(Op::END, dtypes::void_, {st, r})}, Name{ctx.intern(name)});
}
// out[i] = x[i] * c
const UOp* scale(Context& ctx, std::string_view name, const UOp* n, double c) {
  const UOp *o = param(ctx, 0, n, "o"), *x = param(ctx, 1, n, "x"), *r = ctx.range(n, 0);
  return loop_store(ctx, name, o, r, Expr(at(x, r)) * Expr(ctx.cfloat(c)));
}
// out[i] = a[i] + b[i]
const UOp* add(Context& ctx, std::string_view name, const UOp* n) {
  const UOp *o = param(ctx, 0, n, "o"), *a = param(ctx, 1, n, "a"), *b = param(ctx, 2, n, "b");
  const UOp* r = ctx.range(n, 0);
  return loop_store(ctx, name, o, r, Expr(at(a, r)) + at(b, r));
}

constexpr const char* kScaleScaleAdd = R"(#include <stdint.h>
void q_0(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  if (core != 0 || cores < 1) return;
  float* o = b[0]; const float* x = b[1];
  for (int64_t i = 0; i < v[0]; i++) o[i] = x[i] * 2.0f;
}
void q_1(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  if (core != 0 || cores < 1) return;
  float* o = b[0]; const float* x = b[1];
  for (int64_t i = 0; i < v[0]; i++) o[i] = x[i] * 3.0f;
}
void q_2(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  if (core != 0 || cores < 1) return;
  float* o = b[0]; const float* a = b[1]; const float* c = b[2];
  for (int64_t i = 0; i < v[0]; i++) o[i] = a[i] + c[i];
}
)";

// t0 = 2x (q_0), t1 = 3x (q_1), out = t0 + t1 (q_2), t1 at `t1_offset` of a 128-byte arena.
schedule::Schedule scale_scale_add(Context& ctx, int64_t t1_offset) {
  const UOp* n = ctx.var("n", 1, 16);
  using K = Buffer::Kind;
  schedule::Schedule s;
  s.buffers = {buffer(K::Input, "x", n, 0), buffer(K::Output, "out", n, 0),
               buffer(K::Intermediate, "t0", n, -1, ctx.cint(0)),
               buffer(K::Intermediate, "t1", n, -1, ctx.cint(t1_offset))};
  s.kernels = {{"q_0", scale(ctx, "q_0", n, 2.0), {2, 0}},
               {"q_1", scale(ctx, "q_1", n, 3.0), {3, 0}},
               {"q_2", add(ctx, "q_2", n), {1, 2, 3}}};
  s.workspace_bytes = ctx.cint(128);
  s.vars = {n};
  return s;
}

TEST(CRunnerSchedule, IntermediatesLiveInTheArenaAtTheirOffsets) {
  Context ctx;
  Library lib = Library::compile(kScaleScaleAdd);
  std::vector<std::vector<double>> in{{1, 2, 3, 4, 5, 6, 7, 8}};
  interp::Vars vars{{"n", 8}};
  auto good = run_schedule(scale_scale_add(ctx, 64), lib, vars, in);
  EXPECT_EQ(good[0].values, (std::vector<double>{5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(good[0].values, interp::run_schedule(scale_scale_add(ctx, 64), vars, in)[0].values);
  // A plan that puts t1 on t0's bytes: q_1 overwrites t0 through the arena, so out = 3x + 3x,
  // exactly as the interpreter computes the same bad plan unchecked.
  auto bad = run_schedule(scale_scale_add(ctx, 0), lib, vars, in, {});  // in the arena, unchecked
  EXPECT_EQ(bad[0].values, (std::vector<double>{6, 12, 18, 24, 30, 36, 42, 48}));
  interp::RunOptions unchecked{.check_workspace_overlap = false, .guard = std::nullopt};
  EXPECT_EQ(bad[0].values, interp::run_schedule(scale_scale_add(ctx, 0), vars, in, unchecked)[0].values);
}

TEST(CRunnerSchedule, BadPlansAndMissingKernelsAreRejectedBeforeRunning) {
  Context ctx;
  Library lib = Library::compile(kScaleScaleAdd);
  std::vector<std::vector<double>> in{{1, 2, 3, 4, 5, 6, 7, 8}};
  interp::Vars vars{{"n", 8}};
  EXPECT_NE(error_of([&] { run_schedule(scale_scale_add(ctx, 32), lib, vars, in); }), "");   // misaligned
  EXPECT_NE(error_of([&] { run_schedule(scale_scale_add(ctx, 128), lib, vars, in); }), "");  // past the arena
  // under guard pages the intermediates are apart, so the plan is checked: t1 on t0's bytes
  std::string overlap = error_of([&] { run_schedule(scale_scale_add(ctx, 0), lib, vars, in); });
  EXPECT_NE(overlap.find("t0 and t1 share workspace bytes"), std::string::npos) << overlap;
  EXPECT_NE(error_of([&] { run_schedule(scale_scale_add(ctx, 64), lib, {}, in); }), "");  // no value for n
  schedule::Schedule s = scale_scale_add(ctx, 64);
  s.kernels[2].name = "q_9";
  std::string e = error_of([&] { run_schedule(s, lib, vars, in); });
  EXPECT_NE(e.find("q_9"), std::string::npos) << e;
}

TEST(CRunnerSchedule, UnwrittenOutputStaysPoisoned) {
  Context ctx;
  const UOp* n = ctx.cint(2);
  schedule::Schedule s;
  s.buffers = {buffer(Buffer::Kind::Input, "x", n, 0), buffer(Buffer::Kind::Output, "out", n, 0)};
  s.workspace_bytes = ctx.cint(0);
  Library lib = Library::compile("#include <stdint.h>\nvoid unused(void* const* b, const int64_t* v) {}\n");
  auto outs = run_schedule(s, lib, {}, {{1, 2}});
  EXPECT_TRUE(std::isnan(outs[0].values[0]) && std::isnan(outs[0].values[1]));
}

// ---------------------------------------------------------------- guard pages

// out[i] = x[i + READ] * 2, then out[i + WRITE] = out[i + WRITE]: one element outside a buffer
// when READ or WRITE is not 0.
constexpr const char* kOffByOne = R"(#include <stdint.h>
void r_0(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  (void)core; (void)cores;
  float* o = b[0]; const float* x = b[1];
  for (int64_t i = 0; i < v[0]; i++) o[i] = x[i + READ] * 2.0f;
  for (int64_t i = 0; i < v[0]; i++) ((volatile float*)o)[i + WRITE] = ((volatile float*)o)[i];
}
)";

schedule::Schedule doubling(Context& ctx) {
  const UOp* n = ctx.var("n", 1, 64);
  schedule::Schedule s;
  s.buffers = {buffer(Buffer::Kind::Input, "x", n, 0), buffer(Buffer::Kind::Output, "out", n, 0)};
  s.kernels = {{"r_0", scale(ctx, "r_0", n, 2.0), {1, 0}}};
  s.workspace_bytes = ctx.cint(0);
  s.vars = {n};
  return s;
}

constexpr guard::Side kAfter[] = {guard::Side::After}, kBefore[] = {guard::Side::Before};

TEST(CRunnerGuardPagesDeathTest, OneElementPastTheEndFaultsWithTheGuardAfter) {
  Context ctx;
  schedule::Schedule s = doubling(ctx);
  std::vector<std::vector<double>> in{std::vector<double>(16, 1.5)};
  Library past = Library::compile(kOffByOne, {"-DREAD=1", "-DWRITE=0"});
  EXPECT_DEATH(
      {
        guard::expect_fault();
        run_schedule(s, past, {{"n", 16}}, in, kAfter);
      },
      "kiln guard pages: SIGSEGV at 0x[0-9a-f]+, 0 bytes past the end of the 64-byte buffer at 0x[0-9a-f]+ "
      "\\(guard page after its end\\)");
  // the same read with the guard before the start reads what follows the buffer on its page
  EXPECT_NO_THROW(run_schedule(s, past, {{"n", 16}}, in, kBefore));
  Library written = Library::compile(kOffByOne, {"-DREAD=0", "-DWRITE=1"});
  EXPECT_DEATH(
      {
        guard::expect_fault();
        run_schedule(s, written, {{"n", 16}}, in, kAfter);
      },
      "0 bytes past the end of the 64-byte buffer");
  // in bounds, both ways: the values of the interpreter
  Library exact = Library::compile(kOffByOne, {"-DREAD=0", "-DWRITE=0"});
  EXPECT_EQ(run_schedule(s, exact, {{"n", 16}}, in)[0].values, std::vector<double>(16, 3.0));
}

TEST(CRunnerGuardPagesDeathTest, OneElementBeforeTheStartFaultsWithTheGuardBefore) {
  Context ctx;
  schedule::Schedule s = doubling(ctx);
  std::vector<std::vector<double>> in{std::vector<double>(10, 1.5)};
  Library before = Library::compile(kOffByOne, {"-DREAD=-1", "-DWRITE=0"});
  EXPECT_DEATH(
      {
        guard::expect_fault();
        run_schedule(s, before, {{"n", 10}}, in, kBefore);
      },
      "4 bytes before the start of the 40-byte buffer at 0x[0-9a-f]+ \\(guard page before its start\\)");
  EXPECT_NO_THROW(run_schedule(s, before, {{"n", 10}}, in, kAfter));  // the page's bytes before the buffer
  Library written = Library::compile(kOffByOne, {"-DREAD=0", "-DWRITE=-1"});
  EXPECT_DEATH(
      {
        guard::expect_fault();
        run_schedule(s, written, {{"n", 10}}, in, kBefore);
      },
      "4 bytes before the start of the 40-byte buffer");
}

// Outputs that depend on where the buffers are (as a read outside them does, where it misses the
// guard) differ between the sides: the runner says so. Each side's run is counted.
TEST(CRunnerGuardPages, RunsThatDifferBetweenTheSidesAreAnErrorAndEachRunIsCounted) {
  Context ctx;
  schedule::Schedule s = doubling(ctx);
  Library where = Library::compile(R"(#include <stdint.h>
void r_0(void* const* b, const int64_t* v, int32_t core, int32_t cores) {
  (void)core; (void)cores;
  float* o = b[0];
  for (int64_t i = 0; i < v[0]; i++) o[i] = (float)((uintptr_t)b[1] % 4096);
})");
  std::string e = error_of([&] { run_schedule(s, where, {{"n", 4}}, {{1, 2, 3, 4}}); });
  EXPECT_NE(e.find("differ between their runs with the guard page after and before the buffers (output out "
                   "element 0: 4080.000000 vs 0.000000)"),
            std::string::npos)
      << e;
  guard::Counts was = guard::counts();
  Library exact = Library::compile(kOffByOne, {"-DREAD=0", "-DWRITE=0"});
  EXPECT_NO_THROW(run_schedule(s, exact, {{"n", 4}}, {{1, 2, 3, 4}}));
  EXPECT_EQ(guard::counts().after, was.after + 1);
  EXPECT_EQ(guard::counts().before, was.before + 1);
  EXPECT_NO_THROW(run_schedule(s, exact, {{"n", 4}}, {{1, 2, 3, 4}}, {}));  // no guard: not counted
  EXPECT_EQ(guard::counts().after, was.after + 1);
}

TEST(CRunnerGuardPages, BuffersSitFlushAgainstTheirGuardAndKeepTheirAlignment) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t bytes : {size_t(0), size_t(4), size_t(40), size_t(4096), size_t(4100)}) {
    guard::Pages after(bytes, guard::Side::After, 4), before(bytes, guard::Side::Before, 4);
    EXPECT_EQ((uintptr_t(after.data()) + bytes) % page, 0u) << bytes;  // the end is the guard's start
    EXPECT_EQ(uintptr_t(before.data()) % page, 0u) << bytes;           // the start is the guard's end
    EXPECT_EQ(after.size(), bytes);
    if (bytes) {
      EXPECT_EQ(std::to_integer<int>(after.data()[bytes - 1]), 0xA5);  // poisoned
    }
  }
  guard::Pages odd(10, guard::Side::After, 8);  // rounded down to its alignment: 6 bytes short of the guard
  EXPECT_EQ(uintptr_t(odd.data()) % 8, 0u);
  EXPECT_EQ((uintptr_t(odd.data()) + 10 + 6) % page, 0u);
  guard::Array<double> xs(std::vector<double>{1, 2, 3}, guard::Side::After);
  EXPECT_EQ(xs.vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ((uintptr_t(xs.end())) % page, 0u);
}

}  // namespace
}  // namespace kiln::crun

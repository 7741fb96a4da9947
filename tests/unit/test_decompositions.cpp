// The decompositions (codegen/decompositions.cpp) and the renderers' own rules (render_rules.cpp):
// the pipeline takes the target, whose math_ops say what its kernels may leave to a library. The
// decomposed math is compiled as C, run on edge values and on random values of every binade, and
// compared with libm in float64; math a target lacks with no decomposition is a MathError.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "generator/codegen/passes.h"
#include "generator/codegen/pipeline.h"
#include "generator/frontend/tensor.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/target/target.h"
#include "tests/unit/c_runner.h"

using namespace kiln;

namespace {

const std::vector<std::string> kStrict = {"-Wall", "-Wextra", "-Werror"};

// the portable C target with no library math: as a freestanding target is
const target::Target& bare() {
  static const target::Target t = [] {
    target::Target b = *target::find("cpu");
    b.name = "bare", b.symbol = "bare", b.freestanding = true;
    b.math_ops.clear();
    return b;
  }();
  return t;
}

std::string c_source(const schedule::Schedule& s, const target::Target& t) {
  codegen::PipelineOptions o;
  o.target = &t;
  std::string src;
  for (const auto& k : s.kernels) src += codegen::compile_to_c(k.ast, s.vars, o).source;
  return src;
}

// an identifier followed by '(': a call of it
bool calls(const std::string& src, const std::string& fn) { return src.find(fn + "(") != std::string::npos; }

enum class Fn { Exp2, Log2, Trunc };

double reference(Fn fn, double x) {
  return fn == Fn::Exp2 ? std::exp2(x) : fn == Fn::Log2 ? std::log2(x) : std::trunc(x);
}

Tensor apply(Fn fn, Tensor x) {
  if (fn == Fn::Exp2) return x.exp2();
  if (fn == Fn::Log2) return x.log2();
  return x.trunc();
}

// The values through `fn` on target t as dtype d, with the C source for the caller to inspect.
std::vector<double> run(Fn fn, DType d, const target::Target& t, const std::vector<double>& xs, std::string* src) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", d, {int64_t(xs.size())});
  std::vector<Tensor> ins{x}, outs{apply(fn, x)};
  schedule::Schedule s = schedule::schedule(ins, outs, "m");
  *src = c_source(s, t);
  crun::Library lib = crun::Library::compile(render::c_preamble() + *src, kStrict);
  return crun::run_schedule(s, lib, {}, {xs})[0].values;
}

// ulp of `want` in d's format (at least the smallest subnormal)
double ulp(double want, DType d) {
  if (d == dtypes::float32) {
    float w = float(want);
    return std::max(double(std::nextafter(w, INFINITY) - w), double(std::numeric_limits<float>::denorm_min()));
  }
  return std::max(std::nextafter(want, INFINITY) - want, std::numeric_limits<double>::denorm_min());
}

void expect_close(Fn fn, DType d, const std::vector<double>& xs, const std::vector<double>& got, double ulps) {
  ASSERT_EQ(got.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    // the reference of the input as the kernel sees it, rounded to d
    double x = d == dtypes::float32 ? double(float(xs[i])) : xs[i];
    double want = reference(fn, x);
    if (d == dtypes::float32) want = double(float(want));
    double g = got[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(g)) << "of " << x << ": got " << g;
    } else if (std::isinf(want) || want == 0 || fn == Fn::Trunc) {
      EXPECT_EQ(std::bit_cast<uint64_t>(g), std::bit_cast<uint64_t>(want))
          << "of " << x << ": got " << g << ", want " << want;
    } else {
      EXPECT_LE(std::abs(g - want), ulps * ulp(want, d)) << "of " << x << ": got " << g << ", want " << want;
    }
  }
}

// edge values, and random values across the binades of d (both signs for exp2 and trunc)
std::vector<double> values(Fn fn, DType d) {
  const bool f32 = d == dtypes::float32;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double tiny =
      f32 ? double(std::numeric_limits<float>::denorm_min()) : std::numeric_limits<double>::denorm_min();
  const double huge = f32 ? double(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
  const double normal = f32 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
  std::vector<double> xs = {0.0,
                            -0.0,
                            1,
                            -1,
                            0.5,
                            -0.5,
                            2,
                            1.5,
                            -1.5,
                            2.5,
                            -2.5,
                            inf,
                            -inf,
                            nan,
                            tiny,
                            -tiny,
                            huge,
                            -huge,
                            normal,
                            normal * 0.75,
                            std::sqrt(2.0),
                            std::sqrt(0.5),
                            1e-7,
                            -1e-7};
  const int emax = f32 ? 127 : 1023, emin = f32 ? -149 : -1074, mant = f32 ? 23 : 52;
  if (fn == Fn::Exp2)
    for (double v : {126.9,  127.99,  128.0,  129.0,  -126.0,  -126.5,  -149.0,  -149.5,  -150.0, -151.0,
                     1000.0, -1000.0, 1023.9, 1024.0, -1022.0, -1074.0, -1075.0, -1076.0, 64.5,   -64.5})
      xs.push_back(v);
  if (fn == Fn::Trunc)
    for (double v : {std::ldexp(1.0, mant) - 0.5, -std::ldexp(1.0, mant) + 0.5, std::ldexp(1.0, mant) + 1,
                     std::ldexp(1.0, mant - 1) + 0.5, 0.999999, -0.999999, 1e30, -1e30})
      xs.push_back(v);
  if (fn == Fn::Log2)
    for (double v : {1 + 1e-7, 1 - 1e-7, 1.4142, 1.4143, 0.7071, 0.7072, 3.0, 1e-30, 1e30}) xs.push_back(v);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int i = 0; i < 400; ++i) {
    double m = mantissa(rng);
    double v;
    if (fn == Fn::Exp2) {
      v = std::ldexp(m, std::uniform_int_distribution<int>(-8, 10)(rng)) * (i % 2 ? -1 : 1);  // |x| < 2048
    } else {
      v = std::ldexp(m, std::uniform_int_distribution<int>(emin, emax - 1)(rng));
      if (fn == Fn::Trunc) v = std::ldexp(m, std::uniform_int_distribution<int>(-4, mant + 2)(rng)) * (i % 2 ? -1 : 1);
    }
    xs.push_back(v);
  }
  return xs;
}

TEST(Decompositions, Log2OnFloat32IsArithmeticOnEveryTarget) {
  // log2f would be one call per element; the polynomial vectorizes
  std::vector<double> xs = values(Fn::Log2, dtypes::float32);
  for (const target::Target* t : {target::find("cpu"), &bare()}) {
    std::string src;
    std::vector<double> got = run(Fn::Log2, dtypes::float32, *t, xs, &src);
    EXPECT_FALSE(calls(src, "log2f")) << src;
    expect_close(Fn::Log2, dtypes::float32, xs, got, 2);
  }
  // and the loop over it is the target's vectors (a comparison of masks would keep it scalar)
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {1024});
  std::vector<Tensor> ins{x}, outs{(x.exp() + 1).log()};
  schedule::Schedule s = schedule::schedule(ins, outs, "softplus");
  std::string src = c_source(s, *target::find("cpu"));
  EXPECT_NE(src.find("kiln_store_vf32x4("), std::string::npos) << src;
}

TEST(Decompositions, Exp2OnFloat32IsArithmeticOnEveryTarget) {
  std::vector<double> xs = values(Fn::Exp2, dtypes::float32);
  for (const target::Target* t : {target::find("cpu"), &bare()}) {
    std::string src;
    std::vector<double> got = run(Fn::Exp2, dtypes::float32, *t, xs, &src);
    EXPECT_FALSE(calls(src, "exp2f")) << src;
    expect_close(Fn::Exp2, dtypes::float32, xs, got, 4);
  }
}

TEST(Decompositions, HostedTargetsLeaveFloat64AndTruncToTheLibrary) {
  std::string src;
  run(Fn::Exp2, dtypes::float64, *target::find("cpu"), {1.5}, &src);
  EXPECT_TRUE(calls(src, "exp2")) << src;
  run(Fn::Log2, dtypes::float64, *target::find("cpu"), {1.5}, &src);
  EXPECT_TRUE(calls(src, "log2")) << src;
  run(Fn::Trunc, dtypes::float32, *target::find("cpu"), {1.5}, &src);
  EXPECT_TRUE(calls(src, "truncf")) << src;
}

// A target without the library: float64 exp2 and log2 and every trunc become arithmetic, and
// compute what libm does
TEST(Decompositions, ATargetWithoutTheLibraryGetsArithmetic) {
  for (DType d : {dtypes::float64, dtypes::float32}) {
    for (Fn fn : {Fn::Exp2, Fn::Log2, Fn::Trunc}) {
      SCOPED_TRACE(to_string(d) + (fn == Fn::Exp2 ? " exp2" : fn == Fn::Log2 ? " log2" : " trunc"));
      std::vector<double> xs = values(fn, d);
      std::string src;
      std::vector<double> got = run(fn, d, bare(), xs, &src);
      for (const char* f : {"exp2", "log2", "trunc", "exp2f", "log2f", "truncf"}) EXPECT_FALSE(calls(src, f)) << f;
      expect_close(fn, d, xs, got, d == dtypes::float64 ? 4 : 2);
    }
  }
}

TEST(Decompositions, HalfPrecisionComputesInFloat32) {
  Context ctx;
  std::vector<double> xs = {0.0,         -0.0, 1,   -1,  0.5,  3.25,     -3.25, 15.5,
                            16,          -24,  -25, 100, -100, 0.000061, 65504, std::numeric_limits<double>::infinity(),
                            std::nan("")};
  for (DType d : {dtypes::float16, dtypes::bfloat16}) {
    Tensor x = Tensor::input(ctx, "x", d, {int64_t(xs.size())});
    std::vector<Tensor> ins{x}, outs{x.exp2(), x.abs().log2(), x.trunc()};
    schedule::Schedule s = schedule::schedule(ins, outs, "h");
    std::string src = c_source(s, bare());
    for (const char* f : {"exp2", "log2", "trunc", "exp2f", "log2f", "truncf"}) EXPECT_FALSE(calls(src, f)) << f;
    crun::Library lib = crun::Library::compile(render::c_preamble() + src, kStrict);
    std::vector<interp::Output> got = crun::run_schedule(s, lib, {}, {xs});
    const double eps = d == dtypes::float16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    auto in_d = [&](double v) {  // v rounded to d, in kiln's own arithmetic
      ConstValue c = ConstValue::of_float(v);
      return exec_alu(Op::CAST, d, std::span<const ConstValue>(&c, 1), dtypes::float64)->f;
    };
    for (size_t i = 0; i < xs.size(); ++i) {
      double x0 = in_d(xs[i]);
      for (int o = 0; o < 3; ++o) {
        double exact = o == 0 ? std::exp2(x0) : o == 1 ? std::log2(std::abs(x0)) : std::trunc(x0);
        double want = in_d(exact), g = got[size_t(o)].values[i];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(g)) << o << " of " << x0;
        } else if (std::isinf(want) || want == 0 || o == 2) {
          EXPECT_EQ(g, want) << o << " of " << x0 << " (" << to_string(d) << ")";
        } else {
          // float32 math then one rounding to d: within one unit of d's precision (or its
          // smallest subnormal)
          EXPECT_NEAR(g, want, std::max(eps * std::abs(want), in_d(std::ldexp(1.0, -24))))
              << o << " of " << x0 << " (" << to_string(d) << ")";
        }
      }
    }
  }
}

TEST(Decompositions, MathATargetCannotComputeIsAnErrorNamingIt) {
  Context ctx;
  Tensor x = Tensor::input(ctx, "x", dtypes::float32, {8});
  for (int which = 0; which < 2; ++which) {
    Tensor y = which == 0 ? x.sin() : x.sqrt();
    std::vector<Tensor> ins{x}, outs{y};
    schedule::Schedule s = schedule::schedule(ins, outs, "s");
    try {
      c_source(s, bare());
      ADD_FAILURE() << "no error for op " << which;
    } catch (const codegen::MathError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("target 'bare'"), std::string::npos) << m;
      EXPECT_NE(m.find(which == 0 ? "sin on float" : "sqrt on float"), std::string::npos) << m;
    }
    EXPECT_NO_THROW(c_source(s, *target::find("cpu")));
  }
}

// The renderers' own rules in the final rewrite: C's division where it agrees with floor, and
// LLVM's shifts by powers of two whatever the sign, which are floor division exactly
TEST(RendererRules, EachRendererGetsItsOwnDivision) {
  Context ctx;
  const target::Target& c = *target::find("cpu");
  const target::Target& object = *target::find("x86_64-avx512");
  auto rewritten = [&](const target::Target& t, int64_t lo, int64_t divisor, Op op) {
    const UOp* v = ctx.make(Op::CAST, dtypes::int32, {ctx.var("v" + std::to_string(lo), lo, 100)});
    return graph_rewrite(ctx.make(op, dtypes::int32, {v, ctx.cint(divisor, dtypes::int32)}),
                         codegen::pm_renderer_rules(t));
  };
  EXPECT_EQ(rewritten(c, 0, 4, Op::FLOORDIV)->op, Op::CDIV);
  EXPECT_EQ(rewritten(object, 0, 4, Op::FLOORDIV)->op, Op::CDIV);
  EXPECT_EQ(rewritten(c, -5, 4, Op::FLOORDIV)->op, Op::FLOORDIV);  // C: >> of a negative is the implementation's
  const UOp* shr = rewritten(object, -5, 4, Op::FLOORDIV);
  ASSERT_EQ(shr->op, Op::SHR);
  EXPECT_EQ(shr->src(1)->ival(), 2);
  const UOp* mask = rewritten(object, -5, 8, Op::FLOORMOD);
  ASSERT_EQ(mask->op, Op::AND);
  EXPECT_EQ(mask->src(1)->ival(), 7);
  EXPECT_EQ(rewritten(object, -5, 6, Op::FLOORDIV)->op, Op::FLOORDIV);  // not a power of two
  // the identities, in kiln's own arithmetic (ir/alu.cpp), over negative and positive values
  for (int64_t x = -70; x <= 70; ++x)
    for (int k = 1; k <= 5; ++k) {
      ConstValue in[2] = {ConstValue::of_int(x), ConstValue::of_int(int64_t(1) << k)};
      ConstValue sh[2] = {ConstValue::of_int(x), ConstValue::of_int(k)};
      ConstValue mk[2] = {ConstValue::of_int(x), ConstValue::of_int((int64_t(1) << k) - 1)};
      EXPECT_EQ(exec_alu(Op::FLOORDIV, dtypes::int32, in)->i, exec_alu(Op::SHR, dtypes::int32, sh)->i) << x << " " << k;
      EXPECT_EQ(exec_alu(Op::FLOORMOD, dtypes::int32, in)->i, exec_alu(Op::AND, dtypes::int32, mk)->i) << x << " " << k;
    }
}

}  // namespace

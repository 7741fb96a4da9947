// argmax and argmin from a spec to a kernel that runs: each along every axis, with keepdim true
// and false (the shape the spec declares must be the one lowered), and over the whole tensor, on
// inputs full of ties. tinygrad's semantics: the first index of the maximum (or minimum). The
// values come from the C kernels compiled and run natively, against the float64 oracle and against
// the first index found by a plain loop.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "generator/codegen/pipeline.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/oracle.h"
#include "tests/unit/tensor_testing.h"

namespace kiln::frontend {
namespace {

// x: [M, 5, 4]; each output: which op, along which axis (-1: the whole tensor), kept dims or not
struct ArgCase {
  std::string out;  // as the spec names it
  bool is_max;
  int axis;
  bool keepdim;
  std::vector<int64_t> shape;  // at M = 3
};

const char* const kSpec = R"(dim M in 1..8
kernel arg(x: f32[M, 5, 4], i: i32[M, 5, 4]) -> (a0: i32[5, 4], a1: i32[M, 1, 4], a2: i32[M, 5], n0: i32[1, 5, 4],
                                               n1: i32[M, 4], n2: i32[M, 5, 1], f: i32[], g: i32[],
                                               j1: i32[M, 1, 4], k2: i32[M, 5]) {
  a0 = x.argmax(0)
  a1 = x.argmax(axis=1, keepdim=true)
  a2 = argmax(x, -1)
  n0 = x.argmin(0, true)
  n1 = x.argmin(axis=1, keepdim=false)
  n2 = argmin(x, 2, keepdim=true)
  f = x.argmax()
  g = argmin(i)
  j1 = i.argmax(1, true)
  k2 = i.argmin(axis=-1)
}
)";

const std::vector<ArgCase> kCases = {
    {"a0", true, 0, false, {5, 4}},    {"a1", true, 1, true, {3, 1, 4}}, {"a2", true, 2, false, {3, 5}},
    {"n0", false, 0, true, {1, 5, 4}}, {"n1", false, 1, false, {3, 4}},  {"n2", false, 2, true, {3, 5, 1}},
    {"f", true, -1, false, {}},        {"g", false, -1, false, {}},      {"j1", true, 1, true, {3, 1, 4}},
    {"k2", false, 2, false, {3, 5}},
};

// the first index of the maximum (minimum) of x [m, 5, 4] along `axis`, row-major over the others
std::vector<double> first_index(const std::vector<double>& x, int64_t m, int axis, bool is_max) {
  const int64_t dims[3] = {m, 5, 4};
  auto at = [&](int64_t a, int64_t b, int64_t c) { return x[size_t((a * 5 + b) * 4 + c)]; };
  auto better = [&](double v, double best) { return is_max ? v > best : v < best; };
  if (axis < 0) {
    size_t best = 0;
    for (size_t k = 1; k < x.size(); ++k)
      if (better(x[k], x[best])) best = k;
    return {double(best)};
  }
  std::vector<double> out;
  for (int64_t a = 0; a < (axis == 0 ? 1 : dims[0]); ++a)
    for (int64_t b = 0; b < (axis == 1 ? 1 : dims[1]); ++b)
      for (int64_t c = 0; c < (axis == 2 ? 1 : dims[2]); ++c) {
        int64_t best = 0;
        for (int64_t k = 1; k < dims[axis]; ++k) {
          int64_t p[3] = {a, b, c}, q[3] = {a, b, c};
          p[axis] = k, q[axis] = best;
          if (better(at(p[0], p[1], p[2]), at(q[0], q[1], q[2]))) best = k;
        }
        out.push_back(double(best));
      }
  return out;
}

// values from a few, so that most rows hold their maximum and minimum more than once; never zero
std::vector<double> with_ties(size_t n, uint64_t seed, const std::vector<double>& from) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, from.size() - 1);
  std::vector<double> v(n);
  for (double& x : v) x = from[pick(rng)];
  return v;
}

struct SpecArgmax : ::testing::Test {
  Context ctx;
  SourceFile file{"arg.kiln", kSpec};
  ParseResult parsed = parse_spec(file);
  LowerResult lowered = lower_spec(ctx, parsed.spec, file);
};

TEST_F(SpecArgmax, LowersToTheShapesItsOutputsDeclare) {
  ASSERT_EQ(render(parsed.diagnostics) + render(check_spec(parsed.spec)) + render(lowered.diagnostics), "");
  ASSERT_EQ(lowered.kernels.size(), 1u);
  const LoweredKernel& k = lowered.kernels[0];
  ASSERT_EQ(k.outputs.size(), kCases.size());
  oracle::Bindings b;
  b.vars = {{"M", 3}};
  for (size_t i = 0; i < kCases.size(); ++i) {
    EXPECT_EQ(k.output_names[i], kCases[i].out);
    EXPECT_EQ(k.outputs[i].dtype(), dtypes::int32) << kCases[i].out;
    EXPECT_EQ(oracle::eval_shape(k.outputs[i].shape(), b), kCases[i].shape) << kCases[i].out;
  }
  // keepdim the other way round is a shape error at the output, naming both shapes
  std::string flipped = kSpec;
  flipped.replace(flipped.find("x.argmax(axis=1, keepdim=true)"), 30, "x.argmax(axis=1, keepdim=false)");
  SourceFile f2{"arg.kiln", flipped};
  ParseResult p2 = parse_spec(f2);
  Context ctx2;
  EXPECT_NE(render(lower_spec(ctx2, p2.spec, f2).diagnostics).find("a1"), std::string::npos);
}

TEST_F(SpecArgmax, RunsAsCAndGivesTheFirstIndexOfTies) {
  ASSERT_TRUE(lowered.ok()) << render(lowered.diagnostics);
  const LoweredKernel& k = lowered.kernels[0];
  schedule::Schedule s = schedule::schedule(k.inputs, k.outputs, "arg");
  std::string src = render::c_preamble();
  for (const auto& kernel : s.kernels) src += codegen::compile_to_c(kernel.ast, s.vars).source;
  crun::Library lib = crun::Library::compile(src, {"-Wall", "-Wextra", "-Werror"});
  for (int64_t m : {1, 3, 8}) {
    std::vector<std::vector<double>> in{with_ties(size_t(m * 20), uint64_t(m), {-2, -0.5, 1, 1.5}),
                                        with_ties(size_t(m * 20), uint64_t(m) + 100, {-3, -1, 2, 7})};
    oracle::Bindings b;
    b.vars = {{"M", m}};
    for (size_t i = 0; i < in.size(); ++i) b.inputs[k.inputs[i].uop()->arg<ParamArg>().slot] = in[i];
    std::vector<interp::Output> got = crun::run_schedule(s, lib, {{"M", m}, {".cores", 2}}, in);
    ASSERT_EQ(got.size(), kCases.size());
    for (size_t i = 0; i < kCases.size(); ++i) {
      const ArgCase& c = kCases[i];
      const std::vector<double>& x = c.out[0] == 'j' || c.out[0] == 'k' || c.out[0] == 'g' ? in[1] : in[0];
      std::vector<double> want = first_index(x, m, c.axis, c.is_max);
      EXPECT_EQ(got[i].values, want) << c.out << " at M=" << m;
      EXPECT_EQ(tensor_testing::eval(k.outputs[i], b), want) << c.out << " (the oracle) at M=" << m;
    }
  }
}

}  // namespace
}  // namespace kiln::frontend

// Specs through the CLI's paths: kiln check (parse, check, lower, schedule), kiln codegen (every
// scheduled kernel to C) and kiln gen (emit::generate: every target and bucket), in process.
// Regressions of valid specs that hit internal errors, run natively against the float64 oracle,
// then random valid specs built from a seeded grammar (elementwise, reductions, matmul, softmax and
// norms, literal and symbolic sizes, buckets): none may be rejected, hit an internal error or
// crash, and a sample of them runs against the oracle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "generator/codegen/pipeline.h"
#include "generator/emit/library.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;

namespace {

// ---------------------------------------------------------------- the CLI's paths

// kiln check: what generator/tools/kiln.cpp's schedule_spec does. `errors` holds the user errors.
struct Checked {
  std::unique_ptr<frontend::SourceFile> source;  // the diagnostics and locations point into it
  std::string errors;
  std::vector<frontend::LoweredKernel> kernels;
  std::vector<schedule::Schedule> schedules;  // one per kernel
  std::vector<const UOp*> dims;
};

Checked check(Context& ctx, const std::string& text) {
  Checked c;
  c.source = std::make_unique<frontend::SourceFile>("fuzz.kiln", text);
  frontend::ParseResult parsed = frontend::parse_spec(*c.source);
  std::vector<frontend::Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = frontend::check_spec(parsed.spec);
  frontend::LowerResult lowered;
  if (errors.empty()) {
    lowered = frontend::lower_spec(ctx, parsed.spec, *c.source);
    errors = std::move(lowered.diagnostics);
  }
  if (errors.empty()) {
    for (const auto& k : lowered.kernels) {
      try {
        c.schedules.push_back(schedule::schedule(k.inputs, k.outputs, k.name, k.output_names));
      } catch (const ShapeError& e) {
        errors.push_back(frontend::diagnostic(k.loc, 1, "cannot schedule kernel '" + k.name + "': " + e.what()));
      }
    }
  }
  c.errors = frontend::render(errors);
  c.kernels = std::move(lowered.kernels);
  c.dims = lowered.dims;
  return c;
}

// kiln codegen: the C of every scheduled kernel, `vars` in the order the kernels take them
std::string codegen_c(const Checked& c, bool schedule_vars) {
  std::string src;
  for (const auto& s : c.schedules)
    for (const auto& k : s.kernels) src += codegen::compile_to_c(k.ast, schedule_vars ? s.vars : c.dims).source;
  return src;
}

// kiln gen: the library's files for a spec written to a file (all targets, every bucket); its errors
std::string gen(const std::string& text, const std::vector<std::string>& targets) {
  static const std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("kiln-spec-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  std::string path = dir + "/fuzz.kiln";
  std::ofstream(path, std::ios::binary) << text;
  emit::GenOptions o;
  o.name = "fz";
  o.targets = targets;
  o.specs = {path};
  emit::GenResult r = emit::generate(o);
  return r.ok ? "" : r.errors.empty() ? "gen failed without errors" : r.errors;
}

// What went wrong on the way through check, codegen and gen ("" for nothing): a valid spec must
// pass all three. Internal errors and any other exception are reported with their message.
std::string through_cli(const std::string& text, const std::vector<std::string>& targets = {"cpu"}) {
  try {
    Context ctx;
    Checked c = check(ctx, text);
    if (!c.errors.empty()) return "check: " + c.errors;
    codegen_c(c, false);
    if (std::string e = gen(text, targets); !e.empty()) return "gen: " + e;
    return "";
  } catch (const InternalError& e) {
    return std::string("internal error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

// ---------------------------------------------------------------- native runs against the oracle

struct Binding {
  std::map<std::string, int64_t> dims;      // the spec's dims at this run
  std::vector<std::vector<double>> inputs;  // per kernel input, or empty: random
  int64_t cores = 1;
};
Binding at(std::map<std::string, int64_t> dims) { return {std::move(dims), {}, 1}; }

// each output of each kernel as `cores` calls one after another, compared with the oracle; "" or
// what differed
std::string compare(const Checked& c, const crun::Library& lib, const Binding& run, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t ki = 0; ki < c.kernels.size(); ++ki) {
    const auto& k = c.kernels[ki];
    oracle::Bindings b;
    b.vars = run.dims;
    std::vector<std::vector<double>> inputs;
    if (run.inputs.empty()) {
      inputs = testing_programs::random_inputs(k.inputs, b, rng);
    } else {
      inputs = run.inputs;
      for (size_t i = 0; i < k.inputs.size(); ++i) b.inputs[k.inputs[i].uop()->arg<ParamArg>().slot] = inputs[i];
    }
    interp::Vars vars = run.dims;
    vars[".cores"] = run.cores;
    std::vector<interp::Output> got = crun::run_schedule(c.schedules[ki], lib, vars, inputs);
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      std::vector<double> want = oracle::evaluate(k.outputs[o].uop(), b).doubles();
      if (got[o].values.size() != want.size()) return k.name + " " + k.output_names[o] + ": size differs";
      double tol = testing_programs::tolerance(got[o].dtype);
      for (size_t j = 0; j < want.size(); ++j) {
        double g = got[o].values[j], w = want[j];
        bool same = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= tol * std::max(1.0, std::abs(w)) && !std::isnan(g);
        if (!same) {
          std::ostringstream os;
          os << k.name << " " << k.output_names[o] << "[" << j << "]: got " << g << ", want " << w;
          return os.str();
        }
      }
    }
  }
  return "";
}

const std::vector<std::string> kStrict = {"-Wall", "-Wextra", "-Werror"};

// A spec through the CLI's paths, then compiled and run natively at each run against the oracle.
void expect_runs(const std::string& text, const std::vector<Binding>& runs) {
  ASSERT_EQ(through_cli(text), "") << text;
  Context ctx;
  Checked c = check(ctx, text);
  std::string src = codegen_c(c, true);
  crun::Library lib = crun::Library::compile(render::c_preamble() + src, kStrict);
  for (const Binding& r : runs)
    for (int64_t cores : {1, 3}) {
      Binding rc = r;
      rc.cores = cores;
      EXPECT_EQ(compare(c, lib, rc, 7), "") << text << cores << " cores\n" << src;
    }
}

}  // namespace

// ---------------------------------------------------------------- regressions (issue 19)

TEST(SpecRegressions, NarrowIntegersTakeTheirLiteralsAtTheirWidth) {
  // x + x is x * 2: the 2 is a literal of the uint8 math, not index math (lower index dtype)
  for (const char* t : {"u8", "i16", "i8", "u16"}) {
    std::string d = t;
    expect_runs("dim M in 1..64\nkernel k(x: " + d + "[M]) -> (y: " + d + "[M], z: " + d +
                    "[M]) {\n  y = x + x\n  z = x * 3 - 1\n}\n",
                {at({{"M", 1}}), at({{"M", 64}})});
  }
}

TEST(SpecRegressions, ADimInFloatMathTakesTheFloatWidth) {
  // 0.5 * N is weak float math on a dim: the concrete cast over it says its width (commit weak)
  expect_runs(
      "dim N in 1..64\nkernel k(x: f32[N]) -> (y: f32[N], z: f16[N]) {\n  y = 0.5 * N * x\n"
      "  z = (x * N + N / 4).cast(dtype=f16)\n}\n",
      {at({{"N", 1}}), at({{"N", 63}})});
}

TEST(SpecRegressions, SplitReductionsOfBucketedDimsSchedule) {
  // a reduction to one value of 2^16 elements or more is split in two kernels; where the split's
  // shapes cannot be proven (a dim declared a multiple of 16, a product of dims) it stays one
  for (const char* b : {"%16", "%64", "%256"}) {
    std::string spec = std::string("dim N in 1..65536 specialize ") + b +
                       "\nkernel k(x: f32[N, 16]) -> (y: f32[1, 16], s: f32[1]) {\n"
                       "  y = x.sum(axis=0, keepdim=true)\n  s = x.sum().reshape((1))\n}\n";
    EXPECT_EQ(through_cli(spec), "") << spec;
  }
  EXPECT_EQ(through_cli("dim N in 1..65536 specialize %16\nkernel k(x: f32[N]) -> (y: f32[1]) {\n"
                        "  y = x.sum(axis=0, keepdim=true)\n}\n"),
            "");
  expect_runs("dim D in 1..1024\nkernel k(x: f32[255, 4, D]) -> (s: f32[1]) {\n  s = x.sum().reshape((1))\n}\n",
              {at({{"D", 1}}), at({{"D", 70}})});
}

TEST(SpecRegressions, SizesOnePastAMultipleOf64ThroughGen) {
  for (const char* spec :
       {"kernel k(x: f32[129]) -> (y: f32[129]) { y = x }\n", "kernel k(x: f32[193]) -> (y: f32[193]) { y = x }\n",
        "kernel k(x: f32[63, 127]) -> (y: f32[63, 127]) { y = x * 2 }\n",
        "dim M in 1..64\nkernel k(a: f32[M, 16], b: f32[16, 129]) -> (y: f32[M, 129]) { y = a @ b }\n",
        "kernel k(x: f32[31, 129]) -> (y: f32[129]) { y = x.sum(axis=0) }\n",
        "dim N in 1..1024 specialize 129, 257\nkernel k(x: f32[N]) -> (y: f32[N]) { y = x * 2 }\n"})
    EXPECT_EQ(through_cli(spec, {"cpu", "x86_64-avx2", "x86_64-avx512"}), "") << spec;
}

TEST(SpecRegressions, WhereKeepsNaNSemantics) {
  // relu and where(0 < x, x, 0) pick 0 for NaN (a MAX would propagate it), as tinygrad does
  double nan = std::nan("");
  expect_runs(
      "kernel k(x: f32[4]) -> (y: f32[4], z: f32[4], w: f32[4]) {\n  y = relu(x)\n"
      "  z = where(0 < x, x, 0)\n  w = where(x < 0, 0, x)\n}\n",
      {Binding{{}, {{nan, -1.0, 2.0, -nan}}, 1}});
}

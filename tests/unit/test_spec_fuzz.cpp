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
#include <optional>
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
#include "tests/unit/ocl_device.h"
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

// `bucket`: lowered for that specialized variant, as kiln gen lowers it
Checked check(Context& ctx, const std::string& text,
              const std::map<std::string, frontend::Specialization>& bucket = {}) {
  Checked c;
  c.source = std::make_unique<frontend::SourceFile>("fuzz.kiln", text);
  frontend::ParseResult parsed = frontend::parse_spec(*c.source);
  std::vector<frontend::Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = frontend::check_spec(parsed.spec);
  frontend::LowerResult lowered;
  if (errors.empty()) {
    lowered = frontend::lower_spec(ctx, parsed.spec, *c.source, bucket);
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
// accesses of the kernels codegen_c compiled, and those the bounds prover could not prove (kiln
// gen and codegen compile those kernels again without opts, and refuse them where that is not
// proven either; counted here so the test can say how many)
int64_t g_accesses = 0, g_unproven = 0;

std::string codegen_c(const Checked& c, bool schedule_vars) {
  std::string src;
  codegen::PipelineOptions po;
  po.require_proven_bounds = false;
  for (const auto& s : c.schedules)
    for (const auto& k : s.kernels) {
      codegen::CKernel ck = codegen::compile_to_c(k.ast, schedule_vars ? s.vars : c.dims, po);
      g_accesses += int64_t(ck.bounds.size());
      for (const codegen::AccessProof& a : ck.bounds) g_unproven += a.how == codegen::AccessProof::How::Unproven;
      src += ck.source;
    }
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
  if (!r.ok) return r.errors.empty() ? "gen failed without errors" : r.errors;
  // a kernel whose opts left an access unproven is emitted without them (slower): a gap to close
  if (r.warnings.find("is not proven") != std::string::npos) return "gen warned: " + r.warnings;
  return "";
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
// `half_slack`: where set, the tolerance is at least that many times the coarsest input dtype's
// (half and bfloat16 round every product and partial sum, the oracle computes in double)
std::string compare(const Checked& c, const crun::Library& lib, const Binding& run, uint64_t seed,
                    double half_slack = 0) {
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
      for (const Tensor& in : k.inputs)
        if (is_float(in.dtype())) tol = std::max(tol, half_slack * testing_programs::tolerance(in.dtype()));
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

TEST(SpecRegressions, NegativeLiteralsOnU64AreItsLargestValue) {
  // -1 next to a uint64 is 2^64 - 1, as C's conversion and tinygrad's make it: out of no range
  expect_runs(
      "dim M in 1..64\nkernel k(x: u64[M]) -> (a: u64[M], b: u64[M], c: bool[M], d: bool[M]) {\n"
      "  a = maximum(x, -1)\n  b = idiv(x, -1)\n  c = x < -1\n  d = -1 < x\n}\n",
      {at({{"M", 1}}), at({{"M", 64}})});
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

TEST(SpecRegressions, SoftmaxOfAConstantRow) {
  // the exp of a row that does not vary along it is no term for the opts to store in the row (the
  // substitution that would read it back made a cycle)
  expect_runs(
      "dim M in 1..4\nkernel k(x: f32[255, 64, M]) -> (y: f32[255, 64, M], z: f32[3, 8]) {\n"
      "  y = softmax(x - x, axis=-1)\n  z = log_softmax(x.sum(axis=2).shrink(((0, 3), (0, 8))) * 0, axis=-1)\n}\n",
      {at({{"M", 1}}), at({{"M", 4}})});
}

TEST(SpecRegressions, AnAccumulatorWhoseUpdateFoldsAwayKeepsItsInit) {
  // max(acc, x % 1) on uint8 is max(acc, 0), is acc: the update stores what is there (a NOOP),
  // and the result still reads the accumulator after its init (in lanes and as one register)
  expect_runs(
      "dim M in 1..64\nkernel k(x: u8[M, 1, M], w: u8[64, 64]) -> (y: f32[1, M], z: u8[64], s: u8[1]) {\n"
      "  y = (mod(x, 1)).max(axis=0).cast(dtype=f32)\n  z = (mod(w, 1)).max(axis=0)\n"
      "  s = (mod(w, 1)).max().reshape((1))\n}\n",
      {at({{"M", 3}}), at({{"M", 64}})});
}

TEST(SpecRegressions, WhereKeepsNaNSemantics) {
  // relu and where(0 < x, x, 0) pick 0 for NaN (a MAX would propagate it), as tinygrad does
  double nan = std::nan("");
  expect_runs(
      "kernel k(x: f32[4]) -> (y: f32[4], z: f32[4], w: f32[4]) {\n  y = relu(x)\n"
      "  z = where(0 < x, x, 0)\n  w = where(x < 0, 0, x)\n}\n",
      {Binding{{}, {{nan, -1.0, 2.0, -nan}}, 1}});
}

// ---------------------------------------------------------------- random valid specs

namespace {

// A grammar of valid specs: dims with ranges and buckets, then one kernel of a random kind over
// inputs whose sizes are literals (1 past a multiple of 64 included) or dims. Every output is
// cast to its declared dtype, so only the ops' validity needs tracking, not promotion.
class SpecGrammar {
 public:
  explicit SpecGrammar(uint64_t seed) : rng_(seed) {}

  std::string build(const std::string& kernel) {
    std::ostringstream spec;
    int ndims = pick(0, 2);
    for (int i = 0; i < ndims; ++i) {
      Declared d{i == 0 ? "M" : "N", 1, one_of<int64_t>({4, 16, 64, 300, 1024, 70000})};
      spec << "dim " << d.name << " in " << d.lo << ".." << d.hi;
      std::vector<std::string> buckets;
      for (int b = pick(0, 2); b-- > 0;) {
        int64_t k = one_of<int64_t>({4, 16, 64, 256});
        int64_t v = std::min(d.hi, one_of<int64_t>({1, 3, 16, 64, 129, d.hi}));
        std::string s = coin(2) && k <= d.hi ? "%" + std::to_string(k) : std::to_string(v);
        if (std::find(buckets.begin(), buckets.end(), s) == buckets.end()) buckets.push_back(s);
      }
      for (size_t b = 0; b < buckets.size(); ++b) spec << (b ? ", " : " specialize ") << buckets[b];
      spec << "\n";
      d.buckets = buckets;
      dims_.push_back(d);
    }
    dtype_ =
        one_of<std::string>({"f32", "f32", "f32", "f32", "f32", "f16", "bf16", "i32", "i32", "u8", "i16", "i8", "u64"});
    is_int_ = dtype_[0] != 'f' && dtype_[0] != 'b';
    body_.clear();
    params_.clear();
    outs_.clear();
    switch (pick(0, is_int_ ? 5 : 8)) {
      case 0:
      case 1:
        elementwise();
        break;
      case 2:
        reduction();
        break;
      case 3:
        matmul();
        break;
      case 4:
        movement();
        break;
      case 5:
        is_int_ ? misc() : statistics();
        break;
      case 6:
        misc();
        break;
      default:
        row_op();
        break;
    }
    spec << "kernel " << kernel << "(";
    for (size_t i = 0; i < params_.size(); ++i) spec << (i ? ", " : "") << params_[i];
    spec << ") -> (";
    for (size_t i = 0; i < outs_.size(); ++i) spec << (i ? ", " : "") << outs_[i];
    spec << ") {\n" << body_ << "}\n";
    return spec.str();
  }

  // the dims' values at which a run stays small (each dim at its low end, somewhere small, or 129)
  std::map<std::string, int64_t> small_binding() {
    std::map<std::string, int64_t> b;
    for (const Declared& d : dims_) b[d.name] = std::min(d.hi, one_of<int64_t>({1, 2, 5, 17, 64, 129}));
    return b;
  }
  // one of the specialized variants (a bucket of each dim that has buckets) and dims in it, or
  // nothing when no dim has buckets
  std::optional<std::pair<std::map<std::string, frontend::Specialization>, std::map<std::string, int64_t>>>
  bucket_binding() {
    std::map<std::string, frontend::Specialization> bucket;
    std::map<std::string, int64_t> b = small_binding();
    for (const Declared& d : dims_) {
      if (d.buckets.empty()) continue;
      const std::string& t = d.buckets[size_t(pick(0, int(d.buckets.size()) - 1))];
      frontend::Specialization sp;
      sp.multiple = t[0] == '%';
      sp.value = std::stoll(sp.multiple ? t.substr(1) : t);
      bucket[d.name] = sp;
      b[d.name] = sp.multiple && 2 * sp.value <= d.hi && coin(2) ? 2 * sp.value : sp.value;
    }
    if (bucket.empty()) return std::nullopt;
    return std::pair{bucket, b};
  }
  // the largest number of elements an input or output has at binding b
  int64_t largest(const std::map<std::string, int64_t>& b) const {
    int64_t most = 0;
    for (const auto& s : shapes_) {
      int64_t n = 1;
      for (const std::string& d : s) n *= b.count(d) ? b.at(d) : std::stoll(d);
      most = std::max(most, n);
    }
    return most;
  }

 private:
  struct Declared {
    std::string name;
    int64_t lo, hi;
    std::vector<std::string> buckets = {};  // "%16", "129"
  };
  using Shape = std::vector<std::string>;  // a dim name or a literal size per axis

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(int one_in) { return pick(1, one_in) == 1; }
  template <class T> T one_of(std::vector<T> v) { return v[size_t(pick(0, int(v.size()) - 1))]; }

  std::string size() {
    if (!dims_.empty() && coin(3)) return dims_[size_t(pick(0, int(dims_.size()) - 1))].name;
    if (coin(40)) return one_of<std::string>({"1000", "4097", "65537"});
    return one_of<std::string>(
        {"1", "2", "3", "4", "5", "7", "8", "16", "31", "63", "64", "65", "127", "128", "129", "193", "255", "257"});
  }
  Shape shape(int rank) {
    Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(size());
    // keep literal shapes to a few million elements (codegen does not care; the runs do)
    int64_t n = 1;
    for (const std::string& d : s)
      if (std::isdigit(d[0])) n *= std::stoll(d);
    if (n > (1 << 22)) s.back() = "3";
    return s;
  }
  static std::string str(const Shape& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i];
    return r + "]";
  }
  std::string bound_dim() const {
    for (const Shape& sh : shapes_)
      for (const std::string& d : sh)
        if (!std::isdigit(d[0])) return d;
    return "";
  }
  std::string input(const std::string& name, const Shape& s, const std::string& dtype) {
    params_.push_back(name + ": " + dtype + str(s));
    shapes_.push_back(s);
    return name;
  }
  void output(const std::string& name, const Shape& s, const std::string& expr) {
    // float math cast to an int rounds differently at the boundaries than the oracle's doubles
    std::vector<std::string> others = is_int_ ? std::vector<std::string>{"f32", "f16", "i32", "bool"}
                                              : std::vector<std::string>{"f32", "f16", "bf16"};
    std::string dtype = coin(6) ? one_of(others) : dtype_;
    outs_.push_back(name + ": " + dtype + str(s));
    shapes_.push_back(s);
    body_ += "  " + name + " = (" + expr + ").cast(dtype=" + dtype + ")\n";
  }
  std::string literal(bool positive = false) {
    if (is_int_) {
      bool neg = !positive && dtype_[0] != 'u' && coin(3);
      return (neg ? "-" : "") + std::to_string(pick(1, 9));
    }
    return one_of<std::string>(positive ? std::vector<std::string>{"0.5", "2", "1.5", "3"}
                                        : std::vector<std::string>{"0.5", "2", "-1.5", "3", "-0.25", "1"});
  }

  // an elementwise expression over the leaves (values bounded: no division by what may be 0)
  std::string expr(const std::vector<std::string>& leaves, int depth) {
    if (depth == 0 || coin(4)) return coin(5) ? "(" + leaves[0] + " + " + literal() + ")" : one_of(leaves);
    std::string a = expr(leaves, depth - 1), b = expr(leaves, depth - 1);
    if (is_int_) {
      bool uns = dtype_[0] == 'u';
      switch (pick(0, 7)) {
        case 0:
          return "(" + a + " + " + b + ")";
        case 1:
          return uns ? "(" + a + " * " + literal(true) + ")" : "(" + a + " - " + b + ")";
        case 2:
          return "(" + a + " * " + b + ")";
        case 3:
          return "maximum(" + a + ", " + b + ")";
        case 4:
          return "minimum(" + a + ", " + literal() + ")";
        case 5:
          return "idiv(" + a + ", " + literal(true) + ")";
        case 6:
          return "mod(" + a + ", " + literal(true) + ")";
        default:
          return "where(" + a + " > " + literal() + ", " + a + ", " + b + ")";
      }
    }
    switch (pick(0, 13)) {
      case 0:
        return "(" + a + " + " + b + ")";
      case 1:
        return "(" + a + " - " + b + ")";
      case 2:
        return "(" + a + " * " + b + ")";
      case 3:
        return "(" + a + " / (abs(" + b + ") + 1))";
      case 4:
        return "maximum(" + a + ", " + b + ")";
      case 5:
        return "minimum(" + a + ", " + literal() + ")";
      case 6:
        return "where(" + a + " > " + literal() + ", " + a + ", " + b + ")";
      case 7:
        return one_of<std::string>({"relu", "tanh", "sigmoid", "abs", "neg", "sin", "gelu", "silu"}) + "(" + a + ")";
      case 8:
        return "exp(tanh(" + a + "))";
      case 9:
        return one_of<std::string>({"sqrt", "log", "rsqrt"}) + "(abs(" + a + ") + 1)";
      case 10:
        return "(" + a + " * " + literal() + ")";
      case 11:
        return "(" + a + " ** 2)";
      case 12:
        return "where(" + a + " < " + b + ", " + literal() + ", " + a + ")";
      default: {  // a dim in float math (an argument's shape gives it: gen binds dims from shapes)
        std::string d = bound_dim();
        return !d.empty() ? "(" + a + " * " + d + " * 0.125)" : "(" + a + " + 0.5)";
      }
    }
  }

  // an expression of the leaves that has the full shape: x takes part
  static std::string with_x(const std::string& e) { return e.find("x0") == std::string::npos ? "(" + e + " + x0)" : e; }

  void elementwise() {
    Shape s = shape(pick(1, 3));
    std::vector<std::string> leaves{input("x0", s, dtype_)};
    if (coin(2)) leaves.push_back(input("x1", s, dtype_));
    if (coin(3)) leaves.push_back(input("row", {s.back()}, dtype_));  // broadcast along the rows
    output("out", s, with_x(expr(leaves, pick(0, 3))));
    if (coin(4)) output("out2", s, with_x(expr(leaves, 1)));
  }

  void reduction() {
    int rank = pick(1, 3);
    Shape s = shape(rank);
    std::vector<std::string> leaves{input("x0", s, dtype_)};
    if (coin(3)) leaves.push_back(input("x1", s, dtype_));
    std::string e = expr(leaves, pick(0, 2));
    std::vector<std::string> ops =
        is_int_ ? std::vector<std::string>{"sum", "max"} : std::vector<std::string>{"sum", "max", "min", "mean"};
    std::string op = one_of(ops);
    if (coin(4)) {  // to one value
      output("out", {"1"}, "(" + e + ")." + op + "().reshape((1))");
      return;
    }
    int axis = pick(0, rank - 1);
    bool keep = rank == 1 || coin(2);  // an output has a dim at least
    Shape o;
    for (int i = 0; i < rank; ++i)
      if (i != axis || keep) o.push_back(i == axis ? "1" : s[size_t(i)]);
    output("out", o, "(" + e + ")." + op + "(axis=" + std::to_string(axis) + (keep ? ", keepdim=true" : "") + ")");
  }

  void matmul() {
    std::string m = size(), k = coin(2) ? size() : one_of<std::string>({"16", "3", "129"}), n = size();
    std::string a = input("a", {m, k}, dtype_), b = input("w", {k, n}, dtype_);
    std::string e = a + " @ " + b;
    if (coin(2)) e = "(" + e + " + " + input("bias", {n}, dtype_) + ")";
    if (!is_int_ && coin(2)) e = "relu(" + e + ")";
    output("out", {m, n}, e);
  }

  // reads through transposes and permutes, a reduction of a reduction
  void movement() {
    int rank = pick(2, 3);
    Shape s = shape(rank), t = s;
    std::string x = input("x0", s, dtype_), e;
    if (rank == 2 || coin(2)) {
      std::swap(t[size_t(rank) - 2], t[size_t(rank) - 1]);
      e = "(" + x + ").transpose(-2, -1)";  // tinygrad's default, (1, 0), differs at rank 3
    } else {
      t = {s[2], s[0], s[1]};
      e = "(" + x + ").permute((2, 0, 1))";
    }
    if (coin(2)) e = "(" + e + " + " + input("x1", t, dtype_) + ")";
    output("out", t, with_x(expr({e}, 1)));
    if (coin(2)) output("total", {"1"}, "(" + x + ").max(axis=-1).sum().reshape((1))");
  }

  // statistics broadcast back over what they summarize: by rows (one kernel) or by columns
  void statistics() {
    Shape s = shape(2);
    std::string x = input("x0", s, dtype_);
    int axis = pick(0, 1);
    std::string a = std::to_string(axis), st = one_of<std::string>({"mean", "max", "sum"});
    output("out", s, "(" + x + " - (" + x + ")." + st + "(axis=" + a + ", keepdim=true)) * 0.5");
    if (coin(2)) output("smax", s, "softmax(" + x + ", axis=" + a + ")");
  }

  // cat, pad, flip, shrink, argmax and a bool condition over a 2-D input
  void misc() {
    Shape s = shape(2);
    std::string x = input("x0", s, dtype_);
    auto lit = [&](int a) { return std::isdigit(s[size_t(a)][0]) ? std::stoll(s[size_t(a)]) : int64_t(-1); };
    switch (pick(0, 4)) {
      case 0: {  // along an axis of literal size
        int a = lit(0) > 0 ? 0 : lit(1) > 0 ? 1 : -1;
        if (a < 0) return output("out", s, "(" + x + ").flip(axis=(0, 1))");
        Shape t = s, o = s;
        t[size_t(a)] = one_of<std::string>({"1", "3", "64"});
        o[size_t(a)] = std::to_string(lit(a) + std::stoll(t[size_t(a)]));
        return output("out", o, "cat((" + x + ", " + input("x1", t, dtype_) + "), axis=" + std::to_string(a) + ")");
      }
      case 1: {  // padded axes of literal size, a dim's axis left alone
        Shape o = s;
        std::string pads;
        for (int a = 0; a < 2; ++a) {
          int64_t before = lit(a) > 0 ? pick(0, 2) : 0, after = lit(a) > 0 ? pick(0, 65) : 0;
          if (lit(a) > 0) o[size_t(a)] = std::to_string(lit(a) + before + after);
          pads += (a ? ", (" : "(") + std::to_string(before) + ", " + std::to_string(after) + ")";
        }
        return output("out", o, "(" + x + ").pad((" + pads + ")) * 2");
      }
      case 2: {  // the inner part of axes of literal size
        Shape o = s;
        std::string bounds;
        for (int a = 0; a < 2; ++a) {
          int64_t n = lit(a), b = n > 2 ? 1 : 0, e = n > 2 ? n - 1 : n;
          if (n > 0) o[size_t(a)] = std::to_string(e - b);
          bounds += (a ? ", (" : "(") + std::to_string(b) + ", " + (n > 0 ? std::to_string(e) : s[size_t(a)]) + ")";
        }
        return output("out", o, "(" + x + ").shrink((" + bounds + ")) + 1");
      }
      case 3:
        return output("out", {s[0]}, "argmax(" + x + ", axis=1)");
      default:
        return output("out", s, "where(" + input("cond", s, "bool") + ", " + x + ", " + x + " * " + literal() + ")");
    }
  }

  void row_op() {
    Shape s = shape(pick(1, 3));
    std::string x = input("x0", s, dtype_);
    std::string e = coin(2) ? x : expr({x}, 1);
    std::string f = one_of<std::string>({"softmax", "log_softmax", "layernorm", "rmsnorm"});
    output("out", s, f + "(" + e + ", axis=-1)");
  }

  std::mt19937_64 rng_;
  std::vector<Declared> dims_;
  std::string dtype_, body_;
  bool is_int_ = false;
  std::vector<std::string> params_, outs_;
  std::vector<Shape> shapes_;
};

}  // namespace

TEST(SpecFuzz, RandomValidSpecsPassCheckCodegenAndGen) {
  // 3,000 specs through the three paths (a few ms each), every 15th also run against the oracle;
  // the runs' kernels are compiled as one C file. Under the sanitizers (the asan preset), where
  // each takes six times as long, the first 1,000 of the same specs.
  constexpr int kSpecs = oclrun::kSanitized ? 1000 : 3000;  // (GCC's and Clang's ASan)
  constexpr int kRunEvery = 15;
  auto start = std::chrono::steady_clock::now();
  int failures = 0;
  struct Sampled {
    std::string text;
    std::unique_ptr<Context> ctx;
    Checked checked;
    std::vector<std::map<std::string, int64_t>> at;
  };
  std::vector<Sampled> runs;
  std::string c_source = render::c_preamble();
  for (int i = 0; i < kSpecs && failures < 10; ++i) {
    uint64_t seed = 1000 + uint64_t(i);
    SpecGrammar g(seed);
    std::string text = g.build("k" + std::to_string(i));
    std::string why = i % 10 == 0 ? through_cli(text, {"cpu", "x86_64-avx2", "x86_64-avx512"}) : through_cli(text);
    if (!why.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ": " << why << "\n" << text;
      continue;
    }
    // half-precision comparisons flip where the oracle's doubles fall within a rounding of a tie
    bool half_compare = text.find("f16[") != std::string::npos &&
                        (text.find(" < ") != std::string::npos || text.find(" > ") != std::string::npos);
    if (i % kRunEvery != 0 || half_compare) continue;
    std::vector<std::map<std::string, int64_t>> at;
    for (int b = 0; b < 2; ++b)
      if (auto v = g.small_binding(); g.largest(v) <= 40000) at.push_back(v);
    if (!at.empty()) {
      Sampled s{text, std::make_unique<Context>(), {}, at};
      s.checked = check(*s.ctx, text);
      c_source += codegen_c(s.checked, true);
      runs.push_back(std::move(s));
    }
    // a specialized variant, as gen lowers it (its kernels renamed: the same grammar, seed and name)
    if (auto bb = g.bucket_binding(); bb && g.largest(bb->second) <= 40000) {
      SpecGrammar again(seed);
      std::string renamed = again.build("k" + std::to_string(i) + "b");
      Sampled s{renamed, std::make_unique<Context>(), {}, {bb->second}};
      s.checked = check(*s.ctx, renamed, bb->first);
      if (!s.checked.errors.empty()) {
        ADD_FAILURE() << "seed " << seed << " bucket: " << s.checked.errors << "\n" << renamed;
        continue;
      }
      c_source += codegen_c(s.checked, true);
      runs.push_back(std::move(s));
    }
  }
  crun::Library lib = crun::Library::compile(c_source, {"-O1"});
  for (const Sampled& s : runs)
    for (const auto& dims : s.at)
      for (int64_t cores : {1, 3}) {
        Binding b = at(dims);
        b.cores = cores;
        // a sum of 65 products of magnitude 1 in bfloat16 is off by more than one rounding step
        EXPECT_EQ(compare(s.checked, lib, b, 11, 4), "") << cores << " cores\n" << s.text;
      }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << kSpecs << " specs, " << runs.size() << " run against the oracle, in " << secs
            << " s; bounds: " << g_accesses << " accesses of codegen's kernels, " << g_unproven << " not proven\n";
  EXPECT_EQ(g_unproven, 0) << "kiln gen would refuse these specs (an internal error)";
}

namespace {

// the outputs of a spec's one kernel, run natively on `inputs`
std::vector<interp::Output> outputs_of(const std::string& text, const std::vector<std::vector<double>>& inputs) {
  EXPECT_EQ(through_cli(text), "") << text;
  Context ctx;
  Checked c = check(ctx, text);
  crun::Library lib = crun::Library::compile(render::c_preamble() + codegen_c(c, true), kStrict);
  return crun::run_schedule(c.schedules.at(0), lib, {{".cores", 1}}, inputs);
}

}  // namespace

TEST(SpecRegressions, AFlattenedSymbolicTensorIsReadAtItsPosition) {
  // SpecFuzz seed 3856: the mean of a [255, M, N] tensor flattens it, and the reshape's index math
  // took the position apart by M and N and put it back together, in a form the prover could not
  // follow in the N == 256 variant. The buffer is now read at the position itself.
  std::string text =
      "dim M in 1..100\n"
      "dim N in 1..300 specialize 300, %256\n"
      "kernel k(x0: f16[255, M, N]) -> (out: f16[1]) {\n"
      "  out = ((x0).mean().reshape((1))).cast(dtype=f16)\n"
      "}\n";
  EXPECT_EQ(through_cli(text, {"cpu", "x86_64-avx512"}), "");
  Context ctx;
  Checked c = check(ctx, text, {{"N", frontend::Specialization{true, 256, {}}}});
  ASSERT_EQ(c.errors, "");
  int64_t unproven = g_unproven;
  codegen_c(c, true);
  EXPECT_EQ(g_unproven, unproven);  // with its opts
}

TEST(SpecRegressions, PowOfNegativeZeroKeepsItsSign) {
  // IEEE (and tinygrad): (-0.0) ** -1 is -inf, (-0.0) ** 3 is -0.0; even powers are +
  const double inf = std::numeric_limits<double>::infinity();
  auto out = outputs_of(
      "kernel k(x: f32[4]) -> (a: f32[4], b: f32[4], c: f32[4]) {\n"
      "  a = x ** -1\n  b = x ** 3\n  c = x ** -2\n}\n",
      {{-0.0, 0.0, -2.0, 2.0}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].values, (std::vector<double>{-inf, inf, -0.5, 0.5}));
  EXPECT_TRUE(std::signbit(out[1].values[0]));
  EXPECT_FALSE(std::signbit(out[1].values[1]));
  EXPECT_EQ(out[1].values[2], -8.0);
  EXPECT_EQ(out[2].values, (std::vector<double>{inf, inf, 0.25, 0.25}));
}

TEST(SpecRegressions, WhereOfTwoLiteralsIsOfTheDefaultDtype) {
  // tinygrad's where(c, 1.0, -1.0) is float32 (and of two ints, int32): it can be an f32 output
  auto out = outputs_of(
      "kernel k(c: bool[3]) -> (y: f32[3], z: i32[3]) {\n"
      "  y = where(c, 1.0, -1.0)\n  z = where(c, 7, -2)\n}\n",
      {{1, 0, 1}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].values, (std::vector<double>{1.0, -1.0, 1.0}));
  EXPECT_EQ(out[1].values, (std::vector<double>{7, -2, 7}));
}

TEST(SpecRegressions, IntegerToANonNegativeIntegerLiteralStaysAnInteger) {
  // i32 ** 2 is i32 in tinygrad, exact (and wrapping) like x * x
  auto out = outputs_of(
      "kernel k(x: i32[4]) -> (a: i32[4], b: i32[4], c: u8[4]) {\n"
      "  a = x ** 2\n  b = x ** 0 + x ** 1 + x ** 5\n  c = x.cast(dtype=u8) ** 3\n}\n",
      {{-3, 0, 7, 50000}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].values, (std::vector<double>{9, 0, 49, double(int32_t(50000u * 50000u))}));
  auto p5 = [](int64_t v) {
    uint32_t u = uint32_t(v);
    return double(int32_t(u * u * u * u * u));
  };
  EXPECT_EQ(out[1].values, (std::vector<double>{1 - 3 + p5(-3), 1, 1 + 7 + p5(7), 1 + 50000 + p5(50000)}));
  EXPECT_EQ(out[2].values,
            (std::vector<double>{double(uint8_t(253 * 253 * 253)), 0, 343 % 256, double(uint8_t(80 * 80 * 80))}));
}

// Random opts against the oracle (tinygrad's linearizer fuzzer, made stronger): random programs of
// the frontend's op set, over random shapes with symbolic dims declared over ranges with buckets,
// each bucket's variant built as kiln gen lowers it; every kernel takes a random valid opt sequence
// (UPCAST, UNROLL, LANES, THREAD, PADTO, SWAP and the GPU opts, drawn one at a time from those that
// apply to the kernel as the opts before left it, amounts that divide or not: one that does not
// apply is redrawn) through PipelineOptions::tuned, as kiln gen applies kiln tune's; every pair is
// rendered as C and as LLVM (an object for the widest x86 target this machine runs), and every other
// pair's kernels also through the GPU stages as OpenCL C (with the pair's opts where a GPU target
// takes them all, LANES as OpenCL's vectors; else with the GPU heuristics'); each runs natively or on the OpenCL device
// on random non-zero inputs and poisoned outputs at each dim's least and largest value and one between, compared with
// the float64 oracle. A failure prints its seed and opts and how to replay it: KILN_OPTS_FUZZ_SEED=<seed> runs that
// seed alone and prints its kernels; KILN_OPTS_FUZZ_PAIRS=<n> runs n pairs; KILN_OPTS_FUZZ_TRACE=1 prints each pair's
// opts as it compiles.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/pipeline.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/render/llvm.h"
#include "generator/schedule/schedule.h"
#include "generator/target/llvm_compile.h"
#include "generator/target/target.h"
#include "tests/unit/c_runner.h"
#include "tests/unit/ocl_device.h"
#include "tests/unit/ocl_runner.h"
#include "tests/unit/oracle.h"
#include "tests/unit/random_program.h"

using namespace kiln;
using namespace kiln::testing_programs;
using codegen::Opt;
using Kind = codegen::Opt::Kind;

namespace {

bool runs_here(const target::Target& t) {
  if (t.arch == "any") return true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (t.name == "x86_64-avx512")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (t.name == "x86_64-avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return false;
}

int pick(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
template <class T> T one_of(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[size_t(pick(rng, 0, int(v.size()) - 1))];
}

std::string opts_text(const codegen::TunedOpts& t) {
  std::string s;
  for (const Opt& o : t.opts) s += (s.empty() ? "" : " ") + o.str();
  if (t.reduce_block) s += (s.empty() ? "" : " ") + std::string("BLOCK(") + std::to_string(t.reduce_block) + ")";
  return s.empty() ? "(none)" : s;
}

// The kernel the opts see: the pipeline's own, after "simplify ranges" (where kiln tune takes it too)
const UOp* before_opts(const UOp* ast) {
  struct Reached {};
  const UOp* got = nullptr;
  codegen::PipelineOptions po;
  po.after_stage = [&](std::string_view stage, const UOp* s) {
    if (stage != "simplify ranges") return;
    got = s;
    throw Reached{};  // the rest of the pipeline is not needed
  };
  try {
    codegen::full_rewrite_to_sink(ast, po);
  } catch (const Reached&) {
  }
  return got;
}

// A random valid opt sequence for the kernel `sink0`: up to six opts, each drawn (kind, axis,
// amount) until one applies to the kernel as the opts before it left it and changes it; the
// unrolled copies (UPCAST times UNROLL) stay at most 16. Then, at times, a reduction block where
// one applies.
codegen::TunedOpts draw_opts(const UOp* sink0, std::mt19937_64& rng) {
  const UOp* pre = sink0;
  for (const UOp* u : toposort(sink0))
    if (u->op == Op::REDUCE) {
      // as apply_tuned_opts: the opts apply to the kernel with softmax's shared term stored
      if (const UOp* s = codegen::store_shared_term(sink0)) pre = s;
      break;
    }
  static const std::vector<Kind> kinds = {Kind::Upcast,   Kind::Upcast, Kind::Upcast, Kind::Lane,  Kind::Lane,
                                          Kind::Lane,     Kind::Unroll, Kind::Unroll, Kind::Padto, Kind::Padto,
                                          Kind::Swap,     Kind::Swap,   Kind::Thread, Kind::Local, Kind::Group,
                                          Kind::GroupTop, Kind::Tc};
  codegen::TunedOpts t;
  int64_t copies = 1;
  for (int n = pick(rng, 0, 6), tries = 0; int(t.opts.size()) < n && tries < 60; ++tries) {
    std::vector<const UOp*> ranges, loops;
    for (const UOp* u : toposort(pre))
      if (u->op == Op::RANGE) {
        ranges.push_back(u);
        if (u->arg<RangeArg>().type == AxisType::Loop) loops.push_back(u);
      }
    if (ranges.empty()) break;
    const UOp* r = one_of(rng, ranges);
    int64_t end = r->src(0)->op == Op::CONST ? r->src(0)->ival() : 0;
    Kind k = one_of(rng, kinds);
    Opt o{k, r->arg<RangeArg>().axis, 0};
    switch (k) {
      case Kind::Upcast:
      case Kind::Unroll:
      case Kind::Lane:
        o.amount = pick(rng, 0, 3) == 0 && end > 1 ? end : one_of<int64_t>(rng, {2, 3, 4, 5, 7, 8, 16, 32});
        break;
      case Kind::Padto:
        o.amount = one_of<int64_t>(rng, {2, 3, 4, 5, 8, 16, 32});
        break;
      case Kind::Swap:
        if (loops.empty()) continue;
        o.amount = one_of(rng, loops)->arg<RangeArg>().axis;
        break;
      default:
        break;
    }
    bool unrolls = k == Kind::Upcast || k == Kind::Unroll;
    if (unrolls && copies * o.amount > 16) continue;
    const UOp* next = codegen::apply_opt(pre, o);
    if (!next || next == pre) continue;  // refused, or no change: redrawn, not counted
    pre = next;
    t.opts.push_back(o);
    if (unrolls) copies *= o.amount;
  }
  if (pick(rng, 0, 3) == 0) {
    codegen::TunedOpts blocked = t;
    blocked.reduce_block = one_of<int64_t>(rng, {64, 128});
    if (codegen::apply_tuned_opts(sink0, blocked)) t = blocked;
  }
  return t;
}

// One program variant and its opts: a pair.
struct Pair {
  uint64_t seed;
  std::string variant;  // "generic", "N=4", "N%8 M=3"
  std::unique_ptr<Context> ctx;
  std::vector<Tensor> ins, outs;
  schedule::Schedule sched;
  std::vector<codegen::TunedOpts> opts;  // per kernel
  const target::Target* c_target = nullptr;
  std::vector<codegen::CKernel> c, llvm, ocl;        // ocl: the OpenCL kernels (every other pair)
  std::vector<bool> ocl_tuned;                       // per OpenCL kernel: it took the pair's opts
  std::vector<std::map<std::string, int64_t>> runs;  // the dims (and .cores) of each run
  std::string error;                                 // where compiling it failed
};

std::string describe(const Pair& p) {
  std::ostringstream os;
  os << "seed " << p.seed << " (" << p.variant << ", C for " << p.c_target->name << "):";
  for (size_t k = 0; k < p.opts.size(); ++k) os << " kernel " << k << " " << opts_text(p.opts[k]) << ";";
  for (size_t k = 0; k < p.ocl_tuned.size(); ++k)
    os << " OpenCL kernel " << k << (p.ocl_tuned[k] ? " with its opts;" : " with the GPU heuristics';");
  os << " replay: KILN_OPTS_FUZZ_SEED=" << p.seed << " kiln_unit_tests --gtest_filter='OptsFuzz.*'";
  return os.str();
}

// an output's tolerance: its dtype's, or a coarser one's that its value was rounded to on the way
// (the oracle computes every float in double: x.cast(float16) changes nothing there)
double tolerance_of(const Tensor& out) {
  double tol = tolerance(out.dtype());
  for (const UOp* u : toposort(out.uop()))
    if (is_float(u->dtype)) tol = std::max(tol, tolerance(u->dtype.base()));
  return tol;
}

// "" or where got and want first differ beyond the tolerances
std::string differ(const std::vector<interp::Output>& got, const std::vector<std::vector<double>>& want,
                   const std::vector<double>& tols) {
  for (size_t i = 0; i < want.size(); ++i) {
    std::string d = compare_output(i, got[i].values, want[i], tols[i]);
    if (!d.empty()) return d;
  }
  return "";
}

struct Variant {
  std::string name;
  std::vector<std::optional<RandomProgram::Bucket>> buckets;  // per declared dim; none: generic
};

// every combination of each dim's buckets and its generic form, as kiln gen makes variants
std::vector<Variant> variants_of(const RandomProgram::Shapes& s) {
  std::vector<Variant> vs{{"", {}}};
  for (const RandomProgram::DeclaredDim& d : s.dims) {
    std::vector<Variant> next;
    for (const Variant& v : vs) {
      for (const RandomProgram::Bucket& b : d.buckets) {
        Variant w = v;
        w.name += (w.name.empty() ? "" : " ") + d.name + (b.multiple ? "%" : "=") + std::to_string(b.value);
        w.buckets.push_back(b);
        next.push_back(std::move(w));
      }
      Variant g = v;
      g.buckets.push_back(std::nullopt);
      next.push_back(std::move(g));
    }
    vs = std::move(next);
  }
  for (Variant& v : vs)
    if (v.name.empty()) v.name = "generic";
  return vs;
}

// the values a run gives a dim of the variant: its least, its largest, one between
std::vector<int64_t> values_of(const RandomProgram::DeclaredDim& d, const std::optional<RandomProgram::Bucket>& b,
                               std::mt19937_64& rng) {
  if (b && !b->multiple) return {b->value, b->value, b->value};
  int64_t k = b ? b->value : 1, lo = (d.lo + k - 1) / k * k, hi = d.hi / k * k;
  return {lo, hi, lo + k * pick(rng, 0, int((hi - lo) / k))};
}

const UOp* dim_of(Context& ctx, const RandomProgram::DeclaredDim& d, const std::optional<RandomProgram::Bucket>& b) {
  if (!b) return ctx.var(d.name, d.lo, d.hi);
  if (!b->multiple) return ctx.cint(b->value);
  int64_t k = b->value;
  return ctx.var(d.name, (d.lo + k - 1) / k * k, d.hi / k * k, dtypes::weakint, k);
}

}  // namespace

TEST(OptsFuzz, RandomProgramsAndOptsAgreeWithTheOracle) {
  // pairs of each run: a thousand (a seed's variants are pairs each); under the sanitizers, where a
  // run takes several times as long, the first 300
  size_t want_pairs = kiln::oclrun::kSanitized ? 300 : 1000;  // (GCC's and Clang's ASan)
  uint64_t first_seed = 0;
  bool replay = false;
  if (const char* s = std::getenv("KILN_OPTS_FUZZ_PAIRS")) want_pairs = std::stoull(s);
  if (const char* s = std::getenv("KILN_OPTS_FUZZ_SEED")) {
    first_seed = std::stoull(s);
    replay = true;
  }
  bool trace = std::getenv("KILN_OPTS_FUZZ_TRACE") != nullptr;  // each pair's opts before it compiles
  auto start = std::chrono::steady_clock::now();
  std::vector<const target::Target*> c_targets;
  const target::Target* llvm_target = nullptr;
  for (const char* n : {"cpu", "x86_64-avx2", "x86_64-avx512"})
    if (const target::Target* t = target::find(n); t && runs_here(*t)) c_targets.push_back(t);
  for (const char* n : {"x86_64-avx512", "x86_64-avx2"})
    if (const target::Target* t = target::find(n); !llvm_target && t && runs_here(*t)) llvm_target = t;
  // the GPU path: every other pair's kernels through the GPU stages and the OpenCL renderer, run on
  // the first OpenCL device (PoCL here): the Global loops, the work-item ids, the GPU heuristics
  // and the OpenCL dialect (its vectors, where the pair's opts have LANES) on random programs and
  // bucket variants.
  oclrun::Device* ocl_device = oclrun::test_device();
  const target::Target* ocl_target = ocl_device ? target::find("opencl") : nullptr;

  std::vector<std::unique_ptr<Pair>> pairs;
  size_t programs = 0, variants = 0, kernels = 0, opts = 0, accesses = 0, unproven = 0;
  for (uint64_t seed = first_seed; replay ? seed == first_seed : pairs.size() < want_pairs; ++seed) {
    ++programs;
    RandomProgram declared(seed);
    RandomProgram::Shapes shapes = declared.declare(2048);
    std::vector<Variant> vs = variants_of(shapes);
    for (size_t vi = 0; vi < vs.size(); ++vi) {
      const Variant& v = vs[vi];
      auto p = std::make_unique<Pair>();
      p->seed = seed;
      p->variant = v.name;
      p->ctx = std::make_unique<Context>();
      std::mt19937_64 rng(seed * 1000003 + vi);
      std::vector<const UOp*> dims;
      for (size_t d = 0; d < shapes.dims.size(); ++d) dims.push_back(dim_of(*p->ctx, shapes.dims[d], v.buckets[d]));
      p->c_target = one_of(rng, c_targets);
      // the runs: every dim at its least, at its largest, then each somewhere between
      for (int r = 0; r < 3; ++r) {
        std::map<std::string, int64_t> run;
        for (size_t d = 0; d < shapes.dims.size(); ++d)
          run[shapes.dims[d].name] = values_of(shapes.dims[d], v.buckets[d], rng)[size_t(r)];
        run[".cores"] = pick(rng, 1, 4);
        p->runs.push_back(run);
        if (shapes.dims.empty()) break;
      }
      try {
        RandomProgram builder = declared;  // the same program over this variant's dims
        builder.build(*p->ctx, shapes, dims, p->ins, p->outs);
        p->sched = schedule::schedule(p->ins, p->outs, "f" + std::to_string(seed) + "_" + std::to_string(vi));
        for (const schedule::Kernel& k : p->sched.kernels) {
          const UOp* sink0 = before_opts(k.ast);
          p->opts.push_back(draw_opts(sink0, rng));
          if (replay) std::cout << "kernel " << p->opts.size() - 1 << " as the opts see it:\n" << print_graph(sink0);
          opts += p->opts.back().opts.size();
          if (trace)
            std::cerr << "seed " << seed << " " << v.name << " kernel " << p->opts.size() - 1 << ": "
                      << opts_text(p->opts.back()) << std::endl;
          codegen::PipelineOptions po;
          po.tuned = p->opts.back();
          po.require_proven_bounds = false;  // counted below
          po.target = p->c_target;
          p->c.push_back(codegen::compile_to_c(k.ast, p->sched.vars, po));
          for (const codegen::AccessProof& a : p->c.back().bounds) {
            ++accesses;
            unproven += a.how == codegen::AccessProof::How::Unproven;
          }
          if (ocl_target && (replay || pairs.size() % 2 == 0)) {  // a replay: every pair
            codegen::PipelineOptions go;
            go.target = ocl_target;
            go.require_proven_bounds = false;  // counted below
            // the pair's own opts where the GPU takes them (LANES: OpenCL's vectors), else the
            // GPU heuristics'
            const codegen::TunedOpts& drawn = p->opts.back();
            if (drawn.reduce_block == 0 &&
                std::none_of(drawn.opts.begin(), drawn.opts.end(),
                             [](const codegen::Opt& o) { return o.kind == codegen::Opt::Kind::Thread; }))
              go.tuned = drawn;
            try {
              p->ocl.push_back(codegen::compile_to_c(k.ast, p->sched.vars, go));
              p->ocl_tuned.push_back(go.tuned.has_value());
            } catch (const codegen::OptError&) {
              go.tuned.reset();
              p->ocl.push_back(codegen::compile_to_c(k.ast, p->sched.vars, go));
              p->ocl_tuned.push_back(false);
            }
            for (const codegen::AccessProof& a : p->ocl.back().bounds) {
              ++accesses;
              unproven += a.how == codegen::AccessProof::How::Unproven;
            }
          }
          if (!llvm_target) continue;
          po.target = llvm_target;
          p->llvm.push_back(codegen::compile_to_c(k.ast, p->sched.vars, po));
        }
      } catch (const std::exception& e) {
        p->error = e.what();
      }
      kernels += p->sched.kernels.size();
      variants += v.name != "generic";
      if (replay) {
        std::cout << describe(*p) << "\n";
        for (const codegen::CKernel& k : p->c) std::cout << k.source << "\n";
        for (const codegen::CKernel& k : p->ocl) std::cout << k.source << "\n";
      }
      pairs.push_back(std::move(p));
    }
  }

  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  double gen_s = since(start);
  auto compile_start = std::chrono::steady_clock::now();
  // every pair's C in one file and its LLVM in one module, compiled side by side (-O1: the C
  // compiler's time, not the kernels', is what counts here)
  std::string c_src = render::c_preamble(), object, ocl_src = render::opencl_preamble();
  std::vector<render::LlvmKernel> lk;
  for (const auto& p : pairs) {
    if (!p->error.empty()) continue;
    for (const codegen::CKernel& k : p->c) c_src += k.source;
    for (const codegen::CKernel& k : p->llvm) lk.push_back({k.linear, k.name, p->sched.vars});
    for (const codegen::CKernel& k : p->ocl) ocl_src += k.source;
  }
  std::vector<std::string> flags = {"-O1"};
  for (const target::Target* t : c_targets) flags = t->c_flags;  // the widest that runs here
  flags.push_back("-O1");
  std::exception_ptr llvm_error;
  std::thread llvm_job([&] {
    try {
      if (llvm_target)
        object = target::compile_module(*llvm_target, render::render_llvm_module(*llvm_target, "fuzz", lk),
                                        target::Artifact::Object);
    } catch (...) {
      llvm_error = std::current_exception();
    }
  });
  crun::Library c_lib = crun::Library::compile(c_src, flags);
  llvm_job.join();
  if (llvm_error) std::rethrow_exception(llvm_error);
  std::optional<crun::Library> llvm_lib;
  if (llvm_target) llvm_lib = crun::Library::link_object(object);
  std::optional<oclrun::Program> ocl_prog;
  if (ocl_target) ocl_prog.emplace(*ocl_device, ocl_src);

  double compile_s = since(compile_start);
  auto run_start = std::chrono::steady_clock::now();
  int mismatches = 0;
  size_t runs = 0, ocl_runs = 0, ocl_pairs = 0, ocl_tuned = 0, ocl_vectors = 0;
  for (const auto& p : pairs) {
    std::string why = p->error.empty() ? "" : "compile: " + p->error;
    for (size_t r = 0; r < p->runs.size() && why.empty(); ++r) {
      std::mt19937_64 rng(p->seed * 7919 + r);
      oracle::Bindings b;
      b.vars = p->runs[r];
      std::vector<std::vector<double>> inputs = random_inputs(p->ins, b, rng);
      std::vector<std::vector<double>> want;
      std::vector<double> tols;
      for (const Tensor& o : p->outs) {
        want.push_back(oracle::evaluate(o.uop(), b).doubles());
        tols.push_back(tolerance_of(o));
      }
      std::string at;
      for (const auto& [name, value] : p->runs[r]) at += " " + name + "=" + std::to_string(value);
      if (std::string d = differ(crun::run_schedule(p->sched, c_lib, p->runs[r], inputs), want, tols); !d.empty())
        why = "C at" + at + ": " + d;
      else if (llvm_lib)
        if (std::string d = differ(crun::run_schedule(p->sched, *llvm_lib, p->runs[r], inputs), want, tols); !d.empty())
          why = "LLVM (" + llvm_target->name + ") at" + at + ": " + d;
      if (why.empty() && !p->ocl.empty()) {
        if (std::string d = differ(oclrun::run_schedule(p->sched, p->ocl, *ocl_prog, p->runs[r], inputs), want, tols);
            !d.empty())
          why = "OpenCL at" + at + ": " + d;
        ++ocl_runs;
      }
      ++runs;
    }
    ocl_pairs += !p->ocl.empty();
    for (size_t k = 0; k < p->ocl.size(); ++k) {
      ocl_tuned += p->ocl_tuned[k];
      ocl_vectors += p->ocl[k].source.find("vload") != std::string::npos;
    }
    if (!why.empty() && ++mismatches <= 10) ADD_FAILURE() << describe(*p) << "\n  " << why;
  }
  EXPECT_EQ(mismatches, 0);
  // kiln gen emits a kernel of these opts (kiln tune's) only where every access is proven
  EXPECT_EQ(unproven, 0u) << "accesses the bounds prover does not prove: kiln gen would compile those kernels again "
                             "without their opts";
  double secs = since(start), run_s = since(run_start);
  std::cout << pairs.size() << " random program-and-opts pairs (" << programs << " programs, " << variants
            << " bucket variants), " << kernels << " kernels, " << opts << " opts, " << runs << " runs through C"
            << (llvm_target ? " and LLVM (" + llvm_target->name + ")" : std::string(" (no LLVM target runs here)"))
            << ", " << ocl_runs << " runs of " << ocl_pairs << " pairs through OpenCL (" << ocl_tuned
            << " kernels with the pair's opts, " << ocl_vectors << " with vector loads)"
            << (ocl_target           ? " (" + ocl_device->name() + ")"
                : oclrun::kSanitized ? std::string(" (not under the sanitizers)")
                                     : std::string(" (no OpenCL device)"))
            << ", " << mismatches << " mismatches, in " << secs << " s (" << gen_s << " generating, " << compile_s
            << " compiling, " << run_s << " running); bounds: " << accesses << " accesses, " << unproven
            << " not proven\n";
}

// The tuning database's opts as `kiln gen --tune-db` applies them: each entry the reader takes
// (at most 3 an input) compiles a kernel of a fixed spec with its opts in the heuristics' place,
// as kiln gen compiles a kernel whose hash the entry matches (a hash is one more field of the
// file, so any entry can reach any kernel). The entry's kernel field picks the spec kernel (its
// ":n" the scheduled kernel), its target the target; an opt the kernel refuses is kiln gen's
// warning (OptError), anything else the pipeline throws is a finding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generator/codegen/pipeline.h"
#include "generator/emit/tune_db.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/schedule/schedule.h"
#include "generator/target/target.h"
#include "tests/fuzz/fuzz.h"

static const char* const kSpec = R"(dim M in 1..64 specialize %16
dim N in 1..200
dim K in 1..64

kernel gemm(a: f32[M, K], b: f32[K, N]) -> (c: f32[M, N]) {
  c = a @ b
}

kernel add(x: f32[100, 7], y: f32[100, 7]) -> (z: f32[100, 7]) {
  z = x + y
}

kernel softmax(x: f32[M, 33]) -> (y: f32[M, 33]) {
  y = x.softmax(axis=1)
}

kernel mlp(x: f32[M, 8], w: f32[8, 16], v: f32[16, 4]) -> (y: f32[M, 4]) {
  y = relu(x @ w) @ v
}

kernel big(x: f32[1048576]) -> (y: f32[1048576]) {
  y = x * 2.0
}
)";

namespace {
struct Kernels {
  kiln::Context ctx;
  std::unique_ptr<kiln::frontend::SourceFile> source;
  std::vector<const kiln::UOp*> dims;
  std::vector<std::pair<std::string, kiln::schedule::Schedule>> kernels;  // spec kernel, its schedule
};
}  // namespace

static Kernels* g_kernels;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_kernels = new Kernels;
  Kernels& k = *g_kernels;
  k.source = std::make_unique<kiln::frontend::SourceFile>("tune.kiln", kSpec);
  kiln::frontend::ParseResult parsed = kiln::frontend::parse_spec(*k.source);
  if (!parsed.diagnostics.empty() || !kiln::frontend::check_spec(parsed.spec).empty())
    kiln::fuzz::finding("the spec does not check");
  kiln::frontend::LowerResult lowered = kiln::frontend::lower_spec(k.ctx, parsed.spec, *k.source);
  if (!lowered.ok()) kiln::fuzz::finding("the spec does not lower");
  k.dims = lowered.dims;
  for (const auto& l : lowered.kernels)
    k.kernels.push_back({l.name, kiln::schedule::schedule(l.inputs, l.outputs, l.name, l.output_names)});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  kiln::fuzz::run_as_cli([&] {
    std::vector<kiln::emit::TuneEntry> db;
    std::string err;
    if (!kiln::emit::parse_tune_db(text, "fuzz.tunedb", db, err)) return;
    for (size_t i = 0; i < db.size() && i < 3; ++i) {
      const kiln::emit::TuneEntry& e = db[i];
      std::string name = e.kernel.substr(0, e.kernel.find(':'));
      size_t index = e.kernel.find(':') == std::string::npos ? 0 : size_t(e.kernel[e.kernel.find(':') + 1] - '0');
      const kiln::schedule::Schedule* s = &g_kernels->kernels.front().second;
      for (const auto& [n, sched] : g_kernels->kernels)
        if (n == name) s = &sched;
      const kiln::UOp* ast = s->kernels[index < s->kernels.size() ? index : 0].ast;
      kiln::codegen::PipelineOptions po;
      po.target = kiln::target::find(e.target) ? kiln::target::find(e.target) : kiln::target::find("cpu");
      po.require_proven_bounds = false;  // kiln gen compiles such a kernel again without opts
      po.tuned = e.opts;
      try {
        kiln::codegen::compile_to_c(ast, g_kernels->dims, po);
      } catch (const kiln::codegen::OptError&) {
        // kiln gen's warning: the heuristics' opts are used
      } catch (const kiln::codegen::MathError&) {
        // kiln gen's error at the kernel (a target without the math)
      }
    }
  });
  return 0;
}

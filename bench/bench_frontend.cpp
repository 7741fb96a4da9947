// The front half of the generator on the specs kiln ships (kernels/*.kiln):
//   Frontend/<file>/parse     lex + parse
//   Frontend/<file>/check     + name, dtype and dim checks
//   Frontend/<file>/lower     + lowering to tensor graphs (shape inference)
//   Frontend/<file>/schedule  + scheduling every kernel into kernel ASTs (the whole `kiln check`)
// Each iteration starts from the spec text in a fresh Context; `time_per_kernel` (seconds, with
// an SI suffix) divides by the number of spec kernels in the file.
// Run: kiln_bench --benchmark_filter=Frontend --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "generator/frontend/parser.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/schedule/schedule.h"

namespace kiln {
namespace {

enum class Stage { Parse, Check, Lower, Schedule };

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs the stages up to `last`; returns the number of spec kernels.
size_t run(const frontend::SourceFile& source, Stage last) {
  frontend::ParseResult parsed = frontend::parse_spec(source);
  if (!parsed.diagnostics.empty()) throw std::runtime_error("parse error in " + source.path());
  if (last == Stage::Parse) return parsed.spec.kernels.size();
  if (!frontend::check_spec(parsed.spec).empty()) throw std::runtime_error("check error");
  if (last == Stage::Check) return parsed.spec.kernels.size();
  Context ctx;
  frontend::LowerResult lowered = frontend::lower_spec(ctx, parsed.spec, source);
  if (!lowered.ok()) throw std::runtime_error("lowering error");
  if (last == Stage::Schedule)
    for (const auto& k : lowered.kernels)
      benchmark::DoNotOptimize(schedule::schedule(k.inputs, k.outputs, k.name, k.output_names).kernels.size());
  return lowered.kernels.size();
}

void register_all() {
  std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "kernels";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kiln") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    for (auto [stage, label] : {std::pair{Stage::Parse, "parse"}, std::pair{Stage::Check, "check"},
                                std::pair{Stage::Lower, "lower"}, std::pair{Stage::Schedule, "schedule"}}) {
      std::string name = "Frontend/" + path.filename().string() + "/" + label;
      benchmark::RegisterBenchmark(name.c_str(), [path, stage](benchmark::State& state) {
        std::string text = read(path);
        size_t kernels = 0;
        for (auto _ : state) {
          frontend::SourceFile source(path.string(), text);
          kernels = run(source, stage);
        }
        state.counters["kernels"] = double(kernels);
        state.counters["time_per_kernel"] = benchmark::Counter(
            double(kernels), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
      })->Unit(benchmark::kMicrosecond);
    }
  }
}

const bool registered = (register_all(), true);

}  // namespace
}  // namespace kiln

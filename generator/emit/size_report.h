// kiln size: what each variant of a library costs in the binary, per kernel, variant and target,
// with totals per target and overall, and a budget check on them. The sizes come from the library's
// manifest (kiln gen measured the objects; a spec's manifest has none) or, where files are given, from the objects and
// archives a build made (a C target's kernels have sizes only once a compiler compiled them): then every variant is
// measured in those files, and one none of them defines is "not linked".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "generator/target/object_size.h"

namespace kiln::emit {

struct VariantSize {
  std::string kernel, variant, target;  // "gemm", "gemm[M1_Nx64]", "x86_64-avx2"
  enum class State { Known, Unknown, NotLinked } state = State::Unknown;
  uint64_t code = 0, data = 0;
  std::map<std::string, uint64_t> constants;  // measured in files: what `data` counts, by place
};

struct TargetSize {
  std::string name;
  VariantSize::State state = VariantSize::State::Unknown;  // Known: every linked variant is; NotLinked: none is
  uint64_t code = 0, data = 0;                             // its known variants', a shared constant once
  size_t variants = 0;                                     // linked (or, unmeasured, listed)
};

struct SizeReport {
  std::string library;
  std::vector<VariantSize> variants;  // the manifest's order: kernel, then its variants
  std::vector<TargetSize> targets;    // the manifest's order (best first)
  bool measured = false;              // from files, not the manifest
};

// The report of `manifest` (a library's or a spec's manifest.json; `name` in messages), with the
// functions measured in the given files when `files` is not null. False with a message in `err`
// when the manifest is not one kiln wrote.
bool size_report(const std::string& manifest, const std::string& name,
                 const std::map<std::string, target::FunctionSize>* files, SizeReport& out, std::string& err);

// The table: kernel, variant, target, code, data, bytes (code + data); then a total per target
// and overall.
std::string size_table(const SizeReport& r);
std::string size_json(const SizeReport& r);

// Empty when every target's kernels fit in `budget` bytes (code + data), else the error: per target
// over it, its total against the budget and its largest kernels (all their variants: a bucket list
// that multiplies variants shows up first) and variants. A target whose sizes are unknown fails too.
std::string check_budget(const SizeReport& r, uint64_t budget);

}  // namespace kiln::emit

// The kiln CLI's commands: each subcommand's work, given its parsed options (kiln.cpp parses argv).
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "generator/emit/library.h"
#include "generator/emit/tune.h"
#include "generator/target/target.h"

namespace kiln::cli {

// kiln simplify: one s-expression per line of `in`; `source` prefixes the messages
int run_simplify(std::istream& in, const std::string& source, bool stats);
// kiln check
int run_check(const std::vector<std::string>& paths, bool prove_bounds = false);
// kiln check of one spec's text (`path` names it in the diagnostics): a line per kernel on stdout and
// true, or the diagnostics on stderr and false; with prove_bounds the proofs too, counted
bool check_source(const std::string& path, std::string text, bool prove_bounds, int64_t& proven, int64_t& unproven);

struct CodegenTarget {
  const kiln::target::Target* target = nullptr;   // an object target; null: C
  const kiln::target::Target* program = nullptr;  // whose program the pipeline makes (its vector width)
  bool emit_llvm = false, assembly = false;
};
// kiln codegen
int run_codegen(const std::vector<std::string>& paths, const std::string& only, const std::string& dump_after,
                bool dump_all, const std::string& output, const CodegenTarget& cg);
// kiln gen
int run_gen(const kiln::emit::GenOptions& o, const std::string& out);
// kiln tune; `dims` are --dim's DIM=VALUE items
int run_tune(kiln::emit::TuneOptions& o, const std::vector<std::string>& dims);
// kiln explain
int run_explain(const kiln::emit::GenOptions& o, const std::string& kernel, const std::vector<std::string>& dims,
                const std::string& cpu);

// kiln size: the sizes of the manifest's variants, measured in `files` when any are given
int run_size(const std::string& manifest, const std::vector<std::string>& files, bool json,
             std::optional<uint64_t> budget);

// `--target cpu x86_64-avx2 a.kiln b.kiln`: the targets end at the first value that is not one
void split_targets(kiln::emit::GenOptions& o);
// every value split at its commas; an empty item is a usage error (false, with a message)
bool split_commas(std::vector<std::string>& values, const std::string& option, const std::string& expected);

}  // namespace kiln::cli

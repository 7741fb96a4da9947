// kiln tune's database: a sorted text lockfile, checked in beside the specs, that `kiln gen
// --tune-db` reads. One entry a line, keyed by the scheduled kernel's content hash, the target and
// the variant (bucket):
//
//   # kiln tune database 1: <hash> <target> <variant> kernel=<name> opts=<opts> block=<n> us=<t> heuristic_us=<t>
//   3f9c0d2a71b4e865 x86_64-avx512 M1_Nx16 kernel=sgemm opts=LANES(1,32);UPCAST(0,8);THREAD(0) block=0 us=812.412
//   heuristic_us=905.107
//
// `opts` are the Opt list that replaces the heuristics' (`-`: none), `block` tile_reduction's block
// (0: none), `us` the best time measured with them and `heuristic_us` the heuristics' in the same
// run (microseconds, for people; gen reads neither). The hash is of the kernel AST as scheduled,
// without its name: comments, line numbers and the other kernels of a spec do not change it.
#pragma once

#include <string>
#include <vector>

#include "generator/codegen/opt/opts.h"
#include "generator/ir/uop.h"

namespace kiln::emit {

struct TuneEntry {
  std::string hash;     // kernel_hash() of the kernel AST: 16 hex digits
  std::string target;   // a target's name
  std::string variant;  // the variant's tag ("M1_Nx16", "any")
  std::string kernel;   // the spec kernel (":n" after it for the n-th of several scheduled kernels)
  codegen::TunedOpts opts;
  double us = 0, heuristic_us = 0;
  int line = 0;  // where parse_tune_db read it (0: not read)
};

// A scheduled kernel's name in the database: the spec kernel's, with ":<index>" when the spec
// kernel is scheduled into more than one.
std::string tune_label(const std::string& kernel, size_t index, size_t count);

// The opts as an entry writes them: "LANES(1,32);UPCAST(0,8);THREAD(0)", "-" for none.
std::string tune_opts_text(const codegen::TunedOpts& t);

// FNV-1a (64 bits) of the AST's text with the SINK's name blanked: 16 lowercase hex digits.
std::string kernel_hash(const UOp* ast);

// Reads a database; false with `err` ("<path>:<line>:<col>: error: ...\n") for the first bad line.
// Blank lines and lines starting with '#' are skipped; two entries with one key are an error.
bool parse_tune_db(const std::string& text, const std::string& path, std::vector<TuneEntry>& out, std::string& err);

// The database's text: the header comment, then the entries sorted by (hash, target, variant).
std::string print_tune_db(std::vector<TuneEntry> entries);

// `e` into `db`, replacing the entry with its key.
void merge_tune_entry(std::vector<TuneEntry>& db, const TuneEntry& e);

// The entry for this key, or null.
const TuneEntry* find_tune_entry(const std::vector<TuneEntry>& db, const std::string& hash, const std::string& target,
                                 const std::string& variant);

}  // namespace kiln::emit

// kiln tune: the seeds' beam search over opts (tinygrad's codegen/opt/search.py), per scheduled
// kernel, target and variant, timing each candidate on this machine or, through a runner command,
// on another one. For one variant, every candidate is rendered under its own symbol into one
// kernel file (an object, or C for a C target), a C harness binds the dims to a shape inside the
// variant's bucket, fills the buffers with random non-zero data, checks each candidate's outputs
// against the heuristics' (within float tolerance: opts reassociate sums) and prints each one's
// best time; the C compiler builds it and the runner (when given) prefixes the command that runs
// it. The heuristics' kernel is always a candidate, and an entry is written only for a candidate
// measured faster than it, so a tuned kernel is never slower than the untuned one as measured.
// The database (tune_db.h) is merged and written again, through a temporary file and a rename,
// after every variant: an interrupted run (SIGINT, the budget) keeps what it found.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "generator/emit/library.h"
#include "generator/emit/tune_db.h"

namespace kiln::emit {

struct TuneOptions {
  GenOptions gen;                               // the library's name, its one target and the specs
  std::string db;                               // the database to merge into (created if missing)
  std::vector<std::string> kernels;             // only these spec kernels (empty: all)
  std::vector<std::string> variants;            // only these variant tags (empty: all)
  double budget_s = 0;                          // the whole run's time, in seconds (0: until the search ends)
  std::string runner;                           // prefixes the timing executable's command line ("": none)
  std::string cc = "cc";                        // the C compiler that builds the harness (and a C target's kernels)
  std::string work_dir;                         // where the harnesses are built (the caller removes it)
  std::map<std::string, int64_t> dims;          // shapes to time at, where inside the variant's bucket
  int beam = 4;                                 // the beam's width
  std::atomic<bool>* stop = nullptr;            // set (SIGINT): finish the candidate under way and write the db
  std::function<void(const std::string&)> log;  // one line of report for people
  std::function<void(const std::string&)> progress;  // the progress bar's text (a tty only; "" ends it)
};

struct TuneResult {
  bool ok = false;
  std::string errors;
  int variants = 0;  // variants searched
  int improved = 0;  // of which an entry was written (a candidate beat the heuristics)
};

TuneResult tune(const TuneOptions& options);

// What a database keys on, for every scheduled kernel of every variant and target of a library,
// without timing anything: each line "<hash> <target> <variant> kernel=<name>" (kiln tune --list).
bool tune_keys(const GenOptions& options, std::vector<TuneEntry>& keys, std::string& err);

}  // namespace kiln::emit

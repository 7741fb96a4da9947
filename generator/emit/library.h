// kiln gen: the files of one kernel library. For every kernel of the specs, one variant per
// target and declared bucket (each combination of a dim's `specialize` values and multiples,
// the most specific first) plus a generic variant over the declared ranges; a C++ header with one
// entry point per kernel (kiln/kiln.h's TensorView, Status and Context), a dispatch source that
// checks the arguments, binds the dims and takes the first variant whose guard holds on this
// CPU, kernel files per target (C, or objects kiln compiled), a manifest (JSON) and a depfile. The same input gives
// the same bytes; no generated file names a path.
//
// The files of library L with specs a.kiln, b.kiln and targets t1, t2:
//   L.h                    includes the part headers (what users include)
//   L_a.h                  the entry points of a.kiln's kernels
//   L_a_dispatch.cpp       their argument checks, dim binding and variant tables
//   L_a_t1.c, L_a_t2.o     their kernels for each target: C for a C target, an object kiln
//                          compiled for an object target (and L_a_t2.ll, its LLVM IR, with keep_ir)
//   L_a.manifest.json      their kernels, variants, guards, opts and estimates
//   (the same four for b)
//   L.manifest.json        the library's manifest: the parts' kernels, merged, with the sizes of
//                          each object target's kernels (measured in the objects)
// Each spec's files depend on that spec alone and each kernel file on one spec and one target, so
// a build system can run one action per spec and per spec and target (`Emit`); the library's two
// files need only the specs' names, their part manifests and the object kernel files (only the
// library's manifest has sizes, so writing a spec's files compiles nothing). One run (`Emit::All`)
// writes the same bytes as the parts run separately.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "generator/target/target.h"

namespace kiln::emit {

// The targets (generator/target/target.h): where kernels run and what kiln writes for them.
using Target = target::Target;

// Which of the library's files a run writes.
enum class Emit {
  All,      // every file
  Spec,     // one spec's header, dispatch source and part manifest (one spec; needs every target)
  Kernels,  // one spec's kernel files, for the targets given
  Library,  // L.h and L.manifest.json, from the part manifests in `parts_dir` and the objects in
            // `kernels_dir` (specs are not read)
};

struct GenOptions {
  std::string name;                  // the library: a C identifier, the namespace and the file prefix
  std::vector<std::string> targets;  // target names, each at most once
  std::vector<std::string> specs;    // spec file paths
  Emit emit = Emit::All;
  std::string parts_dir;    // Emit::Library: where the part manifests (<name>_<part>.manifest.json) are
  std::string kernels_dir;  // Emit::Library: where the objects (<name>_<part>_<target>.o) are; empty: parts_dir
  bool c_sources = false;   // every target's kernels as C (an object target's with its c_flags), no objects
  bool keep_ir = false;     // an object target's LLVM IR too, beside its object (<name>_<part>_<target>.ll)
  // kiln tune's database (tune_db.h): a kernel whose hash, target and variant it lists gets the
  // entry's opts instead of the heuristics'; an entry for a kernel that changed is reported, not used
  std::string tune_db;
  // the CUDA toolkit's nvcc, which compiles a CUDA target's kernels into the fatbin the dispatch
  // source embeds: a path or a name on PATH; empty: target::find_nvcc's places
  std::string nvcc;
};

// The part of the file names a spec's files carry: its file name without `.kiln`, every character
// that is not a letter, digit or underscore made an underscore ("nets/my-net.kiln" -> "my_net").
std::string part_name(const std::string& spec_path);

struct GenResult {
  bool ok = false;
  std::string errors;                                      // rendered diagnostics when !ok
  std::string warnings;                                    // rendered warnings (stale entries, no-opt kernels)
  std::vector<std::pair<std::string, std::string>> files;  // file name (no directory) -> contents
};

// The files `options.emit` names, in a fixed order; for Emit::All: <name>.h first, then per spec
// (in the order given) its header, dispatch source, kernel files (targets best first) and part
// manifest, and <name>.manifest.json last.
GenResult generate(const GenOptions& options);

// The files a previous run listed in its manifest (`old_manifest`: <name>.manifest.json's text)
// that `now` no longer writes: a spec dropped from the library, or an older kiln's file layout.
// Only plain file names (no path) are returned; an unreadable manifest lists none.
std::vector<std::string> stale_files(const std::string& old_manifest, const GenResult& now);

// The depfile (Make syntax) of a run whose first output is `first_output`: every spec and the
// kiln executable itself.
std::string depfile(const std::string& first_output, const std::vector<std::string>& specs, const std::string& tool);

// Which variant a call with these dims takes on a CPU with these feature bits (KILN_CPU_*), and
// why: the same rules as the generated dispatch. Dims missing from `dims` or out of range are
// reported as errors; `ok` says whether the text is an answer or an error.
std::string explain(const GenOptions& options, const std::string& kernel, const std::map<std::string, int64_t>& dims,
                    uint32_t features, bool* ok);

}  // namespace kiln::emit

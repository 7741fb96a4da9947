// kiln gen's model of a library, shared by the files that write it (library.cpp runs a generation;
// build.cpp reads the specs and compiles every variant for every target; header.cpp, dispatch.cpp,
// kernels.cpp and manifest.cpp each write one kind of file). Internal to generator/emit/.
#pragma once

#include <array>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "generator/emit/library.h"
#include "generator/emit/tune_db.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/schedule/schedule.h"
#include "generator/target/object_size.h"

namespace kiln::emit::detail {

using frontend::Specialization;

// the ABI the generated files are for: KILN_ABI_VERSION of runtime/include/kiln/kernel_abi.h then
// (the manifests' "kiln_abi", the kernel files' #error, the entry points' run-time check)
constexpr int kAbiVersion = 1;

std::string base_name(const std::string& path);

struct SpecFile {
  std::string path, base;  // as given; the file name alone (the only part generated files show)
  std::string part;        // part_name(path): in the names of its files
  std::unique_ptr<frontend::SourceFile> source;
  frontend::Spec spec;
  std::unique_ptr<Context> ctx;  // owns every node of this file's schedules
  std::vector<const UOp*> dims;  // the generic DEFINE_VARs, declaration order: vars[] of its kernels
};

struct ShapeAxis {
  bool literal = false;
  int64_t size = 0;  // literal
  int32_t dim = -1;  // else: the file dim
};

struct Arg {
  std::string name, cxx;  // as declared; as a C++ parameter name
  DType dtype;
  std::vector<ShapeAxis> shape;
  bool output = false;
};

// One kernel of a variant's schedule, compiled for each of the library's targets (by their index
// in Generator::targets_).
struct Compiled {
  std::string symbol;  // without the target suffix
  struct ForTarget {
    std::string source;              // the C function, named `symbol`_<target symbol>
    std::vector<const UOp*> linear;  // the program it renders (nodes of the spec file's Context)
    bool parallel = false;
    std::vector<std::string> opts;
    // the scratch buffer the kernel takes after the schedule's (codegen::CKernel): -1 none, else its
    // slot, and one core's bytes of it
    int32_t scratch_slot = -1;
    int64_t scratch_stride = 0;
    const UOp* scratch_bytes = nullptr;
    // a GPU kernel's launch (codegen::CKernel): work items per dim (null: 1), or work groups where
    // it has local ids, of local_size items each (null everywhere: none); and its buffers
    std::array<const UOp*, 3> global_size{}, local_size{};
    int32_t buffer_args = 0;
  };
  std::vector<ForTarget> code;
};

struct Variant {
  std::string tag;                                        // "M1_Sx64", "any"
  std::vector<std::pair<int32_t, Specialization>> guard;  // file dim -> bucket
  schedule::Schedule sched;
  std::vector<Compiled> kernels;
};

struct KernelInfo {
  std::string name;
  size_t file = 0;
  int line = 0, column = 0;   // of its name in the spec
  std::vector<Arg> args;      // inputs then outputs
  std::vector<int32_t> dims;  // the file dims its arguments bind, declaration order
  std::vector<Variant> variants;
};

// the runtime's dtype of a spec dtype: kiln_dtype's value, its kiln::DType enumerator, its spelling
int runtime_dtype(DType d);
std::string dtype_enum(DType d);
std::string dtype_short(DType d);

// How index math over the dims is written: for people (the dim names), as C++ over d[i], or as C++
// that counts the overflows in a kiln::detail::CheckedSize named c (sizes at dims their ranges
// allow may not fit in 64 bits)
enum class Style { Text, Cxx, Checked };
std::string expr_text(const UOp* u, const std::vector<const UOp*>& dims, Style style);

std::string guard_text(const Variant& v, const std::vector<const UOp*>& dims);

// What a kernel costs: ALU ops and reduction steps executed (each counted once per iteration of
// the loops it sits in), and bytes of its buffers.
struct Estimate {
  const UOp* flops;
  const UOp* bytes;
};
Estimate estimate(const UOp* ast);

// An object target's kernel file to compile: its module's text, and where its bytes go.
struct ObjectJob {
  const Target* target;
  std::string module;
  std::string* object;
  std::exception_ptr error;
};
// Compiles every job's module, in parallel; throws the first job's error.
void compile_objects(std::vector<ObjectJob>& jobs);

class Generator {
 public:
  explicit Generator(const GenOptions& o) : o_(o) {}

  GenResult run();
  // kiln tune (tune.cpp): the specs read and every variant compiled with the heuristics' opts
  bool prepare(std::string& err);
  const std::vector<SpecFile>& files() const { return files_; }
  const std::vector<KernelInfo>& kernels() const { return kernels_; }
  const std::vector<const Target*>& targets() const { return targets_; }
  // which variant a call takes: the variants' guards, nothing compiled
  std::string explain_call(const std::string& kernel, const std::map<std::string, int64_t>& given, uint32_t features,
                           bool* ok);

 private:
  // Emit::Library: L.h and L.manifest.json from the part manifests and objects other runs wrote
  GenResult link(GenResult r);

  // build.cpp
  bool check_options(std::string& err);
  bool load_tune_db(std::string& err);
  // the opts of the tune database's entry for this kernel, target and variant (none: the heuristics');
  // an entry for the kernel as it was before (its hash differs) is reported in warnings_
  std::optional<codegen::TunedOpts> tuned_opts(const std::string& kernel, const std::string& hash, const Target& t,
                                               const std::string& variant);
  bool load(const std::string& path, std::string& err);
  // the kernels of one file, each with its variants (only `only` when given)
  bool build_kernels(size_t fi, std::string& err, const std::string* only = nullptr);
  bool build_variants(SpecFile& f, const frontend::Kernel& k, KernelInfo& ki, std::string& err);

  // header.cpp
  // the header names the parameters as the spec does; the definitions call them a0, a1, ... (no
  // clash with their locals, whatever the spec's names)
  static std::string param(const KernelInfo& k, size_t i, bool header);
  std::string signature(const KernelInfo& k, bool defaults, bool header = true) const;
  // the C entry point's parameters: a descriptor per argument, then the context
  static std::string c_signature(const KernelInfo& k, bool header);
  std::string arg_text(const Arg& a, const SpecFile& f) const;
  std::string dims_params(const KernelInfo& k, bool header = true) const;
  // L.h: the part headers (only the specs' names, so a build can write it without reading them)
  std::string umbrella() const;
  // L_<part>.h: the entry points of one spec's kernels
  std::string header(size_t fi) const;

  // dispatch.cpp
  std::string fn_name(const Compiled& c, const Target& t) const;
  std::string dispatch(size_t fi) const;
  // the checks and dim binding of one kernel's arguments, its variants' run functions, its table
  std::string dispatch_kernel(const KernelInfo& k) const;
  // kGuards_<id>, v's guard as the runtime's table, appended to s; its name ("nullptr" for none)
  static std::string guard_array(const Variant& v, const std::string& id, std::string& s);

  // device.cpp
  // L_<part>_<target>.cl or .cu: one spec's kernels for a GPU target
  std::string kernels_gpu(size_t fi, size_t ti) const;
  // every spec's CUDA kernels compiled by nvcc, for each CUDA target (fatbins_); false with err
  // where there is no nvcc
  bool make_fatbins(std::string& err);
  // the library's GPU targets by name ("opencl"; "" for none)
  std::string gpu_targets_text() const;
  // the part's programs as constants, kProgram_<target symbol>: OpenCL C, CUDA fatbins
  std::string device_programs(size_t fi) const;
  // kernel k's GPU variants: their run functions and kDeviceVariants_<kernel>
  std::string device_dispatch(const KernelInfo& k) const;
  // The bytes argument i occupies, once its dims are bound: the product of the bound dims, with no
  // overflow check where none can overflow at their maximums (the common case: a few instructions
  // per call), else the runtime's saturating count
  std::string extent_text(const KernelInfo& k, size_t i) const;
  size_t count_inputs(const KernelInfo& k) const;
  std::string entry_points(const KernelInfo& k) const;
  // <lib>_<kernel> and <lib>_<kernel>_workspace_size, for C
  std::string c_entry_points(const KernelInfo& k) const;

  // kernels.cpp
  std::string kernels_c(size_t fi, size_t ti) const;
  std::string kernels_module(size_t fi, size_t ti) const;
  // what kiln writes for t in this run: its output kind, or C for every target (c_sources)
  target::Output output(const Target& t) const;
  // its output's name in the manifests: "c", "object", "opencl"
  std::string output_name(const Target& t) const;
  // the kernel file of spec fi for target ti: <lib>_<part>_<target symbol>.c, .o, .cl or .cu
  std::string kernel_file(size_t fi, size_t ti) const;

  // manifest.cpp
  // the functions of spec fi's object for target ti, measured: in this run's object, or (Emit::Library)
  // in the file in kernels_dir; null with the error when that is missing or not an object
  const std::map<std::string, target::FunctionSize>* object_sizes(size_t fi, size_t ti, std::string& err);
  // Emit::Library: where that object is, and which run writes it (for the errors)
  std::string object_path(size_t fi, size_t ti) const;
  std::string object_writer(size_t fi, size_t ti) const;
  // L_<part>.manifest.json: one spec's files and kernels (no sizes: only the library's manifest has them)
  std::string manifest_part(size_t fi) const;
  // L.manifest.json from the parts' manifests (in spec order): every file, the kernel files per
  // target, the kernels, with each object target's sizes; a kernel two specs define, or one named like
  // another's generated function, is an error here too (a build that writes each spec's files
  // separately finds it only here)
  bool merge_manifests(const std::vector<std::string>& parts, std::string& out, std::string& err);

  const GenOptions& o_;
  std::vector<TuneEntry> tune_db_;  // GenOptions::tune_db's entries
  std::string warnings_;
  std::vector<const Target*> targets_;  // best first
  std::vector<SpecFile> files_;
  std::vector<KernelInfo> kernels_;  // in spec order
  bool compile_ = true;              // the variants' kernels too (explain needs only their guards)
  // each object's functions, measured (by spec and target index): the library manifest's sizes
  std::map<std::pair<size_t, size_t>, std::map<std::string, target::FunctionSize>> sizes_;
  // each CUDA target's fatbin of each spec's kernels (by spec and target index), for the dispatch
  std::map<std::pair<size_t, size_t>, std::string> fatbins_;
};

}  // namespace kiln::emit::detail

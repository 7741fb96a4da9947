// The kiln command line. The only place that reads argv or the environment.
#include <pthread.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <optional>
#include <sstream>
#include <string>

#include "generator/codegen/pipeline.h"
#include "generator/emit/library.h"
#include "generator/emit/tune.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/render/llvm.h"
#include "generator/schedule/schedule.h"
#include "generator/symbolic/symbolic.h"
#include "generator/target/llvm_compile.h"
#include "generator/target/target.h"
#include "kiln/kiln_c.h"
#include "kiln/version.h"

#include "generator/tools/commands.h"

using namespace kiln::cli;  // NOLINT: the commands

static int run(int argc, char** argv) {
  CLI::App app{"kiln: an ahead-of-time kernel generator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);

  auto* simplify = app.add_subcommand("simplify", "simplify index expressions, one s-expression per line");
  std::vector<std::string> files;
  bool stats = false;
  simplify->add_option("files", files, "input files (default: standard input; '-' also reads it)");
  simplify->add_flag("--stats", stats, "print per-rule hit counts to stderr");
  simplify->footer(
      "Grammar: (CONST:<dtype> <value>) | (VAR:<dtype> <name> <min> <max>) | (<OP>:<dtype> <src>...)\n"
      "Output: <simplified s-expression> [<vmin>, <vmax>] per input line.");

  auto* check = app.add_subcommand("check", "parse, check and schedule .kiln kernel specs");
  std::vector<std::string> specs;
  check->add_option("specs", specs, "spec files")->required();
  bool prove_bounds = false;
  check->add_flag("--prove-bounds", prove_bounds,
                  "compile every kernel for every target and print the proof that each load and store stays "
                  "inside its buffer");
  check->footer(
      "Errors: <file>:<line>:<col>: error: <what> (expected X, got Y), the source line and a caret, on\n"
      "stderr; exit 1 if any spec has one.\n"
      "Output: '<kernel>: <N> kernels' per kernel, N the number of kernels it is scheduled into.\n"
      "With --prove-bounds, one line per access: '<kernel> <target>: load|store <buffer> index in [lo, hi],\n"
      "size <elements>: proved by ranges[ under its gate]' (UNPROVEN and the index otherwise), then the\n"
      "totals; exit 70 if an access is not proven.");

  auto* codegen = app.add_subcommand(
      "codegen", "compile .kiln kernel specs to C, or with --target to LLVM IR, assembly or objects");
  std::vector<std::string> cg_specs;
  std::string only, dump_after;
  bool dump_all = false;
  codegen->add_option("specs", cg_specs, "spec files")->required();
  codegen->add_option("--kernel", only, "only this spec kernel");
  codegen->add_option("--dump-after", dump_after, "print the IR after this pipeline stage (before the C)");
  codegen->add_flag("--dump-all", dump_all, "print the IR after every stage");
  std::string output, cg_target;
  bool cg_asm = false, cg_llvm = false;
  codegen->add_option("-o,--output", output, "write the C here instead of standard output");
  codegen->add_option("--target", cg_target,
                      "the target whose program to make (default cpu); an object target's is compiled with LLVM");
  codegen->add_flag("--asm", cg_asm, "with --target: print the assembly");
  codegen->add_flag("--emit-llvm", cg_llvm, "with --target: print the LLVM IR");
  std::string stage_list;
  for (auto n : kiln::codegen::stage_names()) stage_list += "\n  " + std::string(n);
  codegen->footer(
      "Output: C99, one function per scheduled kernel:\n"
      "  void <kernel>_<n>(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);\n"
      "bufs[i]: the kernel's buffer i; vars[j]: the j-th dim declared in its spec file. Call it once per\n"
      "core, core = 0 .. cores-1, concurrently or one after another: each call does its share.\n"
      "With --target T (an object target, see `kiln targets`): the same kernels through LLVM, one module per\n"
      "spec file named after it: its LLVM IR (--emit-llvm), its assembly (--asm) or the object (-o FILE).\n"
      "Stages:" +
      stage_list);

  auto* gen = app.add_subcommand("gen", "generate a kernel library: header, dispatch, kernels per target, manifest");
  kiln::emit::GenOptions gen_opts;
  std::string gen_out;
  gen->add_option("--name", gen_opts.name, "the library: a C identifier, its namespace and file prefix")->required();
  gen->add_option("--out", gen_out, "the directory to write into (created if missing)")->required();
  gen->add_option("--target", gen_opts.targets, kiln::target::known_names() + " (repeat or list; see kiln targets)")
      ->required();
  gen->add_option("specs", gen_opts.specs, "spec files")->required();
  std::string emit = "all";
  gen->add_flag("--c-sources", gen_opts.c_sources,
                "write every target's kernels as C, to compile with the target's c_flags (no objects)");
  gen->add_flag("--keep-ir", gen_opts.keep_ir,
                "also write each object's LLVM IR beside it (<name>_<part>_<target>.ll)");
  gen->add_option("--emit", emit, "which files: all (default), spec, kernels or library (see below)")
      ->check(CLI::IsMember({"all", "spec", "kernels", "library"}));
  gen->add_option("--tune-db", gen_opts.tune_db,
                  "kiln tune's database: its entries' opts for the kernels they match (nothing is timed)");
  gen->add_option("--nvcc", gen_opts.nvcc,
                  "the CUDA toolkit's nvcc, for the CUDA targets (default: $KILN_NVCC, $CUDA_PATH/bin, "
                  "$CUDA_HOME/bin, PATH, /usr/local/cuda/bin)");
  gen->add_option("--kernels-dir", gen_opts.kernels_dir,
                  "with --emit library: where the object kernel files are (default: <out>)");
  gen->footer(
      "Writes into <out>, for each spec <part>.kiln: <name>_<part>.h (its kernels' C++ entry points, in\n"
      "namespace <name>), <name>_<part>_dispatch.cpp, one kernel file per target, <name>_<part>_<target\n"
      "with '-' as '_'>.c for a C target (compile it with the c_flags `kiln targets --json` lists), .o\n"
      "for an object target, .cl or .cu for a GPU target (the dispatch embeds the OpenCL C, and the fatbin\n"
      "nvcc makes of the CUDA C++; neither is compiled by the build), and <name>_<part>.manifest.json;\n"
      "then <name>.h (includes the part headers: what users include), <name>.manifest.json (the parts\n"
      "merged, with the code and data bytes of each object target's kernels) and the depfile <name>.d.\n"
      "A build may split the work: --emit spec <spec> writes one spec's header, dispatch and part\n"
      "manifest (give every target; it compiles nothing but the CUDA fatbins); --emit kernels <spec> its kernel files "
      "for the\n"
      "targets given; --emit library <specs> writes <name>.h and <name>.manifest.json from the part\n"
      "manifests in <out> and the objects in --kernels-dir (default: <out>; the specs are not read). The\n"
      "bytes are the same as one run's. No depfile then.\n"
      "Files whose bytes would not change are left untouched. Same input, same bytes.");

  auto* tune = app.add_subcommand("tune", "search the opts of a library's kernels for one target, timing them");
  kiln::emit::TuneOptions tune_opts;
  std::string tune_target, tune_cc;
  std::vector<std::string> tune_dims;
  tune->add_option("--name", tune_opts.gen.name, "the library (as kiln gen's --name)")->required();
  tune->add_option("--target", tune_target, "the one target to time (see kiln targets)")->required();
  tune->add_option("--db", tune_opts.db, "the database to merge into (created if missing; kiln gen --tune-db)")
      ->required();
  tune->add_option("--kernel", tune_opts.kernels, "only this spec kernel (repeat for more)");
  tune->add_option("--variant", tune_opts.variants, "only this variant, by its tag (\"Mx16_Nx16\", \"any\"; repeat)");
  tune->add_option("--budget", tune_opts.budget_s, "the whole run's time in seconds (default: until the search ends)")
      ->check(CLI::NonNegativeNumber);
  tune->add_option("--runner", tune_opts.runner,
                   "a command that runs the timing executable, prefixed to its command line (qemu, ssh, adb)");
  tune->add_option("--cc", tune_cc, "the C compiler that builds the timing executable (default: $CC, else cc)");
  tune->add_option("--dim", tune_dims, "DIM=VALUE: time at this size where the variant's bucket allows (default 1024)");
  tune->add_option("--beam", tune_opts.beam, "the beam's width (default 4)")->check(CLI::Range(1, 64));
  bool tune_list = false;
  tune->add_flag("--list", tune_list,
                 "print the keys a database would have (hash, target, variant, kernel); time nothing");
  tune->add_option("specs", tune_opts.gen.specs, "spec files")->required();
  tune->footer(
      "For every kernel, variant (bucket) and scheduled kernel of the specs: a beam search over opts (UPCAST,\n"
      "UNROLL, LANES, PADTO, SWAP, the reduction's block; THREAD last, as the heuristics place it), each\n"
      "candidate timed on one core at a shape inside the bucket, its outputs checked against the heuristics'.\n"
      "An entry is written for a kernel only where a candidate was measured faster than the heuristics' opts.\n"
      "The database is written again (a temporary file, then a rename) after every variant, so an interrupt\n"
      "(Ctrl-C) or the end of the budget keeps what was found. A progress bar on stderr when it is a terminal.");

  auto* expl = app.add_subcommand("explain", "which variant a call with given dims takes, and why");
  kiln::emit::GenOptions ex_opts;
  ex_opts.name = "kiln_explain";
  std::string ex_kernel, ex_cpu = "native";
  std::vector<std::string> ex_dims;
  expl->add_option("--kernel", ex_kernel, "the kernel")->required();
  expl->add_option("--dim", ex_dims, "DIM=VALUE, for each dim of the kernel (repeat or list)");
  expl->add_option("--target", ex_opts.targets, "the library's targets (default: all)");
  expl->add_option("--cpu", ex_cpu, "native (this machine), none, avx2 or avx512")
      ->check(CLI::IsMember({"native", "none", "avx2", "avx512"}));
  expl->add_option("specs", ex_opts.specs, "spec files")->required();

  auto* size = app.add_subcommand("size", "code and data bytes of a library's kernels per kernel, variant, target");
  std::string size_manifest;
  std::vector<std::string> size_files;
  bool size_json = false;
  std::optional<uint64_t> size_budget;
  size->add_option("manifest", size_manifest,
                   "<name>.manifest.json (or a spec's <name>_<part>.manifest.json, which has no sizes: give files)")
      ->required();
  size->add_option("files", size_files, "compiled kernel objects or the library archive: measure these instead");
  size->add_flag("--json", size_json, "the report as JSON");
  size->add_option("--budget", size_budget, "fail (exit 1) when a target's kernels take more bytes than this");
  size->footer(
      "Output: one line per kernel variant and target, its code bytes (its functions' symbol sizes), data\n"
      "bytes (the constants its code reads) and both; then a total per target and overall. An object\n"
      "target's sizes are in the library's manifest (kiln gen measured its objects; a spec's manifest has\n"
      "none); a C target's are known once compiled: give the objects or the archive a build made, and\n"
      "every variant is measured there ('-': in none of them). With --budget: nothing printed but a line,\n"
      "or the targets over it with their largest kernels and variants (exit 1).");

  auto* targets = app.add_subcommand("targets", "the targets kiln builds kernels for");
  bool targets_json = false;
  targets->add_flag("--json", targets_json, "every field of every target, as JSON (what the build rules read)");
  targets->footer(
      "Output: one line per target, best first within an architecture: its name (what --target and the\n"
      "build rules' TARGETS take), architecture, what kiln writes (c: C source for your compiler; object:\n"
      "an object file kiln compiled), vector bytes, vector registers, threads, and the CPU features the\n"
      "runtime checks before it picks the target's variants.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a usage error is a user error like any other (CLI11's own codes
    // are 100 and up)
    return app.exit(e) == 0 ? 0 : 1;
  }
  const std::string known_targets = kiln::target::known_names();
  if (targets->parsed()) {
    std::cout << (targets_json ? kiln::target::table_json() : kiln::target::table_text());
    return 0;
  }

  if (gen->parsed() || expl->parsed()) {
    try {
      if (gen->parsed()) {
        split_targets(gen_opts);
        if (!split_commas(gen_opts.targets, "--target", known_targets)) return 1;
        gen_opts.emit = emit == "spec"      ? kiln::emit::Emit::Spec
                        : emit == "kernels" ? kiln::emit::Emit::Kernels
                        : emit == "library" ? kiln::emit::Emit::Library
                                            : kiln::emit::Emit::All;
        gen_opts.parts_dir = gen_out;
        if (!gen_opts.kernels_dir.empty() && gen_opts.emit != kiln::emit::Emit::Library) {
          std::cerr << "kiln: error: --kernels-dir is for --emit library (the run that reads the objects)\n";
          return 1;
        }
        return run_gen(gen_opts, gen_out);
      }
      split_targets(ex_opts);
      if (!split_commas(ex_opts.targets, "--target", known_targets) || !split_commas(ex_dims, "--dim", "DIM=VALUE"))
        return 1;
      if (ex_opts.targets.empty())
        for (const kiln::target::Target& t : kiln::target::targets())
          if (!t.gpu) ex_opts.targets.push_back(t.name);  // the library has no GPU variants yet
      return run_explain(ex_opts, ex_kernel, ex_dims, ex_cpu);
    } catch (const kiln::InternalError& e) {
      std::cerr << "kiln: internal error: " << e.what() << "\n";
      return 70;
    }
  }

  if (tune->parsed()) {
    try {
      tune_opts.gen.targets = {tune_target};
      if (!split_commas(tune_dims, "--dim", "DIM=VALUE")) return 1;
      if (tune_cc.empty()) tune_cc = std::getenv("CC") && *std::getenv("CC") ? std::getenv("CC") : "cc";
      tune_opts.cc = tune_cc;
      if (tune_list) {
        std::vector<kiln::emit::TuneEntry> keys;
        std::string err;
        if (!kiln::emit::tune_keys(tune_opts.gen, keys, err)) {
          std::cerr << err;
          return 1;
        }
        for (const kiln::emit::TuneEntry& k : keys)
          std::cout << k.hash << " " << k.target << " " << k.variant << " kernel=" << k.kernel << "\n";
        return 0;
      }
      return run_tune(tune_opts, tune_dims);
    } catch (const kiln::InternalError& e) {
      std::cerr << "kiln: internal error: " << e.what() << "\n";
      return 70;
    }
  }
  if (check->parsed()) return run_check(specs, prove_bounds);
  if (size->parsed()) return run_size(size_manifest, size_files, size_json, size_budget);
  if (codegen->parsed()) {
    try {
      CodegenTarget cg;
      cg.program = kiln::target::find("cpu");
      if (!cg_target.empty()) {
        cg.target = kiln::target::find(cg_target);
        if (!cg.target) {
          std::cerr << "kiln: error: unknown target '" << cg_target << "' (expected one of "
                    << kiln::target::known_names() << ")\n";
          return 1;
        }
        cg.program = cg.target;
        // a C target: its kernels are the C (its vector width)
        if (cg.target->output != kiln::target::Output::Object) cg.target = nullptr;
      }
      cg.emit_llvm = cg_llvm, cg.assembly = cg_asm;
      if ((cg_asm || cg_llvm) && !cg.target) {
        std::cerr << "kiln: error: --asm and --emit-llvm need an object target ("
                  << (cg_target.empty() ? "--target; kiln targets lists them" : "--target " + cg_target + " writes C")
                  << ")\n";
        return 1;
      }
      if (cg_asm && cg_llvm) {
        std::cerr << "kiln: error: --asm and --emit-llvm exclude each other\n";
        return 1;
      }
      if (cg.target && !cg_asm && !cg_llvm && output.empty()) {
        std::cerr << "kiln: error: an object is binary: write it with -o FILE, or print --asm or --emit-llvm\n";
        return 1;
      }
      if (cg.target && !cg_asm && !cg_llvm && cg_specs.size() != 1) {  // objects do not concatenate
        std::cerr << "kiln: error: an object holds the kernels of one spec file (got " << cg_specs.size() << ")\n";
        return 1;
      }
      return run_codegen(cg_specs, only, dump_after, dump_all, output, cg);
    } catch (const kiln::InternalError& e) {
      std::cerr << "kiln: internal error: " << e.what() << "\n";
      return 70;
    }
  }

  if (simplify->parsed()) {
    if (files.empty()) return run_simplify(std::cin, "", stats);
    int rc = 0;
    for (const auto& f : files) {
      if (f == "-") {
        rc = std::max(rc, run_simplify(std::cin, "", stats));
        continue;
      }
      kiln::frontend::InputFile text = kiln::frontend::read_input_file(f);
      if (!text.ok()) {
        std::cerr << text.error;
        rc = std::max(rc, 1);
        continue;
      }
      std::istringstream in(std::move(text.text));
      rc = std::max(rc, run_simplify(in, files.size() > 1 ? f + ": " : "", stats));
    }
    return rc;
  }
  return 0;
}

// No path ends in std::terminate: an exception no command handled is an internal error (exit 70).
static int run_guarded(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "kiln: internal error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "kiln: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "kiln: internal error: an unknown exception\n";
  }
  return 70;
}

// The front end and the scheduler recurse over expressions and tensor graphs. Their depth is
// capped (500 nested operations in one expression, 20000 nested ops in a tensor program), and
// the work runs on a thread whose stack holds that depth with room to spare, under the
// sanitizers too: a deep spec gets its diagnostic instead of a stack overflow. The stack is
// reserved address space; only the pages a run touches are committed.
int main(int argc, char** argv) {
  struct Call {
    int argc;
    char** argv;
    int rc = 70;
  } call{argc, argv};
  constexpr size_t kStackBytes = size_t(1) << 30;
  pthread_attr_t attr;
  pthread_t thread;
  bool started = pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, kStackBytes) == 0 &&
                 pthread_create(
                     &thread, &attr,
                     [](void* p) -> void* {
                       auto* c = static_cast<Call*>(p);
                       c->rc = run_guarded(c->argc, c->argv);
                       return nullptr;
                     },
                     &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return run_guarded(argc, argv);  // no thread to be had: the caps still hold on this stack
  pthread_join(thread, nullptr);
  return call.rc;
}

// The kiln command line. The only place that reads argv or the environment.
#include <pthread.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
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

namespace {

// Bounds are numbers: a bool's are 0 or 1 (the seeds' False/True compare equal to 0/1).
std::string bound(const kiln::ConstValue& v, kiln::DType d) {
  if (kiln::is_bool(d) && !v.is_invalid()) return v.i ? "1" : "0";
  return kiln::to_string(v, d);
}

// A division whose divisor can only be zero is the user's error, not something to fold around.
std::optional<std::string> division_by_zero(const kiln::UOp* root) {
  for (const kiln::UOp* u : kiln::toposort(root)) {
    bool div = u->op == kiln::Op::FLOORDIV || u->op == kiln::Op::FLOORMOD || u->op == kiln::Op::CDIV ||
               u->op == kiln::Op::CMOD;
    if (div && kiln::is_int(u->src(1)->dtype) && u->src(1)->imin() == 0 && u->src(1)->imax() == 0)
      return "division by zero in " + kiln::print(u);
  }
  return std::nullopt;
}

// The next line of `in` without its '\n'; false at the end of the input, or with `too_long` set
// when the line is longer than kMaxInputBytes (standard input may be /dev/zero, which has no lines).
bool read_line(std::istream& in, std::string& line, bool& too_long) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  bool any = false;
  for (int c; (c = sb->sbumpc()) != std::char_traits<char>::eof();) {
    if (c == '\n') return true;
    if (line.size() == kiln::frontend::kMaxInputBytes) {
      too_long = true;
      return false;
    }
    line.push_back(char(c));
    any = true;
  }
  return any;
}

// One expression per line in, `<simplified> [<vmin>, <vmax>]` per line out. Bad lines are
// reported as `line N: error: ...` and skipped. Exit code: 0 all good, 1 a line was bad, 70 an
// internal error (a rewrite that did not terminate) happened.
int run_simplify(std::istream& in, const std::string& source, bool stats) {
  if (stats) kiln::set_rule_stats(true);
  const kiln::PatternMatcher pm = kiln::sym() + kiln::pm_cast_weak();
  int failed = 0, internal = 0;
  std::string line;
  bool too_long = false;
  for (int lineno = 1; read_line(in, line, too_long) || too_long; ++lineno) {
    if (too_long) {
      std::cerr << source << "line " << lineno << ": error: longer than " << (kiln::frontend::kMaxInputBytes >> 20)
                << " MiB, the most kiln reads of one line (the rest of the input is not read)\n";
      ++failed;
      break;
    }
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    kiln::Context ctx;
    kiln::ParseError err;
    const kiln::UOp* u = kiln::parse_verified(ctx, line, &err);
    if (!u) {
      std::cerr << source << "line " << lineno << ": error: " << err.message << " (column " << err.offset + 1 << ")\n";
      ++failed;
      continue;
    }
    if (auto e = division_by_zero(u)) {
      std::cerr << source << "line " << lineno << ": error: " << *e << "\n";
      ++failed;
      continue;
    }
    try {
      kiln::RewriteOptions opts;
      opts.name = "simplify";
      const kiln::UOp* s = kiln::graph_rewrite(u, pm, nullptr, opts);
      std::cout << kiln::print(s) << " [" << bound(s->vmin(), s->dtype) << ", " << bound(s->vmax(), s->dtype) << "]\n";
    } catch (const kiln::InternalError& e) {
      std::cerr << source << "line " << lineno << ": internal error: " << e.what() << "\n";
      ++internal;
    }
  }
  std::cout.flush();
  if (stats) std::cerr << pm.stats();
  return internal ? 70 : failed ? 1 : 0;
}

struct ScheduledKernel {
  std::string name;  // the spec kernel
  kiln::schedule::Schedule schedule;
};

// Parses, checks, lowers and schedules one spec file into `out`. Diagnostics go to stderr;
// returns false if there were any.
bool schedule_spec(const std::string& path, kiln::Context& ctx, std::vector<ScheduledKernel>& out,
                   std::vector<const kiln::UOp*>* dims = nullptr) {
  kiln::frontend::InputFile in = kiln::frontend::read_input_file(path);
  if (!in.ok()) {
    std::cerr << in.error;
    return false;
  }
  kiln::frontend::SourceFile source(path, std::move(in.text));
  kiln::frontend::ParseResult parsed = kiln::frontend::parse_spec(source);
  std::vector<kiln::frontend::Diagnostic> errors = std::move(parsed.diagnostics);
  // Checking a spec with syntax errors would report what the parser had to drop.
  if (errors.empty()) errors = kiln::frontend::check_spec(parsed.spec);
  // Lowering a spec that failed its checks would trip over the names and shapes they reported.
  kiln::frontend::LowerResult lowered;
  if (errors.empty()) {
    lowered = kiln::frontend::lower_spec(ctx, parsed.spec, source);
    errors = std::move(lowered.diagnostics);
  }
  std::vector<ScheduledKernel> done;
  if (errors.empty()) {
    for (const auto& k : lowered.kernels) {
      try {
        done.push_back({k.name, kiln::schedule::schedule(k.inputs, k.outputs, k.name, k.output_names)});
      } catch (const kiln::ShapeError& e) {
        errors.push_back(kiln::frontend::diagnostic(k.loc, 1, "cannot schedule kernel '" + k.name + "': " + e.what()));
      }
    }
  }
  if (!errors.empty()) {
    std::cerr << kiln::frontend::render(errors);
    return false;
  }
  for (auto& d : done) out.push_back(std::move(d));
  if (dims) *dims = lowered.dims;
  return true;
}

// `kiln check`: all errors of all files to stderr, one line per kernel of a good spec to stdout.
int run_check(const std::vector<std::string>& paths) {
  int rc = 0;
  for (const auto& path : paths) {
    kiln::Context ctx;
    std::vector<ScheduledKernel> kernels;
    if (!schedule_spec(path, ctx, kernels)) {
      rc = 1;
      continue;
    }
    for (const auto& k : kernels) std::cout << k.name << ": " << k.schedule.kernels.size() << " kernels\n";
  }
  std::cout.flush();
  return rc;
}

// the contents of a file, or nullopt when it cannot be read
std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// writes through a temporary and a rename, and leaves a file with the same bytes untouched (so a
// build that restats its outputs compiles nothing downstream)
bool write_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    // a device or a pipe (-o /dev/null, /dev/stdout): written into, never replaced by a file
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (f.flush()) return true;
    std::cerr << "kiln: error: cannot write " << path << "\n";
    return false;
  }
  if (read_file(path) == text) return true;
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f.flush()) {
      std::cerr << "kiln: error: cannot write " << tmp << "\n";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::cerr << "kiln: error: cannot write " << path << "\n";
    return false;
  }
  return true;
}

// `kiln codegen`: the C of every scheduled kernel, with the IR after the requested stages first.
// With an object target (one LLVM compiles for): its LLVM IR (--emit-llvm), its assembly (--asm) or the
// object itself (-o), one module per spec file, named after the file.
struct CodegenTarget {
  const kiln::target::Target* target = nullptr;   // an object target; null: C
  const kiln::target::Target* program = nullptr;  // whose program the pipeline makes (its vector width)
  bool emit_llvm = false, assembly = false;
};

int run_codegen(const std::vector<std::string>& paths, const std::string& only, const std::string& dump_after,
                bool dump_all, const std::string& output, const CodegenTarget& cg) {
  const auto& stages = kiln::codegen::stage_names();
  if (!dump_after.empty() && std::find(stages.begin(), stages.end(), dump_after) == stages.end()) {
    std::string list;
    for (auto n : stages) list += (list.empty() ? "" : ", ") + std::string(n);
    std::cerr << "kiln: error: unknown stage '" << dump_after << "' (expected one of " << list << ")\n";
    return 1;
  }
  int rc = 0;
  bool any = false;
  std::string out = cg.target ? "" : kiln::render::c_preamble();
  for (const auto& path : paths) {
    kiln::Context ctx;
    std::vector<ScheduledKernel> kernels;
    std::vector<const kiln::UOp*> dims;
    if (!schedule_spec(path, ctx, kernels, &dims)) {
      rc = 1;
      continue;
    }
    std::string dim_list;
    for (const kiln::UOp* d : dims)
      dim_list += (dim_list.empty() ? "" : ", ") + std::string(d->arg<kiln::VarArg>().name);
    if (!cg.target)
      out += "/* " + path + ": vars[] holds the dims in declaration order: " + (dim_list.empty() ? "none" : dim_list) +
             " */\n";
    std::vector<kiln::codegen::CKernel> compiled;  // the object target's: one module of them
    for (const auto& k : kernels) {
      if (!only.empty() && k.name != only) continue;
      any = true;
      for (const auto& sk : k.schedule.kernels) {
        // the IR's text only where it is dumped: printing every stage costs more than compiling
        auto dumped = [&](std::string_view stage) { return dump_all || stage == dump_after; };
        auto dump = [&](std::string_view stage, const std::string& text) {
          std::cout << "// ---- " << sk.name << " after " << stage << "\n" << text << "\n";
        };
        kiln::codegen::PipelineOptions opts;
        opts.target = cg.program;
        opts.after_stage = [&](std::string_view stage, const kiln::UOp* s) {
          if (dumped(stage)) dump(stage, kiln::print_graph(s));
        };
        kiln::codegen::CKernel c = kiln::codegen::compile_to_c(sk.ast, dims, opts);
        // only when asked: print() spells a node as a tree, exponential in the depth of a shared DAG
        if (dumped("linearize")) {
          std::string lin;
          for (const kiln::UOp* u : c.linear) lin += kiln::print(u).substr(0, 160) + "\n";
          dump("linearize", lin);
        }
        if (cg.target)
          compiled.push_back(std::move(c));
        else
          out += c.source;
      }
    }
    if (!cg.target || compiled.empty()) continue;
    std::vector<kiln::render::LlvmKernel> lk;
    for (const auto& c : compiled) lk.push_back({c.linear, c.name, dims});
    std::string module = std::filesystem::path(path).stem().string();
    std::string ir = kiln::render::render_llvm_module(*cg.target, module, lk);
    if (cg.emit_llvm)
      out += ir;
    else
      out += kiln::target::compile_module(
          *cg.target, ir, cg.assembly ? kiln::target::Artifact::Assembly : kiln::target::Artifact::Object);
  }
  if (!only.empty() && !any && rc == 0) {
    std::cerr << "kiln: error: no kernel named '" << only << "'\n";
    return 1;
  }
  std::cout.flush();
  if (rc != 0) return rc;
  if (output.empty()) {
    std::cout << out;
    std::cout.flush();
    return 0;
  }
  return write_file(output, out) ? 0 : 1;
}

// this executable, for the depfile: a new kiln regenerates the libraries it made
std::string self_path() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// `kiln gen`: the library's files into `out`, plus <name>.d
int run_gen(const kiln::emit::GenOptions& o, const std::string& out) {
  kiln::emit::GenResult r = kiln::emit::generate(o);
  if (!r.ok) {
    std::cerr << r.errors;
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::cerr << "kiln: error: cannot create " << out << ": " << ec.message() << "\n";
    return 1;
  }
  // what the last run here listed and this one does not write goes (a dropped spec, an old layout)
  std::vector<std::string> stale;
  if (o.emit == kiln::emit::Emit::All)
    if (std::optional<std::string> old = read_file(out + "/" + o.name + ".manifest.json"))
      stale = kiln::emit::stale_files(*old, r);
  for (const auto& [name, text] : r.files)
    if (!write_file(out + "/" + name, text)) return 1;
  for (const std::string& name : stale) std::filesystem::remove(out + "/" + name, ec);
  if (o.emit != kiln::emit::Emit::All) return 0;  // a build that splits the work declares its inputs itself
  return write_file(out + "/" + o.name + ".d",
                    kiln::emit::depfile(out + "/" + r.files.front().first, o.specs, self_path()))
             ? 0
             : 1;
}

// `--target cpu x86_64-avx2 a.kiln b.kiln`: the targets end at the first value that is not one (CLI11
// gives a list option every value up to the next option, but the positional specs at least one)
void split_targets(kiln::emit::GenOptions& o) {
  for (size_t i = 0; i < o.targets.size(); ++i) {
    const std::string& t = o.targets[i];
    if (kiln::target::find(t) || t.find_first_of("./") == std::string::npos) continue;
    o.specs.insert(o.specs.begin(), o.targets.begin() + std::ptrdiff_t(i), o.targets.end());
    o.targets.resize(i);
    return;
  }
}

// `--target cpu,x86_64-avx2`, `--dim M=1,N=2`: every value split at its commas. An empty item
// ("cpu," or "") is a usage error, as an unknown one is.
bool split_commas(std::vector<std::string>& values, const std::string& option, const std::string& expected) {
  std::vector<std::string> items;
  for (const std::string& v : values)
    for (size_t start = 0;;) {
      size_t comma = v.find(',', start);
      std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty()) {
        std::cerr << "kiln: error: " << option << " '" << v << "' has an empty item (expected " << expected << ")\n";
        return false;
      }
      items.push_back(std::move(item));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  values = std::move(items);
  return true;
}

// `kiln explain`: which variant a call with these dims takes
int run_explain(const kiln::emit::GenOptions& o, const std::string& kernel, const std::vector<std::string>& dims,
                const std::string& cpu) {
  std::map<std::string, int64_t> values;
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    int64_t v = 0;
    bool ok = eq != std::string::npos && eq > 0;
    if (ok) {
      const char* first = d.data() + eq + 1;
      auto [ptr, ec] = std::from_chars(first, d.data() + d.size(), v);
      ok = ec == std::errc() && ptr == d.data() + d.size() && ptr != first;
    }
    if (!ok) {
      std::cerr << "kiln: error: '" << d << "' is not DIM=VALUE\n";
      return 1;
    }
    auto [it, fresh] = values.emplace(d.substr(0, eq), v);
    if (!fresh) {
      std::cerr << "kiln: error: --dim " << it->first << " given twice (" << it->first << "=" << it->second << " and "
                << d << ")\n";
      return 1;
    }
  }
  // the runtime's own detection for this machine, as a generated dispatch would see it
  uint32_t features = cpu == "native"   ? kiln_cpu_features()
                      : cpu == "avx512" ? KILN_CPU_X86_AVX512 | KILN_CPU_X86_AVX2
                      : cpu == "avx2"   ? KILN_CPU_X86_AVX2
                                        : 0u;
  bool ok = false;
  std::string text = kiln::emit::explain(o, kernel, values, features, &ok);
  (ok ? std::cout : std::cerr) << text;
  return ok ? 0 : 1;
}

}  // namespace

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
  check->footer(
      "Errors: <file>:<line>:<col>: error: <what> (expected X, got Y), the source line and a caret, on\n"
      "stderr; exit 1 if any spec has one.\n"
      "Output: '<kernel>: <N> kernels' per kernel, N the number of kernels it is scheduled into.");

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
  gen->footer(
      "Writes into <out>, for each spec <part>.kiln: <name>_<part>.h (its kernels' C++ entry points, in\n"
      "namespace <name>), <name>_<part>_dispatch.cpp, one kernel file per target, <name>_<part>_<target\n"
      "with '-' as '_'>.c for a C target (compile it with the c_flags `kiln targets --json` lists) or .o\n"
      "for an object target, and <name>_<part>.manifest.json; then <name>.h (includes the part headers: what\n"
      "users include), <name>.manifest.json (the parts merged) and the depfile <name>.d.\n"
      "A build may split the work: --emit spec <spec> writes one spec's header, dispatch and part\n"
      "manifest (give every target); --emit kernels <spec> its kernel files for the targets given;\n"
      "--emit library <specs> writes <name>.h and <name>.manifest.json from the part manifests in <out>\n"
      "(the specs are not read). The bytes are the same as one run's. No depfile then.\n"
      "Files whose bytes would not change are left untouched. Same input, same bytes.");

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
        return run_gen(gen_opts, gen_out);
      }
      split_targets(ex_opts);
      if (!split_commas(ex_opts.targets, "--target", known_targets) || !split_commas(ex_dims, "--dim", "DIM=VALUE"))
        return 1;
      if (ex_opts.targets.empty())
        for (const kiln::target::Target& t : kiln::target::targets()) ex_opts.targets.push_back(t.name);
      return run_explain(ex_opts, ex_kernel, ex_dims, ex_cpu);
    } catch (const kiln::InternalError& e) {
      std::cerr << "kiln: internal error: " << e.what() << "\n";
      return 70;
    }
  }

  if (check->parsed()) return run_check(specs);
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
        if (cg.target->output == kiln::target::Output::CSource) cg.target = nullptr;
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

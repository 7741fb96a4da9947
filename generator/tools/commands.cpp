// The kiln CLI's commands (commands.h).
#include "generator/tools/commands.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
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
#include "generator/emit/size_report.h"
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
#include "generator/target/object_size.h"
#include "generator/target/target.h"
#include "kiln/kiln_c.h"

namespace kiln::cli {

// Bounds are numbers: a bool's are 0 or 1 (the seeds' False/True compare equal to 0/1).
static std::string bound(const kiln::ConstValue& v, kiln::DType d) {
  if (kiln::is_bool(d) && !v.is_invalid()) return v.i ? "1" : "0";
  return kiln::to_string(v, d);
}

// A division whose divisor can only be zero is the user's error, not something to fold around.
static std::optional<std::string> division_by_zero(const kiln::UOp* root) {
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
static bool read_line(std::istream& in, std::string& line, bool& too_long) {
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

namespace {
struct ScheduledKernel {
  std::string name;  // the spec kernel
  kiln::schedule::Schedule schedule;
};
}  // namespace

// Parses, checks, lowers and schedules one spec's text (`path` names it in the diagnostics) into
// `out`. Diagnostics go to stderr; returns false if there were any.
static bool schedule_source(const std::string& path, std::string text, kiln::Context& ctx,
                            std::vector<ScheduledKernel>& out, std::vector<const kiln::UOp*>* dims = nullptr) {
  kiln::frontend::SourceFile source(path, std::move(text));
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

// schedule_source() of a spec file
static bool schedule_spec(const std::string& path, kiln::Context& ctx, std::vector<ScheduledKernel>& out,
                          std::vector<const kiln::UOp*>* dims = nullptr) {
  kiln::frontend::InputFile in = kiln::frontend::read_input_file(path);
  if (!in.ok()) {
    std::cerr << in.error;
    return false;
  }
  return schedule_source(path, std::move(in.text), ctx, out, dims);
}

// `kiln check`: all errors of all files to stderr, one line per kernel of a good spec to stdout.
// --prove-bounds: every kernel of the spec's generic schedule through the pipeline of every
// target, and the proof of each of its loads and stores (kiln gen proves every variant alike); where
// its opts leave one unproven, a line says so and the proofs are those of the kernel without opts,
// which kiln gen then emits
static void prove_bounds(const std::vector<ScheduledKernel>& kernels, int64_t& proven, int64_t& unproven) {
  for (const auto& k : kernels)
    for (const auto& sk : k.schedule.kernels)
      for (const kiln::target::Target* tp : kiln::target::cpu_targets()) {  // kiln gen's: no GPU variants yet
        const kiln::target::Target& t = *tp;
        kiln::codegen::PipelineOptions po;
        po.target = &t;
        std::string name(sk.ast->arg<kiln::Name>().s);
        std::vector<kiln::codegen::AccessProof> proofs;
        try {
          proofs = kiln::codegen::prove_bounds(kiln::codegen::full_rewrite_to_sink(sk.ast, po));
          if (const kiln::codegen::AccessProof* a = kiln::codegen::first_unproven(proofs)) {
            // as kiln gen does (compile_proven): the kernel without opts, where that is proven
            std::cout << name << " " << t.name << ": " << kiln::codegen::describe(*a)
                      << " after its opts: the kernel is emitted without opts\n";
            po.optimize = false;
            proofs = kiln::codegen::prove_bounds(kiln::codegen::full_rewrite_to_sink(sk.ast, po));
          }
        } catch (const kiln::codegen::MathError& e) {
          std::cout << name << " " << t.name << ": not emitted: " << e.what() << "\n";
          continue;
        }
        for (const kiln::codegen::AccessProof& a : proofs) {
          bool ok = a.how != kiln::codegen::AccessProof::How::Unproven;
          (ok ? proven : unproven) += 1;
          std::cout << name << " " << t.name << ": " << (a.store ? "store " : "load ") << a.buffer;
          if (a.lanes > 1) std::cout << " (" << a.lanes << " lanes)";
          std::cout << " index in " << a.found << ", size " << a.size << ": " << kiln::codegen::how_name(a.how);
          if (!ok) std::cout << " (index " << a.index << ")";
          std::cout << "\n";
        }
      }
}

bool check_source(const std::string& path, std::string text, bool prove, int64_t& proven, int64_t& unproven) {
  kiln::Context ctx;
  std::vector<ScheduledKernel> kernels;
  if (!schedule_source(path, std::move(text), ctx, kernels)) return false;
  for (const auto& k : kernels) std::cout << k.name << ": " << k.schedule.kernels.size() << " kernels\n";
  if (prove) prove_bounds(kernels, proven, unproven);
  return true;
}

int run_check(const std::vector<std::string>& paths, bool prove) {
  int rc = 0;
  int64_t proven = 0, unproven = 0;
  for (const auto& path : paths) {
    kiln::frontend::InputFile in = kiln::frontend::read_input_file(path);
    if (!in.ok()) std::cerr << in.error;
    if (!in.ok() || !check_source(path, std::move(in.text), prove, proven, unproven)) rc = 1;
  }
  if (prove) {
    if (unproven == 0)
      std::cout << "every emitted access proven (" << proven << ") and 0 unproven\n";
    else
      std::cout << proven << " accesses proven and " << unproven << " unproven\n";
    if (unproven) rc = rc ? rc : 70;
  }
  std::cout.flush();
  return rc;
}

// the contents of a file, or nullopt when it cannot be read
static std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// writes through a temporary and a rename, and leaves a file with the same bytes untouched (so a
// build that restats its outputs compiles nothing downstream)
static bool write_file(const std::string& path, const std::string& text) {
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

// a GPU kernel's launch sizes as a comment above it (C: nothing)
static std::string launch_comment(const kiln::codegen::CKernel& c) {
  auto sizes = [](const std::array<const kiln::UOp*, 3>& z) {
    std::string s;
    for (size_t d = 0; d < 3; ++d) s += (d ? ", " : "") + (z[d] ? kiln::codegen::index_text(z[d]) : std::string("1"));
    return s;
  };
  if (c.local_size[0])
    return "/* launch: work groups (" + sizes(c.global_size) + ") of (" + sizes(c.local_size) + ") */\n";
  if (!c.global_size[0]) return "";
  return "/* launch: global size (" + sizes(c.global_size) + "), local size: not fixed by the kernel */\n";
}

// `kiln codegen`: the C of every scheduled kernel, with the IR after the requested stages first.
// With an object target (one LLVM compiles for): its LLVM IR (--emit-llvm), its assembly (--asm) or the
// object itself (-o), one module per spec file, named after the file.

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
  const bool gpu = cg.program && cg.program->gpu;
  const kiln::render::Dialect dialect = !gpu ? kiln::render::Dialect::C
                                        : cg.program->output == kiln::target::Output::OpenCL
                                            ? kiln::render::Dialect::OpenCL
                                            : kiln::render::Dialect::Cuda;
  std::string out = cg.target ? "" : kiln::render::preamble(dialect);
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
      out += "/* " + path +
             (gpu ? ": the kernels take the buffers, then the dims as 64-bit ints (varg0, ...) in declaration order: "
                  : ": vars[] holds the dims in declaration order: ") +
             (dim_list.empty() ? "none" : dim_list) + " */\n";
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
        kiln::codegen::CKernel c;
        std::string fallback;  // the access its opts left unproven, where it is compiled without them
        try {
          c = kiln::codegen::compile_proven(sk.ast, dims, opts, {}, &fallback);
        } catch (const kiln::codegen::MathError& e) {
          std::cerr << path << ": error: kernel '" << k.name << "': " << e.what() << "\n";
          rc = 1;
          continue;
        }
        if (!fallback.empty())
          std::cerr << path << ": warning: kernel '" << k.name << "': " << fallback
                    << " after its opts: it is compiled without opts, where every access is proven (slower; please "
                       "report the spec)\n";
        // only when asked: print() spells a node as a tree, exponential in the depth of a shared DAG
        if (dumped("linearize")) {
          std::string lin;
          for (const kiln::UOp* u : c.linear) lin += kiln::print(u).substr(0, 160) + "\n";
          dump("linearize", lin);
        }
        if (cg.target)
          compiled.push_back(std::move(c));
        else
          out += launch_comment(c) + c.source;
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
static std::string self_path() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// `kiln gen`: the library's files into `out`, plus <name>.d
int run_gen(const kiln::emit::GenOptions& o, const std::string& out) {
  kiln::emit::GenResult r = kiln::emit::generate(o);
  std::cerr << r.warnings;
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
  std::vector<std::string> inputs = o.specs;
  if (!o.tune_db.empty()) inputs.push_back(o.tune_db);
  return write_file(out + "/" + o.name + ".d",
                    kiln::emit::depfile(out + "/" + r.files.front().first, inputs, self_path()))
             ? 0
             : 1;
}

int run_size(const std::string& manifest, const std::vector<std::string>& files, bool json,
             std::optional<uint64_t> budget) {
  kiln::frontend::InputFile m = kiln::frontend::read_input_file(manifest);
  if (!m.ok()) {
    std::cerr << m.error;
    return 1;
  }
  std::map<std::string, kiln::target::FunctionSize> measured;
  for (const std::string& f : files) {
    kiln::frontend::InputFile in = kiln::frontend::read_input_file(f, kiln::target::kMaxObjectBytes);
    if (!in.ok()) {
      std::cerr << in.error;
      return 1;
    }
    try {
      for (auto& [name, size] : kiln::target::measure_functions(in.text, f)) measured.try_emplace(name, size);
    } catch (const kiln::target::ObjectError& e) {
      std::cerr << "kiln: error: " << e.what() << "\n";
      return 1;
    }
  }
  kiln::emit::SizeReport r;
  std::string err;
  if (!kiln::emit::size_report(m.text, manifest, files.empty() ? nullptr : &measured, r, err)) {
    std::cerr << err;
    return 1;
  }
  if (!budget) {
    std::cout << (json ? kiln::emit::size_json(r) : kiln::emit::size_table(r));
    return 0;
  }
  err = kiln::emit::check_budget(r, *budget);
  if (!err.empty()) {
    std::cerr << err;
    return 1;
  }
  std::cout << "kiln size: " << r.library << ":";
  for (const kiln::emit::TargetSize& t : r.targets)
    if (t.state == kiln::emit::VariantSize::State::Known)
      std::cout << " " << t.name << " " << t.code + t.data << " bytes,";
  std::cout << " within the budget of " << *budget << " bytes per target\n";
  return 0;
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

// DIM=VALUE items as a map; false with a message for a bad or repeated one
static bool parse_dims(const std::vector<std::string>& dims, std::map<std::string, int64_t>& values) {
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
      return false;
    }
    auto [it, fresh] = values.emplace(d.substr(0, eq), v);
    if (!fresh) {
      std::cerr << "kiln: error: --dim " << it->first << " given twice (" << it->first << "=" << it->second << " and "
                << d << ")\n";
      return false;
    }
  }
  return true;
}

static std::atomic<bool> g_tune_stop{false};

// `kiln tune`: the search, with Ctrl-C finishing the candidate under way and keeping the database
int run_tune(kiln::emit::TuneOptions& o, const std::vector<std::string>& dims) {
  if (!parse_dims(dims, o.dims)) return 1;
  char pattern[] = "/tmp/kiln-tune-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::cerr << "kiln: error: cannot make a temporary directory for the timing harness\n";
    return 1;
  }
  o.work_dir = pattern;
  o.stop = &g_tune_stop;
  struct sigaction sa = {};
  sa.sa_handler = [](int) { g_tune_stop = true; };
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  bool tty = isatty(2);
  bool bar = false;  // a progress bar is on the line
  o.progress = [&](const std::string& text) {
    if (!tty) return;
    std::cerr << "\r\x1b[K" << text.substr(0, 150) << std::flush;
    bar = !text.empty();
  };
  o.log = [&](const std::string& line) {
    if (bar) std::cerr << "\r\x1b[K";
    bar = false;
    std::cerr << "kiln tune: " << line << "\n";
  };
  kiln::emit::TuneResult r = kiln::emit::tune(o);
  std::error_code ec;
  // KILN_TUNE_KEEP=1: the harnesses' sources and executables stay, to run by hand
  if (std::getenv("KILN_TUNE_KEEP"))
    std::cerr << "kiln tune: the harnesses are in " << o.work_dir << "\n";
  else
    std::filesystem::remove_all(o.work_dir, ec);
  if (bar) std::cerr << "\r\x1b[K";
  if (!r.ok) {
    std::cerr << r.errors;
    return 1;
  }
  std::cerr << "kiln tune: " << r.variants << " kernel variants searched, " << r.improved
            << " faster than the heuristics" << (g_tune_stop ? " (interrupted)" : "") << "; " << o.db << " written\n";
  return g_tune_stop ? 130 : 0;
}

// `kiln explain`: which variant a call with these dims takes
int run_explain(const kiln::emit::GenOptions& o, const std::string& kernel, const std::vector<std::string>& dims,
                const std::string& cpu) {
  std::map<std::string, int64_t> values;
  if (!parse_dims(dims, values)) return 1;
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

}  // namespace kiln::cli

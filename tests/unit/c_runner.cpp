#include "tests/unit/c_runner.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

namespace kiln::crun {

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::string make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-crun-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw CompileError("cannot create a temporary directory from " + tmpl);
  return tmpl;
}

}  // namespace

// ---------------------------------------------------------------- Library

// the C compiler the tests were built with (CMake's; elsewhere, Bazel's tests, the system's cc)
#ifndef KILN_TEST_C_COMPILER
#define KILN_TEST_C_COMPILER "cc"
#endif

namespace {

// Writes `contents` to source_path, runs `$CC <args>` (args name the source and dir/lib.so), loads
// dir/lib.so.
void* build_and_load(const std::string& dir, const std::string& source_path, const std::string& contents,
                     const std::string& args, const char* what) {
  std::string so = dir + "/lib.so", log = dir + "/compile.log";
  {
    std::ofstream f(source_path, std::ios::binary);
    f << contents;
    if (!f) throw CompileError("cannot write " + source_path);
  }
  // $CC is a command line of its own (e.g. "ccache gcc"), so it stays unquoted. Without it, the C
  // compiler the tests were built with: a sanitized test binary can load only kernels built against
  // its own compiler's sanitizer runtime (gcc's ASan in clang's is refused at load)
  const char* cc = std::getenv("CC");
  std::string cmd = std::string(cc && *cc ? cc : KILN_TEST_C_COMPILER) + " " + args;
  int rc = std::system((cmd + " > " + shell_quote(log) + " 2>&1").c_str());
  if (rc != 0)
    throw CompileError(std::string(what) + " failed (status " + std::to_string(rc) + "): " + cmd + "\n" +
                       read_text(log));
  void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw CompileError("cannot load " + so + ": " + dlerror());
  return handle;
}

}  // namespace

Library Library::compile(const std::string& c_source, const std::vector<std::string>& extra_flags) {
  Library lib;
  lib.dir_ = make_temp_dir();
  lib.source_path_ = lib.dir_ + "/src.c";
  std::string args = "-std=c99 -O2 -fPIC -shared -o " + shell_quote(lib.dir_ + "/lib.so") + " " +
                     shell_quote(lib.source_path_) + " -lm";
  for (const std::string& flag : extra_flags) args += " " + shell_quote(flag);
#if KILN_SANITIZE
  // a sanitized test binary runs sanitized kernels (they load into its ASan runtime)
  args += " -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer";
#endif
  lib.handle_ = build_and_load(lib.dir_, lib.source_path_, c_source, args, "C compilation");
  return lib;
}

Library Library::link_object(const std::string& object) {
  Library lib;
  lib.dir_ = make_temp_dir();
  lib.source_path_ = lib.dir_ + "/kernels.o";
  std::string args = "-shared -o " + shell_quote(lib.dir_ + "/lib.so") + " " + shell_quote(lib.source_path_) + " -lm";
  lib.handle_ = build_and_load(lib.dir_, lib.source_path_, object, args, "linking the object");
  return lib;
}

Library::Library(Library&& other) noexcept
    : dir_(std::exchange(other.dir_, {})),
      source_path_(std::exchange(other.source_path_, {})),
      handle_(std::exchange(other.handle_, nullptr)) {}

Library& Library::operator=(Library&& other) noexcept {
  if (this == &other) return *this;
  release();
  dir_ = std::exchange(other.dir_, {});
  source_path_ = std::exchange(other.source_path_, {});
  handle_ = std::exchange(other.handle_, nullptr);
  return *this;
}

Library::~Library() { release(); }

void Library::release() {
  if (handle_) dlclose(handle_);
  handle_ = nullptr;
  if (!dir_.empty()) {
    std::error_code ec;  // a leftover temp dir is not worth throwing from a destructor
    std::filesystem::remove_all(dir_, ec);
  }
  dir_.clear();
  source_path_.clear();
}

Library::KernelFn Library::get(const std::string& name) const {
  if (!handle_) throw std::runtime_error("kernel " + name + ": the library is not loaded");
  dlerror();
  void* sym = dlsym(handle_, name.c_str());
  if (!sym) throw std::runtime_error("no kernel " + name + " in " + source_path_);
  return std::bit_cast<KernelFn>(sym);
}

// ---------------------------------------------------------------- whole schedules

namespace {

// The first bit two runs' outputs differ in, or "".
std::string first_difference(const std::vector<interp::Output>& a, const std::vector<interp::Output>& b) {
  for (size_t o = 0; o < a.size() && o < b.size(); ++o)
    for (size_t i = 0; i < a[o].values.size() && i < b[o].values.size(); ++i)
      if (std::bit_cast<uint64_t>(a[o].values[i]) != std::bit_cast<uint64_t>(b[o].values[i]) ||
          !(a[o].exact[i] == b[o].exact[i]))
        return "output " + a[o].name + " element " + std::to_string(i) + ": " + std::to_string(a[o].values[i]) +
               " vs " + std::to_string(b[o].values[i]);
  return a.size() == b.size() ? "" : "the number of outputs";
}

}  // namespace

std::vector<interp::Output> run_schedule(const schedule::Schedule& s, const Library& lib, const interp::Vars& vars,
                                         const std::vector<std::vector<double>>& inputs,
                                         std::span<const guard::Side> sides) {
  std::vector<int64_t> var_values;
  for (const UOp* v : s.vars) var_values.push_back(interp::eval_dim(v, vars));
  // Resolve every kernel before running any, so a missing one fails before the first call.
  std::vector<Library::KernelFn> fns;
  for (const schedule::Kernel& k : s.kernels) {
    for (int32_t b : k.buffers)
      if (b < 0 || size_t(b) >= s.buffers.size())
        throw interp::InterpError("kernel " + k.name + ": no buffer " + std::to_string(b));
    fns.push_back(lib.get(k.name));
  }
  auto it = vars.find(".cores");
  int32_t cores = it == vars.end() ? 1 : int32_t(it->second);
  // The interpreter's memory (inputs, poisoned outputs, intermediates): only the kernels differ.
  auto run = [&](const interp::RunOptions& opts) {
    return interp::run_schedule(s, vars, inputs, opts, [&](size_t k, std::span<interp::Buf* const> params) {
      std::vector<void*> ptrs;
      for (interp::Buf* b : params) ptrs.push_back(b->data());
      // every core's call, one after another (vars[".cores"], default 1), as a runtime would make them
      for (int32_t c = 0; c < cores; ++c) fns[k](ptrs.data(), var_values.data(), c, cores);
      if (opts.guard) guard::count_run(*opts.guard);
    });
  };
  if (sides.empty()) return run({.check_workspace_overlap = false, .guard = std::nullopt});
  // apart, intermediates cannot show what a bad plan does: the plan is checked instead
  std::vector<interp::Output> first = run({.check_workspace_overlap = true, .guard = sides[0]});
  for (guard::Side side : sides.subspan(1)) {
    std::vector<interp::Output> outs = run({.check_workspace_overlap = true, .guard = side});
    if (std::string d = first_difference(first, outs); !d.empty())
      throw std::runtime_error("the kernels' outputs differ between their runs with the guard page " +
                               std::string(guard::side_name(sides[0])) + " and " + guard::side_name(side) +
                               " the buffers (" + d + "): they read memory outside their buffers");
  }
  return first;
}

}  // namespace kiln::crun

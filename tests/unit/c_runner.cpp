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

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

}  // namespace

// ---------------------------------------------------------------- Library

Library Library::compile(const std::string& c_source, const std::vector<std::string>& extra_flags) {
  Library lib;
  lib.dir_ = make_temp_dir();
  lib.source_path_ = lib.dir_ + "/src.c";
  std::string so = lib.dir_ + "/lib.so", log = lib.dir_ + "/compile.log";
  {
    std::ofstream f(lib.source_path_);
    f << c_source;
    if (!f) throw CompileError("cannot write " + lib.source_path_);
  }
  const char* cc = std::getenv("CC");
  // $CC is a command line of its own (e.g. "ccache gcc"), so it stays unquoted.
  std::string cmd = std::string(cc && *cc ? cc : "cc") + " -std=c99 -O2 -fPIC -shared -o " + shell_quote(so) + " " +
                    shell_quote(lib.source_path_) + " -lm";
  for (const std::string& flag : extra_flags) cmd += " " + shell_quote(flag);
  int rc = std::system((cmd + " > " + shell_quote(log) + " 2>&1").c_str());
  if (rc != 0)
    throw CompileError("C compilation failed (status " + std::to_string(rc) + "): " + cmd + "\n" + read_text(log));
  lib.handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle_) throw CompileError("cannot load " + so + ": " + dlerror());
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

std::vector<interp::Output> run_schedule(const schedule::Schedule& s, const Library& lib, const interp::Vars& vars,
                                         const std::vector<std::vector<double>>& inputs) {
  using Kind = schedule::Buffer::Kind;
  using interp::Buf;
  using interp::eval_dim;
  using interp::InterpError;
  size_t nb = s.buffers.size();
  std::vector<std::vector<int64_t>> shapes(nb);
  std::vector<int64_t> numels(nb);
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    int64_t prod = 1;
    for (const UOp* d : buf.shape) prod *= shapes[b].emplace_back(eval_dim(d, vars));
    numels[b] = eval_dim(buf.numel, vars);
    if (prod != numels[b])
      throw InterpError("buffer " + buf.name + ": numel " + std::to_string(numels[b]) + " but its shape has " +
                        std::to_string(prod) + " elements");
  }

  std::vector<int64_t> var_values;
  for (const UOp* v : s.vars) var_values.push_back(eval_dim(v, vars));

  int64_t ws = s.workspace_bytes ? eval_dim(s.workspace_bytes, vars) : 0;
  if (ws < 0) throw InterpError("negative workspace size " + std::to_string(ws));
  // aligned_alloc wants a size that is a multiple of the alignment (and a real allocation for 0).
  size_t arena_bytes = (size_t(ws) + 63) / 64 * 64 + 64;
  std::unique_ptr<std::byte, FreeDeleter> arena(static_cast<std::byte*>(std::aligned_alloc(64, arena_bytes)));
  if (!arena) throw InterpError("cannot allocate a " + std::to_string(ws) + "-byte workspace");
  std::fill_n(arena.get(), arena_bytes, std::byte{0xFF});

  std::vector<Buf> bufs;
  bufs.reserve(nb);
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    if (buf.kind != Kind::Intermediate) {
      bufs.emplace_back(buf.dtype, numels[b]);
      if (buf.kind == Kind::Output) bufs.back().poison();
      if (buf.kind != Kind::Input) continue;
      if (buf.position < 0 || size_t(buf.position) >= inputs.size())
        throw InterpError("no values for input " + buf.name + " (position " + std::to_string(buf.position) + ")");
      bufs.back().fill(inputs[size_t(buf.position)]);
      continue;
    }
    if (!buf.offset) throw InterpError("intermediate " + buf.name + " has no workspace offset");
    int64_t off = eval_dim(buf.offset, vars);
    int64_t bytes = numels[b] * itemsize(buf.dtype);
    if (off < 0 || off % 64 != 0 || off + bytes > ws)
      throw InterpError("intermediate " + buf.name + ": bytes [" + std::to_string(off) + ", " +
                        std::to_string(off + bytes) + ") do not fit a 64-byte aligned slot of the " +
                        std::to_string(ws) + "-byte workspace");
    bufs.emplace_back(buf.dtype, numels[b], arena.get() + off);
    bufs.back().poison();
  }

  // Resolve every kernel before running any, so a missing one fails before the first call.
  std::vector<Library::KernelFn> fns;
  for (const schedule::Kernel& k : s.kernels) {
    for (int32_t b : k.buffers)
      if (b < 0 || size_t(b) >= nb) throw InterpError("kernel " + k.name + ": no buffer " + std::to_string(b));
    fns.push_back(lib.get(k.name));
  }
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    std::vector<void*> params;
    for (int32_t b : s.kernels[k].buffers) params.push_back(bufs[size_t(b)].data());
    fns[k](params.data(), var_values.data());
  }

  std::vector<interp::Output> outs;
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    if (buf.kind != Kind::Output) continue;
    if (buf.position < 0) throw InterpError("output " + buf.name + " has no position");
    if (outs.size() <= size_t(buf.position)) outs.resize(size_t(buf.position) + 1);
    outs[size_t(buf.position)] = {buf.name, buf.dtype, shapes[b], bufs[b].doubles(), bufs[b].values()};
  }
  return outs;
}

}  // namespace kiln::crun

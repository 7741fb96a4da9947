#include "generator/target/nvcc.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace kiln::target {

namespace {

bool executable(const std::string& path) {
  struct stat s {};
  return !path.empty() && stat(path.c_str(), &s) == 0 && S_ISREG(s.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// `name` in one of PATH's directories, or ""
std::string on_path(const std::string& name) {
  std::stringstream dirs(env("PATH"));
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && executable(d + "/" + name)) return d + "/" + name;
  return "";
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

// A directory of kiln's own for one compilation, removed with what is in it
class TempDir {
 public:
  TempDir() {
    std::string base = env("TMPDIR");
    if (base.empty()) base = "/tmp";
    std::string tmpl = base + "/kiln-nvcc-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr)
      throw NvccError("kiln cannot make a directory for nvcc's files in " + base + ": " + std::strerror(errno));
    path_ = buf.data();
  }
  ~TempDir() {
    for (const char* f : {"/kernels.cu", "/kernels.fatbin", "/nvcc.log"}) std::remove((path_ + f).c_str());
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string nvcc_places() { return "--nvcc, $KILN_NVCC, $CUDA_PATH/bin, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin"; }

std::string find_nvcc(const std::string& given) {
  if (!given.empty()) {
    if (given.find('/') != std::string::npos) return executable(given) ? given : "";
    return on_path(given);
  }
  if (std::string p = env("KILN_NVCC"); !p.empty()) return executable(p) ? p : "";
  for (const char* home : {"CUDA_PATH", "CUDA_HOME"})
    if (std::string h = env(home); !h.empty() && executable(h + "/bin/nvcc")) return h + "/bin/nvcc";
  if (std::string p = on_path("nvcc"); !p.empty()) return p;
  return executable("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : "";
}

std::string compile_cuda(const Target& t, const std::string& nvcc, const std::string& source) {
  if (t.cuda_arch.size() < 4 || t.cuda_arch.compare(0, 3, "sm_") != 0)
    throw NvccError("target " + t.name + " names no CUDA architecture");
  const std::string sm = t.cuda_arch.substr(3);
  TempDir dir;
  const std::string cu = dir.path() + "/kernels.cu", fatbin = dir.path() + "/kernels.fatbin",
                    log = dir.path() + "/nvcc.log";
  {
    std::ofstream out(cu, std::ios::binary);
    out << source;
    if (!out.flush()) throw NvccError("kiln cannot write " + cu);
  }
  // the cubin for the target's architecture and its PTX, which newer GPUs' drivers compile
  std::vector<std::string> args = {
      nvcc, "-fatbin", "-gencode", "arch=compute_" + sm + ",code=[sm_" + sm + ",compute_" + sm + "]", "-o", fatbin, cu};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int err = posix_spawn(&pid, nvcc.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw NvccError("kiln cannot run " + nvcc + ": " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw NvccError("kiln lost nvcc (" + nvcc + "): " + std::strerror(errno));
  std::string said, bytes;
  read_file(log, said);
  if (said.size() > 2000) said = said.substr(0, 2000) + "...";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw NvccError(nvcc + " failed for " + t.name +
                    (WIFEXITED(status) ? " (exit " + std::to_string(WEXITSTATUS(status)) + ")" : " (killed)") + ": " +
                    said);
  if (!read_file(fatbin, bytes) || bytes.empty()) throw NvccError(nvcc + " wrote no fatbin for " + t.name);
  return bytes;
}

}  // namespace kiln::target

// The OpenCL runner (tests only, never shipped): builds kiln's OpenCL C for the first device of
// the first OpenCL platform and runs whole schedules there, laid out exactly as the kernel-AST
// interpreter lays them out (crun::run_schedule's memory), so their outputs compare with the
// oracle's value for value. libOpenCL.so.1 (the ICD loader) is opened with dlopen, as the runtime
// will open it, so the tests link nothing of OpenCL's; POCL_CACHE_DIR points at a temporary
// directory of the runner's own, so PoCL's kernel cache never outlives the test.
//
// The kernel ABI (render/c.h, Dialect::OpenCL): the buffers by PARAM slot (CKernel::buffer_args of
// them), then every var of the schedule as a long; launched over CKernel::global_size (evaluated with the vars), the
// work-group size left to the driver. Each kernel call copies its buffers in and back out.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "generator/codegen/pipeline.h"
#include "generator/schedule/schedule.h"
#include "tests/unit/kernel_interp.h"

namespace kiln::oclrun {

// No OpenCL here: no loader, no platform or no device (what() says which).
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The device's compiler rejected the source (what() has its build log), or a call failed.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Device {
 public:
  // The first device of the first platform, opened once per process; throws Unavailable.
  static Device& first();
  std::string name() const;  // "Portable Computing Language: pthread-skylake-avx512-..."
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  Device() = default;
  std::unique_ptr<Impl> impl_;
};

// One OpenCL program (a translation unit of kernels) built for the device.
class Program {
 public:
  Program(Device& dev, const std::string& source);  // throws Error with the build log
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  ~Program();

  // Runs kernel `name` once over `global` work items (dim 0 first) with `bufs` by PARAM slot and
  // the vars' values; the buffers' bytes are copied in and back. With `local` (as long as
  // `global`), over `global` work groups of `local` items each.
  void run(const std::string& name, std::span<interp::Buf* const> bufs, const std::vector<int64_t>& vars,
           const std::vector<int64_t>& global, const std::vector<int64_t>& local = {}) const;

 private:
  Device* dev_;
  void* program_ = nullptr;  // cl_program
};

// Runs every kernel of `s` (compiled, in order, into `prog`), as interp::run_schedule does: inputs by
// input position, outputs by output position, outputs and the workspace poisoned first.
std::vector<interp::Output> run_schedule(const schedule::Schedule& s, const std::vector<codegen::CKernel>& compiled,
                                         const Program& prog, const interp::Vars& vars,
                                         const std::vector<std::vector<double>>& inputs);

}  // namespace kiln::oclrun

#include "tests/unit/ocl_runner.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <utility>

namespace kiln::oclrun {

// the loader's entry points this runner calls, resolved by name
struct Device::Impl {
  void* lib = nullptr;
  std::string dir;  // POCL_CACHE_DIR
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string name;
  // clang-format off
#define KILN_CL_FNS(X)                                                                              \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clGetDeviceInfo) X(clCreateContext) \
  X(clCreateCommandQueue) X(clCreateProgramWithSource) X(clBuildProgram) X(clGetProgramBuildInfo)   \
  X(clCreateKernel) X(clSetKernelArg) X(clCreateBuffer) X(clEnqueueNDRangeKernel)                   \
  X(clEnqueueReadBuffer) X(clFinish) X(clReleaseMemObject) X(clReleaseKernel) X(clReleaseProgram)
  // clang-format on
#define KILN_CL_MEMBER(f) decltype(&::f) f = nullptr;
  KILN_CL_FNS(KILN_CL_MEMBER)
#undef KILN_CL_MEMBER
  ~Impl() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

namespace {

void check(cl_int rc, const char* what) {
  if (rc != CL_SUCCESS) throw Error(std::string(what) + " failed: OpenCL error " + std::to_string(rc));
}

std::unique_ptr<Device::Impl> open_first() {
  auto d = std::make_unique<Device::Impl>();
  // PoCL caches compiled kernels under $POCL_CACHE_DIR (else ~/.cache): the test's own directory
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-pocl-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw Unavailable("cannot create a temporary directory from " + tmpl);
  d->dir = tmpl;
  setenv("POCL_CACHE_DIR", d->dir.c_str(), 1);
  d->lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib)
    throw Unavailable(std::string("no OpenCL loader (libOpenCL.so.1): ") + dlerror() +
                      " (install ocl-icd-libopencl1 and pocl-opencl-icd)");
#define KILN_CL_RESOLVE(f)                                 \
  d->f = std::bit_cast<decltype(&::f)>(dlsym(d->lib, #f)); \
  if (!d->f) throw Unavailable("libOpenCL.so.1 has no " #f);
  KILN_CL_FNS(KILN_CL_RESOLVE)
#undef KILN_CL_RESOLVE
  cl_uint n = 0;
  cl_int rc = d->clGetPlatformIDs(1, &d->platform, &n);
  if (rc != CL_SUCCESS || n == 0)
    throw Unavailable("no OpenCL platform (clGetPlatformIDs: " + std::to_string(rc) +
                      "; is an ICD, e.g. pocl-opencl-icd, installed in /etc/OpenCL/vendors?)");
  rc = d->clGetDeviceIDs(d->platform, CL_DEVICE_TYPE_ALL, 1, &d->device, &n);
  if (rc != CL_SUCCESS || n == 0)
    throw Unavailable("the OpenCL platform has no device (clGetDeviceIDs: " + std::to_string(rc) + ")");
  char buf[512] = {};
  d->clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof buf - 1, buf, nullptr);
  d->name = buf;
  d->clGetDeviceInfo(d->device, CL_DEVICE_NAME, sizeof buf - 1, buf, nullptr);
  d->name += std::string(": ") + buf;
  d->context = d->clCreateContext(nullptr, 1, &d->device, nullptr, nullptr, &rc);
  check(rc, "clCreateContext");
  d->queue = d->clCreateCommandQueue(d->context, d->device, 0, &rc);
  check(rc, "clCreateCommandQueue");
  return d;
}

}  // namespace

Device& Device::first() {
  static Device dev;
  static std::string failed;
  if (dev.impl_) return dev;
  if (!failed.empty()) throw Unavailable(failed);
  try {
    dev.impl_ = open_first();
  } catch (const Unavailable& e) {
    failed = e.what();
    throw;
  }
  return dev;
}

std::string Device::name() const { return impl_->name; }

Program::Program(Device& dev, const std::string& source) : dev_(&dev) {
  Device::Impl& d = dev.impl();
  const char* text = source.c_str();
  size_t len = source.size();
  cl_int rc = CL_SUCCESS;
  cl_program p = d.clCreateProgramWithSource(d.context, 1, &text, &len, &rc);
  check(rc, "clCreateProgramWithSource");
  program_ = p;
  rc = d.clBuildProgram(p, 1, &d.device, "-cl-std=CL1.2", nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    size_t n = 0;
    d.clGetProgramBuildInfo(p, d.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    d.clGetProgramBuildInfo(p, d.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    // the log's line numbers are the program's: KILN_OCL_FAILED_SOURCE=<file> keeps it to read them
    if (const char* keep = std::getenv("KILN_OCL_FAILED_SOURCE")) {
      std::ofstream(keep, std::ios::binary) << source;
      log += std::string("(the program is in ") + keep + ")\n";
    }
    throw Error("clBuildProgram failed (" + std::to_string(rc) + "):\n" + log);
  }
}

Program::Program(Program&& o) noexcept : dev_(o.dev_), program_(std::exchange(o.program_, nullptr)) {}
Program& Program::operator=(Program&& o) noexcept {
  std::swap(dev_, o.dev_);
  std::swap(program_, o.program_);
  return *this;
}
Program::~Program() {
  if (program_) dev_->impl().clReleaseProgram(static_cast<cl_program>(program_));
}

void Program::run(const std::string& name, std::span<interp::Buf* const> bufs, const std::vector<int64_t>& vars,
                  const std::vector<int64_t>& global, const std::vector<int64_t>& local) const {
  Device::Impl& d = dev_->impl();
  cl_int rc = CL_SUCCESS;
  cl_kernel k = d.clCreateKernel(static_cast<cl_program>(program_), name.c_str(), &rc);
  check(rc, ("clCreateKernel " + name).c_str());
  std::vector<cl_mem> mems;
  auto release = [&] {
    for (cl_mem m : mems) d.clReleaseMemObject(m);
    d.clReleaseKernel(k);
  };
  try {
    for (interp::Buf* b : bufs) {
      // an empty buffer cannot be made: one byte nothing reads
      std::byte dummy{};
      size_t n = b && b->bytes() ? b->bytes() : 1;
      void* host = b && b->bytes() ? static_cast<void*>(b->data()) : &dummy;
      mems.push_back(d.clCreateBuffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, host, &rc));
      check(rc, "clCreateBuffer");
    }
    cl_uint arg = 0;
    for (cl_mem& m : mems) check(d.clSetKernelArg(k, arg++, sizeof(cl_mem), &m), "clSetKernelArg (buffer)");
    for (int64_t v : vars) {
      cl_long x = v;
      check(d.clSetKernelArg(k, arg++, sizeof x, &x), "clSetKernelArg (var)");
    }
    std::vector<size_t> g(global.begin(), global.end()), l(local.begin(), local.end());
    if (!l.empty() && l.size() != g.size()) throw Error("run: a local size per global dim");
    for (size_t i = 0; i < l.size(); ++i) g[i] *= l[i];  // OpenCL counts work items
    bool empty = false;
    for (size_t x : g) empty |= x == 0;
    if (!empty) {
      check(d.clEnqueueNDRangeKernel(d.queue, k, cl_uint(g.size()), nullptr, g.data(), l.empty() ? nullptr : l.data(),
                                     0, nullptr, nullptr),
            ("clEnqueueNDRangeKernel " + name).c_str());
    }
    for (size_t i = 0; i < bufs.size(); ++i)
      if (bufs[i] && bufs[i]->bytes())
        check(
            d.clEnqueueReadBuffer(d.queue, mems[i], CL_TRUE, 0, bufs[i]->bytes(), bufs[i]->data(), 0, nullptr, nullptr),
            "clEnqueueReadBuffer");
    check(d.clFinish(d.queue), "clFinish");
  } catch (...) {
    release();
    throw;
  }
  release();
}

std::vector<interp::Output> run_schedule(const schedule::Schedule& s, const std::vector<codegen::CKernel>& compiled,
                                         const Program& prog, const interp::Vars& vars,
                                         const std::vector<std::vector<double>>& inputs) {
  if (compiled.size() != s.kernels.size()) throw Error("one compiled kernel per kernel of the schedule");
  std::vector<int64_t> var_values;
  for (const UOp* v : s.vars) var_values.push_back(interp::eval_dim(v, vars));
  interp::RunOptions opts;
  opts.check_workspace_overlap = false;
  return interp::run_schedule(s, vars, inputs, opts, [&](size_t k, std::span<interp::Buf* const> params) {
    std::vector<int64_t> global, local;  // up to the last dim with an id (none: one work item does it all)
    for (size_t i = 0; i < 3; ++i) {
      if (const UOp* g = compiled[k].global_size[i]) {
        global.resize(i + 1, 1);
        global[i] = interp::eval_dim(g, vars);
      }
      if (const UOp* l = compiled[k].local_size[i]) {
        local.resize(i + 1, 1);
        local[i] = interp::eval_dim(l, vars);
      }
    }
    if (global.empty()) global.push_back(1);
    if (!local.empty()) global.resize(std::max(global.size(), local.size()), 1), local.resize(global.size(), 1);
    // the kernel takes the slots up to the last it uses (render/c.h)
    prog.run(compiled[k].name, params.first(std::min(params.size(), size_t(compiled[k].buffer_args))), var_values,
             global, local);
  });
}

}  // namespace kiln::oclrun

// Devices: finding a Context's GPU through its driver, loaded at run time (dlopen), so that an
// application linked with GPU kernels starts and runs its CPU variants where there is no driver.
// OpenCL (opencl.cpp): the ICD loader libOpenCL.so.1, its platforms and their devices in order;
// CUDA (cuda.cpp): the driver libcuda.so.1, cuInit and the device of the ordinal. Only the entry
// points the runtime calls are looked up, by name, with the drivers' C types spelled as plain
// integers and pointers (no OpenCL or CUDA headers at build time).
#include "device.h"

#include <cstdlib>
#include <cstring>

#include "kiln/dispatch.h"
#include "message.h"

#if KILN_DEVICES
#include <dlfcn.h>
#endif

namespace kiln {
inline namespace runtime_v1 {

std::string Device::name() const {
  switch (kind_) {
    case Kind::Cpu:
      return "CPU";
    case Kind::OpenCL:
      return "OpenCL device " + std::to_string(index_);
    case Kind::Cuda:
      return "CUDA device " + std::to_string(index_);
  }
  return "device of unknown kind " + std::to_string(static_cast<int32_t>(kind_));
}

namespace detail {

#if KILN_DEVICES
namespace {

// the library a driver is loaded from: the environment's choice, else its usual name
const char* library(const char* variable, const char* usual) {
  const char* env = std::getenv(variable);
  return env != nullptr && *env != '\0' ? env : usual;
}

// dlerror()'s text, or a stand-in where it has none
const char* load_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "no reason given";
}

}  // namespace

const char* open_driver(DeviceState& st, const char* variable, const char* usual, const char* none) {
  const char* path = library(variable, usual);
  st.driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (st.driver == nullptr)
    st.status = (Message() << none << ": " << path << " cannot be loaded (" << load_error() << ")")
                    .status(StatusCode::Unsupported);
  return path;
}

bool lacks(DeviceState& st, const char* none, const char* path, const char* api, bool all_found) {
  if (!all_found) st.status = (Message() << none << ": " << path << " lacks " << api).status(StatusCode::Unsupported);
  return !all_found;
}

void* entry_point(void* driver, const char* name) { return dlsym(driver, name); }

void open_device(Device device, DeviceState& st) {
  if (device.is_cpu()) return;
  if (device.index() < 0) {
    st.status = (Message() << device.name() << ": a device index is 0 or more").status(StatusCode::InvalidArgument);
    return;
  }
  if (device.kind() == Device::Kind::OpenCL) return open_opencl(device.index(), st);
  if (device.kind() == Device::Kind::Cuda) return open_cuda(device.index(), st);
  st.status = (Message() << device.name() << ": no such kind of device").status(StatusCode::InvalidArgument);
}

DeviceState::~DeviceState() {
  ops.reset();  // before the driver it calls goes
  if (driver != nullptr) dlclose(driver);
}
#endif

int32_t device_arch(const Context* ctx) noexcept {
#if KILN_DEVICES
  DeviceState* st = device_state(const_cast<Context*>(ctx));
  return st != nullptr ? st->arch : 0;
#else
  (void)ctx;
  return 0;
#endif
}

Status device_check(const char* kernel, const Context* ctx) { return device_check(kernel, ctx, ""); }

Status device_check(const char* kernel, const Context* ctx, const char* built_for) {
  if (ctx == nullptr || ctx->device().is_cpu()) return Status();
  Status st = ctx->status();
  if (!st.ok()) return (Message() << kernel << ": " << st.message()).status(st.code());
  Message m;
  m << kernel << ": the library has no variant for " << ctx->device().name() << " (" << ctx->device_name() << "): ";
  if (built_for == nullptr || *built_for == '\0')
    m << "it was built for CPU targets only";
  else
    m << "its GPU variants are for " << built_for << " only";
  return m.status(StatusCode::Unsupported);
}

std::string device_explain(const char* kernel, const Context* ctx) {
  Status st = device_check(kernel, ctx);
  return "error: " + std::string(st.message());
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

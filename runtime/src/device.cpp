// Devices: finding a Context's GPU through its driver, loaded at run time (dlopen), so that an
// application linked with GPU kernels starts and runs its CPU variants where there is no driver.
// OpenCL: the ICD loader libOpenCL.so.1, its platforms and their devices in order; CUDA: the
// driver libcuda.so.1, cuInit and the device of the ordinal. Only the few entry points named here
// are looked up, by name, with the drivers' C types spelled as plain integers and pointers (no
// OpenCL or CUDA headers at build time).
#include "device.h"

#include <cstdlib>
#include <cstring>

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

namespace {

// The CUDA driver API's entry points (CUresult as int, CUdevice as int)
using CuInit = int (*)(unsigned);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
constexpr int kCudaErrorNoDevice = 100;

void open_cuda(int ordinal, DeviceState& st) {
  const char* path = open_driver(st, "KILN_CUDA_LIBRARY", "libcuda.so.1", "no CUDA driver");
  if (st.driver == nullptr) return;
  auto init = symbol<CuInit>(st.driver, "cuInit");
  auto count_of = symbol<CuDeviceGetCount>(st.driver, "cuDeviceGetCount");
  auto device_of = symbol<CuDeviceGet>(st.driver, "cuDeviceGet");
  auto name_of = symbol<CuDeviceGetName>(st.driver, "cuDeviceGetName");
  if (!found(st, "no CUDA driver", path, "the driver API's entry points", init, count_of, device_of, name_of)) return;
  if (int err = init(0); err != 0) {
    st.status =
        (err == kCudaErrorNoDevice ? Message() << "no CUDA device: the driver (" << path << ") found none"
                                   : Message() << "the CUDA driver failed to start (cuInit: error " << err << ")")
            .status(StatusCode::Unsupported);
    return;
  }
  int n = 0;
  if (count_of(&n) != 0 || ordinal >= n) {
    st.status = (Message() << "CUDA device " << ordinal << " not found: the driver has " << n << " device"
                           << (n == 1 ? "" : "s"))
                    .status(StatusCode::Unsupported);
    return;
  }
  int dev = 0;
  char buf[256] = {};
  if (device_of(&dev, ordinal) != 0 || name_of(buf, sizeof buf - 1, dev) != 0) {
    st.status =
        (Message() << "CUDA device " << ordinal << ": the driver cannot name it").status(StatusCode::Unsupported);
    return;
  }
  st.ordinal = dev;
  st.name = buf;
}

}  // namespace

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
  if (cl) close_opencl(*this);
  if (driver != nullptr) dlclose(driver);
}
#endif

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

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

// Loads the driver library into st.driver and returns its path; where it cannot be loaded,
// st.status says so, after `none` ("no CUDA driver")
const char* open_driver(DeviceState& st, const char* variable, const char* usual, const char* none) {
  const char* path = library(variable, usual);
  st.driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (st.driver == nullptr)
    st.status = (Message() << none << ": " << path << " cannot be loaded (" << load_error() << ")")
                    .status(StatusCode::Unsupported);
  return path;
}

// whether every entry point was found; else st.status says the driver lacks `api`
template <class... F>
bool found(DeviceState& st, const char* none, const char* path, const char* api, F... entry_points) {
  if ((... && (entry_points != nullptr))) return true;
  st.status = (Message() << none << ": " << path << " lacks " << api).status(StatusCode::Unsupported);
  return false;
}

template <class F> F symbol(void* lib, const char* name) {
  F f;
  void* p = dlsym(lib, name);
  static_assert(sizeof f == sizeof p);
  std::memcpy(&f, &p, sizeof f);
  return p != nullptr ? f : nullptr;
}

// OpenCL 1.2's entry points, its handles as pointers and its enums as integers
using cl_int = int32_t;
using cl_uint = uint32_t;
using GetPlatformIDs = cl_int (*)(cl_uint, void**, cl_uint*);
using GetDeviceIDs = cl_int (*)(void*, uint64_t, cl_uint, void**, cl_uint*);
using GetInfo = cl_int (*)(void*, cl_uint, size_t, void*, size_t*);
constexpr uint64_t kClDeviceTypeAll = 0xFFFFFFFF;
constexpr cl_uint kClPlatformName = 0x0902, kClDeviceName = 0x102B;

void open_opencl(int index, DeviceState& st) {
  const char* none = "no OpenCL platform";
  const char* path = open_driver(st, "KILN_OPENCL_LIBRARY", "libOpenCL.so.1", none);
  if (st.driver == nullptr) return;
  auto platforms_of = symbol<GetPlatformIDs>(st.driver, "clGetPlatformIDs");
  auto devices_of = symbol<GetDeviceIDs>(st.driver, "clGetDeviceIDs");
  auto platform_info = symbol<GetInfo>(st.driver, "clGetPlatformInfo");
  auto device_info = symbol<GetInfo>(st.driver, "clGetDeviceInfo");
  if (!found(st, none, path, "the OpenCL 1.2 entry points", platforms_of, devices_of, platform_info, device_info))
    return;
  cl_uint nplatforms = 0;
  cl_int err = platforms_of(0, nullptr, &nplatforms);
  // -1001 (CL_PLATFORM_NOT_FOUND_KHR): the loader found no installed platform
  if (err != 0 || nplatforms == 0) {
    Message m;
    m << "no OpenCL platform: the ICD loader (" << path << ") found none";
    if (err != 0 && err != -1001) m << " (clGetPlatformIDs: error " << err << ")";
    st.status = m.status(StatusCode::Unsupported);
    return;
  }
  std::vector<void*> platforms(nplatforms);
  if (platforms_of(nplatforms, platforms.data(), nullptr) != 0) {
    st.status = Status(StatusCode::Unsupported, "no OpenCL platform: clGetPlatformIDs failed listing them");
    return;
  }
  auto text = [](GetInfo info, void* of, cl_uint what) {
    char buf[256] = {};
    return info(of, what, sizeof buf - 1, buf, nullptr) == 0 ? std::string(buf) : std::string();
  };
  int seen = 0;
  for (void* p : platforms) {
    cl_uint n = 0;
    if (devices_of(p, kClDeviceTypeAll, 0, nullptr, &n) != 0 || n == 0) continue;
    if (index >= seen + static_cast<int>(n)) {
      seen += static_cast<int>(n);
      continue;
    }
    std::vector<void*> devices(n);
    if (devices_of(p, kClDeviceTypeAll, n, devices.data(), nullptr) != 0) break;
    st.handle = devices[static_cast<size_t>(index - seen)];
    st.platform = p;
    st.name = text(device_info, st.handle, kClDeviceName) + ": " + text(platform_info, p, kClPlatformName);
    return;
  }
  st.status = (Message() << "OpenCL device " << index << " not found: the platforms have " << seen << " device"
                         << (seen == 1 ? "" : "s"))
                  .status(StatusCode::Unsupported);
}

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
  if (driver != nullptr) dlclose(driver);
}
#endif

Status device_check(const char* kernel, const Context* ctx) {
  if (ctx == nullptr || ctx->device().is_cpu()) return Status();
  Status st = ctx->status();
  if (!st.ok()) return (Message() << kernel << ": " << st.message()).status(st.code());
  return (Message() << kernel << ": the library has no variant for " << ctx->device().name() << " ("
                    << ctx->device_name() << "): it was built for CPU targets only")
      .status(StatusCode::Unsupported);
}

std::string device_explain(const char* kernel, const Context* ctx) {
  Status st = device_check(kernel, ctx);
  return "error: " + std::string(st.message());
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

// A Context's GPU as the runtime found it (device.cpp): the driver library, the device's handle
// and name, or why it is out of reach.
#pragma once

#include <string>
#include <vector>

#include "config.h"

// KILN_DEVICES: whether GPUs can be reached: the heap and a dynamic loader (dlopen; not on
// WebAssembly, bare-metal targets or Windows). Without it a GPU Context's status() says so.
#if KILN_HEAP && !defined(__wasm__) && !defined(_WIN32) && defined(__has_include)
#if __has_include(<dlfcn.h>)
#define KILN_DEVICES 1
#endif
#endif
#ifndef KILN_DEVICES
#define KILN_DEVICES 0
#endif

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

#if KILN_DEVICES
struct DeviceState {
  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();  // dlclose

  void* driver = nullptr;  // the dlopen handle, kept for the calls to come
  // the device, as the driver's calls to come (a context, queues, buffers) take it:
  void* platform = nullptr;  // OpenCL: the device's platform (cl_platform_id)
  void* handle = nullptr;    // OpenCL: the cl_device_id
  int ordinal = -1;          // CUDA: the CUdevice
  std::string name;          // the driver's name for it
  Status status;             // Unsupported (and why) when it is out of reach
};

// Loads the driver and finds `device` (nothing for the CPU); failures land in st.status.
void open_device(Device device, DeviceState& st);
#endif

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

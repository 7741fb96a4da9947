// A Context's GPU as the runtime found it (device.cpp): the driver library, the device's handle
// and name, or why it is out of reach.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#if KILN_THREADS
#include <mutex>
#endif

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
struct OpenClApi;  // opencl.cpp: the entry points its calls take

struct DeviceState {
  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();  // close(), then dlclose

  void* driver = nullptr;  // the dlopen handle, kept for the calls to come
  // the device, as the driver's calls take it:
  void* platform = nullptr;  // OpenCL: the device's platform (cl_platform_id)
  void* handle = nullptr;    // OpenCL: the cl_device_id
  int ordinal = -1;          // CUDA: the CUdevice
  std::string name;          // the driver's name for it
  Status status;             // Unsupported (and why) when it is out of reach
  // OpenCL: its entry points, the context and queue calls run on, and the programs built for it
  // (by the address of the generated source: one per spec file of a library) and their kernels
  OpenClApi* cl = nullptr;  // close_opencl() deletes it
  void* context = nullptr;  // cl_context
  void* queue = nullptr;    // cl_command_queue
  std::map<const char*, void*> programs;
  std::map<std::pair<void*, std::string>, void*> kernels;
#if KILN_THREADS
  std::mutex calls;  // a DeviceCall holds it: calls through one Context take turns on its device
#endif
};

// Loads the driver and finds `device` (nothing for the CPU); failures land in st.status.
void open_device(Device device, DeviceState& st);

// opencl.cpp: finds the index-th OpenCL device and makes its context and queue; releases them
void open_opencl(int index, DeviceState& st);
void close_opencl(DeviceState& st);

// What device.cpp and opencl.cpp share: loading a driver, which st.status says where it cannot
// (after `none`: "no CUDA driver"), returning its path; whether every entry point was found, else
// st.status says the driver lacks `api`; an entry point by name (nullptr where there is none)
const char* open_driver(DeviceState& st, const char* variable, const char* usual, const char* none);
bool lacks(DeviceState& st, const char* none, const char* path, const char* api, bool all_found);
void* entry_point(void* driver, const char* name);
template <class F> F symbol(void* driver, const char* name) {
  void* p = entry_point(driver, name);
  F f;
  static_assert(sizeof f == sizeof p);
  std::memcpy(&f, &p, sizeof f);
  return p != nullptr ? f : nullptr;
}
template <class... F>
bool found(DeviceState& st, const char* none, const char* path, const char* api, F... entry_points) {
  return !lacks(st, none, path, api, (... && (entry_points != nullptr)));
}
#endif

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

// A Context's GPU as the runtime found it (device.cpp): the driver library, the device's name and
// the driver's calls for it (Driver), or why it is out of reach.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "kiln/kiln.h"
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
// A device's driver as a Context's calls use it (opencl.cpp, cuda.cpp): programs loaded for the
// device, buffers in its memory, kernels launched, copies, the wait for all of it. Each step
// returns Ok, or the driver's failure as "<call>: <driver> error <n>", ResourceExhausted where
// the device is out of memory, else Internal (a buffer not the context's: InvalidArgument). The
// caller holds the state's `calls` mutex.
class Driver {
 public:
  virtual ~Driver() = default;
  // `program` (what the library embeds for the device's target: pieces ending in a null) loaded for
  // the device at its first use and kept, by address: an OpenCL program built from its source's
  // pieces, a CUDA module from a fatbin (the one piece)
  virtual Status load(const char* const* program, void** module) = 0;
  // `bytes` (at least 1) of device memory, filled from `host` unless it is null
  virtual Status allocate(size_t bytes, const void* host, void** mem) = 0;
  virtual void release(void* mem) noexcept = 0;
  // the bytes of a buffer this driver made; InvalidArgument where `mem` is none of this context's
  // ("its data is not a device buffer", "a device buffer of another context: ...")
  virtual Status size_of(void* mem, size_t* bytes) = 0;
  // module's `function` over global[0] x global[1] x global[2] work items (each at least 1), taking
  // `count` buffers, then `nvars` dims as 64-bit integers; with `local` (each at least 1), over
  // global[0] x global[1] x global[2] work groups of local[0] x local[1] x local[2] items
  virtual Status launch(void* module, const char* function, void* const* mems, int32_t count, const int64_t* vars,
                        int32_t nvars, const int64_t* global, const int64_t* local) = 0;
  // copies between the host and a buffer, from byte `offset` of it; they wait for the device
  virtual Status read(void* mem, size_t offset, void* host, size_t bytes) = 0;
  virtual Status write(void* mem, size_t offset, const void* host, size_t bytes) = 0;
  virtual Status finish() = 0;  // waits for everything launched
  // around each use from a thread (CUDA: the context made current on it, and no longer)
  virtual void enter() noexcept {}
  virtual void leave() noexcept {}
};

struct DeviceState {
  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();  // the driver's state released, then dlclose

  void* driver = nullptr;       // the dlopen handle, kept for the calls to come
  std::unique_ptr<Driver> ops;  // set once the device is found and its context made
  std::string name;             // the driver's name for the device
  int32_t arch = 0;             // CUDA: its compute capability, major * 10 + minor
  Status status;                // Unsupported (and why) when it is out of reach
#if KILN_THREADS
  std::mutex calls;  // a DeviceCall holds it: calls through one Context take turns on its device
#endif
};

// Loads the driver and finds `device` (nothing for the CPU); failures land in st.status.
void open_device(Device device, DeviceState& st);

// opencl.cpp: finds the index-th OpenCL device and makes its context and queue (st.ops)
void open_opencl(int index, DeviceState& st);
// cuda.cpp: finds the CUDA device of that ordinal and retains its primary context (st.ops)
void open_cuda(int ordinal, DeviceState& st);

// What the drivers share: loading a driver, which st.status says where it cannot
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

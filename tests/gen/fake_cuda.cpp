// A CUDA driver for machines without a GPU (libkiln_fake_cuda.so, loaded by the runtime through
// KILN_CUDA_LIBRARY): the driver API entry points kiln's runtime calls, over host memory, with the
// checks a real driver makes that a caller can get wrong (a current context for every call, known
// allocations and ranges, block and grid limits, a fatbin's magic). A kernel runs as the host
// build of the library's CUDA C++ (tests/gen/cuda_on_host.py writes it; KILN_FAKE_CUDA_KERNELS
// names the shared library): kiln_host_<function>(params) once per thread of every block, each
// thread's ids set first: one thread at a time, or, for a kernel with a barrier (its
// kiln_host_syncs_<function>), a block's threads side by side on host threads that meet at each
// __syncthreads (std::barrier), one block after another (its __shared__ memory is one static copy,
// so launches take turns). One device, named "kiln fake CUDA device", of compute
// capability KILN_FAKE_CUDA_ARCH (major * 10 + minor; default 90).
#include <dlfcn.h>

#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using CuResult = int;
using CuDevicePtr = uint64_t;
constexpr CuResult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3, kInvalidImage = 200,
                   kInvalidContext = 201, kInvalidHandle = 400, kNotFound = 500, kLaunchOutOfResources = 701;

struct Function {
  void (*call)(void**);
  bool syncs;  // the kernel has a barrier
};

using SetIds = void (*)(const unsigned*, const unsigned*, const unsigned*, void (*)(void*), void*);

struct State {
  std::mutex lock;
  bool initialized = false;
  int retained = 0;                      // primary context references
  std::map<CuDevicePtr, size_t> memory;  // allocations and their bytes
  std::map<const void*, void*> modules;  // module handle -> the fatbin it was loaded from
  std::map<std::string, Function> functions;
  std::vector<void*> streams;
  void* kernels = nullptr;  // the host kernels' library
  SetIds set_ids = nullptr;
  std::mutex launch;  // one launch at a time: a kernel's shared memory is one copy
  long launches = 0;
  long synced_launches = 0;  // of kernels with a barrier
};

State& state() {
  static State s;
  return s;
}

int kContext = 0;  // the primary context's handle is its address
thread_local std::vector<void*> current;

bool has_context() { return !current.empty() && current.back() == &kContext; }

// [p, p + bytes) inside one allocation
bool in_memory(State& s, CuDevicePtr p, size_t bytes) {
  auto it = s.memory.upper_bound(p);
  if (it == s.memory.begin()) return false;
  --it;
  return p >= it->first && p - it->first <= it->second && bytes <= it->second - (p - it->first);
}

int arch() {
  const char* a = std::getenv("KILN_FAKE_CUDA_ARCH");
  return a != nullptr && *a != '\0' ? std::atoi(a) : 90;
}

}  // namespace

extern "C" {

CuResult cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  state().initialized = true;
  return kSuccess;
}

CuResult cuDeviceGetCount(int* n) {
  if (!state().initialized) return kNotInitialized;
  *n = 1;
  return kSuccess;
}

CuResult cuDeviceGet(int* device, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *device = 0;
  return kSuccess;
}

CuResult cuDeviceGetName(char* name, int len, int device) {
  if (device != 0 || len < 1) return kInvalidValue;
  std::strncpy(name, "kiln fake CUDA device", size_t(len));
  name[len - 1] = '\0';
  return kSuccess;
}

CuResult cuDeviceGetAttribute(int* value, int attribute, int device) {
  if (device != 0) return kInvalidValue;
  if (attribute == 75) return *value = arch() / 10, kSuccess;  // compute capability major
  if (attribute == 76) return *value = arch() % 10, kSuccess;  // minor
  return kInvalidValue;
}

CuResult cuDevicePrimaryCtxRetain(void** ctx, int device) {
  if (device != 0) return kInvalidValue;
  std::lock_guard<std::mutex> g(state().lock);
  ++state().retained;
  *ctx = &kContext;
  return kSuccess;
}

CuResult cuDevicePrimaryCtxRelease_v2(int device) {
  std::lock_guard<std::mutex> g(state().lock);
  if (device != 0 || state().retained == 0) return kInvalidContext;
  --state().retained;
  return kSuccess;
}

CuResult cuCtxPushCurrent_v2(void* ctx) {
  if (ctx != &kContext) return kInvalidContext;
  current.push_back(ctx);
  return kSuccess;
}

CuResult cuCtxPopCurrent_v2(void** ctx) {
  if (current.empty()) return kInvalidContext;
  if (ctx != nullptr) *ctx = current.back();
  current.pop_back();
  return kSuccess;
}

CuResult cuStreamCreate(void** stream, unsigned) {
  if (!has_context()) return kInvalidContext;
  std::lock_guard<std::mutex> g(state().lock);
  *stream = new int(0);
  state().streams.push_back(*stream);
  return kSuccess;
}

CuResult cuStreamDestroy_v2(void* stream) {
  std::lock_guard<std::mutex> g(state().lock);
  auto& ss = state().streams;
  for (size_t i = 0; i < ss.size(); ++i)
    if (ss[i] == stream) {
      delete static_cast<int*>(stream);
      ss.erase(ss.begin() + long(i));
      return kSuccess;
    }
  return kInvalidHandle;
}

CuResult cuStreamSynchronize(void*) { return has_context() ? kSuccess : kInvalidContext; }

CuResult cuModuleLoadData(void** module, const void* image) {
  if (!has_context()) return kInvalidContext;
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof magic);
  if (magic != 0xBA55ED50u) return kInvalidImage;  // a fatbin's
  std::lock_guard<std::mutex> g(state().lock);
  void* m = new int(0);
  state().modules[m] = const_cast<void*>(image);
  *module = m;
  return kSuccess;
}

CuResult cuModuleUnload(void* module) {
  std::lock_guard<std::mutex> g(state().lock);
  if (state().modules.erase(module) != 1) return kInvalidHandle;
  delete static_cast<int*>(module);
  return kSuccess;
}

CuResult cuModuleGetFunction(void** function, void* module, const char* name) {
  if (!has_context()) return kInvalidContext;
  State& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  if (s.modules.count(module) == 0) return kInvalidHandle;
  if (s.kernels == nullptr) {
    const char* path = std::getenv("KILN_FAKE_CUDA_KERNELS");
    if (path == nullptr || (s.kernels = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == nullptr) return kNotFound;
    s.set_ids = reinterpret_cast<SetIds>(dlsym(s.kernels, "kiln_host_set_ids"));
    if (s.set_ids == nullptr) return kNotFound;
  }
  auto it = s.functions.find(name);
  if (it == s.functions.end()) {
    void* f = dlsym(s.kernels, ("kiln_host_" + std::string(name)).c_str());
    if (f == nullptr) return kNotFound;
    const bool syncs = dlsym(s.kernels, ("kiln_host_syncs_" + std::string(name)).c_str()) != nullptr;
    it = s.functions.emplace(name, Function{reinterpret_cast<void (*)(void**)>(f), syncs}).first;
  }
  *function = &it->second;
  return kSuccess;
}

CuResult cuMemAlloc_v2(CuDevicePtr* p, size_t bytes) {
  if (!has_context()) return kInvalidContext;
  if (bytes == 0) return kInvalidValue;
  if (bytes > (size_t(1) << 36)) return kOutOfMemory;  // 64 GiB: more than the fake hands out
  void* m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (m == nullptr) return kOutOfMemory;
  std::memset(m, 0xA5, bytes);  // what the device's memory holds before anything is written
  std::lock_guard<std::mutex> g(state().lock);
  *p = reinterpret_cast<uintptr_t>(m);
  state().memory[*p] = bytes;
  return kSuccess;
}

CuResult cuMemFree_v2(CuDevicePtr p) {
  if (!has_context()) return kInvalidContext;
  std::lock_guard<std::mutex> g(state().lock);
  if (state().memory.erase(p) != 1) return kInvalidValue;
  std::free(reinterpret_cast<void*>(uintptr_t(p)));
  return kSuccess;
}

CuResult cuMemcpyHtoDAsync_v2(CuDevicePtr dst, const void* src, size_t bytes, void*) {
  if (!has_context()) return kInvalidContext;
  std::lock_guard<std::mutex> g(state().lock);
  if (!in_memory(state(), dst, bytes)) return kInvalidValue;
  std::memcpy(reinterpret_cast<void*>(uintptr_t(dst)), src, bytes);
  return kSuccess;
}

CuResult cuMemcpyDtoHAsync_v2(void* dst, CuDevicePtr src, size_t bytes, void*) {
  if (!has_context()) return kInvalidContext;
  std::lock_guard<std::mutex> g(state().lock);
  if (!in_memory(state(), src, bytes)) return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<void*>(uintptr_t(src)), bytes);
  return kSuccess;
}

CuResult cuPointerGetAttribute(void* data, int attribute, CuDevicePtr p) {
  if (attribute != 1) return kInvalidValue;  // CU_POINTER_ATTRIBUTE_CONTEXT
  std::lock_guard<std::mutex> g(state().lock);
  if (!in_memory(state(), p, 1)) return kInvalidValue;
  *static_cast<void**>(data) = &kContext;
  return kSuccess;
}

CuResult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void*, void** params, void** extra) {
  if (!has_context()) return kInvalidContext;
  if (function == nullptr || params == nullptr || extra != nullptr) return kInvalidValue;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return kInvalidValue;
  if (gx > 2147483647u || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 || bz > 64) return kInvalidValue;
  if (uint64_t(bx) * by * bz > 1024 || shared > (48u << 10)) return kLaunchOutOfResources;
  State& s = state();
  const Function& f = *static_cast<const Function*>(function);
  const unsigned dim[3] = {bx, by, bz};
  std::lock_guard<std::mutex> one(s.launch);
  if (!f.syncs) {
    for (unsigned z = 0; z < gz; ++z)
      for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x)
          for (unsigned tz = 0; tz < bz; ++tz)
            for (unsigned ty = 0; ty < by; ++ty)
              for (unsigned tx = 0; tx < bx; ++tx) {
                const unsigned block[3] = {x, y, z}, thread[3] = {tx, ty, tz};
                s.set_ids(block, thread, dim, nullptr, nullptr);
                f.call(params);
              }
  } else {
    const unsigned n = bx * by * bz;
    std::barrier<> sync(static_cast<std::ptrdiff_t>(n));
    auto arrive = [](void* b) { static_cast<std::barrier<>*>(b)->arrive_and_wait(); };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < n; ++t)
      threads.emplace_back([&, t] {
        const unsigned thread[3] = {t % bx, t / bx % by, t / (bx * by)};
        for (unsigned z = 0; z < gz; ++z)
          for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
              const unsigned block[3] = {x, y, z};
              s.set_ids(block, thread, dim, arrive, &sync);
              f.call(params);
              sync.arrive_and_wait();  // the block's end: the next one's shared memory is free
            }
      });
    for (std::thread& t : threads) t.join();
  }
  std::lock_guard<std::mutex> g(s.lock);
  ++s.launches;
  s.synced_launches += f.syncs;
  return kSuccess;
}

CuResult cuGetErrorName(CuResult err, const char** name) {
  switch (err) {
    case kInvalidValue:
      return *name = "CUDA_ERROR_INVALID_VALUE", kSuccess;
    case kOutOfMemory:
      return *name = "CUDA_ERROR_OUT_OF_MEMORY", kSuccess;
    case kInvalidImage:
      return *name = "CUDA_ERROR_INVALID_IMAGE", kSuccess;
    case kInvalidContext:
      return *name = "CUDA_ERROR_INVALID_CONTEXT", kSuccess;
    case kNotFound:
      return *name = "CUDA_ERROR_NOT_FOUND", kSuccess;
    default:
      return kInvalidValue;
  }
}

// for the tests: what is left (allocations, modules, streams, context references) and how many
// kernels ran
void kiln_fake_cuda_counts(long* allocations, long* modules, long* streams, long* retained, long* launches) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  *allocations = long(s.memory.size()), *modules = long(s.modules.size()), *streams = long(s.streams.size());
  *retained = s.retained, *launches = s.launches;
}

// the launches of kernels with a barrier (a block's threads run side by side)
long kiln_fake_cuda_synced_launches() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.lock);
  return s.synced_launches;
}

}  // extern "C"

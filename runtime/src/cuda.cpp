// CUDA: finding a Context's device through the driver API (libcuda.so.1, loaded at run time), its
// primary context and a stream of the Context's own, and the Driver its calls and buffers use: the
// library's fatbins loaded as modules at their first call and kept, device memory, kernels
// launched over whole blocks (the kernels check their ids against the work items' extent), copies
// on the stream. The entry points are looked up by name, with CUDA's types spelled as plain
// integers and pointers (no CUDA headers at build time).
#include <cstdint>
#include <map>

#include "device.h"
#include "kiln/dispatch.h"
#include "message.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

#if KILN_DEVICES
namespace {

// The driver API's entry points: CUresult as int, CUdevice as int, CUdeviceptr as uint64_t, the
// other handles as pointers
using CuResult = int;
using CuDevicePtr = uint64_t;
constexpr int kCuErrorOutOfMemory = 2, kCuErrorNoDevice = 100;
constexpr int kCuAttrComputeMajor = 75, kCuAttrComputeMinor = 76;
constexpr int kCuPointerAttributeContext = 1;

struct CudaApi {
  CuResult (*Init)(unsigned);
  CuResult (*DeviceGetCount)(int*);
  CuResult (*DeviceGet)(int*, int);
  CuResult (*DeviceGetName)(char*, int, int);
  CuResult (*DeviceGetAttribute)(int*, int, int);
  CuResult (*DevicePrimaryCtxRetain)(void**, int);
  CuResult (*DevicePrimaryCtxRelease)(int);
  CuResult (*CtxPushCurrent)(void*);
  CuResult (*CtxPopCurrent)(void**);
  CuResult (*StreamCreate)(void**, unsigned);
  CuResult (*StreamDestroy)(void*);
  CuResult (*StreamSynchronize)(void*);
  CuResult (*ModuleLoadData)(void**, const void*);
  CuResult (*ModuleUnload)(void*);
  CuResult (*ModuleGetFunction)(void**, void*, const char*);
  CuResult (*MemAlloc)(CuDevicePtr*, size_t);
  CuResult (*MemFree)(CuDevicePtr);
  CuResult (*MemcpyHtoDAsync)(CuDevicePtr, const void*, size_t, void*);
  CuResult (*MemcpyDtoHAsync)(void*, CuDevicePtr, size_t, void*);
  CuResult (*LaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                           void**);
  CuResult (*PointerGetAttribute)(void*, int, CuDevicePtr);
  CuResult (*GetErrorName)(CuResult, const char**);
};

// The entry points by the names the driver exports: the _v2 ones where cuda.h maps a name to them
bool resolve(void* lib, CudaApi& a) {
#define KILN_CU(f, name) (a.f = symbol<decltype(a.f)>(lib, name)) != nullptr
  return KILN_CU(Init, "cuInit") && KILN_CU(DeviceGetCount, "cuDeviceGetCount") && KILN_CU(DeviceGet, "cuDeviceGet") &&
         KILN_CU(DeviceGetName, "cuDeviceGetName") && KILN_CU(DeviceGetAttribute, "cuDeviceGetAttribute") &&
         KILN_CU(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
         KILN_CU(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") &&
         KILN_CU(CtxPushCurrent, "cuCtxPushCurrent_v2") && KILN_CU(CtxPopCurrent, "cuCtxPopCurrent_v2") &&
         KILN_CU(StreamCreate, "cuStreamCreate") && KILN_CU(StreamDestroy, "cuStreamDestroy_v2") &&
         KILN_CU(StreamSynchronize, "cuStreamSynchronize") && KILN_CU(ModuleLoadData, "cuModuleLoadData") &&
         KILN_CU(ModuleUnload, "cuModuleUnload") && KILN_CU(ModuleGetFunction, "cuModuleGetFunction") &&
         KILN_CU(MemAlloc, "cuMemAlloc_v2") && KILN_CU(MemFree, "cuMemFree_v2") &&
         KILN_CU(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") && KILN_CU(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") &&
         KILN_CU(LaunchKernel, "cuLaunchKernel") && KILN_CU(PointerGetAttribute, "cuPointerGetAttribute") &&
         KILN_CU(GetErrorName, "cuGetErrorName");
#undef KILN_CU
}

// the threads of a block per dim, for a launch of `global` work items: up to 256 in all, dim 0
// first (the kernels' innermost loop), so a warp reads consecutive elements
void block_of(const int64_t* global, unsigned* block) {
  int64_t left = 256;
  for (int i = 0; i < 3; ++i) {
    int64_t b = global[i] < left ? global[i] : left;
    if (i == 2 && b > 64) b = 64;  // a block's z is at most 64
    block[i] = static_cast<unsigned>(b);
    left /= b;
  }
}

uintptr_t address(void* mem) { return reinterpret_cast<uintptr_t>(mem); }

class CudaDriver final : public Driver {
 public:
  CudaDriver(std::unique_ptr<CudaApi> cu, int device, void* context, void* stream)
      : cu_(std::move(cu)), device_(device), context_(context), stream_(stream) {}
  ~CudaDriver() override {
    enter();
    for (auto& [image, module] : modules_) cu_->ModuleUnload(module);
    for (auto& [mem, bytes] : allocations_) cu_->MemFree(mem);
    cu_->StreamDestroy(stream_);
    leave();
    cu_->DevicePrimaryCtxRelease(device_);
  }

  Status load(const char* const* program, void** module) override {
    auto it = modules_.find(program);
    if (it != modules_.end()) return *module = it->second, Status();
    void* m = nullptr;
    if (CuResult err = cu_->ModuleLoadData(&m, program[0]); err != 0) return error("cuModuleLoadData", err);
    modules_.emplace(program, m);
    *module = m;
    return Status();
  }

  Status allocate(size_t bytes, const void* host, void** mem) override {
    CuDevicePtr p = 0;
    if (CuResult err = cu_->MemAlloc(&p, bytes); err != 0) return error("cuMemAlloc", err);
    allocations_.emplace(p, bytes);
    *mem = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
    if (host == nullptr) return Status();
    Status s = write(*mem, 0, host, bytes);
    if (!s.ok()) release(*mem), *mem = nullptr;
    return s;
  }

  void release(void* mem) noexcept override {
    if (allocations_.erase(address(mem)) == 1) cu_->MemFree(address(mem));
  }

  Status size_of(void* mem, size_t* bytes) override {
    auto it = allocations_.find(address(mem));
    if (it != allocations_.end()) return *bytes = it->second, Status();
    void* context = nullptr;
    if (mem != nullptr && cu_->PointerGetAttribute(&context, kCuPointerAttributeContext, address(mem)) == 0)
      return Status(StatusCode::InvalidArgument,
                    "a device buffer of another context: a call reads only its own context's");
    return Status(StatusCode::InvalidArgument, "its data is not a device buffer");
  }

  Status launch(void* module, const char* function, void* const* mems, int32_t count, const int64_t* vars,
                int32_t nvars, const int64_t* global, const int64_t* local) override {
    auto key = std::make_pair(module, std::string(function));
    auto it = functions_.find(key);
    if (it == functions_.end()) {
      void* f = nullptr;
      if (CuResult err = cu_->ModuleGetFunction(&f, module, function); err != 0)
        return error("cuModuleGetFunction", err);
      it = functions_.emplace(key, f).first;
    }
    // the arguments by address: each buffer's device pointer, then each dim
    std::vector<CuDevicePtr> ptrs(static_cast<size_t>(count));
    std::vector<void*> params;
    for (int32_t i = 0; i < count; ++i) {
      ptrs[static_cast<size_t>(i)] = address(mems[i]);
      params.push_back(&ptrs[static_cast<size_t>(i)]);
    }
    for (int32_t i = 0; i < nvars; ++i) params.push_back(const_cast<int64_t*>(&vars[i]));
    unsigned block[3], grid[3];
    if (local != nullptr) {  // the kernel's own work groups: a block each
      for (int i = 0; i < 3; ++i)
        block[i] = static_cast<unsigned>(local[i]), grid[i] = static_cast<unsigned>(global[i]);
    } else {
      block_of(global, block);
      for (int i = 0; i < 3; ++i) grid[i] = static_cast<unsigned>((global[i] + block[i] - 1) / block[i]);
    }
    CuResult err = cu_->LaunchKernel(it->second, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream_,
                                     params.data(), nullptr);
    return err == 0 ? Status() : error("cuLaunchKernel", err);
  }

  Status read(void* mem, size_t offset, void* host, size_t bytes) override {
    if (CuResult err = cu_->MemcpyDtoHAsync(host, address(mem) + offset, bytes, stream_); err != 0)
      return error("cuMemcpyDtoHAsync", err);
    return finish();
  }

  Status write(void* mem, size_t offset, const void* host, size_t bytes) override {
    if (CuResult err = cu_->MemcpyHtoDAsync(address(mem) + offset, host, bytes, stream_); err != 0)
      return error("cuMemcpyHtoDAsync", err);
    return finish();
  }

  Status finish() override {
    CuResult err = cu_->StreamSynchronize(stream_);
    return err == 0 ? Status() : error("cuStreamSynchronize", err);
  }

  void enter() noexcept override { cu_->CtxPushCurrent(context_); }
  void leave() noexcept override {
    void* popped = nullptr;
    cu_->CtxPopCurrent(&popped);
  }

 private:
  // "<call>: CUDA error <n> (CUDA_ERROR_...)"
  Status error(const char* call, CuResult err) const {
    const char* name = nullptr;
    if (cu_->GetErrorName(err, &name) != 0) name = nullptr;
    Message m;
    m << call << ": CUDA error " << err;
    if (name != nullptr) m << " (" << name << ")";
    return m.status(err == kCuErrorOutOfMemory ? StatusCode::ResourceExhausted : StatusCode::Internal);
  }

  std::unique_ptr<CudaApi> cu_;
  int device_;                                   // CUdevice
  void* context_;                                // its primary CUcontext
  void* stream_;                                 // CUstream: the Context's calls and copies, in order
  std::map<const char* const*, void*> modules_;  // by the address of the program the library embeds
  std::map<std::pair<void*, std::string>, void*> functions_;
  std::map<CuDevicePtr, size_t> allocations_;  // this driver's buffers and their bytes
};

}  // namespace

void open_cuda(int ordinal, DeviceState& st) {
  const char* none = "no CUDA driver";
  const char* path = open_driver(st, "KILN_CUDA_LIBRARY", "libcuda.so.1", none);
  if (st.driver == nullptr) return;
  auto cu = std::make_unique<CudaApi>();
  if (lacks(st, none, path, "the driver API's entry points", resolve(st.driver, *cu))) return;
  if (CuResult err = cu->Init(0); err != 0) {
    st.status = (err == kCuErrorNoDevice ? Message() << "no CUDA device: the driver (" << path << ") found none"
                                         : Message() << "the CUDA driver failed to start (cuInit: error " << err << ")")
                    .status(StatusCode::Unsupported);
    return;
  }
  int n = 0;
  if (cu->DeviceGetCount(&n) != 0 || ordinal >= n) {
    st.status = (Message() << "CUDA device " << ordinal << " not found: the driver has " << n << " device"
                           << (n == 1 ? "" : "s"))
                    .status(StatusCode::Unsupported);
    return;
  }
  int dev = 0, major = 0, minor = 0;
  char buf[256] = {};
  if (cu->DeviceGet(&dev, ordinal) != 0 || cu->DeviceGetName(buf, sizeof buf - 1, dev) != 0 ||
      cu->DeviceGetAttribute(&major, kCuAttrComputeMajor, dev) != 0 ||
      cu->DeviceGetAttribute(&minor, kCuAttrComputeMinor, dev) != 0) {
    st.status =
        (Message() << "CUDA device " << ordinal << ": the driver cannot name it").status(StatusCode::Unsupported);
    return;
  }
  st.name = buf;
  st.arch = major * 10 + minor;
  void* context = nullptr;
  void* stream = nullptr;
  CuResult err = cu->DevicePrimaryCtxRetain(&context, dev);
  if (err == 0) {
    cu->CtxPushCurrent(context);
    err = cu->StreamCreate(&stream, 0);
    void* popped = nullptr;
    cu->CtxPopCurrent(&popped);
    if (err != 0) cu->DevicePrimaryCtxRelease(dev);
  }
  if (err != 0) {
    st.status = (Message() << "CUDA device " << ordinal << " (" << st.name << "): "
                           << (context == nullptr ? "cuDevicePrimaryCtxRetain" : "cuStreamCreate") << ": error " << err)
                    .status(StatusCode::Unsupported);
    return;
  }
  st.ops = std::make_unique<CudaDriver>(std::move(cu), dev, context, stream);
}
#endif

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

// OpenCL: finding a Context's device through the ICD loader (libOpenCL.so.1, loaded at run time),
// its context and queue, and the Driver its calls and buffers use: the library's OpenCL C built
// for the device at its first call and kept, buffers, kernels launched, copies. The entry points
// are looked up by name and OpenCL's types are spelled as plain integers and pointers (no OpenCL
// headers at build time).
#include <cstdint>

#include "device.h"
#include "kiln/dispatch.h"
#include "message.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

#if KILN_DEVICES
// OpenCL 1.2's entry points, its handles as pointers and its enums as integers
using cl_int = int32_t;
using cl_uint = uint32_t;
constexpr uint64_t kClDeviceTypeAll = 0xFFFFFFFF;
constexpr uint64_t kClMemReadWrite = 1 << 0, kClMemCopyHostPtr = 1 << 5;
constexpr cl_uint kClPlatformName = 0x0902, kClDeviceName = 0x102B, kClProgramBuildLog = 0x1183;
constexpr cl_uint kClTrue = 1, kClMemSize = 0x1102, kClMemContext = 0x1106;
constexpr cl_int kClMemAllocationFailure = -4, kClOutOfResources = -5, kClOutOfHostMemory = -6,
                 kClInvalidBufferSize = -61;

// the errors that say the device is out of memory (or the size is more than it allocates)
bool memory_error(cl_int err) {
  return err == kClMemAllocationFailure || err == kClOutOfResources || err == kClOutOfHostMemory ||
         err == kClInvalidBufferSize;
}

struct OpenClApi {
  cl_int (*GetPlatformIDs)(cl_uint, void**, cl_uint*);
  cl_int (*GetDeviceIDs)(void*, uint64_t, cl_uint, void**, cl_uint*);
  cl_int (*GetPlatformInfo)(void*, cl_uint, size_t, void*, size_t*);
  cl_int (*GetDeviceInfo)(void*, cl_uint, size_t, void*, size_t*);
  void* (*CreateContext)(const intptr_t*, cl_uint, void* const*, void*, void*, cl_int*);
  void* (*CreateCommandQueue)(void*, void*, uint64_t, cl_int*);
  void* (*CreateProgramWithSource)(void*, cl_uint, const char* const*, const size_t*, cl_int*);
  cl_int (*BuildProgram)(void*, cl_uint, void* const*, const char*, void*, void*);
  cl_int (*GetProgramBuildInfo)(void*, void*, cl_uint, size_t, void*, size_t*);
  void* (*CreateKernel)(void*, const char*, cl_int*);
  cl_int (*SetKernelArg)(void*, cl_uint, size_t, const void*);
  void* (*CreateBuffer)(void*, uint64_t, size_t, void*, cl_int*);
  cl_int (*EnqueueNDRangeKernel)(void*, void*, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint,
                                 const void*, void*);
  cl_int (*EnqueueReadBuffer)(void*, void*, cl_uint, size_t, size_t, void*, cl_uint, const void*, void*);
  cl_int (*EnqueueWriteBuffer)(void*, void*, cl_uint, size_t, size_t, const void*, cl_uint, const void*, void*);
  cl_int (*GetMemObjectInfo)(void*, cl_uint, size_t, void*, size_t*);
  cl_int (*Finish)(void*);
  cl_int (*ReleaseMemObject)(void*);
  cl_int (*ReleaseKernel)(void*);
  cl_int (*ReleaseProgram)(void*);
  cl_int (*ReleaseCommandQueue)(void*);
  cl_int (*ReleaseContext)(void*);
};

namespace {

bool resolve(void* lib, OpenClApi& a) {
#define KILN_CL(f) (a.f = symbol<decltype(a.f)>(lib, "cl" #f)) != nullptr
  return KILN_CL(GetPlatformIDs) && KILN_CL(GetDeviceIDs) && KILN_CL(GetPlatformInfo) && KILN_CL(GetDeviceInfo) &&
         KILN_CL(CreateContext) && KILN_CL(CreateCommandQueue) && KILN_CL(CreateProgramWithSource) &&
         KILN_CL(BuildProgram) && KILN_CL(GetProgramBuildInfo) && KILN_CL(CreateKernel) && KILN_CL(SetKernelArg) &&
         KILN_CL(CreateBuffer) && KILN_CL(EnqueueNDRangeKernel) && KILN_CL(EnqueueReadBuffer) &&
         KILN_CL(EnqueueWriteBuffer) && KILN_CL(GetMemObjectInfo) && KILN_CL(Finish) && KILN_CL(ReleaseMemObject) &&
         KILN_CL(ReleaseKernel) && KILN_CL(ReleaseProgram) && KILN_CL(ReleaseCommandQueue) && KILN_CL(ReleaseContext);
#undef KILN_CL
}

std::string info_text(cl_int (*info)(void*, cl_uint, size_t, void*, size_t*), void* of, cl_uint what) {
  char buf[256] = {};
  return info(of, what, sizeof buf - 1, buf, nullptr) == 0 ? std::string(buf) : std::string();
}

// Status of a failed OpenCL call: "<call>: OpenCL error <n>"
Status cl_error(const char* what, cl_int err) {
  return (Message() << what << ": OpenCL error " << err)
      .status(memory_error(err) ? StatusCode::ResourceExhausted : StatusCode::Internal);
}

class OpenClDriver final : public Driver {
 public:
  OpenClDriver(std::unique_ptr<OpenClApi> cl, void* device, void* context, void* queue)
      : cl_(std::move(cl)), device_(device), context_(context), queue_(queue) {}
  ~OpenClDriver() override {
    for (auto& [key, kernel] : kernels_) cl_->ReleaseKernel(kernel);
    for (auto& [source, program] : programs_) cl_->ReleaseProgram(program);
    cl_->ReleaseCommandQueue(queue_);
    cl_->ReleaseContext(context_);
  }

  Status load(const char* const* source, void** module) override {
    auto it = programs_.find(source);
    if (it != programs_.end()) return *module = it->second, Status();
    cl_int err = 0;
    cl_uint pieces = 0;
    while (source[pieces] != nullptr) ++pieces;
    void* p = cl_->CreateProgramWithSource(context_, pieces, source, nullptr, &err);  // each piece null-terminated
    if (p == nullptr) return cl_error("clCreateProgramWithSource", err);
    err = cl_->BuildProgram(p, 1, &device_, "-cl-std=CL1.2", nullptr, nullptr);
    if (err != 0) {
      size_t n = 0;
      std::string log;
      if (cl_->GetProgramBuildInfo(p, device_, kClProgramBuildLog, 0, nullptr, &n) == 0 && n > 0) {
        log.resize(n);
        if (cl_->GetProgramBuildInfo(p, device_, kClProgramBuildLog, n, log.data(), nullptr) != 0) log.clear();
        if (log.size() > 600) log.resize(600);
      }
      cl_->ReleaseProgram(p);
      return (Message() << "its OpenCL program does not build (clBuildProgram: error " << err << ")"
                        << (log.empty() ? "" : ": ") << log.c_str())
          .status(StatusCode::Internal);
    }
    programs_.emplace(source, p);
    *module = p;
    return Status();
  }

  Status allocate(size_t bytes, const void* host, void** mem) override {
    cl_int err = 0;
    *mem = cl_->CreateBuffer(context_, kClMemReadWrite | (host ? kClMemCopyHostPtr : 0), bytes, const_cast<void*>(host),
                             &err);
    return *mem != nullptr ? Status() : cl_error("clCreateBuffer", err);
  }

  void release(void* mem) noexcept override { cl_->ReleaseMemObject(mem); }

  Status size_of(void* mem, size_t* bytes) override {
    void* context = nullptr;
    if (cl_->GetMemObjectInfo(mem, kClMemContext, sizeof context, &context, nullptr) != 0 ||
        cl_->GetMemObjectInfo(mem, kClMemSize, sizeof *bytes, bytes, nullptr) != 0)
      return Status(StatusCode::InvalidArgument, "its data is not a device buffer");
    if (context != context_)
      return Status(StatusCode::InvalidArgument,
                    "a device buffer of another context: a call reads only its own context's");
    return Status();
  }

  Status launch(void* module, const char* function, void* const* mems, int32_t count, const int64_t* vars,
                int32_t nvars, const int64_t* global, const int64_t* local) override {
    auto key = std::make_pair(module, std::string(function));
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
      cl_int err = 0;
      void* k = cl_->CreateKernel(module, function, &err);
      if (k == nullptr) return cl_error("clCreateKernel", err);
      it = kernels_.emplace(key, k).first;
    }
    void* k = it->second;
    cl_uint arg = 0;
    for (int32_t i = 0; i < count; ++i)
      if (cl_int err = cl_->SetKernelArg(k, arg++, sizeof mems[i], &mems[i]); err != 0)
        return cl_error("clSetKernelArg", err);
    for (int32_t i = 0; i < nvars; ++i)
      if (cl_int err = cl_->SetKernelArg(k, arg++, sizeof vars[i], &vars[i]); err != 0)
        return cl_error("clSetKernelArg", err);
    // OpenCL counts work items: with work groups, the groups times their size
    size_t g[3], l[3];
    for (int i = 0; i < 3; ++i)
      g[i] = static_cast<size_t>(global[i]) * (local ? static_cast<size_t>(local[i]) : 1),
      l[i] = local ? static_cast<size_t>(local[i]) : 0;
    if (cl_int err = cl_->EnqueueNDRangeKernel(queue_, k, 3, nullptr, g, local ? l : nullptr, 0, nullptr, nullptr);
        err != 0)
      return cl_error("clEnqueueNDRangeKernel", err);
    return Status();
  }

  Status read(void* mem, size_t offset, void* host, size_t bytes) override {
    cl_int err = cl_->EnqueueReadBuffer(queue_, mem, kClTrue, offset, bytes, host, 0, nullptr, nullptr);
    return err == 0 ? Status() : cl_error("clEnqueueReadBuffer", err);
  }

  Status write(void* mem, size_t offset, const void* host, size_t bytes) override {
    cl_int err = cl_->EnqueueWriteBuffer(queue_, mem, kClTrue, offset, bytes, host, 0, nullptr, nullptr);
    return err == 0 ? Status() : cl_error("clEnqueueWriteBuffer", err);
  }

  Status finish() override {
    cl_int err = cl_->Finish(queue_);
    return err == 0 ? Status() : cl_error("clFinish", err);
  }

 private:
  std::unique_ptr<OpenClApi> cl_;
  void* device_;   // cl_device_id
  void* context_;  // cl_context
  void* queue_;    // cl_command_queue
  // the programs built for the device (by the address of the generated source: one per spec file
  // of a library) and their kernels
  std::map<const char* const*, void*> programs_;
  std::map<std::pair<void*, std::string>, void*> kernels_;
};

}  // namespace

void open_opencl(int index, DeviceState& st) {
  const char* none = "no OpenCL platform";
  const char* path = open_driver(st, "KILN_OPENCL_LIBRARY", "libOpenCL.so.1", none);
  if (st.driver == nullptr) return;
  auto cl = std::make_unique<OpenClApi>();
  if (lacks(st, none, path, "the OpenCL 1.2 entry points", resolve(st.driver, *cl))) return;
  cl_uint nplatforms = 0;
  cl_int err = cl->GetPlatformIDs(0, nullptr, &nplatforms);
  // -1001 (CL_PLATFORM_NOT_FOUND_KHR): the loader found no installed platform
  if (err != 0 || nplatforms == 0) {
    Message m;
    m << "no OpenCL platform: the ICD loader (" << path << ") found none";
    if (err != 0 && err != -1001) m << " (clGetPlatformIDs: error " << err << ")";
    st.status = m.status(StatusCode::Unsupported);
    return;
  }
  std::vector<void*> platforms(nplatforms);
  if (cl->GetPlatformIDs(nplatforms, platforms.data(), nullptr) != 0) {
    st.status = Status(StatusCode::Unsupported, "no OpenCL platform: clGetPlatformIDs failed listing them");
    return;
  }
  int seen = 0;
  for (void* p : platforms) {
    cl_uint n = 0;
    if (cl->GetDeviceIDs(p, kClDeviceTypeAll, 0, nullptr, &n) != 0 || n == 0) continue;
    if (index >= seen + static_cast<int>(n)) {
      seen += static_cast<int>(n);
      continue;
    }
    std::vector<void*> devices(n);
    if (cl->GetDeviceIDs(p, kClDeviceTypeAll, n, devices.data(), nullptr) != 0) break;
    void* device = devices[static_cast<size_t>(index - seen)];
    st.name =
        info_text(cl->GetDeviceInfo, device, kClDeviceName) + ": " + info_text(cl->GetPlatformInfo, p, kClPlatformName);
    void* context = cl->CreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    void* queue = context != nullptr ? cl->CreateCommandQueue(context, device, 0, &err) : nullptr;
    if (queue == nullptr) {
      if (context != nullptr) cl->ReleaseContext(context);
      st.status = (Message() << "OpenCL device " << index << " (" << st.name << "): "
                             << (context == nullptr ? "clCreateContext" : "clCreateCommandQueue") << ": error " << err)
                      .status(StatusCode::Unsupported);
      return;
    }
    st.ops = std::make_unique<OpenClDriver>(std::move(cl), device, context, queue);
    return;
  }
  st.status = (Message() << "OpenCL device " << index << " not found: the platforms have " << seen << " device"
                         << (seen == 1 ? "" : "s"))
                  .status(StatusCode::Unsupported);
}

#endif

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

// OpenCL: finding a Context's device through the ICD loader (libOpenCL.so.1, loaded at run time),
// its context and queue, and the calls of the generated OpenCL variants (DeviceCall): the library's
// OpenCL C built for the device at its first call and kept, buffers made for each call, kernels
// launched in order, outputs read back. The entry points are looked up by name and OpenCL's types
// are spelled as plain integers and pointers (no OpenCL headers at build time).
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
  void* (*CreateProgramWithSource)(void*, cl_uint, const char**, const size_t*, cl_int*);
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
    st.handle = devices[static_cast<size_t>(index - seen)];
    st.platform = p;
    st.name = info_text(cl->GetDeviceInfo, st.handle, kClDeviceName) + ": " +
              info_text(cl->GetPlatformInfo, p, kClPlatformName);
    st.context = cl->CreateContext(nullptr, 1, &st.handle, nullptr, nullptr, &err);
    if (st.context != nullptr) st.queue = cl->CreateCommandQueue(st.context, st.handle, 0, &err);
    if (st.queue == nullptr)
      st.status = (Message() << "OpenCL device " << index << " (" << st.name
                             << "): " << (st.context == nullptr ? "clCreateContext" : "clCreateCommandQueue")
                             << ": error " << err)
                      .status(StatusCode::Unsupported);
    st.cl = cl.release();
    return;
  }
  st.status = (Message() << "OpenCL device " << index << " not found: the platforms have " << seen << " device"
                         << (seen == 1 ? "" : "s"))
                  .status(StatusCode::Unsupported);
}

void close_opencl(DeviceState& st) {
  OpenClApi& cl = *st.cl;
  for (auto& [key, kernel] : st.kernels) cl.ReleaseKernel(kernel);
  for (auto& [source, program] : st.programs) cl.ReleaseProgram(program);
  if (st.queue != nullptr) cl.ReleaseCommandQueue(st.queue);
  if (st.context != nullptr) cl.ReleaseContext(st.context);
  st.kernels.clear();
  st.programs.clear();
  st.queue = st.context = nullptr;
  delete st.cl;
  st.cl = nullptr;
}

struct DeviceCall::Impl {
  DeviceState* st = nullptr;
#if KILN_THREADS
  std::unique_lock<std::mutex> turn;
#endif
  void* program = nullptr;
  std::vector<void*> mems;  // by buffer number (nullptr: not made)
  std::vector<bool> owned;  // made for the call (else an argument's DeviceBuffer)
};

namespace {

// "<kernel>: OpenCL device 0 (<name>): ": how the failures of a call start
Message& failure(Message& m, const char* kernel, Context* ctx) {
  return m << kernel << ": " << ctx->device().name() << " (" << ctx->device_name() << "): ";
}

Status cl_error(const char* kernel, Context* ctx, const char* what, cl_int err) {
  Message m;
  failure(m, kernel, ctx) << what << ": OpenCL error " << err;
  return m.status(memory_error(err) ? StatusCode::ResourceExhausted : StatusCode::Internal);
}

// ctx's program for `source`: built at its first call, then kept; nullptr with *status where it
// does not build (a kiln bug or a driver's: the build log says)
void* program_of(DeviceState& st, const char* kernel, Context* ctx, const char* source, Status* status) {
  auto it = st.programs.find(source);
  if (it != st.programs.end()) return it->second;
  OpenClApi& cl = *st.cl;
  cl_int err = 0;
  size_t length = std::strlen(source);
  void* p = cl.CreateProgramWithSource(st.context, 1, &source, &length, &err);
  if (p == nullptr) {
    *status = cl_error(kernel, ctx, "clCreateProgramWithSource", err);
    return nullptr;
  }
  err = cl.BuildProgram(p, 1, &st.handle, "-cl-std=CL1.2", nullptr, nullptr);
  if (err != 0) {
    size_t n = 0;
    std::string log;
    if (cl.GetProgramBuildInfo(p, st.handle, kClProgramBuildLog, 0, nullptr, &n) == 0 && n > 0) {
      log.resize(n);
      if (cl.GetProgramBuildInfo(p, st.handle, kClProgramBuildLog, n, log.data(), nullptr) != 0) log.clear();
      if (log.size() > 600) log.resize(600);
    }
    cl.ReleaseProgram(p);
    Message m;
    failure(m, kernel, ctx) << "its OpenCL program does not build (clBuildProgram: error " << err << ")"
                            << (log.empty() ? "" : ": ") << log.c_str();
    *status = m.status(StatusCode::Internal);
    return nullptr;
  }
  st.programs.emplace(source, p);
  return p;
}

}  // namespace
#endif

DeviceCall::DeviceCall(const char* kernel, Context* ctx, const char* program, int32_t buffers) noexcept
    : kernel_(kernel) {
#if KILN_DEVICES
  if (!ctx->status().ok()) {
    status_ = device_check(kernel, ctx);
    return;
  }
  DeviceState* st = device_state(ctx);
  if (ctx->device().kind() != Device::Kind::OpenCL || st == nullptr || !st->cl) {
    status_ = (Message() << kernel << ": a kiln bug: an OpenCL variant was called through a context on "
                         << ctx->device().name())
                  .status(StatusCode::Internal);
    return;
  }
  ctx_ = ctx;
  KILN_TRY {
    impl_ = new Impl;
    impl_->st = st;
#if KILN_THREADS
    impl_->turn = std::unique_lock<std::mutex>(st->calls);
#endif
    impl_->mems.assign(static_cast<size_t>(buffers > 0 ? buffers : 0), nullptr);
    impl_->owned.assign(impl_->mems.size(), true);
    impl_->program = program_of(*st, kernel, ctx, program, &status_);
  }
  KILN_CATCH_ALL { status_ = Status(StatusCode::ResourceExhausted, "out of host memory for an OpenCL call"); }
#else
  (void)program, (void)buffers;
  status_ = device_check(kernel, ctx);
#endif
}

DeviceCall::~DeviceCall() {
#if KILN_DEVICES
  if (impl_ == nullptr) return;
  for (size_t i = 0; i < impl_->mems.size(); ++i)
    if (impl_->mems[i] != nullptr && impl_->owned[i]) impl_->st->cl->ReleaseMemObject(impl_->mems[i]);
  delete impl_;
#endif
}

#if KILN_DEVICES
namespace {

bool usable(DeviceCall::Impl* impl, const Status& st, int32_t buffer) {
  return st.ok() && impl != nullptr && buffer >= 0 && static_cast<size_t>(buffer) < impl->mems.size();
}

}  // namespace
#endif

void DeviceCall::upload(int32_t buffer, const void* host, size_t bytes) noexcept {
#if KILN_DEVICES
  if (!usable(impl_, status_, buffer)) return;
  make(buffer, host, bytes);
#else
  (void)buffer, (void)host, (void)bytes;
#endif
}

void DeviceCall::allocate(int32_t buffer, size_t bytes) noexcept {
#if KILN_DEVICES
  if (!usable(impl_, status_, buffer)) return;
  make(buffer, nullptr, bytes);
#else
  (void)buffer, (void)bytes;
#endif
}

void DeviceCall::bind(int32_t buffer, const char* arg, void* handle, size_t bytes) noexcept {
#if KILN_DEVICES
  if (!usable(impl_, status_, buffer)) return;
  OpenClApi& cl = *impl_->st->cl;
  void* context = nullptr;
  size_t size = 0;
  Message m;
  m << kernel_ << ": argument " << arg << ": ";
  if (cl.GetMemObjectInfo(handle, kClMemContext, sizeof context, &context, nullptr) != 0 ||
      cl.GetMemObjectInfo(handle, kClMemSize, sizeof size, &size, nullptr) != 0) {
    status_ = (m << "its data is not a device buffer").status(StatusCode::InvalidArgument);
    return;
  }
  if (context != impl_->st->context) {
    status_ = (m << "a device buffer of another context: a call reads only its own context's")
                  .status(StatusCode::InvalidArgument);
    return;
  }
  if (size < bytes) {
    status_ =
        (m << "the view is " << bytes << " bytes, its device buffer " << size).status(StatusCode::InvalidArgument);
    return;
  }
  impl_->mems[static_cast<size_t>(buffer)] = handle;
  impl_->owned[static_cast<size_t>(buffer)] = false;
#else
  (void)buffer, (void)arg, (void)handle, (void)bytes;
#endif
}

void DeviceCall::make(int32_t buffer, const void* host, size_t bytes) noexcept {
#if KILN_DEVICES
  if (bytes == SIZE_MAX) {
    Message m;
    failure(m, kernel_, ctx_) << "its buffers at these dims are more bytes than a size_t counts";
    status_ = m.status(StatusCode::ResourceExhausted);
    return;
  }
  // an empty buffer cannot be made: one byte nothing reads
  unsigned char one = 0;
  if (bytes == 0) host = host != nullptr ? &one : nullptr, bytes = 1;
  cl_int err = 0;
  void* m = impl_->st->cl->CreateBuffer(impl_->st->context, kClMemReadWrite | (host ? kClMemCopyHostPtr : 0), bytes,
                                        const_cast<void*>(host), &err);
  if (m == nullptr) {
    status_ = cl_error(kernel_, ctx_, "clCreateBuffer", err);
    return;
  }
  impl_->mems[static_cast<size_t>(buffer)] = m;
#else
  (void)buffer, (void)host, (void)bytes;
#endif
}

void DeviceCall::launch(const char* function, const int32_t* buffers, int32_t count, const int64_t* vars, int32_t nvars,
                        const int64_t* global) noexcept {
#if KILN_DEVICES
  if (!status_.ok() || impl_ == nullptr) return;
  for (int i = 0; i < 3; ++i)
    if (global[i] <= 0) return;  // no work items: nothing to run
  DeviceState& st = *impl_->st;
  OpenClApi& cl = *st.cl;
  KILN_TRY {
    auto key = std::make_pair(impl_->program, std::string(function));
    auto it = st.kernels.find(key);
    if (it == st.kernels.end()) {
      cl_int err = 0;
      void* k = cl.CreateKernel(impl_->program, function, &err);
      if (k == nullptr) {
        status_ = cl_error(kernel_, ctx_, "clCreateKernel", err);
        return;
      }
      it = st.kernels.emplace(key, k).first;
    }
    void* k = it->second;
    cl_uint arg = 0;
    for (int32_t i = 0; i < count; ++i) {
      if (!usable(impl_, status_, buffers[i])) {
        status_ = Status(StatusCode::Internal, "a kiln bug: an OpenCL launch names a buffer the call has not");
        return;
      }
      void* m = impl_->mems[static_cast<size_t>(buffers[i])];
      if (cl_int err = cl.SetKernelArg(k, arg++, sizeof m, &m); err != 0)
        return void(status_ = cl_error(kernel_, ctx_, "clSetKernelArg", err));
    }
    for (int32_t i = 0; i < nvars; ++i) {
      const int64_t v = vars[i];
      if (cl_int err = cl.SetKernelArg(k, arg++, sizeof v, &v); err != 0)
        return void(status_ = cl_error(kernel_, ctx_, "clSetKernelArg", err));
    }
    size_t g[3];
    for (int i = 0; i < 3; ++i) g[i] = static_cast<size_t>(global[i]);
    if (cl_int err = cl.EnqueueNDRangeKernel(st.queue, k, 3, nullptr, g, nullptr, 0, nullptr, nullptr); err != 0)
      status_ = cl_error(kernel_, ctx_, "clEnqueueNDRangeKernel", err);
  }
  KILN_CATCH_ALL { status_ = Status(StatusCode::ResourceExhausted, "out of host memory for an OpenCL call"); }
#else
  (void)function, (void)buffers, (void)count, (void)vars, (void)nvars, (void)global;
#endif
}

void DeviceCall::download(int32_t buffer, void* host, size_t bytes) noexcept {
#if KILN_DEVICES
  if (!usable(impl_, status_, buffer) || bytes == 0) return;
  DeviceState& st = *impl_->st;
  if (cl_int err = st.cl->EnqueueReadBuffer(st.queue, impl_->mems[static_cast<size_t>(buffer)], kClTrue, 0, bytes, host,
                                            0, nullptr, nullptr);
      err != 0)
    status_ = cl_error(kernel_, ctx_, "clEnqueueReadBuffer", err);
#else
  (void)buffer, (void)host, (void)bytes;
#endif
}

Status DeviceCall::finish() noexcept {
#if KILN_DEVICES
  if (impl_ != nullptr)
    if (cl_int err = impl_->st->cl->Finish(impl_->st->queue); err != 0 && status_.ok())
      status_ = cl_error(kernel_, ctx_, "clFinish", err);
#endif
  return status_;
}

}  // namespace detail

// ---------------------------------------------------------------- device buffers

DeviceBuffer::DeviceBuffer() noexcept
    : status_(StatusCode::InvalidArgument, "no device buffer (a DeviceBuffer made without a context, or moved from)") {}

DeviceBuffer::DeviceBuffer(Context& ctx, size_t bytes) noexcept : DeviceBuffer() {
  if (!(status_ = ctx.status()).ok()) return;
#if KILN_DEVICES
  detail::DeviceState* st = detail::device_state(&ctx);
  if (ctx.device().kind() != Device::Kind::OpenCL || st == nullptr || st->cl == nullptr) {
    status_ = (detail::Message() << "a device buffer needs a context on an OpenCL device, not the "
                                 << ctx.device().name() << (ctx.device().is_cpu() ? "" : " (not built yet)"))
                  .status(StatusCode::Unsupported);
    return;
  }
#if KILN_THREADS
  std::lock_guard<std::mutex> turn(st->calls);
#endif
  detail::cl_int err = 0;
  handle_ = st->cl->CreateBuffer(st->context, detail::kClMemReadWrite, bytes > 0 ? bytes : 1, nullptr, &err);
  if (handle_ == nullptr) {
    detail::Message m;
    m << "a device buffer of " << bytes << " bytes on " << ctx.device().name() << " (" << ctx.device_name()
      << "): clCreateBuffer: OpenCL error " << err;
    status_ = m.status(detail::memory_error(err) ? StatusCode::ResourceExhausted : StatusCode::Internal);
    return;
  }
  ctx_ = &ctx;
  bytes_ = bytes;
  status_ = Status();
#else
  (void)bytes;
#endif
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : DeviceBuffer() { take(other); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this == &other) return *this;
  DeviceBuffer gone(std::move(*this));  // this one's buffer, released as it goes
  take(other);
  return *this;
}

void DeviceBuffer::take(DeviceBuffer& other) noexcept {
  ctx_ = other.ctx_, handle_ = other.handle_, bytes_ = other.bytes_;
  std::swap(status_, other.status_);  // other: "no device buffer", as this one was
  other.ctx_ = nullptr, other.handle_ = nullptr, other.bytes_ = 0;
}

DeviceBuffer::~DeviceBuffer() {
#if KILN_DEVICES
  if (handle_ == nullptr) return;
  detail::DeviceState* st = detail::device_state(ctx_);
  if (st != nullptr && st->cl != nullptr) st->cl->ReleaseMemObject(handle_);
#endif
}

Status DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) noexcept {
  return transfer(const_cast<void*>(host), bytes, offset, true);
}

Status DeviceBuffer::download(void* host, size_t bytes, size_t offset) const noexcept {
  return transfer(host, bytes, offset, false);
}

Status DeviceBuffer::transfer(void* host, size_t bytes, size_t offset, bool to_device) const noexcept {
  if (!status_.ok()) return status_;
  if (offset > bytes_ || bytes > bytes_ - offset)
    return (detail::Message() << "device buffer: " << bytes << " bytes at offset " << offset << " are past its "
                              << bytes_ << " bytes")
        .status(StatusCode::OutOfRange);
  if (bytes == 0) return Status();
  if (host == nullptr) return Status(StatusCode::InvalidArgument, "device buffer: a null host pointer");
#if KILN_DEVICES
  detail::DeviceState& st = *detail::device_state(ctx_);
#if KILN_THREADS
  std::lock_guard<std::mutex> turn(st.calls);
#endif
  detail::cl_int err =
      to_device
          ? st.cl->EnqueueWriteBuffer(st.queue, handle_, detail::kClTrue, offset, bytes, host, 0, nullptr, nullptr)
          : st.cl->EnqueueReadBuffer(st.queue, handle_, detail::kClTrue, offset, bytes, host, 0, nullptr, nullptr);
  if (err != 0)
    return (detail::Message() << "device buffer: " << (to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer")
                              << ": OpenCL error " << err)
        .status(detail::memory_error(err) ? StatusCode::ResourceExhausted : StatusCode::Internal);
#else
  (void)to_device;
#endif
  return Status();
}

TensorView DeviceBuffer::view(DType dtype, std::initializer_list<int64_t> shape) const noexcept {
  TensorView v(handle_, dtype, shape);
  v.t.memory = KILN_MEMORY_DEVICE;
  return v;
}

}  // namespace runtime_v1
}  // namespace kiln

// The calls of the generated device variants (DeviceCall) and the device buffers applications
// make, over a Context's Driver (device.h): the same steps on OpenCL and CUDA, the driver's
// failures named after the kernel and the device.
#include <cstdint>

#include "device.h"
#include "kiln/dispatch.h"
#include "message.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

#if KILN_DEVICES
struct DeviceCall::Impl {
  DeviceState* st = nullptr;
#if KILN_THREADS
  std::unique_lock<std::mutex> turn;
#endif
  bool entered = false;
  void* module = nullptr;
  std::vector<void*> mems;  // by buffer number (nullptr: not made)
  std::vector<bool> owned;  // made for the call (else an argument's DeviceBuffer)
};

namespace {

// "<kernel>: OpenCL device 0 (<name>): <what the driver said>"
Status failure(const char* kernel, Context* ctx, const Status& why) {
  return (Message() << kernel << ": " << ctx->device().name() << " (" << ctx->device_name() << "): " << why.message())
      .status(why.code());
}

bool usable(DeviceCall::Impl* impl, const Status& st, int32_t buffer) {
  return st.ok() && impl != nullptr && buffer >= 0 && static_cast<size_t>(buffer) < impl->mems.size();
}

}  // namespace
#endif

DeviceCall::DeviceCall(const char* kernel, Context* ctx, const char* const* program, int32_t buffers) noexcept
    : kernel_(kernel) {
#if KILN_DEVICES
  if (!ctx->status().ok()) {
    status_ = device_check(kernel, ctx);
    return;
  }
  DeviceState* st = device_state(ctx);
  if (st == nullptr || !st->ops) {
    status_ = (Message() << kernel << ": a kiln bug: a device variant was called through a context on "
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
    st->ops->enter();
    impl_->entered = true;
    impl_->mems.assign(static_cast<size_t>(buffers > 0 ? buffers : 0), nullptr);
    impl_->owned.assign(impl_->mems.size(), true);
    if (Status s = st->ops->load(program, &impl_->module); !s.ok()) status_ = failure(kernel, ctx, s);
  }
  KILN_CATCH_ALL { status_ = Status(StatusCode::ResourceExhausted, "out of host memory for a device call"); }
#else
  (void)program, (void)buffers;
  status_ = device_check(kernel, ctx);
#endif
}

DeviceCall::~DeviceCall() {
#if KILN_DEVICES
  if (impl_ == nullptr) return;
  for (size_t i = 0; i < impl_->mems.size(); ++i)
    if (impl_->mems[i] != nullptr && impl_->owned[i]) impl_->st->ops->release(impl_->mems[i]);
  if (impl_->entered) impl_->st->ops->leave();
  delete impl_;  // (and the turn on the device with it)
#endif
}

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
  size_t size = 0;
  if (Status s = impl_->st->ops->size_of(handle, &size); !s.ok()) {
    status_ = (Message() << kernel_ << ": argument " << arg << ": " << s.message()).status(s.code());
    return;
  }
  if (size < bytes) {
    status_ = (Message() << kernel_ << ": argument " << arg << ": the view is " << bytes << " bytes, its device buffer "
                         << size)
                  .status(StatusCode::InvalidArgument);
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
    status_ =
        failure(kernel_, ctx_,
                Status(StatusCode::ResourceExhausted, "its buffers at these dims are more bytes than a size_t counts"));
    return;
  }
  // an empty buffer cannot be made: one byte nothing reads
  unsigned char one = 0;
  if (bytes == 0) host = host != nullptr ? &one : nullptr, bytes = 1;
  if (Status s = impl_->st->ops->allocate(bytes, host, &impl_->mems[static_cast<size_t>(buffer)]); !s.ok())
    status_ = failure(kernel_, ctx_, s);
#else
  (void)buffer, (void)host, (void)bytes;
#endif
}

void DeviceCall::launch(const char* function, const int32_t* buffers, int32_t count, const int64_t* vars, int32_t nvars,
                        const int64_t* global, const int64_t* local) noexcept {
#if KILN_DEVICES
  if (!status_.ok() || impl_ == nullptr) return;
  for (int i = 0; i < 3; ++i)
    if (global[i] <= 0) return;  // no work items: nothing to run
  KILN_TRY {
    std::vector<void*> mems(static_cast<size_t>(count > 0 ? count : 0));
    for (int32_t i = 0; i < count; ++i) {
      if (!usable(impl_, status_, buffers[i])) {
        status_ = Status(StatusCode::Internal, "a kiln bug: a device launch names a buffer the call has not");
        return;
      }
      mems[static_cast<size_t>(i)] = impl_->mems[static_cast<size_t>(buffers[i])];
    }
    if (Status s = impl_->st->ops->launch(impl_->module, function, mems.data(), count, vars, nvars, global, local);
        !s.ok())
      status_ = failure(kernel_, ctx_, s);
  }
  KILN_CATCH_ALL { status_ = Status(StatusCode::ResourceExhausted, "out of host memory for a device call"); }
#else
  (void)function, (void)buffers, (void)count, (void)vars, (void)nvars, (void)global, (void)local;
#endif
}

void DeviceCall::download(int32_t buffer, void* host, size_t bytes) noexcept {
#if KILN_DEVICES
  if (!usable(impl_, status_, buffer) || bytes == 0) return;
  if (Status s = impl_->st->ops->read(impl_->mems[static_cast<size_t>(buffer)], 0, host, bytes); !s.ok())
    status_ = failure(kernel_, ctx_, s);
#else
  (void)buffer, (void)host, (void)bytes;
#endif
}

Status DeviceCall::finish() noexcept {
#if KILN_DEVICES
  if (impl_ != nullptr)
    if (Status s = impl_->st->ops->finish(); !s.ok() && status_.ok()) status_ = failure(kernel_, ctx_, s);
#endif
  return status_;
}

}  // namespace detail

// ---------------------------------------------------------------- device buffers

DeviceBuffer::DeviceBuffer() noexcept
    : status_(StatusCode::InvalidArgument, "no device buffer (a DeviceBuffer made without a context, or moved from)") {}

#if KILN_DEVICES
namespace {

// the Driver of ctx's device, used from this thread while it lives
class DriverTurn {
 public:
  explicit DriverTurn(detail::DeviceState& st) noexcept
      :
#if KILN_THREADS
        turn_(st.calls),
#endif
        ops_(*st.ops) {
    ops_.enter();
  }
  ~DriverTurn() { ops_.leave(); }
  DriverTurn(const DriverTurn&) = delete;
  DriverTurn& operator=(const DriverTurn&) = delete;
  detail::Driver* operator->() const noexcept { return &ops_; }

 private:
#if KILN_THREADS
  std::lock_guard<std::mutex> turn_;
#endif
  detail::Driver& ops_;
};

}  // namespace
#endif

DeviceBuffer::DeviceBuffer(Context& ctx, size_t bytes) noexcept : DeviceBuffer() {
  if (!(status_ = ctx.status()).ok()) return;
#if KILN_DEVICES
  detail::DeviceState* st = detail::device_state(&ctx);
  if (st == nullptr || !st->ops) {
    status_ = (detail::Message() << "a device buffer needs a context on a GPU, not the " << ctx.device().name())
                  .status(StatusCode::Unsupported);
    return;
  }
  Status s = DriverTurn(*st)->allocate(bytes > 0 ? bytes : 1, nullptr, &handle_);
  if (!s.ok()) {
    handle_ = nullptr;
    status_ = (detail::Message() << "a device buffer of " << bytes << " bytes on " << ctx.device().name() << " ("
                                 << ctx.device_name() << "): " << s.message())
                  .status(s.code());
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
  if (st != nullptr && st->ops) DriverTurn(*st)->release(handle_);
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
  DriverTurn ops(*detail::device_state(ctx_));
  Status s = to_device ? ops->write(handle_, offset, host, bytes) : ops->read(handle_, offset, host, bytes);
  if (!s.ok()) return (detail::Message() << "device buffer: " << s.message()).status(s.code());
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

// kiln's C++ runtime: what applications and the generated dispatch glue use. Tensors are
// described by TensorView, errors come back as Status (nothing throws across this API), and a
// Context holds the thread pool and the workspace that kernels share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#if __cplusplus >= 202002L
#include <span>
#endif
#include <string>
#include <string_view>
#include <type_traits>

#include "kiln/kernel_abi.h"

// KILN_HEAP: whether the runtime may use the heap, decided from the compiler as the runtime's
// private config.h decides KILN_THREADS. 0 on Cortex-M (M-profile ARM) and under -DKILN_NO_HEAP
// anywhere: a Status keeps its message in a fixed buffer inside it (cut, ending "...", past
// Status::kMessageBytes - 1 bytes) and message() is a StatusMessage; a Context keeps its state
// inside it; the runtime has no threads (a pool's threads need the heap). Then nothing allocates,
// ok calls and failing ones alike (a C status is then one of a few slots of the runtime's), but a
// Context's own workspace (give it one, set_workspace, or an allocator), the C API's
// kiln_context_create without an allocator and what returns a std::string (cpu_features_string,
// <kernel>_explain, the device names). 1 elsewhere: message() is a std::string and a failing call's message is on
// the heap (the ok path allocates nothing either way). The layouts of Status and Context differ
// between the two, under the same names: every file of a program, the runtime's included, must
// be compiled the same way (with the installed package: -DKILN_NO_HEAP with
// KILN_RUNTIME_FROM_SOURCE, as cross builds have it anyway).
#if defined(KILN_NO_HEAP) || (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M')
#define KILN_HEAP 0
#else
#define KILN_HEAP 1
#endif

struct kiln_context;      // kiln_c.h
struct kiln_status;       // kiln_c.h's kiln_status_t
struct kiln_allocator_t;  // kiln_c.h

namespace kiln {

// The runtime's names live in a versioned inline namespace: user code says kiln::Context, and a
// binary that also links kiln's generator (which has its own kiln::Context and kiln::DType) sees
// distinct symbols.
inline namespace runtime_v1 {

// ---------------------------------------------------------------- dtypes

enum class DType : int32_t {
  Bool = KILN_BOOL,
  Int8 = KILN_INT8,
  Uint8 = KILN_UINT8,
  Int16 = KILN_INT16,
  Uint16 = KILN_UINT16,
  Int32 = KILN_INT32,
  Uint32 = KILN_UINT32,
  Int64 = KILN_INT64,
  Uint64 = KILN_UINT64,
  Float16 = KILN_FLOAT16,
  BFloat16 = KILN_BFLOAT16,
  Float32 = KILN_FLOAT32,
  Float64 = KILN_FLOAT64,
};

// "bool", "i8", ..., "bf16", "f32", "f64" as in specs; "unknown" for a value outside the enum.
const char* dtype_name(DType dtype);
// Bytes per element; 0 for a value outside the enum.
size_t dtype_size(DType dtype);

// 16-bit storage types, so that a TensorView of half-precision data deduces its dtype.
struct float16 {
  uint16_t bits;
};
struct bfloat16 {
  uint16_t bits;
};

// The element type -> dtype trait behind TensorView's deduction.
template <class T> struct DTypeOf { static constexpr bool supported = false; };
#define KILN_DTYPE_OF(T, D)                  \
  template <> struct DTypeOf<T> {            \
    static constexpr bool supported = true;  \
    static constexpr DType value = DType::D; \
  };
KILN_DTYPE_OF(bool, Bool)
KILN_DTYPE_OF(int8_t, Int8)
KILN_DTYPE_OF(uint8_t, Uint8)
KILN_DTYPE_OF(int16_t, Int16)
KILN_DTYPE_OF(uint16_t, Uint16)
KILN_DTYPE_OF(int32_t, Int32)
KILN_DTYPE_OF(uint32_t, Uint32)
KILN_DTYPE_OF(int64_t, Int64)
KILN_DTYPE_OF(uint64_t, Uint64)
KILN_DTYPE_OF(float16, Float16)
KILN_DTYPE_OF(bfloat16, BFloat16)
KILN_DTYPE_OF(float, Float32)
KILN_DTYPE_OF(double, Float64)
#undef KILN_DTYPE_OF

template <class T> constexpr DType dtype_of() {
  static_assert(DTypeOf<T>::supported,
                "kiln::TensorView: unsupported element type; use bool, int8_t..int64_t, uint8_t..uint64_t, "
                "kiln::float16, kiln::bfloat16, float or double (or the void* constructor with a DType)");
  if constexpr (DTypeOf<T>::supported) {
    return DTypeOf<T>::value;
  } else {
    return DType::Bool;
  }
}

// ---------------------------------------------------------------- status

enum class StatusCode : int32_t {
  Ok = KILN_OK,
  InvalidArgument = KILN_INVALID_ARGUMENT,
  OutOfRange = KILN_OUT_OF_RANGE,
  Unsupported = KILN_UNSUPPORTED,
  ResourceExhausted = KILN_RESOURCE_EXHAUSTED,
  Internal = KILN_INTERNAL,
};

// "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for a value outside the enum.
const char* status_code_name(StatusCode code);

#if KILN_HEAP
// Ok, or a code and a message. The ok path neither allocates nor frees.
class Status {
 public:
  Status() noexcept = default;
  // An Ok code keeps no message. Should the message not fit in memory, the code is kept without it.
  Status(StatusCode code, std::string message) noexcept;
  Status(StatusCode code, const char* message) noexcept;  // nullptr: no message
  Status(StatusCode code, std::string_view message) noexcept;
  Status(const Status& other) noexcept;
  Status& operator=(const Status& other) noexcept;
  Status(Status&& other) noexcept : code_(other.code_), message_(std::move(other.message_)) {
    other.code_ = StatusCode::Ok;
  }
  Status& operator=(Status&& other) noexcept;
  ~Status() = default;

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == StatusCode::Ok; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept;  // empty for ok

 private:
  StatusCode code_ = StatusCode::Ok;
  std::unique_ptr<std::string> message_;
};
#else
// A Status's message in a no-heap build (KILN_HEAP 0): the text inside the Status, NUL-terminated,
// valid while the Status lives and is not assigned to.
class StatusMessage {
 public:
  constexpr StatusMessage(const char* data, size_t size) noexcept : data_(data), size_(size) {}
  constexpr const char* c_str() const noexcept { return data_; }
  constexpr const char* data() const noexcept { return data_; }
  constexpr size_t size() const noexcept { return size_; }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr operator std::string_view() const noexcept { return {data_, size_}; }
  friend bool operator==(const StatusMessage& a, std::string_view b) noexcept { return std::string_view(a) == b; }
  friend bool operator!=(const StatusMessage& a, std::string_view b) noexcept { return std::string_view(a) != b; }

 private:
  const char* data_;
  size_t size_;
};

// os << message, for any stream that takes a std::string_view (without <ostream> here). Outside
// the class: its return type needs StatusMessage complete.
template <class Stream> auto operator<<(Stream& os, const StatusMessage& m) -> decltype(os << std::string_view(m)) {
  return os << std::string_view(m);
}

// Ok, or a code and a message, never on the heap: the message is copied into the Status, and one
// longer than kMessageBytes - 1 bytes is cut to end "...". (A std::string converts to the
// std::string_view constructor.)
class Status {
 public:
  static constexpr size_t kMessageBytes = 160;  // the terminating NUL included

  Status() noexcept { message_[0] = '\0'; }  // the rest of the buffer stays unwritten
  // An Ok code keeps no message.
  Status(StatusCode code, const char* message) noexcept;  // nullptr: no message
  Status(StatusCode code, std::string_view message) noexcept;
  Status(const Status& other) noexcept;
  Status& operator=(const Status& other) noexcept;
  Status(Status&& other) noexcept;             // the source is left ok
  Status& operator=(Status&& other) noexcept;  // the source is left ok
  ~Status() = default;

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == StatusCode::Ok; }
  StatusCode code() const noexcept { return code_; }
  StatusMessage message() const noexcept { return StatusMessage(message_, size_); }  // empty for ok

 private:
  void set_message(std::string_view message) noexcept;

  StatusCode code_ = StatusCode::Ok;
  uint16_t size_ = 0;
  char message_[kMessageBytes];
};
static_assert(Status::kMessageBytes >= 4 && Status::kMessageBytes <= UINT16_MAX, "a message's size is a uint16_t");
#endif

// ---------------------------------------------------------------- tensors

// A contiguous row-major tensor someone else owns. A view of const data is not writable.
struct TensorView {
  kiln_tensor t;

  template <class T>
  TensorView(T* data, std::initializer_list<int64_t> shape) : TensorView(data, shape.begin(), shape.size()) {}
  template <class T> TensorView(T* data, const int64_t* shape, size_t rank) {
    init(const_cast<std::remove_const_t<T>*>(data), dtype_of<std::remove_const_t<T>>(), shape, rank,
         !std::is_const_v<T>);
  }
  TensorView(void* data, DType dtype, std::initializer_list<int64_t> shape)
      : TensorView(data, dtype, shape.begin(), shape.size()) {}
  TensorView(const void* data, DType dtype, std::initializer_list<int64_t> shape)
      : TensorView(data, dtype, shape.begin(), shape.size()) {}
  TensorView(void* data, DType dtype, const int64_t* shape, size_t rank) { init(data, dtype, shape, rank, true); }
  TensorView(const void* data, DType dtype, const int64_t* shape, size_t rank) {
    init(const_cast<void*>(data), dtype, shape, rank, false);
  }
  // A C caller's descriptor as it is (its writable flag included): what the C entry points pass on.
  explicit TensorView(const kiln_tensor& c) noexcept : t(c) {}
#if __cplusplus >= 202002L  // the header itself needs only C++17
  template <class T>
  TensorView(T* data, std::span<const int64_t> shape) : TensorView(data, shape.data(), shape.size()) {}
  TensorView(void* data, DType dtype, std::span<const int64_t> shape)
      : TensorView(data, dtype, shape.data(), shape.size()) {}
  TensorView(const void* data, DType dtype, std::span<const int64_t> shape)
      : TensorView(data, dtype, shape.data(), shape.size()) {}
#endif

  // A user-provided copy makes the view non-trivial for the C++ ABI, so it is passed to the
  // generated entry points by address, built in place, instead of copied onto the stack (88
  // bytes each): 2 views per call were a third of the entry point's cost.
  TensorView(const TensorView& o) noexcept : t(o.t) {}
  TensorView& operator=(const TensorView& o) noexcept {
    t = o.t;
    return *this;
  }

  void* data() const { return t.data; }
  DType dtype() const { return static_cast<DType>(t.dtype); }
  int32_t rank() const { return t.rank; }  // -1: more than KILN_MAX_RANK dims
  int64_t dim(int32_t i) const { return i >= 0 && i < t.rank ? t.shape[i] : 0; }
  bool writable() const { return t.writable != 0; }
  bool on_device() const { return t.memory == KILN_MEMORY_DEVICE; }  // a DeviceBuffer's view

 private:
  // inline: a view is made on every call, and the entry point's cost is counted in nanoseconds
  void init(void* data, DType dtype, const int64_t* shape, size_t rank, bool writable) {
    t.data = data;
    t.dtype = static_cast<int32_t>(dtype);
    t.writable = writable ? 1 : 0;
    t.memory = KILN_MEMORY_HOST;
    // the generated check reports a rank of -1; the array never holds more than it can
    t.rank = rank > KILN_MAX_RANK ? -1 : static_cast<int32_t>(rank);
    const size_t n = rank > KILN_MAX_RANK ? 0 : rank;  // past 8 dims none is kept
    for (size_t i = 0; i < KILN_MAX_RANK; ++i) t.shape[i] = i < n ? shape[i] : 0;
  }
};

// ---------------------------------------------------------------- context

class Context;
namespace detail {
void* workspace(Context* ctx, size_t bytes, Status* status);
struct DeviceState;
DeviceState* device_state(Context* ctx);
}  // namespace detail

// Where a Context's calls run: the CPU (the default), or a GPU through its driver, which the
// runtime loads when a Context is made for it (dlopen: libOpenCL.so.1, libcuda.so.1; the
// environment variables KILN_OPENCL_LIBRARY and KILN_CUDA_LIBRARY name another file). An
// application linked with GPU kernels thus starts, and runs its CPU variants, on a machine with
// no driver: the GPU Context's status() says what is missing.
class Device {
 public:
  enum class Kind : int32_t { Cpu = 0, OpenCL = 1, Cuda = 2 };

  constexpr Device() noexcept = default;  // the CPU
  static constexpr Device cpu() noexcept { return Device(); }
  // the index-th OpenCL device, counting the devices of every platform in the ICD loader's order
  static constexpr Device opencl(int index = 0) noexcept { return Device(Kind::OpenCL, index); }
  // the CUDA device of that ordinal, as the driver numbers them
  static constexpr Device cuda(int ordinal = 0) noexcept { return Device(Kind::Cuda, ordinal); }

  constexpr Kind kind() const noexcept { return kind_; }
  constexpr int index() const noexcept { return index_; }
  constexpr bool is_cpu() const noexcept { return kind_ == Kind::Cpu; }
  // "CPU", "OpenCL device 0", "CUDA device 1": the device as asked for (Context::device_name()
  // has the driver's name for it)
  std::string name() const;
  friend constexpr bool operator==(const Device& a, const Device& b) noexcept {
    return a.kind_ == b.kind_ && a.index_ == b.index_;
  }
  friend constexpr bool operator!=(const Device& a, const Device& b) noexcept { return !(a == b); }

 private:
  constexpr Device(Kind kind, int index) noexcept : kind_(kind), index_(index) {}
  Kind kind_ = Kind::Cpu;
  int index_ = 0;
};

// The thread pool and the workspace that calls through it share. One call at a time: a
// parallel_for that finds the pool busy (another thread's call, or one from inside a task) runs
// its tasks on the calling thread instead of waiting.
class Context {
 public:
  using ParallelFor = void (*)(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg);

  Context();  // std::thread::hardware_concurrency() threads
  explicit Context(int threads);
  // Its state and its own workspace from `allocator` (copied; nullptr, or one without both
  // functions: the heap). Should the
  // allocator give nothing for the state, ok() is false and the Context must only be destroyed.
  Context(int threads, const kiln_allocator_t* allocator);
  // A Context whose calls run on `device`. For a GPU the runtime loads its driver and finds the
  // device now; status() says whether it did ("no OpenCL platform: ...", "no CUDA driver: ...").
  // `threads`: the pool's, for the work that stays on the CPU.
  explicit Context(Device device);
  Context(Device device, int threads);
  ~Context();  // joins the pool's threads, and lets go of a GPU driver
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  Context(Context&&) = delete;
  Context& operator=(Context&&) = delete;

  // The number of parts parallel work is split into, the calling thread included; clamped to 1..256.
  void set_threads(int n);
  int threads() const { return threads_; }
  // false only for a Context whose allocator gave no memory for its state
  bool ok() const noexcept;
  // Ok, or why calls through this Context cannot run: its allocator gave no memory for its state
  // (ResourceExhausted), or its GPU cannot be reached (Unsupported: no driver, no platform, no
  // device of that index). A call through a Context that is not ok returns this status.
  Status status() const;
  Device device() const noexcept { return device_; }
  // the driver's name for the device ("NVIDIA H200", "pthread-skylake-avx512: Portable Computing
  // Language"), "CPU" for the CPU, or the name() asked for where the device was not found
  std::string device_name() const;

  // The application's own parallel-for, used instead of the pool: it must run task(arg, i) for
  // every i in [0, n) and return when all are done. (nullptr, nullptr) goes back to the pool.
  void set_parallel_for(ParallelFor fn, void* user);

  // Caller-owned workspace (64-byte alignment recommended): the context then never allocates, and
  // a call that needs more fails with ResourceExhausted. (nullptr, 0) goes back to allocating.
  void set_workspace(void* ptr, size_t bytes);

  // Runs task(arg, i) for every i in [0, n), the calling thread included; returns when all are
  // done. The pool's threads start on first use and are reused.
  void parallel_for(int32_t n, void (*task)(void* arg, int32_t i), void* arg);

 private:
  struct Impl;
  friend void* detail::workspace(Context* ctx, size_t bytes, Status* status);
  friend detail::DeviceState* detail::device_state(Context* ctx);
  Impl& impl() noexcept;

  void open_device();

  int threads_;
  Device device_;
#if KILN_HEAP
  Impl* impl_;  // from the allocator, or new'd
#else
  // Impl in place: constructing a Context allocates nothing. (The layout differs from a heap
  // build's under the same runtime_v1 names; such builds compile the runtime from source.)
  alignas(std::max_align_t) unsigned char impl_[16 * sizeof(void*)];
#endif
};

// A buffer in the memory of a GPU context's device (OpenCL or CUDA), so that a chain of kernels
// runs without copies between its calls: made once, filled and read back when the application
// says, and passed to the entry points as views (view()) alongside host views. A call with such a
// view goes through a context on its device (the one it was made with; a CPU call refuses it),
// and reads or writes the buffer in place. A view is the buffer's first elements; a call checks
// they fit. Move-only; it must not outlive its context. Uploads and downloads wait for the device
// and take turns with the context's calls.
class DeviceBuffer {
 public:
  DeviceBuffer() noexcept;  // none: status() says so
  // `bytes` of ctx's device memory (0 is one byte nothing reads); status() says why where there
  // is none: ctx's own status, a context that is not on a GPU, the device's refusal
  DeviceBuffer(Context& ctx, size_t bytes) noexcept;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  Status status() const { return status_; }
  size_t size() const noexcept { return bytes_; }
  // Copies `bytes` from the host into the buffer from byte `offset` (OutOfRange past its end), or
  // back out; both wait for the device.
  Status upload(const void* host, size_t bytes, size_t offset = 0) noexcept;
  Status download(void* host, size_t bytes, size_t offset = 0) const noexcept;
  // The buffer's first elements as a tensor of that dtype and shape, writable.
  TensorView view(DType dtype, std::initializer_list<int64_t> shape) const noexcept;
  template <class T> TensorView view(std::initializer_list<int64_t> shape) const noexcept {
    return view(dtype_of<T>(), shape);
  }
  void* handle() const noexcept { return handle_; }  // the driver's (cl_mem, CUdeviceptr); nullptr for none

 private:
  Status transfer(void* host, size_t bytes, size_t offset, bool to_device) const noexcept;
  void take(DeviceBuffer& other) noexcept;  // other's buffer; other is left with none

  Context* ctx_ = nullptr;
  void* handle_ = nullptr;
  size_t bytes_ = 0;
  Status status_;
};

// The Context inside a kiln_c.h handle (nullptr for nullptr).
Context* from_c(kiln_context* ctx);

// ---------------------------------------------------------------- CPU features

// The KILN_CPU_* bits of this machine, detected once. AVX512 is reported only with AVX2. The
// environment variable KILN_CPU_FEATURES ("avx2", "none": names as cpu_features_string() writes
// them) keeps only the features it names, so that each target's variants run on one machine; it
// never adds one the CPU lacks (read on Linux and macOS).
uint32_t cpu_features();
// "avx2 avx512", "avx2" or "none".
std::string cpu_features_string();

// ---------------------------------------------------------------- for generated code

// What the generated dispatch glue calls. A failing check's message starts with "<kernel>: ".
namespace detail {

Status check_tensor(const char* kernel, const char* arg, const TensorView& v, DType dtype, int32_t rank, bool output);
Status check_extent(const char* kernel, const char* arg, int32_t axis, int64_t actual, int64_t expected);
// Binds a symbolic dim on first sight (*value == -1) after checking its declared range; later
// sightings must agree. bound_by_arg/bound_by_axis remember who bound it, for the message.
Status bind_dim(const char* kernel, const char* arg, int32_t axis, const char* dim, int64_t actual, int64_t min,
                int64_t max, int64_t* value, const char** bound_by_arg, int32_t* bound_by_axis);
// Calls fn once per core through ctx's pool when parallel and ctx has more than one thread;
// otherwise fn(bufs, vars, 0, 1) on the calling thread, at the cost of the call alone.
Status run(Context* ctx, kiln_kernel_fn fn, void* const* bufs, const int64_t* vars, bool parallel);
// Scratch memory for one call: ctx's caller-given block, or a 64-byte aligned block of ctx's own
// or (without a ctx) of the calling thread's, grown as needed and kept. nullptr with ok for 0 bytes; nullptr with
// ResourceExhausted when it cannot be had.
void* workspace(Context* ctx, size_t bytes, Status* status);

// The bytes [begin, end) a view's elements occupy, the end saturating at the top of the address
// space, for the check that an output overlaps no other argument.
struct Extent {
  uintptr_t begin;
  uintptr_t end;
};
// [data, data + bytes): for `bytes` the caller counted without overflow (and not 0).
inline Extent extent_of(const void* data, uint64_t bytes) noexcept {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  return {begin, bytes > UINTPTR_MAX - begin ? UINTPTR_MAX : begin + static_cast<uintptr_t>(bytes)};
}
// A checked view's (rank and dims valid) bytes, counted saturating; no elements, no bytes: {0, 0}.
inline Extent extent(const kiln_tensor& t, size_t itemsize) noexcept {
  uint64_t bytes = itemsize;
  for (int32_t i = 0; i < t.rank; ++i) {
    const uint64_t n = static_cast<uint64_t>(t.shape[i]);
    if (n == 0) return {0, 0};
#if defined(__GNUC__) || defined(__clang__)
    if (__builtin_mul_overflow(bytes, n, &bytes)) bytes = UINT64_MAX;
#else
    bytes = n > UINT64_MAX / bytes ? UINT64_MAX : bytes * n;
#endif
  }
  return extent_of(t.data, bytes);
}
inline bool overlap(const Extent& a, const Extent& b) noexcept { return a.begin < b.end && b.begin < a.end; }
// InvalidArgument "<kernel>: argument <output>: output overlaps <input|output> <other> in memory ..."
Status overlap_error(const char* kernel, const char* output, const char* other, bool other_is_output);

// A call of `kernel` through ctx when ctx's device is not the CPU: ctx's status with the kernel's
// name in front where the device cannot be reached, else Unsupported "<kernel>: the library has
// no variant for <device> (<driver's name>)". The generated entry points ask after their checks of
// the arguments, so a bad call is refused as it is on the CPU.
Status device_check(const char* kernel, const Context* ctx);
// the same, for a library whose GPU variants are for `built_for` ("opencl"; "": none) only
Status device_check(const char* kernel, const Context* ctx, const char* built_for);
// InvalidArgument "<kernel>: argument <arg>: a view of device memory, in a call that runs on the CPU ..."
Status device_view_on_cpu(const char* kernel, const char* arg);
// "<kernel> on <device>: no variant ...": explain's line for such a call
std::string device_explain(const char* kernel, const Context* ctx);

// What the generated C entry points add to the C++ ones' checks: InvalidArgument
// "<kernel>: no context (...)" for a NULL kiln_context, "<kernel>: argument <arg>: null kiln_tensor"
// for a NULL descriptor.
Status no_context(const char* kernel);
Status null_tensor(const char* kernel, const char* arg);
// Ok when code generated for ABI `abi` runs on this runtime; else Unsupported, naming `library`
// and both versions. Every generated entry point asks once, and returns it on every call after.
Status abi_check(int32_t abi, const char* library);
// A Status as the C API returns it: nullptr for ok, else made with ctx's allocator (ctx nullptr:
// the heap, or without it one of the runtime's slots).
kiln_status* to_c(const Status& status, kiln_context* ctx) noexcept;

// Size arithmetic that remembers an overflow: a workspace's bytes at dims their ranges allow may
// not fit in 64 bits. The value of an operation that overflowed is meaningless; bytes() then
// says SIZE_MAX.
class CheckedSize {
 public:
  int64_t add(int64_t a, int64_t b) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    int64_t r;
    overflow_ |= __builtin_add_overflow(a, b, &r);
    return r;
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return overflowed();
    return a + b;
#endif
  }
  int64_t sub(int64_t a, int64_t b) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    int64_t r;
    overflow_ |= __builtin_sub_overflow(a, b, &r);
    return r;
#else
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return overflowed();
    return a - b;
#endif
  }
  int64_t mul(int64_t a, int64_t b) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    int64_t r;
    overflow_ |= __builtin_mul_overflow(a, b, &r);
    return r;
#else
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
              : (b > 0 ? a < INT64_MIN / b : a != 0 && b < INT64_MAX / a))
      return overflowed();
    return a * b;
#endif
  }
  int64_t neg(int64_t a) noexcept { return a == INT64_MIN ? overflowed() : -a; }
  // sizes divide by positive constants only
  int64_t div(int64_t a, int64_t b) noexcept { return b > 0 ? a / b : overflowed(); }
  int64_t mod(int64_t a, int64_t b) noexcept { return b > 0 ? a % b : overflowed(); }
  int64_t max(int64_t a, int64_t b) noexcept { return a > b ? a : b; }
  bool overflow() const noexcept { return overflow_; }
  // the value as a byte count: SIZE_MAX when it overflowed, is negative or does not fit a size_t
  size_t bytes(int64_t v) const noexcept {
    return overflow_ || v < 0 || static_cast<uint64_t>(v) >= SIZE_MAX ? SIZE_MAX : static_cast<size_t>(v);
  }

 private:
  int64_t overflowed() noexcept {
    overflow_ = true;
    return 0;
  }
  bool overflow_ = false;
};
// ResourceExhausted "<kernel>: workspace: ..." for a call whose workspace's bytes CheckedSize
// could not count.
Status workspace_overflow(const char* kernel);

}  // namespace detail

}  // namespace runtime_v1
}  // namespace kiln

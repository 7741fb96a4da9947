// Context: the thread pool behind parallel_for and the workspace; detail::run and
// detail::workspace, the two ways generated code uses a Context.
#include "kiln/kiln.h"

#include <algorithm>
#include <atomic>
#include <new>

#include "config.h"
#include "device.h"
#include "kiln/kiln_c.h"
#include "message.h"
#if KILN_THREADS
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace kiln {
inline namespace runtime_v1 {

using Task = void (*)(void* arg, int32_t i);

static constexpr int kMaxThreads = 256;
static constexpr std::align_val_t kWorkspaceAlign{64};

static int clamp_threads(int n) { return std::clamp(n, 1, KILN_THREADS ? kMaxThreads : 1); }

static int hardware_threads() {
#if KILN_THREADS
  const unsigned hw = std::thread::hardware_concurrency();
  return clamp_threads(static_cast<int>(std::min(hw, static_cast<unsigned>(kMaxThreads))));
#else
  return 1;
#endif
}

static void run_serial(int32_t n, Task task, void* arg) {
  for (int32_t i = 0; i < n; ++i) task(arg, i);
}

namespace {

// A 64-byte aligned block kept for reuse and grown to the largest request, from an allocator (or
// the heap); the old block is freed only once the new one exists.
class Block {
 public:
  explicit Block(const kiln_allocator_t* allocator = nullptr) : allocator_(allocator) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() { release(); }

  void* get(size_t bytes) {
    if (bytes <= bytes_) return ptr_;
    void* p = allocator_ ? allocator_->alloc(allocator_->self, bytes, static_cast<size_t>(kWorkspaceAlign))
                         : ::operator new(bytes, kWorkspaceAlign, std::nothrow);
    if (p == nullptr) return nullptr;
    release();
    ptr_ = p;
    bytes_ = bytes;
    return p;
  }
  void release() {
    if (ptr_ != nullptr) {
      if (allocator_)
        allocator_->free(allocator_->self, ptr_);
      else
        ::operator delete(ptr_, kWorkspaceAlign);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }

 private:
  const kiln_allocator_t* allocator_;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

#if KILN_THREADS
// a pause for a spinning thread (lets the sibling hyperthread run)
static inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins before sleeping: a kernel call is often tens of microseconds, less than a futex wake-up
// takes on some machines, and generated code calls several kernels in a row. About 50 us.
static constexpr int kSpins = 4000;

// Worker threads that sleep on a condition variable between jobs, after spinning a while for the
// next one. A job is published under the
// mutex with a new generation number; worker k takes part when k < helpers, and the caller waits
// until every helper has left the job, so no straggler can take an index of the next one.
class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { stop(); }

  // Runs every task with up to `workers` pool threads besides the caller, which always runs
  // task 0 first and then takes indices like the others.
  void run(int workers, int32_t n, Task task, void* arg) {
    if (threads_.empty()) start(workers);
    const int helpers = static_cast<int>(std::min<int64_t>(n - 1, static_cast<int64_t>(threads_.size())));
    if (helpers == 0) return run_serial(n, task, arg);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = task;
      arg_ = arg;
      n_ = n;
      helpers_ = helpers;
      busy_.store(helpers, std::memory_order_relaxed);
      next_.store(1, std::memory_order_relaxed);
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    wake_.notify_all();
    task(arg, 0);
    take_tasks(n, task, arg);
    for (int spin = 0; spin < kSpins && busy_.load(std::memory_order_acquire) != 0; ++spin) cpu_relax();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_.load(std::memory_order_relaxed) == 0; });
  }

  // Joins the threads; the next run starts new ones.
  void stop() {
    if (threads_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    stopping_ = false;
  }

 private:
  // As many threads as the system gives, up to `count`; with none, jobs run on the caller.
  void start(int count) {
#if KILN_EXCEPTIONS
    try {
      threads_.reserve(static_cast<size_t>(count));
      for (int k = 0; k < count; ++k) threads_.emplace_back([this, k, gen = generation_] { work(k, gen); });
    } catch (...) {  // std::bad_alloc or std::system_error: make do with what started
    }
#else
    threads_.reserve(static_cast<size_t>(count));
    for (int k = 0; k < count; ++k) threads_.emplace_back([this, k, gen = generation_] { work(k, gen); });
#endif
  }

  void work(int index, uint64_t seen) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      lock.unlock();
      for (int spin = 0; spin < kSpins && published_.load(std::memory_order_acquire) == seen; ++spin) cpu_relax();
      lock.lock();
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= helpers_) continue;
      const Task task = task_;
      void* const arg = arg_;
      const int32_t n = n_;
      lock.unlock();
      take_tasks(n, task, arg);
      lock.lock();
      if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
    }
  }

  void take_tasks(int32_t n, Task task, void* arg) {
    // 64-bit so that the increments past n of every thread cannot wrap around.
    for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < n;) task(arg, static_cast<int32_t>(i));
  }

  std::vector<std::thread> threads_;  // touched only by the thread running a job (or stop)
  std::mutex mutex_;
  std::condition_variable wake_;  // a new generation, or stopping_
  std::condition_variable done_;  // busy_ reached 0
  uint64_t generation_ = 0;
  bool stopping_ = false;
  Task task_ = nullptr;
  void* arg_ = nullptr;
  int32_t n_ = 0;
  int helpers_ = 0;
  std::atomic<int> busy_{0};            // helpers still in the job (written under the mutex)
  std::atomic<uint64_t> published_{0};  // generation_, for threads spinning without the mutex
  std::atomic<int64_t> next_{0};
};
#else
// No threads on this platform: every job runs on the calling thread.
class Pool {
 public:
  void run(int, int32_t n, Task task, void* arg) { run_serial(n, task, arg); }
  void stop() {}
};
#endif

}  // namespace

// an allocator that lacks a function is none: the heap
static const kiln_allocator_t* usable(const kiln_allocator_t* a) {
  return a != nullptr && a->alloc != nullptr && a->free != nullptr ? a : nullptr;
}

struct Context::Impl {
  explicit Impl(const kiln_allocator_t* a)
      : allocator(a ? *a : kiln_allocator_t{}), own_workspace(a ? &allocator : nullptr) {}

  kiln_allocator_t allocator;  // all null: the heap
  Pool pool;
  std::atomic<bool> pool_busy{false};
  ParallelFor hook = nullptr;
  void* hook_user = nullptr;
  void* given_workspace = nullptr;
  size_t given_workspace_bytes = 0;
  Block own_workspace;
#if KILN_DEVICES
  detail::DeviceState device;  // a GPU Context's driver and device
#endif
};

Context::Context() : Context(hardware_threads()) {}

Context::Context(int threads) : Context(threads, nullptr) {}

Context::Context(Device device) : Context(device, hardware_threads()) {}

Context::Context(Device device, int threads) : Context(threads, nullptr) {
  device_ = device;
  if (ok()) open_device();
}

void Context::open_device() {
#if KILN_DEVICES
  detail::open_device(device_, impl().device);
#endif
}

Status Context::status() const {
  if (!ok()) return Status(StatusCode::ResourceExhausted, "context: its allocator gave no memory for its state");
  if (device_.is_cpu()) return Status();
#if KILN_DEVICES
  return const_cast<Context*>(this)->impl().device.status;
#else
  return (detail::Message() << device_.name()
                            << ": this runtime reaches no GPU (it was built without the heap or a dynamic loader)")
      .status(StatusCode::Unsupported);
#endif
}

namespace detail {
DeviceState* device_state(Context* ctx) {
#if KILN_DEVICES
  return ctx != nullptr && ctx->ok() ? &ctx->impl().device : nullptr;
#else
  (void)ctx;
  return nullptr;
#endif
}
}  // namespace detail

std::string Context::device_name() const {
  if (device_.is_cpu()) return "CPU";
#if KILN_DEVICES
  if (ok()) {
    const std::string& name = const_cast<Context*>(this)->impl().device.name;
    if (!name.empty()) return name;
  }
#endif
  return device_.name();
}

#if KILN_HEAP
Context::Context(int threads, const kiln_allocator_t* given) : threads_(clamp_threads(threads)), impl_(nullptr) {
  const kiln_allocator_t* allocator = usable(given);
  if (allocator == nullptr) {
    impl_ = new Impl(nullptr);
    return;
  }
  void* p = allocator->alloc(allocator->self, sizeof(Impl), alignof(Impl));
  if (p != nullptr) impl_ = new (p) Impl(allocator);
}

Context::~Context() {
  if (impl_ == nullptr) return;
  if (impl_->allocator.free == nullptr) {
    delete impl_;
    return;
  }
  const kiln_allocator_t allocator = impl_->allocator;  // the Impl's own copy goes with it
  impl_->~Impl();
  allocator.free(allocator.self, impl_);
}

bool Context::ok() const noexcept { return impl_ != nullptr; }

inline Context::Impl& Context::impl() noexcept { return *impl_; }
#else
Context::Context(int threads, const kiln_allocator_t* allocator) : threads_(clamp_threads(threads)) {
  static_assert(sizeof(Impl) <= sizeof(impl_) && alignof(Impl) <= alignof(std::max_align_t),
                "kiln: Context's in-place storage (kiln.h) is too small for its Impl");
  new (impl_) Impl(usable(allocator));
}

Context::~Context() { impl().~Impl(); }

bool Context::ok() const noexcept { return true; }

inline Context::Impl& Context::impl() noexcept { return *std::launder(reinterpret_cast<Impl*>(impl_)); }
#endif

void Context::set_threads(int n) {
  const int threads = clamp_threads(n);
  if (threads == threads_) return;
  threads_ = threads;
  impl().pool.stop();  // restarted with the new size on next use
}

void Context::set_parallel_for(ParallelFor fn, void* user) {
  impl().hook = fn;
  impl().hook_user = fn ? user : nullptr;
}

void Context::set_workspace(void* ptr, size_t bytes) {
  impl().given_workspace = ptr;
  impl().given_workspace_bytes = ptr ? bytes : 0;
  if (ptr) impl().own_workspace.release();
}

void Context::parallel_for(int32_t n, Task task, void* arg) {
  if (n <= 0) return;
  if (n == 1) return task(arg, 0);
  if (impl().hook) return impl().hook(impl().hook_user, n, task, arg);
  if (threads_ == 1) return run_serial(n, task, arg);
  // A nested call (from a task) or a concurrent one runs on its own thread rather than wait.
  if (impl().pool_busy.exchange(true, std::memory_order_acquire)) return run_serial(n, task, arg);
  impl().pool.run(threads_ - 1, n, task, arg);
  impl().pool_busy.store(false, std::memory_order_release);
}

namespace detail {

Status run(Context* ctx, kiln_kernel_fn fn, void* const* bufs, const int64_t* vars, bool parallel) {
  if (fn == nullptr) return Status(StatusCode::Internal, "run: null kernel function");
  if (parallel && ctx != nullptr && ctx->threads() > 1) {
    struct Call {
      kiln_kernel_fn fn;
      void* const* bufs;
      const int64_t* vars;
      int32_t cores;
    } call{fn, bufs, vars, ctx->threads()};
    ctx->parallel_for(
        call.cores,
        [](void* p, int32_t core) {
          const Call& c = *static_cast<const Call*>(p);
          c.fn(c.bufs, c.vars, core, c.cores);
        },
        &call);
    return Status();
  }
  fn(bufs, vars, 0, 1);
  return Status();
}

void* workspace(Context* ctx, size_t bytes, Status* status) {
  const auto fail = [status](const Message& message) -> void* {
    if (status) *status = message.status(StatusCode::ResourceExhausted);
    return nullptr;
  };
  const auto cannot_allocate = [&] { return fail(Message() << "workspace: cannot allocate " << bytes << " bytes"); };
  if (status && !status->ok()) *status = Status();
  if (bytes == 0) return nullptr;
  if (ctx == nullptr) {
#if KILN_THREADS
    thread_local Block block;
#else
    static Block block;  // one thread (and no thread_local destructors to register, as on WASI)
#endif
    void* p = block.get(bytes);
    return p ? p : cannot_allocate();
  }
  Context::Impl& impl = ctx->impl();
  if (impl.given_workspace != nullptr) {
    if (bytes <= impl.given_workspace_bytes) return impl.given_workspace;
    return fail(Message() << "workspace: the call needs " << bytes << " bytes, the context's workspace has "
                          << impl.given_workspace_bytes);
  }
  void* p = impl.own_workspace.get(bytes);
  return p ? p : cannot_allocate();
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

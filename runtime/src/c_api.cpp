// kiln_c.h's contexts: a thin layer over kiln::Context, made with the caller's allocator or the
// heap. No exception leaves these functions; every failure is a status that says what was wrong.
#include "kiln/kiln_c.h"

#include <algorithm>
#include <new>

#include "c_api.h"
#include "config.h"
#include "kiln/kiln.h"
#include "message.h"
#if KILN_THREADS
#include <thread>
#endif

struct kiln_context {
  kiln_context(int threads, const kiln_allocator_t* a)
      : allocator(a ? *a : kiln_allocator_t{}), ctx(threads, a ? &allocator : nullptr) {}
  kiln_allocator_t allocator;  // all null: the heap
  kiln::Context ctx;
};

namespace kiln {
inline namespace runtime_v1 {

Context* from_c(kiln_context* ctx) { return ctx ? &ctx->ctx : nullptr; }

namespace detail {

const kiln_allocator_t* c_allocator(kiln_context* ctx) noexcept {
  return ctx != nullptr && ctx->allocator.alloc != nullptr ? &ctx->allocator : nullptr;
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

using kiln::detail::make_c_status;
using kiln::detail::Message;

// What kiln::Context() uses; the Context clamps it to 1..256.
static int hardware_threads() {
#if KILN_THREADS
  return static_cast<int>(std::min(std::thread::hardware_concurrency(), 256u));
#else
  return 1;
#endif
}

static kiln_status_t invalid(const kiln_allocator_t* allocator, const Message& m) {
  return make_c_status(allocator, KILN_INVALID_ARGUMENT, m.view());
}

static kiln_status_t no_context(const char* function) {
  return invalid(nullptr, Message() << function << ": no context (NULL)");
}

static kiln_status_t bad_threads(const kiln_allocator_t* allocator, const char* function, int32_t threads) {
  return invalid(allocator, Message() << function << ": threads is " << threads
                                      << " (0 for the hardware's concurrency, or 1..256)");
}

extern "C" {

kiln_status_t kiln_context_create(int32_t threads, const kiln_allocator_t* allocator, kiln_context** out) {
  const char* const fn = "kiln_context_create";
  if (out != nullptr) *out = nullptr;
  if (allocator != nullptr && (allocator->alloc == nullptr || allocator->free == nullptr))
    return invalid(nullptr, Message() << fn << ": the allocator lacks its " << (allocator->alloc ? "free" : "alloc")
                                      << " function");
  if (out == nullptr) return invalid(allocator, Message() << fn << ": no out-parameter for the context (NULL)");
  if (threads < 0) return bad_threads(allocator, fn, threads);
  const int n = threads == 0 ? hardware_threads() : threads;
  if (allocator == nullptr) {
#if KILN_EXCEPTIONS
    try {
      *out = new kiln_context(n, nullptr);
    } catch (...) {
    }
#else
    *out = new (std::nothrow) kiln_context(n, nullptr);
#endif
    if (*out != nullptr) return nullptr;
    return make_c_status(nullptr, KILN_RESOURCE_EXHAUSTED, "kiln_context_create: out of memory for the context");
  }
  void* p = allocator->alloc(allocator->self, sizeof(kiln_context), alignof(kiln_context));
  if (p == nullptr) {
    return make_c_status(
        allocator, KILN_RESOURCE_EXHAUSTED,
        (Message() << fn << ": the allocator gave no memory for the context (" << sizeof(kiln_context) << " bytes)")
            .view());
  }
  kiln_context* ctx = new (p) kiln_context(n, allocator);  // with an allocator nothing in it throws
  if (!ctx->ctx.ok()) {
    ctx->~kiln_context();
    allocator->free(allocator->self, p);
    return make_c_status(allocator, KILN_RESOURCE_EXHAUSTED,
                         (Message() << fn << ": the allocator gave no memory for the context's state").view());
  }
  *out = ctx;
  return nullptr;
}

void kiln_context_destroy(kiln_context* ctx) {
  if (ctx == nullptr) return;
  if (ctx->allocator.free == nullptr) {
    delete ctx;
    return;
  }
  const kiln_allocator_t allocator = ctx->allocator;
  ctx->~kiln_context();
  allocator.free(allocator.self, ctx);
}

kiln_status_t kiln_context_set_threads(kiln_context* ctx, int32_t threads) {
  const char* const fn = "kiln_context_set_threads";
  if (ctx == nullptr) return no_context(fn);
  if (threads < 0) return bad_threads(kiln::detail::c_allocator(ctx), fn, threads);
#if KILN_EXCEPTIONS
  try {
    ctx->ctx.set_threads(threads == 0 ? hardware_threads() : threads);
  } catch (...) {  // joining the old threads failed (std::system_error): the new count stands
    return make_c_status(kiln::detail::c_allocator(ctx), KILN_INTERNAL,
                         "kiln_context_set_threads: the pool's old threads could not be joined");
  }
#else
  ctx->ctx.set_threads(threads == 0 ? hardware_threads() : threads);
#endif
  return nullptr;
}

kiln_status_t kiln_context_set_workspace(kiln_context* ctx, void* ptr, size_t bytes) {
  const char* const fn = "kiln_context_set_workspace";
  if (ctx == nullptr) return no_context(fn);
  if (ptr == nullptr && bytes > 0) {
    return invalid(kiln::detail::c_allocator(ctx), Message() << fn << ": a NULL workspace of " << bytes
                                                             << " bytes (NULL, 0 lets the context allocate)");
  }
  ctx->ctx.set_workspace(ptr, bytes);
  return nullptr;
}

kiln_status_t kiln_context_set_parallel_for(
    kiln_context* ctx, void (*fn)(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg), void* user) {
  if (ctx == nullptr) return no_context("kiln_context_set_parallel_for");
  ctx->ctx.set_parallel_for(fn, user);
  return nullptr;
}

uint32_t kiln_cpu_features(void) { return kiln::cpu_features(); }

}  // extern "C"

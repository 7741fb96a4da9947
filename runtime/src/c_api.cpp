// kiln_c.h: the C API, a thin layer over kiln::Context. No exception leaves these functions.
#include "kiln/kiln_c.h"

#include <algorithm>
#include <new>

#include "config.h"
#include "kiln/kiln.h"
#if KILN_THREADS
#include <thread>
#endif

struct kiln_context {
  explicit kiln_context(int threads) : ctx(threads) {}
  kiln::Context ctx;
};

namespace kiln {
inline namespace runtime_v1 {

Context* from_c(kiln_context* ctx) { return ctx ? &ctx->ctx : nullptr; }

}  // namespace runtime_v1
}  // namespace kiln

// What kiln::Context() uses; the Context clamps it to 1..256.
static int hardware_threads() {
#if KILN_THREADS
  return static_cast<int>(std::min(std::thread::hardware_concurrency(), 256u));
#else
  return 1;
#endif
}

extern "C" {

kiln_context* kiln_context_create(int32_t threads) {
#if KILN_EXCEPTIONS
  try {
    return threads == 0 ? new kiln_context(hardware_threads()) : new kiln_context(threads);
  } catch (...) {
    return nullptr;
  }
#else
  return new (std::nothrow) kiln_context(threads == 0 ? hardware_threads() : threads);
#endif
}

void kiln_context_destroy(kiln_context* ctx) { delete ctx; }

void kiln_context_set_threads(kiln_context* ctx, int32_t threads) {
  if (ctx == nullptr) return;
#if KILN_EXCEPTIONS
  try {
    ctx->ctx.set_threads(threads == 0 ? hardware_threads() : threads);
  } catch (...) {  // joining the old threads failed (std::system_error): keep going with the new count
  }
#else
  ctx->ctx.set_threads(threads == 0 ? hardware_threads() : threads);
#endif
}

int32_t kiln_context_set_workspace(kiln_context* ctx, void* ptr, size_t bytes) {
  if (ctx == nullptr || (ptr == nullptr && bytes > 0)) return KILN_INVALID_ARGUMENT;
  ctx->ctx.set_workspace(ptr, bytes);
  return KILN_OK;
}

void kiln_context_set_parallel_for(kiln_context* ctx,
                                   void (*fn)(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg),
                                   void* user) {
  if (ctx != nullptr) ctx->ctx.set_parallel_for(fn, user);
}

uint32_t kiln_cpu_features(void) { return kiln::cpu_features(); }

const char* kiln_status_name(int32_t code) { return kiln::status_code_name(static_cast<kiln::StatusCode>(code)); }

}  // extern "C"

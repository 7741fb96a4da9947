/* kiln's runtime for C callers, in IREE's manner: every call that can fail returns a
 * kiln_status_t (NULL when it succeeded; otherwise a code and a message, which the caller owns
 * and frees with kiln_status_free), and what a call creates comes back through an out-parameter.
 * A context (thread pool and workspace) is an opaque handle; given an allocator, it takes its own
 * memory, its workspace's and the statuses of the calls made with it from there. The generated
 * C entry points (<lib>_<kernel>, declared in the library's headers) take kiln_tensor views and a
 * context and return a kiln_status_t too. No function lets an exception out. C99. */
#ifndef KILN_KILN_C_H_
#define KILN_KILN_C_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- statuses */

/* NULL: ok. Otherwise a code (an enum kiln_status_code) and a message naming what was wrong, the
 * caller's to free. Without the heap (KILN_HEAP 0) a status made without an allocator is one of a
 * few slots inside the runtime, its message cut to fit (kiln::Status::kMessageBytes); should all
 * be taken (statuses left unfreed), the status keeps its code and a fixed message. */
typedef struct kiln_status* kiln_status_t;

int32_t kiln_status_code(kiln_status_t status);        /* KILN_OK for NULL */
const char* kiln_status_message(kiln_status_t status); /* "" for NULL; valid until freed */
void kiln_status_free(kiln_status_t status);           /* NULL is a no-op */
/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for other values. */
const char* kiln_status_name(int32_t code);

/* ---------------------------------------------------------------- allocators */

/* Where a context's memory comes from. alloc returns `bytes` aligned to `alignment` (a power of
 * two up to 64), or NULL when it cannot; free takes what alloc returned. Both are required. */
typedef struct kiln_allocator_t {
  void* self;
  void* (*alloc)(void* self, size_t bytes, size_t alignment);
  void (*free)(void* self, void* ptr);
} kiln_allocator_t;

/* ---------------------------------------------------------------- contexts */

typedef struct kiln_context kiln_context;

/* Makes a context in *out (NULL on failure). threads = 0: the hardware's concurrency; otherwise
 * clamped to 1..256 (negative: INVALID_ARGUMENT). allocator: NULL for the C++ heap; else copied,
 * and the context, its own workspace and the statuses of calls made with it come from it (the
 * threads of its pool are the C++ library's: use 1 thread or a parallel-for of your own to keep
 * them out). */
kiln_status_t kiln_context_create(int32_t threads, const kiln_allocator_t* allocator, kiln_context** out);
void kiln_context_destroy(kiln_context* ctx); /* NULL is a no-op */
/* 0: the hardware's concurrency; otherwise clamped to 1..256 (negative: INVALID_ARGUMENT). */
kiln_status_t kiln_context_set_threads(kiln_context* ctx, int32_t threads);
/* Caller-owned workspace (NULL, 0: the context allocates again); a NULL ptr with bytes > 0 is
 * INVALID_ARGUMENT. */
kiln_status_t kiln_context_set_workspace(kiln_context* ctx, void* ptr, size_t bytes);
/* The application's parallel-for (see kiln::Context::set_parallel_for); fn = NULL: the pool. */
kiln_status_t kiln_context_set_parallel_for(
    kiln_context* ctx, void (*fn)(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg), void* user);

/* ---------------------------------------------------------------- the rest */

uint32_t kiln_cpu_features(void); /* KILN_CPU_* bits */
/* The ABI this runtime was built for (KILN_ABI_VERSION of its kernel_abi.h). */
int32_t kiln_abi_version(void);
/* NULL when code generated for ABI `abi_version` can run on this runtime; else UNSUPPORTED,
 * naming `library` and both versions. The generated entry points call it before their first
 * call and refuse every call after a mismatch. */
kiln_status_t kiln_abi_check(int32_t abi_version, const char* library);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_C_H_ */

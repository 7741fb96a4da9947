/* kiln's runtime for C callers: a context (thread pool and workspace) behind an opaque handle.
 * No function lets an exception out: failures come back as NULL or a kiln_status_code. C99. */
#ifndef KILN_KILN_C_H_
#define KILN_KILN_C_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_context kiln_context;

/* threads = 0: the hardware's concurrency. NULL when out of memory. */
kiln_context* kiln_context_create(int32_t threads);
void kiln_context_destroy(kiln_context* ctx); /* NULL is a no-op */
/* 0: the hardware's concurrency; otherwise clamped to 1..256. */
void kiln_context_set_threads(kiln_context* ctx, int32_t threads);
/* Caller-owned workspace (NULL, 0: the context allocates again). KILN_OK, or
 * KILN_INVALID_ARGUMENT for a NULL ctx or a NULL ptr with bytes > 0. */
int32_t kiln_context_set_workspace(kiln_context* ctx, void* ptr, size_t bytes);
/* The application's parallel-for (see kiln::Context::set_parallel_for); fn = NULL: the pool. */
void kiln_context_set_parallel_for(kiln_context* ctx,
                                   void (*fn)(void* user, int32_t n, void (*task)(void* arg, int32_t i), void* arg),
                                   void* user);
uint32_t kiln_cpu_features(void); /* KILN_CPU_* bits */
/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN" for other values. */
const char* kiln_status_name(int32_t code);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_C_H_ */

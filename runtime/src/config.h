// What the platform the runtime is compiled for gives it, decided once from the compiler:
//   KILN_HEAP        the heap (decided in kiln/kiln.h, since the layouts of Status and Context
//                    depend on it: 0 on Cortex-M; -DKILN_NO_HEAP asks for 0 anywhere): without it
//                    a Status's message and a Context's state live inside them, and there are no
//                    threads;
//   KILN_THREADS     std::thread and its synchronization (0 on WebAssembly without threads, on
//                    Cortex-M and without the heap; -DKILN_NO_THREADS asks for 0 anywhere): without
//                    them a Context runs every call on the calling thread, whatever its thread count;
//   KILN_EXCEPTIONS  C++ exceptions (0 under -fno-exceptions): without them the paths that catch
//                    an allocation failure are plain calls.
#pragma once

#include "kiln/kiln.h"  // KILN_HEAP

#if defined(KILN_NO_THREADS) || !KILN_HEAP || (defined(__wasi__) && !defined(_REENTRANT)) || \
    (defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M')
#define KILN_THREADS 0
#else
#define KILN_THREADS 1
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define KILN_EXCEPTIONS 1
#else
#define KILN_EXCEPTIONS 0
#endif

// KILN_TRY { ... } KILN_CATCH_ALL { ... }: the handler where there are exceptions; without them
// the block alone
#if KILN_EXCEPTIONS
#define KILN_TRY try
#define KILN_CATCH_ALL catch (...)
#else
#define KILN_TRY if (true)
#define KILN_CATCH_ALL else
#endif

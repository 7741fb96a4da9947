/* The ABI between kiln's generated C kernels and the code that calls them: the kernel signature,
 * the dtype and status codes, the CPU feature bits and the tensor descriptor. C99 and C++. */
#ifndef KILN_KERNEL_ABI_H_
#define KILN_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_VERSION 1

/* Every generated kernel: call it once per core (core = 0..cores-1, concurrently or in sequence);
 * each call does its share. bufs and vars are in the order the generated glue documents. */
typedef void (*kiln_kernel_fn)(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);

enum kiln_dtype {
  KILN_BOOL = 0,
  KILN_INT8,
  KILN_UINT8,
  KILN_INT16,
  KILN_UINT16,
  KILN_INT32,
  KILN_UINT32,
  KILN_INT64,
  KILN_UINT64,
  KILN_FLOAT16,
  KILN_BFLOAT16,
  KILN_FLOAT32,
  KILN_FLOAT64
};

enum kiln_status_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,
  KILN_OUT_OF_RANGE = 2,
  KILN_UNSUPPORTED = 3,
  KILN_RESOURCE_EXHAUSTED = 4,
  KILN_INTERNAL = 5
};

/* CPU features, as detected at run time (both the CPU and the OS support them). */
#define KILN_CPU_X86_AVX2 (1u << 0)   /* AVX2 and FMA */
#define KILN_CPU_X86_AVX512 (1u << 1) /* AVX512F, BW, DQ and VL */
#define KILN_CPU_ARM_NEON (1u << 2)   /* 32-bit ARM: NEON (AArch64 always has it) */
#define KILN_CPU_RISCV_V (1u << 3)    /* RISC-V: the vector extension (RVV 1.0) */
#define KILN_CPU_ARM_SVE256 (1u << 4) /* AArch64: SVE with vectors of 256 bits or more */

#define KILN_MAX_RANK 8

/* Where a tensor's data is: the host's memory, or a GPU context's device buffer (kiln::DeviceBuffer). */
#define KILN_MEMORY_HOST 0
#define KILN_MEMORY_DEVICE 1

/* A contiguous row-major tensor. rank is -1 when the shape had more than KILN_MAX_RANK dims. */
typedef struct kiln_tensor {
  void* data;    /* its first element; for KILN_MEMORY_DEVICE the device buffer's handle (cl_mem) */
  int32_t dtype; /* an enum kiln_dtype */
  int32_t rank;
  int64_t shape[KILN_MAX_RANK];
  int32_t writable; /* 0 for a view of const data */
  int32_t memory;   /* KILN_MEMORY_HOST (0: what a zeroed descriptor says) or KILN_MEMORY_DEVICE */
} kiln_tensor;

#if defined(__cplusplus)
#define KILN_STATIC_ASSERT(cond, name) static_assert(cond, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define KILN_STATIC_ASSERT(cond, name) _Static_assert(cond, #name)
#else
#define KILN_STATIC_ASSERT(cond, name) typedef char kiln_static_assert_##name[(cond) ? 1 : -1]
#endif

/* The layout is part of the ABI: 88 bytes wherever pointers are 8 bytes, no tail padding anywhere. */
KILN_STATIC_ASSERT(sizeof(void*) != 8 || sizeof(kiln_tensor) == 88, kiln_tensor_is_88_bytes);
KILN_STATIC_ASSERT(sizeof(kiln_tensor) == offsetof(kiln_tensor, memory) + sizeof(int32_t),
                   kiln_tensor_has_no_tail_padding);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KERNEL_ABI_H_ */

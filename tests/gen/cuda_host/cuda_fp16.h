// What the CUDA dialect's kernels take from nvcc, for their host build (tests/gen/cuda_on_host.py):
// the .cu includes <cuda_fp16.h> first, and this directory is ahead of the toolkit's on the
// include path. The qualifiers mean nothing on the host; the ids are the running thread's, which
// the fake driver (fake_cuda.cpp) sets before each call; __half is its 16 bits, converted through
// _Float16 (round to nearest even, as cuda_fp16.h's __float2half_rn).
#pragma once

#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __forceinline__ inline

struct kiln_uint3 {
  unsigned x, y, z;
};
extern thread_local kiln_uint3 threadIdx, blockIdx, blockDim;

// a block's shared memory: one copy, as the fake driver runs one block at a time; its barrier is
// the driver's (a block of a kernel with one runs as threads side by side)
#define __shared__ static
extern thread_local void (*kiln_host_sync)(void*);
extern thread_local void* kiln_host_sync_arg;
inline void __syncthreads() { kiln_host_sync(kiln_host_sync_arg); }

struct __half {
  uint16_t bits;
};
inline __half __ushort_as_half(unsigned short b) { return __half{b}; }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline float __half2float(__half h) {
  _Float16 f;
  memcpy(&f, &h.bits, sizeof f);
  return static_cast<float>(f);
}
inline __half __float2half_rn(float x) {
  const _Float16 f = static_cast<_Float16>(x);
  __half h;
  memcpy(&h.bits, &f, sizeof f);
  return h;
}

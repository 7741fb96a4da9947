// The C renderer: a linearized kernel (codegen::linearize) as one C99 function with the kernel
// ABI every kiln kernel shares:
//   void <name>(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);
// bufs[i] is the buffer of PARAM slot i, vars[j] the value of vars[j] (the DEFINE_VARs the
// caller passes, in the order given here). A caller runs the kernel once per core, core = 0 ..
// cores-1, at the same time or one after another: each call does its share (a kernel that is
// not shared does all of it on core 0 and returns at once elsewhere). Ranges become for loops,
// accumulators locals, index math plain C; integer math that range analysis cannot prove
// overflow-free wraps explicitly (through unsigned arithmetic), so the C has no undefined
// behaviour where the IR has none. Vector values (the vector IR of ops.def, made by the
// vectorize stage at the target's width) are GNU C vector types of their own width
// (kiln_vf32x16: 16 floats, 64 bytes), their typedefs and helpers written before the first kernel
// that needs them; vector loads and stores are unaligned (memcpy), accumulators of vectors arrays
// of them, and a loop over vectors is unrolled so that they stay in registers.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::render {

// The C family's dialects, as tinygrad's C-style renderers are one renderer with per-language
// tables: the same walk of the program, with each dialect's types, literals, math and kernel
// signature. OpenCL C 1.2: one work item per call of the body,
//   __kernel void <name>(__global T* restrict data0, ..., long varg0, ...)
// the buffers by PARAM slot (const where the kernel only reads them; bool stored as uchar,
// bfloat16 as ushort), then every var of `vars` as a long, in that order; the work-item ids
// (SPECIAL "idx<d>") are get_global_id(d), the launch sizes CKernel::global_size. Doubles use the
// cl_khr_fp64 extension where the device has it; float16, like bfloat16, is stored as ushort,
// computed in float and rounded after every op (vload_half / vstore_half are core OpenCL; half
// arithmetic is not). CUDA C++ (nvcc): C's types, literals and math, one thread per call of the
// body,
//   extern "C" __global__ void <name>(T* __restrict__ data0, ..., int64_t varg0, ...)
// with the same arguments as OpenCL's; the id "idx<d>" is blockIdx * blockDim + threadIdx on axis
// x, y or z, and a thread past the id's extent returns (the launch rounds the grid up to whole
// blocks); float16 is stored as uint16_t and computed in float like bfloat16 (cuda_fp16.h's
// conversions round to nearest even).
enum class Dialect : uint8_t { C, OpenCL, Cuda };

// whether the dialect's kernels are GPU kernels (their arguments, ids and vars as above)
inline bool gpu_dialect(Dialect d) { return d != Dialect::C; }

// The includes and helpers every rendered kernel needs; emit once per translation unit.
std::string c_preamble();
std::string opencl_preamble();
std::string cuda_preamble();
inline std::string preamble(Dialect d) {
  return d == Dialect::OpenCL ? opencl_preamble() : d == Dialect::Cuda ? cuda_preamble() : c_preamble();
}

// One kernel function. Throws InternalError for a node it cannot render (the stage that should
// have removed it is named in the message).
std::string render_c(std::span<const UOp* const> linear, std::string_view name, std::span<const UOp* const> vars,
                     Dialect dialect = Dialect::C);

}  // namespace kiln::render

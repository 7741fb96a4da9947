// The LLVM IR renderer: linearized kernels (codegen::linearize) as one textual LLVM 19 module for an
// object target, each kernel one function with the ABI the C renderer's kernels have (render/c.h):
//   define void @<name>(ptr %bufs, ptr %vars, i32 %core, i32 %cores)
// with the same semantics as the C, bit for bit where C defines them: integer math that range
// analysis cannot bound wraps (the rest carries nsw, as C's signed arithmetic lets the compiler
// assume), narrow integers divide and shift as C's promotion to int does, MAX propagates NaN as
// kiln_maxf does, bfloat16 travels as its 16 bits and is rounded to nearest even after every op,
// a gated load or store touches no memory when its gate is false (a branch, or a masked access
// for a vector gate), transcendentals are LLVM's intrinsics (libm's functions, as the C calls).
// No fast-math flags but `contract` (FMA contraction, as GCC's default -ffp-contract=fast).
// Buffers are restrict: every access to a kernel buffer carries alias.scope/noalias metadata, one
// scope per buffer (the runtime refuses overlapping buffers). Accumulators are allocas.
//
// Text, not IRBuilder: the renderer needs no LLVM headers (kiln's IR layers stay LLVM-free), its
// output is golden-testable and what `kiln codegen --emit-llvm` prints; target/llvm_compile.cpp
// parses it. Types are generic over vector dtypes: T.vec(n) renders as <n x T>.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "generator/ir/uop.h"
#include "generator/target/target.h"

namespace kiln::render {

struct LlvmKernel {
  std::span<const UOp* const> linear;  // the linearized program
  std::string name;                    // the function's name
  std::span<const UOp* const> vars;    // the DEFINE_VARs in the order the caller passes them
};

// One module: every kernel of `kernels` as one function named kernel.name, for target t (its triple,
// cpu and features as function attributes; "prefer-vector-width" from its vector_bytes). Throws
// InternalError for a node it cannot render (naming the kernel and the stage that should have
// removed it).
std::string render_llvm_module(const target::Target& t, std::string_view module_name,
                               std::span<const LlvmKernel> kernels);

}  // namespace kiln::render

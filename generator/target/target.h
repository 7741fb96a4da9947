// The targets kiln builds kernels for: one description each, the only copy in the project. The
// CLI prints the table (`kiln targets [--json]`); the CMake and Bazel rules read it from kiln at
// configure or analysis time; the pipeline, the renderers and the emitter read the fields below.
//
// This header and targets.cpp use the standard library alone, so that a build system can compile
// them into a table printer (table_main.cpp) before kiln itself is built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::target {

// What kiln writes for a target's kernels.
enum class Output : uint8_t {
  CSource,  // C99 for the consumer's compiler (<lib>_<spec>_<symbol>.c)
  Object,   // an object file made in-process by LLVM (<lib>_<spec>_<symbol>.o)
  OpenCL,   // OpenCL C 1.2 source, built on the device at run time (<lib>_<spec>_<symbol>.cl)
  Cuda,     // CUDA C++ for the toolkit's nvcc (<lib>_<spec>_<symbol>.cu)
};

struct Target {
  std::string name;    // as --target, TARGETS and targets = spell it: "x86_64-avx512"
  std::string symbol;  // in file and function names: name with '-' as '_'
  std::string arch;    // the architecture it runs on ("x86_64"), "any" for portable C
  // LLVM's spelling of the machine (object targets; for C targets what the flags select)
  std::string triple, cpu, features;
  std::string abi;            // LLVM's ABI name where the triple does not settle it ("lp64d"), else ""
  int vector_bytes = 16;      // the widest vector register kernels use
  int vector_registers = 16;  // how many there are
  int fma_units = 1;          // vector FMAs issued per cycle
  int64_t l1d_bytes = 32 << 10, l2_bytes = 1 << 20;
  bool threads = true;        // kernels may be shared among cores
  bool freestanding = false;  // no libc or libm: kernels call nothing
  // the math its kernels may leave to the renderer, which writes a libm call or an instruction
  // ("exp2", "log2", "sin", "sqrt", "pow", "trunc"); kiln decomposes the others into arithmetic
  // (codegen/decompositions.cpp), or says it cannot. exp2 and log2 on float32 are decomposed on
  // every target: the polynomials vectorize, a library's function is one call per lane.
  std::vector<std::string> math_ops = {"exp2", "log2", "sin", "sqrt", "pow", "trunc"};
  Output output = Output::CSource;
  std::vector<std::string> c_flags;  // a C target's compile flags (GCC and Clang spelling)
  std::string arch_guard;            // a C target's preprocessor condition where it exists ("" = all)
  // what the runtime checks before it picks the target's variants: the KILN_CPU_* bits
  // (kiln/kernel_abi.h) as a C expression and as a value, and the features by name for people
  std::string runtime_bits;
  uint32_t runtime_mask = 0;
  std::vector<std::string> runtime_features;
  // A GPU target (gpu = true): kernels run as a grid of work items, the output loops become the
  // launch's ids (codegen/gpudims.cpp), and the limits below hold. tinygrad's renderers carry the
  // same three (global_max, local_max, shared_max).
  bool gpu = false;
  std::vector<int64_t> global_max;  // the most work items (global size) per dim, dim 0 first
  std::vector<int64_t> local_max;   // the most work items per work group per dim
  int64_t local_max_total = 0;      // and in a whole work group
  int64_t local_bytes = 0;          // local (shared) memory per work group
  std::string cuda_arch;            // a CUDA target's architecture, as nvcc names it ("sm_80")
  // the warp-wide matrix products it has (codegen/opt/tensor_cores.cpp), as PTX names the shape and
  // the inputs' and sums' types ("m16n8k16 f16 f32")
  std::vector<std::string> tensor_cores;
};

// Every target, best first within an architecture (the order kiln writes and dispatch tries them).
const std::vector<Target>& targets();

// The targets kernels run on as C or objects (every one but the GPU targets), in the same order.
const std::vector<const Target*>& cpu_targets();

// The target called `name`, or null.
const Target* find(std::string_view name);

// The known names, sorted and comma-separated ("aarch64-neon, aarch64-sve256, armv7-neon, ..."), for error messages.
std::string known_names();

// The table as `kiln targets` prints it: for people (aligned columns), or JSON (one object per
// target, every field above; what the CMake and Bazel rules read).
std::string table_text();
std::string table_json();

}  // namespace kiln::target

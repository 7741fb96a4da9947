// In-process compilation of a rendered LLVM IR module (render/llvm.h) for an object target, with
// the LLVM 19 C++ API: parse the text, verify it, optimize it (the new pass manager's O3 for the
// target's TargetMachine: its triple, CPU and features, position-independent code, no debug info)
// and emit an ELF object (its bytes) or the assembly text. The same module gives the same bytes
// every time, and they name no path of the machine that made them (the module's source_filename
// is the name it was rendered with). Only the LLVM backends the targets use are initialized, each
// once, when a target first needs it.
#pragma once

#include <string>

#include "generator/target/target.h"

namespace kiln::target {

enum class Artifact { Object, Assembly };

// Throws InternalError when the IR does not parse or verify (naming the kernel, with the IR), or
// when LLVM has no backend for the target's triple.
std::string compile_module(const Target& t, const std::string& module_ir, Artifact what);

}  // namespace kiln::target

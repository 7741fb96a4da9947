// Lowers a checked Spec to tensor graphs: dims become DEFINE_VARs shared by the file's kernels,
// parameters become inputs, statements become Tensor API calls. Type and shape errors the
// Tensor API finds come back as diagnostics at the operator or call that caused them.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "generator/frontend/source.h"
#include "generator/frontend/spec_ast.h"
#include "generator/frontend/tensor.h"

namespace kiln::frontend {

struct LoweredKernel {
  std::string name;
  std::vector<Tensor> inputs;   // in declaration order; PARAM slot i is inputs[i]
  std::vector<Tensor> outputs;  // in declaration order
  std::vector<std::string> output_names;
  Loc loc;  // the kernel's declaration
};

struct LowerResult {
  std::vector<const UOp*> dims;         // the file's dims as DEFINE_VARs, in declaration order
  std::vector<LoweredKernel> kernels;   // the kernels that lowered without errors, in file order
  std::vector<Diagnostic> diagnostics;  // at most one per kernel (its first error), in source order
  bool ok() const { return diagnostics.empty(); }
};

// Run it on a spec that parsed and passed check_spec. `file` must outlive the diagnostics.
// `bucket` narrows dims for a specialized variant: an exact value makes the dim that constant, a
// multiple `%k` makes it a DEFINE_VAR with multiple_of k over the multiples of k in its range.
// `only` (a kernel's name) lowers that kernel alone: a variant needs no other kernel of its spec.
LowerResult lower_spec(Context& ctx, const Spec& spec, const SourceFile& file,
                       const std::map<std::string, Specialization>& bucket = {}, std::string_view only = {});

}  // namespace kiln::frontend

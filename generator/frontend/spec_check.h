// Checks of a parsed spec that need no tensor semantics: names, dtypes, dim ranges and
// specializations, shape sizes, and the dataflow of each kernel body (every output assigned
// once, nothing used before it is assigned). Op shapes, dtypes and arity are the Tensor API's.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "generator/frontend/source.h"
#include "generator/frontend/spec_ast.h"
#include "generator/ir/dtype.h"

namespace kiln::frontend {

// The dtype a spec spells `f32`, `bf16`, `u8`, ...; nullopt for anything else.
std::optional<DType> spec_dtype(std::string_view name);

// Every error, in source order; empty when the spec is fine. Run it on a spec that parsed
// without errors: a partial AST would give errors about what the parser dropped.
std::vector<Diagnostic> check_spec(const Spec& spec);

}  // namespace kiln::frontend

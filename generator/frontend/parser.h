// The .kiln parser: tokens to a Spec AST, with every syntax error as a diagnostic. It recovers
// at statement and declaration boundaries, so one run reports the independent errors of a file
// without cascading: after an error in a statement the rest of its line is skipped.
#pragma once

#include <vector>

#include "generator/frontend/source.h"
#include "generator/frontend/spec_ast.h"

namespace kiln::frontend {

struct ParseResult {
  Spec spec;                            // what parsed; declarations with syntax errors are left out
  std::vector<Diagnostic> diagnostics;  // lexer and parser errors, in source order
  bool ok() const { return diagnostics.empty(); }
};

// `file` must outlive the result: locations point into it.
ParseResult parse_spec(const SourceFile& file);

}  // namespace kiln::frontend

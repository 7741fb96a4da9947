// Exact evaluation of expressions at points, for differential tests: two expressions are
// compared on every point of their variables' joint domain when it is small, else on random
// points and the domain's corners.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::exact {

using Lane = std::optional<ConstValue>;                  // nullopt: undefined here (division by zero, ...)
using Value = std::vector<Lane>;                         // one lane per vector element
using Env = std::unordered_map<const UOp*, ConstValue>;  // a value for each leaf

// An op the evaluator has no semantics for (LOAD, PARAM, ...) or a leaf without a value.
struct NotEvaluable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The free variables of root: DEFINE_VAR, RANGE and SPECIAL nodes, by creation id.
std::vector<const UOp*> leaves(const UOp* root);

// Evaluates root with the leaves bound by env. Throws NotEvaluable.
Value evaluate(const UOp* root, const Env& env);

std::string to_string(const Value& v);

struct Comparison {
  enum class Result { Equal, Differ, NotEvaluable } result = Result::Equal;
  size_t points = 0;  // points evaluated
  bool exhaustive = false;
  std::string why;  // for Differ: the point and both values; for NotEvaluable: the reason
};

// Compares `ours` with `expected` lane by lane wherever `expected` is defined. Points that put a
// RANGE or SPECIAL at or past its end are skipped. Deterministic for a given seed.
Comparison compare(const UOp* ours, const UOp* expected, uint64_t seed, size_t exhaustive_limit = 4096,
                   size_t samples = 2000);

}  // namespace kiln::exact

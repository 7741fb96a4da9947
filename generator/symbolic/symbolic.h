// The symbolic rule families of the seeds, as pattern matchers.
//   symbolic_simple: generic folding (self/zero folding, constant folding, casts, bool, where)
//   symbolic:        + canonical operand order, like terms, comparisons, div/mod folding
//   sym:             + valid (gate) simplification and the opinionated term rules
#pragma once

#include <optional>

#include "generator/rewrite/rewrite.h"

namespace kiln {

const PatternMatcher& symbolic_simple();
const PatternMatcher& commutative();  // canonical operand order for weakint commutative ops
const PatternMatcher& symbolic();
const PatternMatcher& div_and_mod_symbolic();  // divmod.cpp
const PatternMatcher& pm_simplify_valid();     // valid.cpp
const PatternMatcher& sym();
// A concrete CAST over weak math or a weak CONST commits the weak sources at its width (sym.cpp).
const PatternMatcher& pm_cast_weak();
// cond.where(buf[idx], 0) -> buf[idx.valid(cond)]: a gate on loaded data guards the load (load.cpp).
const PatternMatcher& pm_move_where_on_load();

// graph_rewrite(u, symbolic()); CONSTs are returned as they are.
const UOp* simplify(const UOp* u);
// An integer expression of CONSTs (shapes are built as such and simplified by the frontend): its
// value, the very node simplify() gives, without the rewrite. nullptr where it is not one, or a
// step does not fold (division by zero, Invalid, a float): simplify() then decides.
const UOp* fold_int_constants(const UOp* u);
// How far index expression u moves when range r moves by one, where that is a constant: u with
// r at `at` + 1 less u with r at `at`, simplified. `at` is r's stand-in (another range or a var:
// r + 1 would contain r).
std::optional<int64_t> step_along(const UOp* u, const UOp* r, const UOp* at);

// Helpers shared by the rule files.
const UOp* uop_given_valid(const UOp* valid, const UOp* u, bool try_simplex = true);  // valid.cpp
const UOp* gcd(std::span<const UOp* const> terms);  // the seeds' UOp.gcd (divisibility.cpp)

}  // namespace kiln

// Opts: changes to a kernel's loop structure that keep its meaning, and the hand-coded
// heuristics that pick them for the CPU. An opt splits a range; the expander then unrolls the
// pieces marked Upcast (outputs) or Unroll (reductions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::codegen {

struct Opt {
  enum class Kind { Upcast, Unroll };
  Kind kind;
  int32_t axis;             // RangeArg::axis of the range to split
  int64_t amount;           // the size of the inner piece; must divide the range's end
  std::string str() const;  // "UPCAST(1, 16)"
};

// Splits the range `axis` into an outer range (end / amount) and an inner range of `amount`
// marked Upcast or Unroll: r -> r_outer * amount + r_inner. Returns nullptr when the opt does
// not apply (no such range, or amount does not divide its end).
const UOp* apply_opt(const UOp* sink, const Opt& opt);

// The CPU heuristics: for a kernel that reduces into a 2-D (or higher) output, register-tile
// the two innermost output axes (4 rows x 16 columns where the sizes allow), so one pass over
// the reduction updates 64 accumulators. Returns the opts it chose (applied to `sink`).
std::vector<Opt> hand_coded_optimizations(const UOp*& sink);

}  // namespace kiln::codegen

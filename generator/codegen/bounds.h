// prove bounds (bounds.cpp): every LOAD and STORE of a lowered kernel addresses its buffer inside
// it, for every value of the dims in their declared ranges (compile_to_c: an InternalError where
// not, unless the caller asks for the proofs to handle them itself: kiln gen and codegen compile the
// kernel again without opts, and refuse it where that is not proven either).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "generator/ir/uop.h"

namespace kiln::codegen {

struct AccessProof {
  enum class How { Ranges, Gate, Solver, Unproven };
  std::string buffer;  // the PARAM's name, or "acc<slot>" for an accumulator
  bool store = false;
  int lanes = 1;            // elements the access covers from its index on
  std::string index;        // the address, as C-like text over the dims and loops (r<axis>)
  std::string found;        // "[lo, hi]": the bounds of the index the proof used (else its numeric range)
  std::string size;         // the buffer's element count
  How how = How::Unproven;  // Gate: in bounds only where the INDEX's gate holds; Solver: Z3 found no way out
};

// One proof per access (LOAD or STORE through an INDEX) of `sink`, in program order. The bounds are
// polynomials over the dims: interval analysis on the index, with the loop ends kept symbolic, and
// the gate's comparisons to narrow the loops it guards; where those are inconclusive, Z3.
std::vector<AccessProof> prove_bounds(const UOp* sink);

// The first access of `proofs` not proven (null: none), and an access' line for messages: "the load
// from buffer x at index r0 + 1, found in [1, 16], is not proven inside its 16 elements".
const AccessProof* first_unproven(const std::vector<AccessProof>& proofs);
std::string describe(const AccessProof& a);

// Throws InternalError naming the kernel, the buffer and the index of the first access not proven.
void check_bounds(std::string_view kernel, const std::vector<AccessProof>& proofs, const UOp* sink);

std::string_view how_name(AccessProof::How h);  // "proved by ranges", "proved by gate", "UNPROVEN"
// index math as AccessProof::index spells it, over the dims and loops (r<axis>): "M*6 + r1"
std::string index_text(const UOp* u);

}  // namespace kiln::codegen

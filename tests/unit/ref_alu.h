// The oracle's own arithmetic (tests only): every ALU op and cast over ConstValues, written apart
// from the generator's kiln::exec_alu and kiln::truncate_to so that a bug there cannot hide on both
// sides of a test. Integers are exact values in __int128 brought back to their dtype's width by a
// mask (weakint, the index type, never wraps: a result int64 cannot hold is undefined); floats are
// double, rounded to float32 by the conversion, to float16 and bfloat16 by scaling to their quantum
// and std::nearbyint. The semantics are kiln's (generator/ir/uop.h, and the renderers' for MAX: NaN
// propagates, and of two equal values the second, so max(-0, +0) is +0); test_ref_alu.cpp compares
// the two on random and edge operands for every op and dtype.
#pragma once

#include <optional>
#include <span>

#include "generator/ir/uop.h"

namespace kiln::ref {

// What kiln::exec_alu(op, dtype, operands, operand) means; nullopt where the op is undefined
// (division by zero, a shift past the width), unsupported, or leaves weakint's int64.
std::optional<ConstValue> alu(Op op, DType dtype, std::span<const ConstValue> operands, DType operand = DType());
// What kiln::truncate_to(d, v) means: ints wrap to the width, floats round to the dtype.
ConstValue to_dtype(DType d, const ConstValue& v);

}  // namespace kiln::ref

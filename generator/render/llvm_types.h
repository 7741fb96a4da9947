// The LLVM IR renderer's spelling of types and literals (render/llvm*.cpp's, private to them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "generator/ir/dtype.h"

namespace kiln::render::llvm_text {

std::string num(int64_t v);
// a scalar's LLVM type: bfloat16 is computed in float (and rounded after every op), as the C does
std::string_view scalar_type(DType d);
// the type in memory: bool as a byte (C's bool), bfloat16 as its 16 bits
std::string_view scalar_mem_type(DType d);
std::string vector_of(int n, std::string_view t);  // <n x t>, or t for n = 1
std::string ty(DType d);                           // of a value: T.vec(n) is <n x T>
std::string mem_ty(DType d);                       // of the same value in memory
// a scalar literal as a value of a (vector) type: vectors take a splat
std::string splat(int count, std::string_view elem, const std::string& lit);
// the literal of a float constant of dtype d as the C renderer writes it (float(v) for float and
// bfloat16, (_Float16)float(v) for half; NaN is the quiet NaN)
std::string float_literal(double v, DType d);
std::string int_literal(int64_t v, DType d);  // the value's bits at d's width, read as signed
std::string zero_of(DType d);
std::string suffix(DType d);  // an intrinsic's type suffix: f32, v8f32, i64, v4i1
// the inside of an LLVM string ("..."): quotes, backslashes and what is not printable as \XX
std::string escaped(std::string_view s);

}  // namespace kiln::render::llvm_text

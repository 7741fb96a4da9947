// The C renderer's parts (private to generator/render/c*.cpp): text building, C types and
// literals (c_types.cpp), the operator table (c_ops.cpp); c.cpp walks the program with them.
#pragma once

#include <charconv>
#include <concepts>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "generator/ir/uop.h"
#include "generator/render/c.h"

namespace kiln::render::c {

// ---------------------------------------------------------------- text
// The renderer appends its C piece by piece to one string, cat(s, "const ", t, " val", n, ...),
// instead of concatenating temporary strings: rendering is a visible share of a compile. cat grows
// the string once for all its pieces, then copies them in (no per-piece length checks).
inline size_t most(std::string_view v) { return v.size(); }
inline size_t most(char) { return 1; }
template <size_t N> size_t most(const char (&)[N]) { return N - 1; }
template <std::integral I> size_t most(I) { return 20; }  // digits and sign of any 64-bit integer

inline char* write(char* p, std::string_view v) {
  if (!v.empty()) std::memcpy(p, v.data(), v.size());
  return p + v.size();
}
inline char* write(char* p, char c) {
  *p = c;
  return p + 1;
}
template <size_t N> char* write(char* p, const char (&lit)[N]) {
  std::memcpy(p, lit, N - 1);  // a literal: a fixed size, copied inline
  return p + N - 1;
}
template <std::integral I> char* write(char* p, I v) { return std::to_chars(p, p + 20, v).ptr; }

// No piece may point into s itself (growing s may move it).
template <class... T> void cat(std::string& s, const T&... parts) {
  size_t n = s.size();
  s.resize(n + (most(parts) + ...));
  char* p = s.data() + n;
  ((p = write(p, parts)), ...);
  s.resize(size_t(p - s.data()));
}
template <class T> void put(std::string& s, const T& part) { cat(s, part); }

// ---------------------------------------------------------------- types and literals (c_types.cpp)

// a scalar's type ("float", "int32_t"; OpenCL's "int"); throws for vectors
std::string_view scalar_type(DType d, Dialect l = Dialect::C);
// the type a buffer stores: bfloat16 travels as its 16 bits (and an OpenCL bool as a uchar)
std::string_view storage_type(DType d, Dialect l = Dialect::C);
std::string_view unsigned_type(DType d, Dialect l = Dialect::C);  // a signed integer's unsigned twin ("uint32_t")
void float_literal(std::string& s, double v, DType d, Dialect l = Dialect::C);
void int_literal(std::string& s, int64_t v, DType d, Dialect l = Dialect::C);
bool identifier(std::string_view s);

// GNU C vector types: kiln_v<f|i|u><bits>x<lanes> ("kiln_vf32x16", 64 bytes), the names of their
// helpers' suffix ("vf32x16"). A bool vector is a mask of signed integers as wide as what it
// compares, `mask_bits` each.
std::string vector_suffix(DType d, int mask_bits);
// The typedefs and helpers (load, store, splat, select, max) of the signed, unsigned and float
// vectors of `lanes` elements of `bits` bits, once per translation unit (an include guard).
std::string vector_helpers(int bits, int lanes);

// OpenCL C's own vector types ("float4", "int4"; a mask: the signed integers of `mask_bits`), and
// the same helpers as vector_helpers' for them, by the same suffixes
std::string opencl_vector_type(DType d, int mask_bits);
std::string opencl_vector_helpers(int bits, int lanes);
// CUDA C++'s: kiln_vec<T, n>, an aligned struct of n lanes with lanewise operators (nvcc has no
// vector arithmetic), typedef'd to the C vectors' names, with the same helpers, kiln_convert<V>
// and kiln_bitcast<V>
std::string cuda_vector_helpers(int bits, int lanes);
// The tensor cores' product for CUDA (WMMA of shape `shape`, "m16n8k16.f16" or "m16n8k16.bf16"):
// kiln_mma_<shape as an identifier>(a, b, c), one warp's D = A * B + C through mma.sync, each
// thread's fragments as float vectors (kiln_vf32x8 a, kiln_vf32x4 b and c); needs the vectors of
// 8 and 4 floats and the narrow floats' conversions. Throws where kiln has no such product.
std::string cuda_mma_helper(std::string_view shape);
std::string cuda_mma_name(std::string_view shape);
// The C dialect's float16 type, kiln_f16 (_Float16), declared once per translation unit
std::string f16_typedef();

// A vector's bits as the vector `type` of the same size, spelled up to its operand (close it with
// ')'): OpenCL's as_T( (it casts no vector to another type), CUDA's kiln_bitcast<T>(, GNU C's (T)(
inline void bits_as(std::string& s, Dialect d, std::string_view type) {
  if (d == Dialect::OpenCL) return cat(s, "as_", type, '(');
  if (d == Dialect::Cuda) return cat(s, "kiln_bitcast<", type, ">(");
  cat(s, '(', type, ")(");
}

// ---------------------------------------------------------------- operators (c_ops.cpp)

// How the operator table spells the type of the node it writes.
struct Spelling {
  bool vec = false;
  std::string_view type;   // "int32_t" / "kiln_vi32x16"
  std::string_view utype;  // the unsigned type of the same width, where integer math wraps through it
  std::string_view sfx;    // a vector's helpers' suffix ("vi32x16")
  Dialect dialect = Dialect::C;
};

// Appends the C expression of the ALU node u (scalar or lanewise on vectors) to e; x holds its
// operands as spelled. `wraps`: integer math whose result range analysis cannot bound inside the
// dtype, computed through the unsigned type.
void alu(std::string& e, const UOp* u, std::span<const std::string_view> x, const Spelling& t, bool wraps);

}  // namespace kiln::render::c

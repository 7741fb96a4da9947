// C types, literals and the preamble of the C renderer.
#include <algorithm>
#include <cmath>
#include <limits>

#include "generator/render/c.h"
#include "generator/render/c_internal.h"

namespace kiln::render {

namespace c {

// OpenCL C's spelling of a scalar type, or "" where it is C's
static std::string_view opencl_type(DType d) {
  switch (d.scalar) {
    case Scalar::Int8:
      return "char";
    case Scalar::Uint8:
      return "uchar";
    case Scalar::Int16:
      return "short";
    case Scalar::Uint16:
      return "ushort";
    case Scalar::Int32:
      return "int";
    case Scalar::Uint32:
      return "uint";
    case Scalar::Int64:
      return "long";
    case Scalar::Uint64:
      return "ulong";
    case Scalar::Float16:
      return "float";  // computed in float, rounded to half after every op (render/c.cpp)
    default:
      return {};
  }
}

std::string_view scalar_type(DType d, Dialect l) {
  if (d.count != 1) throw InternalError("render C: vector dtype " + to_string(d) + " where a scalar is written");
  if (l == Dialect::OpenCL)
    if (std::string_view t = opencl_type(d); !t.empty()) return t;
  switch (d.scalar) {
    case Scalar::Bool:
      return "bool";
    case Scalar::Int8:
      return "int8_t";
    case Scalar::Uint8:
      return "uint8_t";
    case Scalar::Int16:
      return "int16_t";
    case Scalar::Uint16:
      return "uint16_t";
    case Scalar::Int32:
      return "int32_t";
    case Scalar::Uint32:
      return "uint32_t";
    case Scalar::Int64:
      return "int64_t";
    case Scalar::Uint64:
      return "uint64_t";
    case Scalar::Float16:
      // C: kiln_f16, GCC's and Clang's _Float16 (f16_typedef()); CUDA: computed in float, rounded to
      // half after every op
      return l == Dialect::Cuda ? "float" : "kiln_f16";
    case Scalar::BFloat16:
      return "float";  // computed in float, rounded to bfloat16 after every op
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      throw InternalError("render C: no C type for " + to_string(d) + " (commit weak / lower index first)");
  }
}

std::string_view storage_type(DType d, Dialect l) {
  if (d == dtypes::bfloat16) return l == Dialect::OpenCL ? "ushort" : "uint16_t";
  if (d == dtypes::float16 && l == Dialect::OpenCL) return "ushort";
  if (d == dtypes::float16 && l == Dialect::Cuda) return "uint16_t";
  if (d == dtypes::bool_ && l == Dialect::OpenCL) return "uchar";  // a kernel argument may not point at bool
  return scalar_type(d, l);
}

std::string_view unsigned_type(DType d, Dialect l) {
  bool cl = l == Dialect::OpenCL;
  switch (d.scalar) {
    case Scalar::Int8:
      return cl ? "uchar" : "uint8_t";
    case Scalar::Int16:
      return cl ? "ushort" : "uint16_t";
    case Scalar::Int32:
      return cl ? "uint" : "uint32_t";
    case Scalar::Int64:
      return cl ? "ulong" : "uint64_t";
    default:
      return scalar_type(d, l);
  }
}

void float_literal(std::string& s, double v, DType d, Dialect l) {
  if (std::isnan(v)) return put(s, "NAN");
  if (std::isinf(v)) return put(s, v > 0 ? "INFINITY" : "(-INFINITY)");
  char buf[64];
  std::to_chars_result r =
      d == dtypes::float64 ? std::to_chars(buf, buf + sizeof buf, v) : std::to_chars(buf, buf + sizeof buf, float(v));
  std::string_view num(buf, size_t(r.ptr - buf));
  std::string_view point = num.find_first_of(".e") == std::string_view::npos ? ".0" : "";
  if (d == dtypes::float64) return cat(s, num, point);
  if (d == dtypes::float32) return cat(s, num, point, 'f');
  cat(s, "((", scalar_type(d, l), ')', num, point, "f)");
}

void int_literal(std::string& s, int64_t v, DType d, Dialect l) {
  bool cl = l == Dialect::OpenCL;  // OpenCL C's long is 64 bits, and it has no <stdint.h>
  if (is_bool(d)) return put(s, v ? '1' : '0');
  if (d == dtypes::uint64) return cat(s, uint64_t(v), cl ? "UL" : "ull");
  if (d == dtypes::int64) {
    if (v == std::numeric_limits<int64_t>::min()) return put(s, cl ? "LONG_MIN" : "INT64_MIN");
    return cat(s, v, cl ? "L" : "ll");
  }
  if (v == std::numeric_limits<int32_t>::min()) return put(s, cl ? "INT_MIN" : "INT32_MIN");
  std::string_view u = d == dtypes::uint32 ? "u" : "";
  if (bitsize(d) < 32) return cat(s, "((", scalar_type(d, l), ')', v, u, ')');
  cat(s, v, u);
}

bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string vector_suffix(DType d, int mask_bits) {
  char kind = is_float(d) ? 'f' : is_unsigned(d) ? 'u' : 'i';
  int bits = is_bool(d) ? mask_bits : bitsize(d);
  bool known = is_bool(d) ? (bits == 32 || bits == 64)
                          : (d.scalar == Scalar::Float32 || d.scalar == Scalar::Float64 ||
                             (is_int(d) && !is_weak(d) && bitsize(d) >= 32));
  if (d.count < 2 || !known) throw InternalError("render C: no C vector type for " + to_string(d));
  std::string s = "v";
  cat(s, kind, bits, 'x', int(d.count));
  return s;
}

std::string vector_helpers(int bits, int lanes) {
  std::string b = std::to_string(bits), n = std::to_string(lanes), shape = b + "x" + n;
  // the helpers are static inline, so passing a vector wider than the ISA's registers changes no
  // ABI that matters: compiled without the target's flags the C is right (lowered to narrower
  // vectors), and warning-free
  std::string s =
      "#ifndef KILN_V" + shape + "\n#define KILN_V" + shape + "\n#pragma GCC diagnostic ignored \"-Wpsabi\"\n";
  std::string i = "kiln_vi" + shape, u = "kiln_vu" + shape, f = "kiln_vf" + shape;
  std::string it = "int" + b + "_t", ut = "uint" + b + "_t", ft = bits == 32 ? "float" : "double";
  std::string bytes = std::to_string(bits / 8 * lanes);
  for (auto [name, t] : {std::pair{i, it}, {u, ut}, {f, ft}}) {
    std::string sfx = name.substr(5);
    s += "typedef " + t + " " + name + " __attribute__((vector_size(" + bytes + ")));\n";
    s += "KILN_INLINE " + name + " kiln_load_" + sfx + "(const " + t + "* p) {\n  " + name +
         " v;\n  memcpy(&v, p, sizeof v);\n  return v;\n}\n";
    s += "KILN_INLINE void kiln_store_" + sfx + "(" + t + "* p, " + name + " v) { memcpy(p, &v, sizeof v); }\n";
    if (name == f)  // through the bits: 0 + x would turn -0.0 into +0.0
      s += "KILN_INLINE " + f + " kiln_splat_" + sfx + "(" + t + " x) {\n  " + ut +
           " bits;\n  memcpy(&bits, &x, sizeof bits);\n  return (" + f + ")kiln_splat_vu" + shape + "(bits);\n}\n";
    else
      s += "KILN_INLINE " + name + " kiln_splat_" + sfx + "(" + t + " x) { return (" + name + "){0} + x; }\n";
    s += "KILN_INLINE " + name + " kiln_select_" + sfx + "(" + i + " m, " + name + " a, " + name + " b) {\n  return (" +
         name + ")((m & (" + i + ")a) | (~m & (" + i + ")b));\n}\n";
    std::string pick = name == f ? "(a > b) | (a != a)" : "a > b";  // NaN propagates, like the IR's MAX
    s += "KILN_INLINE " + name + " kiln_max_" + sfx + "(" + name + " a, " + name + " b) { return kiln_select_" + sfx +
         "(" + pick + ", a, b); }\n";
  }
  return s + "#endif\n";
}

std::string opencl_vector_type(DType d, int mask_bits) {
  const int bits = is_bool(d) ? mask_bits : bitsize(d);
  std::string_view base = is_float(d)      ? (bits == 64 ? "double" : "float")
                          : is_unsigned(d) ? (bits == 64 ? "ulong" : "uint")
                                           : (bits == 64 ? "long" : "int");
  std::string s(base);
  cat(s, int(d.count));
  return s;
}

std::string opencl_vector_helpers(int bits, int lanes) {
  std::string b = std::to_string(bits), n = std::to_string(lanes), shape = b + "x" + n;
  std::string s = "#ifndef KILN_V" + shape + "\n#define KILN_V" + shape + "\n";
  const bool wide = bits == 64;
  std::string it = (wide ? "long" : "int") + n, ut = (wide ? "ulong" : "uint") + n,
              ft = (wide ? "double" : "float") + n;
  if (wide) s += "#ifdef cl_khr_fp64\n";
  for (auto [kind, t] : {std::pair{"i", it}, {"u", ut}, {"f", ft}}) {
    std::string sfx = "v" + std::string(kind) + shape;
    // vloadn and vstoren: n elements from p on, p aligned as one element (the address space is
    // the pointer's: macros, not functions)
    s += "#define kiln_load_" + sfx + "(p) vload" + n + "(0, p)\n";
    s += "#define kiln_store_" + sfx + "(p, v) vstore" + n + "(v, 0, p)\n";
    std::string scalar = t.substr(0, t.size() - n.size());
    s += t + " kiln_splat_" + sfx + "(" + scalar + " x) { return (" + t + ")(x); }\n";  // x in every lane
    s += t + " kiln_select_" + sfx + "(" + it + " m, " + t + " a, " + t + " b) { return select(b, a, m); }\n";
    std::string pick = std::string(kind) == "f" ? "(a > b) | (a != a)" : "a > b";  // NaN propagates, like MAX
    s += t + " kiln_max_" + sfx + "(" + t + " a, " + t + " b) { return select(b, a, " + pick + "); }\n";
  }
  if (wide) s += "#endif\n";
  return s + "#endif\n";
}

std::string cuda_vector_helpers(int bits, int lanes) {
  // the vector template, once: n lanes in one aligned struct (a 16-byte one is one ld.global.v4),
  // lanewise operators, comparisons giving masks of signed lanes as wide (-1 or 0)
  std::string s =
      "#ifndef KILN_CUDA_VEC\n#define KILN_CUDA_VEC\n"
      "#define KILN_MEMBER __device__ __forceinline__\n"
      "template <int B> struct kiln_int_of;\n"
      "template <> struct kiln_int_of<4> { typedef int32_t t; };\n"
      "template <> struct kiln_int_of<8> { typedef int64_t t; };\n"
      "template <class T, int N> struct alignas(sizeof(T) * N) kiln_vec {\n"
      "  typedef T elem;\n  T v[N];\n"
      "  KILN_MEMBER T& operator[](int i) { return v[i]; }\n"
      "  KILN_MEMBER const T& operator[](int i) const { return v[i]; }\n};\n"
      "#define KILN_VOP(op)                                                                    \\\n"
      "  template <class T, int N>                                                             \\\n"
      "  KILN_MEMBER kiln_vec<T, N> operator op(kiln_vec<T, N> a, kiln_vec<T, N> b) {          \\\n"
      "    kiln_vec<T, N> r;                                                                   \\\n"
      "    for (int i = 0; i < N; ++i) r.v[i] = (T)(a.v[i] op b.v[i]);                         \\\n"
      "    return r;                                                                           \\\n"
      "  }\n"
      "KILN_VOP(+) KILN_VOP(-) KILN_VOP(*) KILN_VOP(/) KILN_VOP(%) KILN_VOP(&) KILN_VOP(|) KILN_VOP(^)\n"
      "KILN_VOP(<<) KILN_VOP(>>)\n"
      "#define KILN_VCMP(op)                                                                   \\\n"
      "  template <class T, int N>                                                             \\\n"
      "  KILN_MEMBER kiln_vec<typename kiln_int_of<sizeof(T)>::t, N> operator op(kiln_vec<T, N> a, \\\n"
      "                                                                          kiln_vec<T, N> b) { \\\n"
      "    kiln_vec<typename kiln_int_of<sizeof(T)>::t, N> r;                                  \\\n"
      "    for (int i = 0; i < N; ++i) r.v[i] = a.v[i] op b.v[i] ? -1 : 0;                     \\\n"
      "    return r;                                                                           \\\n"
      "  }\n"
      "KILN_VCMP(<) KILN_VCMP(!=) KILN_VCMP(==)\n"
      "template <class T, int N> KILN_MEMBER kiln_vec<T, N> operator-(kiln_vec<T, N> a) {\n"
      "  kiln_vec<T, N> r;\n  for (int i = 0; i < N; ++i) r.v[i] = (T)-a.v[i];\n  return r;\n}\n"
      "/* a cast lane by lane (toward zero to an integer), and a bit cast */\n"
      "template <class V, class T, int N> KILN_MEMBER V kiln_convert(kiln_vec<T, N> a) {\n"
      "  V r;\n  for (int i = 0; i < N; ++i) r.v[i] = (typename V::elem)a.v[i];\n  return r;\n}\n"
      "template <class V, class U> KILN_MEMBER V kiln_bitcast(U a) {\n"
      "  V r;\n  memcpy(&r, &a, sizeof r);\n  return r;\n}\n"
      "/* n elements from p on: one access where p is aligned as the vector, else element by element */\n"
      "template <class V> KILN_MEMBER V kiln_vload(const typename V::elem* p) {\n"
      "  if (((uintptr_t)p & (sizeof(V) - 1)) == 0) return *(const V*)p;\n"
      "  V r;\n  for (int i = 0; i < int(sizeof(V) / sizeof(*p)); ++i) r.v[i] = p[i];\n  return r;\n}\n"
      "template <class V> KILN_MEMBER void kiln_vstore(typename V::elem* p, V v) {\n"
      "  if (((uintptr_t)p & (sizeof(V) - 1)) == 0) {\n    *(V*)p = v;\n    return;\n  }\n"
      "  for (int i = 0; i < int(sizeof(V) / sizeof(*p)); ++i) p[i] = v.v[i];\n}\n"
      "#endif\n";
  std::string b = std::to_string(bits), n = std::to_string(lanes), shape = b + "x" + n;
  s += "#ifndef KILN_V" + shape + "\n#define KILN_V" + shape + "\n";
  std::string i = "kiln_vi" + shape;
  std::string it = "int" + b + "_t", ut = "uint" + b + "_t", ft = bits == 32 ? "float" : "double";
  for (auto [name, t] : {std::pair{i, it}, {"kiln_vu" + shape, ut}, {"kiln_vf" + shape, ft}}) {
    std::string sfx = name.substr(5);
    s += "typedef kiln_vec<" + t + ", " + n + "> " + name + ";\n";
    s += "KILN_MEMBER " + name + " kiln_load_" + sfx + "(const " + t + "* p) { return kiln_vload<" + name + ">(p); }\n";
    s += "KILN_MEMBER void kiln_store_" + sfx + "(" + t + "* p, " + name + " v) { kiln_vstore(p, v); }\n";
    s += "KILN_MEMBER " + name + " kiln_splat_" + sfx + "(" + t + " x) {\n  " + name + " r;\n  for (int i = 0; i < " +
         n + "; ++i) r.v[i] = x;\n  return r;\n}\n";
    s += "KILN_MEMBER " + name + " kiln_select_" + sfx + "(" + i + " m, " + name + " a, " + name + " b) {\n  " + name +
         " r;\n  for (int i = 0; i < " + n + "; ++i) r.v[i] = m.v[i] ? a.v[i] : b.v[i];\n  return r;\n}\n";
    std::string pick = t == ft ? "a.v[i] > b.v[i] || a.v[i] != a.v[i]" : "a.v[i] > b.v[i]";  // NaN propagates
    s += "KILN_MEMBER " + name + " kiln_max_" + sfx + "(" + name + " a, " + name + " b) {\n  " + name +
         " r;\n  for (int i = 0; i < " + n + "; ++i) r.v[i] = (" + pick + ") ? a.v[i] : b.v[i];\n  return r;\n}\n";
  }
  return s + "#endif\n";
}

std::string f16_typedef() {
  // _Float16 is an extension of ISO C (GCC and Clang warn under -Wpedantic); __extension__ says it
  // is meant, in a file that may be compiled with -Wpedantic -Werror. Only where a kernel uses it:
  // a compiler without _Float16 (GCC for ARMv7 without -mfp16-format) then still builds the others
  return "#ifndef KILN_F16\n#define KILN_F16\n__extension__ typedef _Float16 kiln_f16;\n#endif\n";
}

std::string cuda_mma_name(std::string_view shape) {
  std::string n = "kiln_mma_" + std::string(shape);
  std::replace(n.begin(), n.end(), '.', '_');
  return n;
}

std::string cuda_mma_helper(std::string_view shape) {
  if (shape != "m16n8k16.f16" && shape != "m16n8k16.bf16")
    throw InternalError("render CUDA: no tensor core product " + std::string(shape));
  const std::string ty = shape.ends_with(".bf16") ? "bf16" : "f16", name = cuda_mma_name(shape);
  const std::string guard = "KILN_MMA_M16N8K16_" + std::string(ty == "f16" ? "F16" : "BF16");
  const std::string pack = "kiln_pack_" + ty + "x2";
  std::string s = "#ifndef " + guard + "\n#define " + guard + "\n";
  s += "/* one warp's D = A * B + C on the tensor cores (mma.sync.m16n8k16, sm_80 and newer), each thread's\n"
       "   fragments in PTX's layout: A's 8 and B's 4 " +
       ty +
       " values (as floats), C's and D's 4 floats. A host build of the kernels\n"
       "   (no __CUDA_ARCH__: a test's, without a GPU) computes it in kiln_mma_on_host instead */\n"
       "#ifndef __CUDA_ARCH__\n"
       "extern \"C\" void kiln_mma_on_host(const float* a, const float* b, const float* c, float* d);\n"
       "#endif\n"
       "KILN_INLINE uint32_t " +
       pack + "(float lo, float hi) {\n  return (uint32_t)kiln_f32_to_" + ty + "(lo) | ((uint32_t)kiln_f32_to_" + ty +
       "(hi) << 16);\n}\n"
       "KILN_INLINE kiln_vf32x4 " +
       name +
       "(kiln_vf32x8 a, kiln_vf32x4 b, kiln_vf32x4 c) {\n"
       "  kiln_vf32x4 d;\n"
       "#ifdef __CUDA_ARCH__\n"
       "  asm(\"mma.sync.aligned.m16n8k16.row.col.f32." +
       ty + "." + ty +
       ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\"\n"
       "      : \"=f\"(d.v[0]), \"=f\"(d.v[1]), \"=f\"(d.v[2]), \"=f\"(d.v[3])\n"
       "      : \"r\"(" +
       pack + "(a.v[0], a.v[1])), \"r\"(" + pack + "(a.v[2], a.v[3])), \"r\"(" + pack + "(a.v[4], a.v[5])),\n" +
       "        \"r\"(" + pack + "(a.v[6], a.v[7])), \"r\"(" + pack + "(b.v[0], b.v[1])), \"r\"(" + pack +
       "(b.v[2], b.v[3])),\n"
       "        \"f\"(c.v[0]), \"f\"(c.v[1]), \"f\"(c.v[2]), \"f\"(c.v[3]));\n"
       "#else\n"
       "  kiln_mma_on_host(a.v, b.v, c.v, d.v);\n"
       "#endif\n"
       "  return d;\n}\n#endif\n";
  return s;
}

}  // namespace c

std::string c_preamble() {
  return "#include <math.h>\n"
         "#include <stdbool.h>\n"
         "#include <stdint.h>\n"
         "#include <string.h>\n"
         // GCC 12 if-converts a gated load (`g ? p[i] : 0.0f`) into a masked load, then turns a masked
         // load under a constant AVX-512 mask into an unmasked vblendps from memory: a read outside the
         // buffer, which a buffer at the end of a page faults on (the tests' guard pages found it)
         "/* GCC 12 with AVX-512 reads outside a buffer for a gated load it if-converts: it may not */\n"
         "#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)\n"
         "#pragma GCC optimize(\"no-tree-loop-if-convert\")\n"
         "#endif\n"
         "/* helpers: clang warns about unused static functions in a .c file, the attribute says they may be */\n"
         "#if defined(__GNUC__)\n#define KILN_INLINE static inline __attribute__((unused))\n"
         "#else\n#define KILN_INLINE static inline\n#endif\n"
         "KILN_INLINE int32_t kiln_floordiv_i32(int32_t a, int32_t b) {\n"
         "  int32_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "KILN_INLINE int64_t kiln_floordiv_i64(int64_t a, int64_t b) {\n"
         "  int64_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "KILN_INLINE int32_t kiln_floormod_i32(int32_t a, int32_t b) {\n"
         "  int32_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "KILN_INLINE int64_t kiln_floormod_i64(int64_t a, int64_t b) {\n"
         "  int64_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "/* bfloat16: stored as its 16 bits, computed in float and rounded (to nearest even) after every op */\n"
         "KILN_INLINE float kiln_bf16_to_f32(uint16_t b) {\n"
         "  uint32_t u = (uint32_t)b << 16;\n  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n"
         "KILN_INLINE uint16_t kiln_f32_to_bf16(float f) {\n"
         "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);\n"
         "  u += 0x7fffu + ((u >> 16) & 1u);\n  return (uint16_t)(u >> 16);\n}\n"
         "KILN_INLINE float kiln_bf16_round(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }\n"
         "/* max that propagates NaN, like the IR's MAX */\n"
         "KILN_INLINE float kiln_maxf(float a, float b) { return (a > b || a != a) ? a : b; }\n"
         "KILN_INLINE double kiln_maxd(double a, double b) { return (a > b || a != a) ? a : b; }\n";
}

std::string cuda_preamble() {
  // C's helpers as device functions, the half conversions of cuda_fp16.h, and no GCC pragma (nvcc's
  // device compiler is not GCC)
  std::string c = c_preamble();
  const std::string pragma_from = "/* GCC 12 with AVX-512", helpers = "/* helpers:";
  c.erase(c.find(pragma_from), c.find(helpers) - c.find(pragma_from));
  const std::string inline_from = c.substr(c.find(helpers), c.find("KILN_INLINE int32_t") - c.find(helpers));
  c.replace(c.find(helpers), inline_from.size(), "#define KILN_INLINE static __device__ __forceinline__\n");
  return "/* CUDA C++ for nvcc */\n#include <cuda_fp16.h>\n" + c +
         "/* float16: stored as its 16 bits, computed in float and rounded (to nearest even) after every op */\n"
         "KILN_INLINE float kiln_f16_to_f32(uint16_t b) { return __half2float(__ushort_as_half(b)); }\n"
         "KILN_INLINE uint16_t kiln_f32_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }\n"
         "KILN_INLINE float kiln_f16_round(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }\n";
}

std::string opencl_preamble() {
  return "/* OpenCL C 1.2; doubles where the device has them */\n"
         "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
         "int kiln_floordiv_i32(int a, int b) {\n  int q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < "
         "0)));\n}\n"
         "long kiln_floordiv_i64(long a, long b) {\n"
         "  long q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "int kiln_floormod_i32(int a, int b) {\n  int r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * "
         "b;\n}\n"
         "long kiln_floormod_i64(long a, long b) {\n"
         "  long r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "/* bfloat16: stored as its 16 bits, computed in float and rounded (to nearest even) after every op */\n"
         "float kiln_bf16_to_f32(ushort b) { return as_float((uint)b << 16); }\n"
         "ushort kiln_f32_to_bf16(float f) {\n"
         "  uint u = as_uint(f);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);\n"
         "  u += 0x7fffu + ((u >> 16) & 1u);\n  return (ushort)(u >> 16);\n}\n"
         "float kiln_bf16_round(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }\n"
         "/* float16: the same, through the core vload_half and vstore_half (half arithmetic is an extension) */\n"
         "float kiln_f16_to_f32(ushort b) { return vload_half(0, (const half*)&b); }\n"
         "ushort kiln_f32_to_f16(float f) {\n  ushort b;\n  vstore_half_rte(f, 0, (half*)&b);\n  return b;\n}\n"
         "float kiln_f16_round(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }\n"
         "/* max that propagates NaN, like the IR's MAX */\n"
         "float kiln_maxf(float a, float b) { return (a > b || a != a) ? a : b; }\n"
         "#ifdef cl_khr_fp64\ndouble kiln_maxd(double a, double b) { return (a > b || a != a) ? a : b; }\n#endif\n";
}

}  // namespace kiln::render

// The LLVM renderer's values: ALU ops, casts and bitcasts, bfloat16's rounding, math intrinsics,
// integer ops promoted as C promotes them, floor division.
#include <algorithm>
#include <string>
#include <vector>

#include "generator/render/llvm_internal.h"
#include "generator/render/llvm_types.h"

namespace kiln::render {

using namespace llvm_text;  // NOLINT: the types and literals of the text

namespace llvm_detail {

// ---- bfloat16: its 16 bits <-> float, rounding to nearest even (NaN stays a quiet NaN)
std::string LlvmRenderer::f32_to_bf16_bits32(const std::string& v, int n) {  // the bf16 bits in the low half of an i32
  std::string i32 = vector_of(n, "i32"), b1 = vector_of(n, "i1");
  auto c = [&](int64_t x) { return splat(n, "i32", num(x)); };
  std::string u = let("bitcast " + vector_of(n, "float") + " " + v + " to " + i32);
  std::string a = let("and " + i32 + " " + u + ", " + c(0x7fffffff));
  std::string nan = let("icmp ugt " + i32 + " " + a + ", " + c(0x7f800000));
  std::string hi = let("lshr " + i32 + " " + u + ", " + c(16));
  std::string quiet = let("or " + i32 + " " + hi + ", " + c(0x40));
  std::string lsb = let("and " + i32 + " " + hi + ", " + c(1));
  std::string r = let("add " + i32 + " " + u + ", " + c(0x7fff));
  r = let("add " + i32 + " " + r + ", " + lsb);
  r = let("lshr " + i32 + " " + r + ", " + c(16));
  return let("select " + b1 + " " + nan + ", " + i32 + " " + quiet + ", " + i32 + " " + r);
}
std::string LlvmRenderer::bits32_to_f32(const std::string& bits, int n) {
  std::string i32 = vector_of(n, "i32");
  std::string s = let("shl " + i32 + " " + bits + ", " + splat(n, "i32", "16"));
  return let("bitcast " + i32 + " " + s + " to " + vector_of(n, "float"));
}
std::string LlvmRenderer::f32_to_bf16(const std::string& v, int n) {
  return let("trunc " + vector_of(n, "i32") + " " + f32_to_bf16_bits32(v, n) + " to " + vector_of(n, "i16"));
}
std::string LlvmRenderer::bf16_to_f32(const std::string& bits16, int n) {
  return bits32_to_f32(let("zext " + vector_of(n, "i16") + " " + bits16 + " to " + vector_of(n, "i32")), n);
}
std::string LlvmRenderer::bf16_round(const std::string& v, int n) { return bits32_to_f32(f32_to_bf16_bits32(v, n), n); }

// ---- values

// integer ops whose result range analysis cannot bound inside the dtype wrap (as the C's do)
bool LlvmRenderer::may_overflow(const UOp* u) {
  if (!is_int(u->dtype)) return false;
  if (bitsize(u->dtype) < 32) return true;  // C computes in int and narrows: wraps
  if (is_unsigned(u->dtype)) return true;   // unsigned arithmetic wraps in C
  return u->vmin().i == int_min(u->dtype) || u->vmax().i == int_max(u->dtype);
}

// narrow integers shift and divide as C does: promoted to int, the result narrowed
std::string LlvmRenderer::promoted(const UOp* u, const std::string& op) {
  DType d = u->dtype;
  int n = d.count;
  std::string t = ty(d);
  std::string a = operand(u->src(0), n), b = operand(u->src(1), n);
  if (bitsize(d) >= 32) return let(op + " " + t + " " + a + ", " + b);
  std::string w = vector_of(n, "i32"), ext = is_unsigned(d) ? "zext " : "sext ";
  std::string wa = let(ext + t + " " + a + " to " + w), wb = let(ext + t + " " + b + " to " + w);
  return let("trunc " + w + " " + let(op + " " + w + " " + wa + ", " + wb) + " to " + t);
}

// floor division and modulo (index math): C's quotient or remainder, corrected toward -inf
std::string LlvmRenderer::floor_divmod(const UOp* u, bool mod) {
  DType d = u->dtype;
  int n = d.count;
  std::string t = ty(d), b1 = vector_of(n, "i1"), z = splat(n, std::string(scalar_type(d)), "0");
  std::string a = operand(u->src(0), n), b = operand(u->src(1), n);
  if (is_unsigned(d)) return let(std::string(mod ? "urem " : "udiv ") + t + " " + a + ", " + b);
  std::string q = let("sdiv " + t + " " + a + ", " + b), r = let("srem " + t + " " + a + ", " + b);
  std::string nz = let("icmp ne " + t + " " + r + ", " + z);
  std::string an = let("icmp slt " + t + " " + a + ", " + z), bn = let("icmp slt " + t + " " + b + ", " + z);
  std::string fix = let("and " + b1 + " " + nz + ", " + let("xor " + b1 + " " + an + ", " + bn));
  if (mod)
    return let("add " + t + " " + r + ", " + let("select " + b1 + " " + fix + ", " + t + " " + b + ", " + t + " " + z));
  return let("sub " + t + " " + q + ", " + let("zext " + b1 + " " + fix + " to " + t));
}

// a libm function through its intrinsic; half computes in float, as the C's (_Float16)expf((float)x)
std::string LlvmRenderer::math(const UOp* u, const std::string& name) {
  DType d = u->dtype;
  int n = d.count;
  bool half = d.scalar == Scalar::Float16;
  DType cd = half ? DType(dtypes::float32).vec(n) : d;
  std::vector<std::string> args, types;
  for (const UOp* s : u->src()) {
    std::string v = operand(s, n);
    if (half) v = let("fpext " + ty(d) + " " + v + " to " + ty(cd));
    args.push_back(ty(cd) + " " + v);
    types.push_back(ty(cd));
  }
  std::string r = call(ty(cd), "llvm." + name + "." + suffix(cd), args, types);
  if (half) r = let("fptrunc " + ty(cd) + " " + r + " to " + ty(d));
  return r;
}

std::string LlvmRenderer::cast(const UOp* u) {
  DType d = u->dtype, f = u->src(0)->dtype;
  int n = d.count;
  std::string x = operand(u->src(0), n), ft = ty(f.vec(n)), dt = ty(d);
  if (is_bool(d)) {
    if (is_bool(f)) return x;
    if (is_float(f)) return let("fcmp une " + ft + " " + x + ", " + zero_of(f.vec(n)));
    return let("icmp ne " + ft + " " + x + ", " + zero_of(f.vec(n)));
  }
  std::string r;
  if (is_float(d)) {
    // bfloat16 is a float: the conversion is to float, then rounded (as the C's kiln_bf16_round)
    DType via = d.scalar == Scalar::BFloat16 ? DType(dtypes::float32).vec(n) : d;
    std::string vt = ty(via);
    if (is_bool(f) || is_unsigned(f)) {
      r = let("uitofp " + ft + " " + x + " to " + vt);
    } else if (is_int(f)) {
      r = let("sitofp " + ft + " " + x + " to " + vt);
    } else {
      int fb = bitsize(f.scalar == Scalar::BFloat16 ? dtypes::float32 : f), tb = bitsize(via);
      r = fb == tb ? x : let(std::string(fb < tb ? "fpext " : "fptrunc ") + ft + " " + x + " to " + vt);
    }
    return d.scalar == Scalar::BFloat16 ? bf16_round(r, n) : r;
  }
  // to an integer
  if (is_float(f)) return let(std::string(is_unsigned(d) ? "fptoui " : "fptosi ") + ft + " " + x + " to " + dt);
  int fb = is_bool(f) ? 1 : bitsize(f), tb = bitsize(d);
  if (fb == tb) return x;
  if (fb > tb) return let("trunc " + ft + " " + x + " to " + dt);
  return let(std::string(is_bool(f) || is_unsigned(f) ? "zext " : "sext ") + ft + " " + x + " to " + dt);
}

std::string LlvmRenderer::bitcast(const UOp* u) {
  DType d = u->dtype, f = u->src(0)->dtype;
  std::string x = ex(u->src(0));
  std::string ft = ty(f);
  if (f.scalar == Scalar::BFloat16) x = f32_to_bf16(x, f.count), ft = mem_ty(f);
  std::string dt = d.scalar == Scalar::BFloat16 ? mem_ty(d) : ty(d);
  std::string r = ft == dt ? x : let("bitcast " + ft + " " + x + " to " + dt);
  if (d.scalar == Scalar::BFloat16) r = bf16_to_f32(r, d.count);
  return r;
}

std::string LlvmRenderer::alu(const UOp* u) {
  DType d = u->dtype;
  int n = d.count;
  std::string t = ty(d);
  bool flt = is_float(d);
  auto a = [&](size_t i) { return operand(u->src(i), std::max<int>(n, u->src(i)->dtype.count)); };
  auto bin = [&](const std::string& op) { return let(op + " " + t + " " + a(0) + ", " + a(1)); };
  std::string nsw = may_overflow(u) ? "" : " nsw";
  switch (u->op) {
    case Op::ADD:
      return bin(flt ? "fadd contract" : "add" + nsw);
    case Op::SUB:
      return bin(flt ? "fsub contract" : "sub" + nsw);
    case Op::MUL:
      return bin(flt ? "fmul contract" : "mul" + nsw);
    case Op::NEG:
      if (flt) return let("fneg contract " + t + " " + a(0));
      return let("sub" + nsw + " " + t + " " + zero_of(d) + ", " + a(0));
    case Op::FDIV:
      return bin("fdiv");
    case Op::RECIPROCAL:
      return let("fdiv " + t + " " + splat(n, scalar_type(d), float_literal(1.0, d)) + ", " + a(0));
    case Op::CDIV:
      return promoted(u, is_unsigned(d) ? "udiv" : "sdiv");
    case Op::CMOD:
      return promoted(u, is_unsigned(d) ? "urem" : "srem");
    case Op::FLOORDIV:
      return floor_divmod(u, false);
    case Op::FLOORMOD:
      return floor_divmod(u, true);
    case Op::AND:
      return bin("and");
    case Op::OR:
      return bin("or");
    case Op::XOR:
      return bin("xor");
    case Op::SHL:
      return promoted(u, "shl");
    case Op::SHR:
      return promoted(u, is_unsigned(d) ? "lshr" : "ashr");
    case Op::MAX: {
      if (!flt) {
        std::string fn = std::string(is_unsigned(d) || is_bool(d) ? "llvm.umax." : "llvm.smax.") + suffix(d);
        return call(t, fn, {t + " " + a(0), t + " " + a(1)}, {t, t});
      }
      // (a > b || a != a) ? a : b: NaN propagates, and max(-0, +0) is the second, as kiln_maxf
      std::string x = a(0), y = a(1), b1 = vector_of(n, "i1");
      std::string gt = let("fcmp ogt " + t + " " + x + ", " + y), nan = let("fcmp uno " + t + " " + x + ", " + x);
      return let("select " + b1 + " " + let("or " + b1 + " " + gt + ", " + nan) + ", " + t + " " + x + ", " + t + " " +
                 y);
    }
    case Op::CMPLT:
    case Op::CMPNE:
    case Op::CMPEQ: {
      DType s = u->src(0)->dtype.count >= u->src(1)->dtype.count ? u->src(0)->dtype : u->src(1)->dtype;
      std::string st = ty(s.vec(n));
      std::string op;
      if (is_float(s))
        op = u->op == Op::CMPLT ? "fcmp olt " : u->op == Op::CMPNE ? "fcmp une " : "fcmp oeq ";
      else if (u->op == Op::CMPLT)
        op = is_unsigned(s) || is_bool(s) ? "icmp ult " : "icmp slt ";
      else
        op = u->op == Op::CMPNE ? "icmp ne " : "icmp eq ";
      return let(op + st + " " + a(0) + ", " + a(1));
    }
    case Op::WHERE: {
      const UOp* c = u->src(0);
      std::string cond = c->dtype.count == 1 ? ex(c) : operand(c, n);
      return let("select " + ty(c->dtype) + " " + cond + ", " + t + " " + a(1) + ", " + t + " " + a(2));
    }
    case Op::EXP2:
      return math(u, "exp2");
    case Op::LOG2:
      return math(u, "log2");
    case Op::SIN:
      return math(u, "sin");
    case Op::SQRT:
      return math(u, "sqrt");
    case Op::POW:
      return math(u, "pow");
    case Op::TRUNC:
      if (flt) return math(u, "trunc");
      return a(0);
    default:
      throw fail("ALU op " + std::string(op_name(u->op)) + " (decompose it first)");
  }
}

}  // namespace llvm_detail

}  // namespace kiln::render

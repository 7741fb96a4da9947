// The C renderer's operator table: one spelling per ALU op, scalar and lanewise on GNU C vectors
// (whose operators are C's, lane by lane; what C has no operator for is a helper of the preamble
// or of the vector type).
#include "generator/render/c_internal.h"

namespace kiln::render::c {

namespace {

// the C operator of a binary op, spaced (" + "), or empty
std::string_view infix(Op op) {
  switch (op) {
    case Op::ADD:
      return " + ";
    case Op::SUB:
      return " - ";
    case Op::MUL:
      return " * ";
    case Op::FDIV:
    case Op::CDIV:
      return " / ";
    case Op::CMOD:
      return " % ";
    case Op::AND:
      return " & ";
    case Op::OR:
      return " | ";
    case Op::XOR:
      return " ^ ";
    case Op::SHL:
      return " << ";
    case Op::SHR:
      return " >> ";
    case Op::CMPLT:
      return " < ";
    case Op::CMPNE:
      return " != ";
    case Op::CMPEQ:
      return " == ";
    default:
      return {};
  }
}

}  // namespace

void alu(std::string& e, const UOp* u, std::span<const std::string_view> x, const Spelling& t, bool wraps) {
  DType d = u->dtype;
  bool flt = is_float(d);
  std::string_view f = d.scalar == Scalar::Float64 ? "" : "f";
  bool cl = t.dialect == Dialect::OpenCL;  // OpenCL's math builtins are overloaded on every float type
  auto fn = [&](std::string_view name) {
    if (t.vec) throw InternalError("render C: " + std::string(op_name(u->op)) + " on vectors");
    if (cl) return cat(e, name, '(', x[0], ')');
    if (d == dtypes::float16 && t.dialect == Dialect::C) return cat(e, "(kiln_f16)", name, "f((float)", x[0], ')');
    cat(e, name, f, '(', x[0], ')');
  };
  auto binary = [&](std::string_view op) { cat(e, x[0], op, x[1]); };
  // integer math that may overflow goes through the unsigned type (C's unsigned arithmetic wraps)
  auto wrap = [&](std::string_view op) {
    if (!wraps) return binary(op);
    if (t.vec && t.dialect != Dialect::C) {  // a GPU's vectors cast to no other type: through the bits
      bits_as(e, t.dialect, t.type);
      bits_as(e, t.dialect, t.utype);
      cat(e, x[0], ')', op);
      bits_as(e, t.dialect, t.utype);
      return cat(e, x[1], "))");
    }
    cat(e, '(', t.type, ")((", t.utype, ')', x[0], op, '(', t.utype, ')', x[1], ')');
  };
  // ints narrower than int are computed in int: the result is cast back (vectors hold 4 or 8 bytes)
  bool narrow = !t.vec && is_int(d) && bitsize(d) < 32;
  auto narrowed = [&](auto body) {
    if (narrow) cat(e, '(', t.type, ")(");
    body();
    if (narrow) e += ')';
  };
  switch (u->op) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
      return narrowed([&] { wrap(infix(u->op)); });
    case Op::NEG:
      if (!flt && wraps && t.vec && t.dialect != Dialect::C) {
        bits_as(e, t.dialect, t.type);
        e += '-';
        bits_as(e, t.dialect, t.utype);
        return cat(e, x[0], "))");
      }
      if (!flt && wraps && t.vec) return cat(e, '(', t.type, ")(-(", t.utype, ')', x[0], ')');
      if (!flt && wraps) return cat(e, '(', t.type, ")(0u - (", t.utype, ')', x[0], ')');
      return narrowed([&] { cat(e, '-', x[0]); });
    case Op::FDIV:
    case Op::CMPLT:
    case Op::CMPNE:
    case Op::CMPEQ:
      return binary(infix(u->op));
    case Op::CDIV:
    case Op::CMOD:
    case Op::AND:
    case Op::OR:
    case Op::XOR:
    case Op::SHR:
      return narrowed([&] { binary(infix(u->op)); });
    case Op::SHL:
      if (wraps && t.vec) return wrap(" << ");
      if (wraps) return cat(e, '(', t.type, ")((", t.utype, ')', x[0], " << ", x[1], ')');
      return narrowed([&] { binary(" << "); });
    case Op::FLOORDIV:
    case Op::FLOORMOD:
      if (t.vec) break;
      return cat(e, u->op == Op::FLOORDIV ? "kiln_floordiv_" : "kiln_floormod_", bitsize(d) == 64 ? "i64" : "i32", '(',
                 x[0], ", ", x[1], ')');
    case Op::MAX:
      if (t.vec) return cat(e, "kiln_max_", t.sfx, '(', x[0], ", ", x[1], ')');
      if (flt) return cat(e, "kiln_max", d == dtypes::float64 ? 'd' : 'f', '(', x[0], ", ", x[1], ')');
      return cat(e, x[0], " > ", x[1], " ? ", x[0], " : ", x[1]);
    case Op::WHERE:
      if (t.vec) return cat(e, "kiln_select_", t.sfx, '(', x[0], ", ", x[1], ", ", x[2], ')');
      return cat(e, x[0], " ? ", x[1], " : ", x[2]);
    case Op::EXP2:
      return fn("exp2");
    case Op::LOG2:
      return fn("log2");
    case Op::SIN:
      return fn("sin");
    case Op::SQRT:
      return fn("sqrt");
    case Op::TRUNC:
      if (flt) return fn("trunc");
      return put(e, x[0]);
    case Op::RECIPROCAL:
      if (t.vec) cat(e, "kiln_splat_", t.sfx, '(');
      float_literal(e, 1.0, d.base(), t.dialect);
      if (t.vec) e += ')';
      return cat(e, " / ", x[0]);
    case Op::POW:
      if (t.vec) break;
      if (cl) return cat(e, "pow(", x[0], ", ", x[1], ')');
      if (d == dtypes::float16 && t.dialect == Dialect::C)
        return cat(e, "(kiln_f16)powf((float)", x[0], ", (float)", x[1], ')');
      return cat(e, "pow", f, '(', x[0], ", ", x[1], ')');
    default:
      break;
  }
  throw InternalError("render C: ALU op " + std::string(op_name(u->op)) + (t.vec ? " on vectors" : "") +
                      " (decompose it first)");
}

}  // namespace kiln::render::c

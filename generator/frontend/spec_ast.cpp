#include "generator/frontend/spec_ast.h"

namespace kiln::frontend {

const char* spelling(BinOp op) {
  switch (op) {
    case BinOp::Add:
      return "+";
    case BinOp::Sub:
      return "-";
    case BinOp::Mul:
      return "*";
    case BinOp::Div:
      return "/";
    case BinOp::Mod:
      return "%";
    case BinOp::MatMul:
      return "@";
    case BinOp::Pow:
      return "**";
    case BinOp::Lt:
      return "<";
    case BinOp::Le:
      return "<=";
    case BinOp::Gt:
      return ">";
    case BinOp::Ge:
      return ">=";
    case BinOp::Eq:
      return "==";
    case BinOp::Ne:
      return "!=";
    case BinOp::And:
      return "&";
    case BinOp::Or:
      return "|";
    case BinOp::Xor:
      return "^";
    case BinOp::Shl:
      return "<<";
    case BinOp::Shr:
      return ">>";
  }
  return "?";
}

static void append_args(std::string& out, const Expr& e) {
  for (const ExprPtr& a : e.operands) out += " " + (a ? to_string(*a) : std::string("_"));
  for (const Kwarg& k : e.kwargs) out += " " + k.name + "=" + to_string(*k.value);
}

std::string to_string(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Number:
      return e.is_float ? e.name : std::to_string(e.int_value);
    case ExprKind::Name:
      return e.name;
    case ExprKind::Bool:
      return e.bool_value ? "true" : "false";
    case ExprKind::String:
      return "\"" + e.name + "\"";
    case ExprKind::Unary:
      return std::string(e.name == "~" ? "(invert " : "(neg ") + to_string(*e.operands[0]) + ")";
    case ExprKind::Binary:
      return std::string("(") + spelling(e.op) + " " + to_string(*e.operands[0]) + " " + to_string(*e.operands[1]) +
             ")";
    case ExprKind::Call: {
      std::string out = "(call " + e.name;
      append_args(out, e);
      return out + ")";
    }
    case ExprKind::Method: {
      std::string out = "(method " + e.name + " " + to_string(*e.receiver);
      append_args(out, e);
      return out + ")";
    }
    case ExprKind::Tuple: {
      std::string out = "(tuple";
      append_args(out, e);
      return out + ")";
    }
    case ExprKind::Index: {
      std::string out = "(index " + to_string(*e.receiver);
      append_args(out, e);
      return out + ")";
    }
    case ExprKind::Slice: {
      std::string out = "(slice";
      append_args(out, e);
      return out + ")";
    }
  }
  return "?";
}

static std::string to_string(const Param& p) {
  std::string out = "(" + p.name + " " + p.dtype + " [";
  for (size_t i = 0; i < p.shape.size(); ++i) {
    if (i) out += " ";
    out += p.shape[i].is_literal ? std::to_string(p.shape[i].size) : p.shape[i].dim;
  }
  return out + "])";
}

std::string to_string(const Spec& s) {
  std::string out;
  for (const Dim& d : s.dims) {
    out += "(dim " + d.name + " " + std::to_string(d.min) + " " + std::to_string(d.max);
    if (!d.specializations.empty()) {
      out += " (specialize";
      for (const Specialization& sp : d.specializations)
        out += std::string(" ") + (sp.multiple ? "%" : "") + std::to_string(sp.value);
      out += ")";
    }
    out += ")\n";
  }
  for (const Kernel& k : s.kernels) {
    out += "(kernel " + k.name + "\n  (in";
    for (const Param& p : k.params) out += " " + to_string(p);
    out += ")\n  (out";
    for (const Param& p : k.outputs) out += " " + to_string(p);
    out += ")";
    for (const Stmt& st : k.body) out += "\n  (= " + st.target + " " + to_string(*st.value) + ")";
    out += ")\n";
  }
  return out;
}

}  // namespace kiln::frontend

#include "generator/frontend/spec_ast.h"

#include <algorithm>
#include <utility>
#include <vector>

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

// The depth of an expression tree (a leaf is 1), walked with an explicit stack: the tree may be
// as deep as the text is long.
int expr_depth(const Expr& root) {
  int depth = 0;
  std::vector<std::pair<const Expr*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [e, d] = stack.back();
    stack.pop_back();
    depth = std::max(depth, d);
    if (e->receiver) stack.push_back({e->receiver.get(), d + 1});
    for (const ExprPtr& o : e->operands)
      if (o) stack.push_back({o.get(), d + 1});
    for (const Kwarg& k : e->kwargs)
      if (k.value) stack.push_back({k.value.get(), d + 1});
  }
  return depth;
}

// Frees a tree of any depth without recursing (its destructor would recurse on the depth).
void dismantle(ExprPtr e) {
  std::vector<ExprPtr> stack;
  stack.push_back(std::move(e));
  while (!stack.empty()) {
    ExprPtr x = std::move(stack.back());
    stack.pop_back();
    if (x->receiver) stack.push_back(std::move(x->receiver));
    for (ExprPtr& o : x->operands)
      if (o) stack.push_back(std::move(o));
    for (Kwarg& k : x->kwargs)
      if (k.value) stack.push_back(std::move(k.value));
  }
}

}  // namespace kiln::frontend

// The AST of a .kiln spec: a plain tree of owned nodes, each with its source location. The
// parser builds it; checks, the Tensor API bridge and the scheduler read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generator/frontend/source.h"

namespace kiln::frontend {

enum class ExprKind : uint8_t { Number, Name, Bool, String, Unary, Binary, Call, Method, Tuple, Index, Slice };

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Mod, MatMul, Pow, Lt, Le, Gt, Ge, Eq, Ne, And, Or, Xor, Shl, Shr };

// The operator as written in specs: "+", "@", "**", "<=", ...
const char* spelling(BinOp op);

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Kwarg {
  std::string name;
  Loc loc;  // of the name
  ExprPtr value;
};

// One node type with a kind tag keeps walks to a switch; the fields a kind uses are listed.
struct Expr {
  ExprKind kind = ExprKind::Number;
  Loc loc;                  // the literal or name; an operator's own token for Unary and Binary; the '(' or '[' of a
                            // Tuple (`[a, b]` is one too), the '[' of an Index, the first token of a Slice
  std::string name;         // Name, the callee of a Call, the method of a Method; a Number's spelling; a String's
                            // contents; a Unary's operator ("-" or "~")
  bool is_float = false;    // Number
  int64_t int_value = 0;    // Number (int)
  double float_value = 0;   // Number (float)
  bool bool_value = false;  // Bool
  BinOp op = BinOp::Add;    // Binary (Unary is always negation)
  ExprPtr receiver;         // Method, Index (the indexed tensor)
  // Unary: 1, Binary: 2, Call/Method: positional args, Tuple: elements, Index: one per axis (a
  // Slice or an expression), Slice: start, stop, step, each null when absent
  std::vector<ExprPtr> operands;
  std::vector<Kwarg> kwargs;  // Call, Method
};

// One axis of a shape: a dim's name or an integer literal.
struct ShapeItem {
  bool is_literal = false;
  std::string dim;   // when !is_literal
  int64_t size = 0;  // when is_literal
  Loc loc;
};

struct Param {
  std::string name;
  Loc loc;
  std::string dtype;  // as written; spec_check validates it
  Loc dtype_loc;
  std::vector<ShapeItem> shape;  // empty: a scalar
};

struct Specialization {
  bool multiple = false;  // `%k`: dims divisible by k; otherwise the exact value
  int64_t value = 0;
  Loc loc;
};

struct Dim {
  std::string name;
  Loc loc;
  int64_t min = 0, max = 0;
  Loc min_loc, max_loc;
  std::vector<Specialization> specializations;
};

struct Stmt {
  std::string target;
  Loc loc;  // of the target
  ExprPtr value;
};

struct Kernel {
  std::string name;
  Loc loc;
  std::vector<Param> params;
  std::vector<Param> outputs;
  std::vector<Stmt> body;
};

struct Spec {
  std::vector<Dim> dims;
  std::vector<Kernel> kernels;
};

// Compact s-expressions for golden tests and --dump: `(dim N 1 4096 (specialize 1 %16))`,
// `(kernel gemm (in (A f32 [M K]) ...) (out ...) (= C (@ A B)))`, one item per line.
std::string to_string(const Expr& e);
std::string to_string(const Spec& s);

// The depth of an expression tree (a leaf is 1), and freeing one, both with an explicit stack:
// a tree may be as deep as its text is long, and a recursive walk or destructor would overflow.
int expr_depth(const Expr& root);
void dismantle(ExprPtr e);

}  // namespace kiln::frontend

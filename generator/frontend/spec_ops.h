// The spec language's op table and argument values, shared by the lowerer (spec_lower.cpp) and
// the table itself (spec_ops.cpp): what an expression evaluates to, the types an op declares for
// its arguments, and the conversion between them. Private to the frontend.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generator/frontend/tensor.h"

namespace kiln::frontend::spec_ops {

using TDim = kiln::Dim;  // a tensor's dim; frontend::Dim is a dim declaration

// What an expression evaluates to: a tensor, or a literal, dim or dtype an op may take as an argument.
struct Value {
  enum class Kind : uint8_t { Tensor, Int, Float, Bool, Dim, DType, Tuple, String, None } kind = Kind::Int;
  std::optional<Tensor> t;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  const UOp* dim = nullptr;
  DType dtype = dtypes::void_;
  std::vector<Value> items;
  std::string spelling;  // numbers and names as written; a string's contents
};

// Pads: tinygrad's padding, (before, after) pairs per axis or flat (left, right, top, bottom, ...).
// OptInt: an integer, or absent (tinygrad's None) when not given or None. None also leaves an
// OptTensor without a tensor, Ints empty (all axes; a pool's stride: the kernel size) and a
// String empty (div's rounding_mode: none).
enum class Type : uint8_t {
  Tensor,
  OptTensor,
  Tensors,
  Sizes,
  Pairs,
  Pads,
  Int,
  OptInt,
  Ints,
  Float,
  Bool,
  DType,
  String
};

// An argument converted to the type its op declares.
struct Arg {
  std::optional<Tensor> t;  // Tensor, OptTensor (nullopt: none)
  std::vector<Tensor> ts;
  std::vector<TDim> dims;
  std::vector<std::pair<TDim, TDim>> pairs;  // Pairs, Pads
  bool flat = false;                         // Pads written flat: they are in `dims`
  int64_t i = 0;
  std::optional<int64_t> oi;
  std::vector<int64_t> ints;
  double f = 0;
  bool b = false;
  DType dtype = dtypes::void_;
  std::string s;
};

// Every argument by its parameter's name, given or defaulted. Integers stay 64-bit: the Tensor
// API range-checks them as written.
struct Args {
  std::map<std::string_view, Arg> by_name;
  const Arg& operator[](std::string_view name) const { return by_name.at(name); }
  const Tensor& t(std::string_view name) const { return *by_name.at(name).t; }
  int64_t i(std::string_view name) const { return by_name.at(name).i; }
  const std::vector<int64_t>& ints(std::string_view name) const { return by_name.at(name).ints; }
  const Tensor* opt(std::string_view name) const { return by_name.at(name).t ? &*by_name.at(name).t : nullptr; }
};

// A parameter as tinygrad's signature has it: given by position or by name (or `alias`), in this
// order. A variadic one (`reshape(shape, *args)`) takes the rest of the positional arguments as
// separate values or one tuple, never both.
struct Parameter {
  std::string_view name;
  Type type;
  bool required = false;
  bool variadic = false;
  Arg def;
  std::string_view alias = {};
};

struct OpDef {
  std::vector<Parameter> params;  // a method's receiver is the first
  std::function<Tensor(const Args&)> build;
};

// The spec's spelling of a dtype (`f32`, not the IR's name), for diagnostics.
std::string dtype_name(DType d);
// A value as a diagnostic's "got" part: `a tensor f32[M, N]`, `dim 'M'`, `2.5`.
std::string describe(const Value& v);
// Literals become weak 0-d tensors (they adopt the other operand's dtype); dims weakint ones.
std::optional<Tensor> to_tensor(Context& ctx, const Value& v);
// What a diagnostic expects of an argument of type `t`.
const char* type_name(Type t);
// What it expects of one of several separate arguments of a variadic parameter.
const char* item_type_name(Type t);
// `v` as an argument of type `type`; nullopt when it is not one.
std::optional<Arg> convert(Context& ctx, const Value& v, Type type);
// Every op a spec can call, by name: its parameters with their defaults, the Tensor built.
const std::map<std::string_view, OpDef>& op_table();

}  // namespace kiln::frontend::spec_ops

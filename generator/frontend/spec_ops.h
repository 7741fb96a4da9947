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
  enum class Kind : uint8_t { Tensor, Int, Float, Bool, Dim, DType, Tuple } kind = Kind::Int;
  std::optional<Tensor> t;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  const UOp* dim = nullptr;
  DType dtype = dtypes::void_;
  std::vector<Value> items;
  std::string spelling;  // numbers and names as written
};

enum class Type : uint8_t { Tensor, OptTensor, Tensors, Sizes, Pairs, Int, Ints, Float, Bool, DType };

// An argument converted to the type its op declares.
struct Arg {
  std::optional<Tensor> t;  // Tensor, OptTensor (nullopt: none)
  std::vector<Tensor> ts;
  std::vector<TDim> dims;
  std::vector<std::pair<TDim, TDim>> pairs;
  int64_t i = 0;
  std::vector<int64_t> ints;
  double f = 0;
  bool b = false;
  DType dtype = dtypes::void_;
};

struct Args {
  std::vector<Arg> pos;
  std::map<std::string_view, Arg> kw;
  const Tensor& t(size_t i) const { return *pos[i].t; }
  const Arg& operator[](std::string_view name) const { return kw.at(name); }
  int axis(std::string_view name) const { return static_cast<int>(kw.at(name).i); }
  std::vector<int> axes(std::string_view name) const {
    const auto& v = kw.at(name).ints;
    return {v.begin(), v.end()};
  }
  const Tensor* opt(std::string_view name) const { return kw.at(name).t ? &*kw.at(name).t : nullptr; }
};

struct Keyword {
  std::string_view name;
  Type type;
  bool required = false;
  Arg def;
};

struct OpDef {
  std::vector<std::pair<std::string_view, Type>> positional;  // the arity; a method's receiver is the first
  std::vector<Keyword> keywords;
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
// `v` as an argument of type `type`; nullopt when it is not one.
std::optional<Arg> convert(Context& ctx, const Value& v, Type type);
// Every op a spec can call, by name: positional arguments, keywords with their defaults, the Tensor built.
const std::map<std::string_view, OpDef>& op_table();

}  // namespace kiln::frontend::spec_ops

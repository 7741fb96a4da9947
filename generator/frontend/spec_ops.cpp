#include "generator/frontend/spec_ops.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generator/frontend/spec_check.h"

namespace kiln::frontend::spec_ops {

std::string dtype_name(DType d) {
  for (const char* n : {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"})
    if (spec_dtype(n) == d) return n;
  return to_string(d);
}

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Tensor:
      return "a tensor " + dtype_name(v.t->dtype()) + shape_str(v.t->shape());
    case Value::Kind::Int:
    case Value::Kind::Float:
      return v.spelling;
    case Value::Kind::Bool:
      return v.b ? "true" : "false";
    case Value::Kind::Dim:
      return "dim '" + v.spelling + "'";
    case Value::Kind::DType:
      return "dtype " + v.spelling;
    case Value::Kind::Tuple:
      return "a tuple of " + std::to_string(v.items.size()) + " items";
  }
  return "?";
}

std::optional<Tensor> to_tensor(Context& ctx, const Value& v) {
  switch (v.kind) {
    case Value::Kind::Tensor:
      return v.t;
    case Value::Kind::Int:
      return Tensor(&ctx, ctx.cint(v.i));
    case Value::Kind::Float:
      return Tensor(&ctx, ctx.cfloat(v.f));
    case Value::Kind::Bool:
      return Tensor(&ctx, ctx.cbool(v.b));
    case Value::Kind::Dim:
      return Tensor(&ctx, v.dim);
    case Value::Kind::DType:
    case Value::Kind::Tuple:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// A size: an integer, a dim, or a weakint expression of them (`M * 2`).
std::optional<TDim> to_dim(const Value& v) {
  if (v.kind == Value::Kind::Int) return TDim(v.i);
  if (v.kind == Value::Kind::Dim) return TDim(v.dim);
  if (v.kind == Value::Kind::Tensor && v.t->ndim() == 0 && v.t->dtype() == dtypes::weakint) return TDim(v.t->uop());
  return std::nullopt;
}

}  // namespace

const char* type_name(Type t) {
  switch (t) {
    case Type::Tensor:
    case Type::OptTensor:
      return "a tensor or a number";
    case Type::Tensors:
      return "a tuple of tensors";
    case Type::Sizes:
      return "a tuple of sizes";
    case Type::Pairs:
      return "a tuple of (before, after) pairs";
    case Type::Int:
      return "an integer";
    case Type::Ints:
      return "an integer or a tuple of integers";
    case Type::Float:
      return "a number";
    case Type::Bool:
      return "true or false";
    case Type::DType:
      return "a dtype";
  }
  return "?";
}

std::optional<Arg> convert(Context& ctx, const Value& v, Type type) {
  Arg a;
  auto tuple_items = [&]() -> const std::vector<Value>& {
    static const std::vector<Value> none;
    return v.kind == Value::Kind::Tuple ? v.items : none;
  };
  switch (type) {
    case Type::Tensor:
    case Type::OptTensor:
      if (!(a.t = to_tensor(ctx, v))) return std::nullopt;
      return a;
    case Type::Tensors:
      if (v.kind != Value::Kind::Tuple) return std::nullopt;
      for (const Value& item : v.items) {
        if (item.kind != Value::Kind::Tensor) return std::nullopt;
        a.ts.push_back(*item.t);
      }
      return a;
    case Type::Sizes:
      if (auto d = to_dim(v)) {
        a.dims = {*d};
        return a;
      }
      if (v.kind != Value::Kind::Tuple) return std::nullopt;
      for (const Value& item : tuple_items()) {
        auto d = to_dim(item);
        if (!d) return std::nullopt;
        a.dims.push_back(*d);
      }
      return a;
    case Type::Pairs:
      if (v.kind != Value::Kind::Tuple) return std::nullopt;
      for (const Value& item : v.items) {
        if (item.kind != Value::Kind::Tuple || item.items.size() != 2) return std::nullopt;
        auto before = to_dim(item.items[0]), after = to_dim(item.items[1]);
        if (!before || !after) return std::nullopt;
        a.pairs.emplace_back(*before, *after);
      }
      return a;
    case Type::Int:
      if (v.kind != Value::Kind::Int) return std::nullopt;
      a.i = v.i;
      return a;
    case Type::Ints:
      if (v.kind == Value::Kind::Int) {
        a.ints = {v.i};
        return a;
      }
      if (v.kind != Value::Kind::Tuple) return std::nullopt;
      for (const Value& item : v.items) {
        if (item.kind != Value::Kind::Int) return std::nullopt;
        a.ints.push_back(item.i);
      }
      return a;
    case Type::Float:
      if (v.kind == Value::Kind::Int) {
        a.f = double(v.i);
        return a;
      }
      if (v.kind != Value::Kind::Float) return std::nullopt;
      a.f = v.f;
      return a;
    case Type::Bool:
      if (v.kind != Value::Kind::Bool) return std::nullopt;
      a.b = v.b;
      return a;
    case Type::DType:
      if (v.kind != Value::Kind::DType) return std::nullopt;
      a.dtype = v.dtype;
      return a;
  }
  return std::nullopt;
}

namespace {

Keyword req(std::string_view n, Type t) { return {n, t, true, {}}; }
Keyword kw(std::string_view n, Type t, Arg def) { return {n, t, false, std::move(def)}; }
Keyword kw_int(std::string_view n, int64_t v) {
  Arg a;
  a.i = v;
  return kw(n, Type::Int, a);
}
Keyword kw_ints(std::string_view n, std::vector<int64_t> v = {}) {
  Arg a;
  a.ints = std::move(v);
  return kw(n, Type::Ints, a);
}
Keyword kw_bool(std::string_view n, bool v) {
  Arg a;
  a.b = v;
  return kw(n, Type::Bool, a);
}
Keyword kw_float(std::string_view n, double v) {
  Arg a;
  a.f = v;
  return kw(n, Type::Float, a);
}
Keyword kw_tensor(std::string_view n) { return {n, Type::OptTensor, false, {}}; }

// A pair from an int or a 2-tuple, as conv and pool windows are written.
std::vector<int64_t> pair_of(std::vector<int64_t> v) { return v.size() == 1 ? std::vector{v[0], v[0]} : v; }

}  // namespace

const std::map<std::string_view, OpDef>& op_table() {
  using T = Tensor;
  static const auto x = std::pair<std::string_view, Type>{"x", Type::Tensor};
  static const auto y = std::pair<std::string_view, Type>{"y", Type::Tensor};
  static const std::vector<Keyword> reduce_kw = {kw_ints("axis"), kw_bool("keepdim", false)};
  auto unary = [](T (T::*f)() const) { return OpDef{{x}, {}, [f](const Args& a) { return (a.t(0).*f)(); }}; };
  auto binary = [](T (T::*f)(const T&) const) {
    return OpDef{{x, y}, {}, [f](const Args& a) { return (a.t(0).*f)(a.t(1)); }};
  };
  auto reduce = [](T (T::*f)(const std::vector<int>&, bool) const) {
    return OpDef{{x}, reduce_kw, [f](const Args& a) { return (a.t(0).*f)(a.axes("axis"), a["keepdim"].b); }};
  };
  static const std::map<std::string_view, OpDef> table = [&] {
    std::map<std::string_view, OpDef> t = {
        {"neg", unary(&T::neg)},
        {"abs", unary(&T::abs)},
        {"exp", unary(&T::exp)},
        {"exp2", unary(&T::exp2)},
        {"log", unary(&T::log)},
        {"log2", unary(&T::log2)},
        {"sqrt", unary(&T::sqrt)},
        {"rsqrt", unary(&T::rsqrt)},
        {"sin", unary(&T::sin)},
        {"cos", unary(&T::cos)},
        {"tanh", unary(&T::tanh)},
        {"sigmoid", unary(&T::sigmoid)},
        {"relu", unary(&T::relu)},
        {"gelu", unary(&T::gelu)},
        {"silu", unary(&T::silu)},
        {"reciprocal", unary(&T::reciprocal)},
        {"trunc", unary(&T::trunc)},
        {"floor", unary(&T::floor)},
        {"ceil", unary(&T::ceil)},
        {"round", unary(&T::round)},
        {"logical_not", unary(&T::logical_not)},
        {"flatten", unary(&T::flatten)},
        {"add", binary(&T::add)},
        {"sub", binary(&T::sub)},
        {"mul", binary(&T::mul)},
        {"div", binary(&T::div)},
        {"idiv", binary(&T::idiv)},
        {"mod", binary(&T::mod)},
        {"pow", binary(&T::pow)},
        {"maximum", binary(&T::maximum)},
        {"minimum", binary(&T::minimum)},
        {"logical_and", binary(&T::logical_and)},
        {"logical_or", binary(&T::logical_or)},
        {"lt", binary(&T::lt)},
        {"le", binary(&T::le)},
        {"gt", binary(&T::gt)},
        {"ge", binary(&T::ge)},
        {"eq", binary(&T::eq)},
        {"ne", binary(&T::ne)},
        {"matmul", binary(&T::matmul)},
        {"sum", reduce(&T::sum)},
        {"prod", reduce(&T::prod)},
        {"max", reduce(&T::max)},
        {"min", reduce(&T::min)},
        {"mean", reduce(&T::mean)},
        {"argmax",
         {{x},
          {req("axis", Type::Int), kw_bool("keepdim", false)},
          [](const Args& a) { return a.t(0).argmax(a.axis("axis"), a["keepdim"].b); }}},
        {"where", {{{"cond", Type::Tensor}, x, y}, {}, [](const Args& a) { return a.t(0).where(a.t(1), a.t(2)); }}},
        {"cast", {{x}, {req("dtype", Type::DType)}, [](const Args& a) { return a.t(0).cast(a["dtype"].dtype); }}},
        {"bitcast", {{x}, {req("dtype", Type::DType)}, [](const Args& a) { return a.t(0).bitcast(a["dtype"].dtype); }}},
        {"softmax", {{x}, {kw_int("axis", -1)}, [](const Args& a) { return a.t(0).softmax(a.axis("axis")); }}},
        {"log_softmax", {{x}, {kw_int("axis", -1)}, [](const Args& a) { return a.t(0).log_softmax(a.axis("axis")); }}},
        {"layernorm",
         {{x},
          {kw_int("axis", -1), kw_float("eps", 1e-5)},
          [](const Args& a) { return a.t(0).layernorm(a.axis("axis"), a["eps"].f); }}},
        {"rmsnorm",
         {{x},
          {kw_int("axis", -1), kw_float("eps", 1e-6)},
          [](const Args& a) { return a.t(0).rmsnorm(a.axis("axis"), a["eps"].f); }}},
        {"reshape", {{x, {"shape", Type::Sizes}}, {}, [](const Args& a) { return a.t(0).reshape(a.pos[1].dims); }}},
        {"expand", {{x, {"shape", Type::Sizes}}, {}, [](const Args& a) { return a.t(0).expand(a.pos[1].dims); }}},
        {"permute",
         {{x, {"order", Type::Ints}},
          {},
          [](const Args& a) {
            const auto& o = a.pos[1].ints;
            return a.t(0).permute(std::vector<int>(o.begin(), o.end()));
          }}},
        {"transpose",
         {{x},
          {kw_int("dim0", -2), kw_int("dim1", -1)},
          [](const Args& a) { return a.t(0).transpose(a.axis("dim0"), a.axis("dim1")); }}},
        {"pad",
         {{x, {"pads", Type::Pairs}},
          {kw_float("value", 0)},
          [](const Args& a) {
            double v = a["value"].f;
            return v == 0 ? a.t(0).pad(a.pos[1].pairs) : a.t(0).pad_value(a.pos[1].pairs, v);
          }}},
        {"shrink", {{x, {"bounds", Type::Pairs}}, {}, [](const Args& a) { return a.t(0).shrink(a.pos[1].pairs); }}},
        {"flip", {{x}, {req("axis", Type::Ints)}, [](const Args& a) { return a.t(0).flip(a.axes("axis")); }}},
        {"unsqueeze", {{x}, {req("axis", Type::Int)}, [](const Args& a) { return a.t(0).unsqueeze(a.axis("axis")); }}},
        {"squeeze", {{x}, {req("axis", Type::Int)}, [](const Args& a) { return a.t(0).squeeze(a.axis("axis")); }}},
        {"tril", {{x}, {kw_int("diagonal", 0)}, [](const Args& a) { return a.t(0).tril(a["diagonal"].i); }}},
        {"cat",
         {{{"tensors", Type::Tensors}},
          {kw_int("axis", 0)},
          [](const Args& a) { return T::cat(a.pos[0].ts, a.axis("axis")); }}},
        {"stack",
         {{{"tensors", Type::Tensors}},
          {kw_int("axis", 0)},
          [](const Args& a) { return T::stack(a.pos[0].ts, a.axis("axis")); }}},
        {"conv2d",
         {{x, {"w", Type::Tensor}},
          {kw_tensor("bias"), kw_ints("stride", {1, 1}), kw_ints("padding", {0, 0}), kw_ints("dilation", {1, 1}),
           kw_int("groups", 1)},
          [](const Args& a) {
            return a.t(0).conv2d(a.t(1), a.opt("bias"), a["groups"].i, pair_of(a["stride"].ints),
                                 pair_of(a["dilation"].ints), pair_of(a["padding"].ints));
          }}},
        {"max_pool2d",
         {{x},
          {kw_ints("kernel_size", {2, 2}), kw_ints("stride"), kw_ints("padding", {0, 0})},
          [](const Args& a) {
            std::vector<int64_t> stride = a["stride"].ints;
            return a.t(0).max_pool2d(pair_of(a["kernel_size"].ints), stride.empty() ? stride : pair_of(stride),
                                     pair_of(a["padding"].ints));
          }}},
        {"avg_pool2d",
         {{x},
          {kw_ints("kernel_size", {2, 2}), kw_ints("stride")},
          [](const Args& a) {
            std::vector<int64_t> stride = a["stride"].ints;
            return a.t(0).avg_pool2d(pair_of(a["kernel_size"].ints), stride.empty() ? stride : pair_of(stride));
          }}},
        {"attention",
         {{{"q", Type::Tensor}, {"k", Type::Tensor}, {"v", Type::Tensor}},
          {kw_tensor("mask"), kw_bool("causal", false)},
          [](const Args& a) {
            return a.t(0).scaled_dot_product_attention(a.t(1), a.t(2), a.opt("mask"), a["causal"].b);
          }}},
    };
    t.emplace("scaled_dot_product_attention", t.at("attention"));  // the Tensor API's name
    return t;
  }();
  return table;
}

}  // namespace kiln::frontend::spec_ops

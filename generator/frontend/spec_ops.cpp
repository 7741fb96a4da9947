#include "generator/frontend/spec_ops.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
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
      return "a tuple of " + std::to_string(v.items.size()) + (v.items.size() == 1 ? " item" : " items");
    case Value::Kind::String:
      return "\"" + v.spelling + "\"";
    case Value::Kind::None:
      return "None";
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
    case Value::Kind::String:
    case Value::Kind::None:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// A size: an integer, a dim, or a weakint expression of them (`M * 2`).
// None in a list of sizes or pairs: tinygrad's "as it is" (reshape and expand keep the size,
// shrink keeps the axis, pad adds nothing). No literal spells this value.
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
bool is_none(const TDim& d) { return !d.u && d.v == kNone; }

std::optional<TDim> to_dim(const Value& v) {
  if (v.kind == Value::Kind::None) return TDim(kNone);
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
    case Type::Pads:
      return "a tuple of (before, after) pairs or of sizes";
    case Type::Int:
    case Type::OptInt:
      return "an integer";
    case Type::Ints:
      return "an integer or a tuple of integers";
    case Type::Float:
      return "a number";
    case Type::Bool:
      return "true or false";
    case Type::DType:
      return "a dtype";
    case Type::String:
      return "a string";
  }
  return "?";
}

const char* item_type_name(Type t) {
  switch (t) {
    case Type::Tensors:
      return "a tensor";
    case Type::Sizes:
      return "a size";
    case Type::Ints:
      return "an integer";
    default:
      return type_name(t);
  }
}

std::optional<Arg> convert(Context& ctx, const Value& v, Type type) {
  Arg a;
  auto tuple_items = [&]() -> const std::vector<Value>& {
    static const std::vector<Value> none;
    return v.kind == Value::Kind::Tuple ? v.items : none;
  };
  if (v.kind == Value::Kind::None) {
    if (type == Type::OptTensor || type == Type::OptInt || type == Type::Ints || type == Type::String) return a;
    return std::nullopt;
  }
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
    case Type::Pads:
      if (v.kind == Value::Kind::Tuple && !v.items.empty() &&
          std::none_of(v.items.begin(), v.items.end(),
                       [](const Value& i) { return i.kind == Value::Kind::Tuple || i.kind == Value::Kind::None; })) {
        a.flat = true;
        for (const Value& item : v.items) {
          auto d = to_dim(item);
          if (!d) return std::nullopt;
          a.dims.push_back(*d);
        }
        return a;
      }
      [[fallthrough]];
    case Type::Pairs:
      if (v.kind != Value::Kind::Tuple) return std::nullopt;
      for (const Value& item : v.items) {
        if (item.kind == Value::Kind::None) {
          a.pairs.emplace_back(kNone, kNone);
          continue;
        }
        if (item.kind != Value::Kind::Tuple || item.items.size() != 2) return std::nullopt;
        auto before = to_dim(item.items[0]), after = to_dim(item.items[1]);
        if ((before && is_none(*before)) || (after && is_none(*after))) return std::nullopt;
        if (!before || !after) return std::nullopt;
        a.pairs.emplace_back(*before, *after);
      }
      return a;
    case Type::Int:
    case Type::OptInt:
      if (v.kind != Value::Kind::Int) return std::nullopt;
      a.i = v.i;
      a.oi = v.i;
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
    case Type::String:
      if (v.kind != Value::Kind::String) return std::nullopt;
      a.s = v.spelling;
      return a;
  }
  return std::nullopt;
}

namespace {

Parameter req(std::string_view n, Type t, std::string_view alias = {}) { return {n, t, true, false, {}, alias}; }
Parameter rest(std::string_view n, Type t) { return {n, t, true, true, {}, {}}; }
Parameter opt(std::string_view n, Type t, Arg def = {}, std::string_view alias = {}) {
  return {n, t, false, false, std::move(def), alias};
}
Parameter opt_int(std::string_view n, int64_t v, std::string_view alias = {}) {
  Arg a;
  a.i = v;
  return opt(n, Type::Int, a, alias);
}
Parameter opt_ints(std::string_view n, std::vector<int64_t> v = {}) {
  Arg a;
  a.ints = std::move(v);
  return opt(n, Type::Ints, a);
}
Parameter opt_bool(std::string_view n, bool v, std::string_view alias = {}) {
  Arg a;
  a.b = v;
  return opt(n, Type::Bool, a, alias);
}
Parameter opt_float(std::string_view n, double v) {
  Arg a;
  a.f = v;
  return opt(n, Type::Float, a);
}
Parameter opt_string(std::string_view n, std::string v) {
  Arg a;
  a.s = std::move(v);
  return opt(n, Type::String, a);
}

// tinygrad's pad: pairs per axis, or flat (left, right, top, bottom, ...) for the last axes.
// Sizes with None resolved: the axis's own size for reshape, -1 (keep) for expand.
std::vector<TDim> sizes_of(const Tensor& x, const std::vector<TDim>& dims, bool reshape) {
  std::vector<TDim> r;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!is_none(dims[i])) {
      r.push_back(dims[i]);
    } else if (!reshape) {
      r.push_back(int64_t(-1));
    } else if (i < x.ndim()) {
      r.push_back(x.shape()[i]);
    } else {
      throw ShapeError("reshape: expected None at one of the " + std::to_string(x.ndim()) + " axes of " +
                       shape_str(x.shape()) + ", got it at " + std::to_string(i));
    }
  }
  return r;
}

// Pairs with None resolved: the whole axis for shrink, no padding for pad.
std::vector<std::pair<TDim, TDim>> pairs_of(const Tensor& x, std::vector<std::pair<TDim, TDim>> p, bool shrink) {
  for (size_t i = 0; i < p.size(); ++i)
    if (is_none(p[i].first))
      p[i] = shrink && i < x.ndim() ? std::pair<TDim, TDim>{int64_t(0), x.shape()[i]}
                                    : std::pair<TDim, TDim>{int64_t(0), int64_t(0)};
  return p;
}

std::vector<std::pair<TDim, TDim>> grouped_pads(const Tensor& x, const Arg& a) {
  if (!a.flat) return pairs_of(x, a.pairs, false);
  size_t m = a.dims.size() / 2;
  if (a.dims.size() % 2 || m > x.ndim())
    throw ShapeError("pad: expected an even number of flat pads, at most " + std::to_string(2 * x.ndim()) +
                     " for shape " + shape_str(x.shape()) + ", got " + std::to_string(a.dims.size()));
  std::vector<std::pair<TDim, TDim>> r(x.ndim() - m, {int64_t(0), int64_t(0)});
  for (size_t j = 0; j < m; ++j) r.push_back({a.dims[2 * (m - 1 - j)], a.dims[2 * (m - 1 - j) + 1]});
  return r;
}

}  // namespace

const std::map<std::string_view, OpDef>& op_table() {
  using T = Tensor;
  static const Parameter x = req("x", Type::Tensor), y = req("y", Type::Tensor);
  static const std::vector<Parameter> reduce_params = {x, opt_ints("axis"), opt_bool("keepdim", false)};
  auto unary = [](T (T::*f)() const) { return OpDef{{x}, [f](const Args& a) { return (a.t("x").*f)(); }}; };
  auto binary = [](T (T::*f)(const T&) const) {
    return OpDef{{x, y}, [f](const Args& a) { return (a.t("x").*f)(a.t("y")); }};
  };
  auto reduce = [](T (T::*f)(const Axes&, bool) const) {
    return OpDef{reduce_params, [f](const Args& a) { return (a.t("x").*f)(a.ints("axis"), a["keepdim"].b); }};
  };
  auto arg_reduce = [](T (T::*f)(std::optional<int64_t>, bool) const) {
    return OpDef{{x, opt("axis", Type::OptInt), opt_bool("keepdim", false)},
                 [f](const Args& a) { return (a.t("x").*f)(a["axis"].oi, a["keepdim"].b); }};
  };
  // one tensor's name for the forms of cat and stack: `cat(a, b)`, `cat((a, b))`, `a.cat(b)`
  auto joined = [](T (*f)(const std::vector<T>&, int64_t)) {
    return OpDef{{rest("tensors", Type::Tensors), opt_int("axis", 0, "dim")},
                 [f](const Args& a) { return f(a["tensors"].ts, a.i("axis")); }};
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
        {"gelu",
         {{x, opt_string("approximate", "tanh")}, [](const Args& a) { return a.t("x").gelu(a["approximate"].s); }}},
        {"erf", unary(&T::erf)},
        {"sign", unary(&T::sign)},
        {"silu", unary(&T::silu)},
        {"reciprocal", unary(&T::reciprocal)},
        {"trunc", unary(&T::trunc)},
        {"floor", unary(&T::floor)},
        {"ceil", unary(&T::ceil)},
        {"round", unary(&T::round)},
        {"logical_not", unary(&T::logical_not)},
        {"bitwise_not", unary(&T::bitwise_not)},
        {"flatten",
         {{x, opt_int("start_dim", 0), opt_int("end_dim", -1)},
          [](const Args& a) { return a.t("x").flatten(a.i("start_dim"), a.i("end_dim")); }}},
        {"add", binary(&T::add)},
        {"sub", binary(&T::sub)},
        {"mul", binary(&T::mul)},
        {"div",
         {{x, y, opt_string("rounding_mode", "")},
          [](const Args& a) { return a.t("x").div(a.t("y"), a["rounding_mode"].s); }}},
        {"idiv", binary(&T::idiv)},
        {"mod", binary(&T::mod)},
        {"pow", binary(&T::pow)},
        {"maximum", binary(&T::maximum)},
        {"minimum", binary(&T::minimum)},
        {"logical_and", binary(&T::logical_and)},
        {"logical_or", binary(&T::logical_or)},
        {"bitwise_and", binary(&T::bitwise_and)},
        {"bitwise_or", binary(&T::bitwise_or)},
        {"bitwise_xor", binary(&T::bitwise_xor)},
        {"lshift", binary(&T::lshift)},
        {"rshift", binary(&T::rshift)},
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
        {"argmax", arg_reduce(&T::argmax)},
        {"argmin", arg_reduce(&T::argmin)},
        {"where",
         {{req("cond", Type::Tensor), x, y}, [](const Args& a) { return a.t("cond").where(a.t("x"), a.t("y")); }}},
        {"cast", {{x, req("dtype", Type::DType)}, [](const Args& a) { return a.t("x").cast(a["dtype"].dtype); }}},
        {"bitcast", {{x, req("dtype", Type::DType)}, [](const Args& a) { return a.t("x").bitcast(a["dtype"].dtype); }}},
        {"softmax", {{x, opt_int("axis", -1)}, [](const Args& a) { return a.t("x").softmax(a.i("axis")); }}},
        {"log_softmax", {{x, opt_int("axis", -1)}, [](const Args& a) { return a.t("x").log_softmax(a.i("axis")); }}},
        {"layernorm",
         {{x, opt_int("axis", -1), opt_float("eps", 1e-5)},
          [](const Args& a) { return a.t("x").layernorm(a.i("axis"), a["eps"].f); }}},
        {"rmsnorm",
         {{x, opt_int("axis", -1), opt_float("eps", 1e-6)},
          [](const Args& a) { return a.t("x").rmsnorm(a.i("axis"), a["eps"].f); }}},
        {"reshape",
         {{x, rest("shape", Type::Sizes)},
          [](const Args& a) { return a.t("x").reshape(sizes_of(a.t("x"), a["shape"].dims, true)); }}},
        {"expand",
         {{x, rest("shape", Type::Sizes)},
          [](const Args& a) { return a.t("x").expand(sizes_of(a.t("x"), a["shape"].dims, false)); }}},
        {"permute", {{x, rest("order", Type::Ints)}, [](const Args& a) { return a.t("x").permute(a.ints("order")); }}},
        {"flip", {{x, rest("axis", Type::Ints)}, [](const Args& a) { return a.t("x").flip(a.ints("axis")); }}},
        {"T", {{x}, [](const Args& a) { return a.t("x").transpose(1, 0); }}},
        {"transpose",
         {{x, opt_int("dim0", 1), opt_int("dim1", 0)},
          [](const Args& a) { return a.t("x").transpose(a.i("dim0"), a.i("dim1")); }}},
        {"pad",
         {{x, req("padding", Type::Pads), opt_string("mode", "constant"), opt_float("value", 0)},
          [](const Args& a) {
            return a.t("x").pad_mode(grouped_pads(a.t("x"), a["padding"]), a["mode"].s, a["value"].f);
          }}},
        {"shrink",
         {{x, req("arg", Type::Pairs)},
          [](const Args& a) { return a.t("x").shrink(pairs_of(a.t("x"), a["arg"].pairs, true)); }}},
        {"unsqueeze",
         {{x, req("axis", Type::Int, "dim")}, [](const Args& a) { return a.t("x").unsqueeze(a.i("axis")); }}},
        {"squeeze",
         {{x, opt("axis", Type::OptInt, {}, "dim")},
          [](const Args& a) {
            const Tensor& t = a.t("x");
            if (a["axis"].oi) return t.squeeze(*a["axis"].oi);
            std::vector<TDim> kept;  // no axis: every axis of size 1 goes
            for (const UOp* d : t.shape())
              if (!dim_is(d, 1)) kept.push_back(d);
            return t.reshape(kept);
          }}},
        {"tril", {{x, opt_int("diagonal", 0)}, [](const Args& a) { return a.t("x").tril(a.i("diagonal")); }}},
        {"cat", joined(&T::cat)},
        {"stack", joined(&T::stack)},
        {"conv2d",
         {{x, req("w", Type::Tensor, "weight"), opt("bias", Type::OptTensor), opt_int("groups", 1),
           opt_ints("stride", {1}), opt_ints("dilation", {1}), opt_ints("padding", {0})},
          [](const Args& a) {
            return a.t("x").conv2d(a.t("w"), a.opt("bias"), a.i("groups"), a.ints("stride"), a.ints("dilation"),
                                   a.ints("padding"));
          }}},
        {"max_pool2d",
         {{x, opt_ints("kernel_size", {2, 2}), opt_ints("stride"), opt_ints("dilation", {1}), opt_ints("padding", {0}),
           opt_bool("ceil_mode", false)},
          [](const Args& a) {
            return a.t("x").max_pool2d(a.ints("kernel_size"), a.ints("stride"), a.ints("padding"), a.ints("dilation"),
                                       a["ceil_mode"].b);
          }}},
        {"avg_pool2d",
         {{x, opt_ints("kernel_size", {2, 2}), opt_ints("stride"), opt_ints("dilation", {1}), opt_ints("padding", {0}),
           opt_bool("ceil_mode", false), opt_bool("count_include_pad", true)},
          [](const Args& a) {
            return a.t("x").avg_pool2d(a.ints("kernel_size"), a.ints("stride"), a.ints("padding"), a.ints("dilation"),
                                       a["ceil_mode"].b, a["count_include_pad"].b);
          }}},
        {"attention",
         {{req("q", Type::Tensor), req("k", Type::Tensor), req("v", Type::Tensor),
           opt("mask", Type::OptTensor, {}, "attn_mask"), opt_bool("causal", false, "is_causal")},
          [](const Args& a) {
            return a.t("q").scaled_dot_product_attention(a.t("k"), a.t("v"), a.opt("mask"), a["causal"].b);
          }}},
    };
    t.emplace("scaled_dot_product_attention", t.at("attention"));  // the Tensor API's name
    return t;
  }();
  return table;
}

}  // namespace kiln::frontend::spec_ops

#include "generator/frontend/spec_lower.h"

#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "generator/frontend/spec_check.h"

namespace kiln::frontend {
namespace {

using TDim = kiln::Dim;  // a tensor's dim; frontend::Dim is a dim declaration

// The first error of a kernel: lowering stops there, so one mistake gives one message.
struct LowerError {
  Diagnostic d;
};

[[noreturn]] void fail(Loc loc, size_t length, std::string message, std::string expected = {}, std::string got = {}) {
  Diagnostic d;
  d.loc = loc;
  d.length = static_cast<int>(std::max<size_t>(1, length));
  d.message = std::move(message);
  d.expected = std::move(expected);
  d.got = std::move(got);
  throw LowerError{std::move(d)};
}

// The columns of a node worth underlining: its name or literal, an operator's spelling.
size_t span_of(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Number:
    case ExprKind::Name:
    case ExprKind::Call:
    case ExprKind::Method:
      return e.name.size();
    case ExprKind::Bool:
      return e.bool_value ? 4 : 5;
    case ExprKind::Binary:
      return std::string_view(spelling(e.op)).size();
    case ExprKind::Unary:
    case ExprKind::Tuple:
      return 1;
  }
  return 1;
}

std::string dtype_name(DType d) {
  for (const char* n : {"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"})
    if (spec_dtype(n) == d) return n;
  return to_string(d);
}

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

// Literals become weak 0-d tensors (they adopt the other operand's dtype); dims weakint ones.
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

// A size: an integer, a dim, or a weakint expression of them (`M * 2`).
std::optional<TDim> to_dim(const Value& v) {
  if (v.kind == Value::Kind::Int) return TDim(v.i);
  if (v.kind == Value::Kind::Dim) return TDim(v.dim);
  if (v.kind == Value::Kind::Tensor && v.t->ndim() == 0 && v.t->dtype() == dtypes::weakint) return TDim(v.t->uop());
  return std::nullopt;
}

enum class Type : uint8_t { Tensor, OptTensor, Tensors, Sizes, Pairs, Int, Ints, Float, Bool, DType };

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

struct OpDef {
  std::vector<std::pair<std::string_view, Type>> positional;  // the arity; a method's receiver is the first
  std::vector<Keyword> keywords;
  std::function<Tensor(const Args&)> build;
};

// A pair from an int or a 2-tuple, as conv and pool windows are written.
std::vector<int64_t> pair_of(std::vector<int64_t> v) { return v.size() == 1 ? std::vector{v[0], v[0]} : v; }

// Every op a spec can call, by name: positional arguments, keywords with their defaults, the Tensor built.
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

class Lowerer {
 public:
  Lowerer(Context& ctx, const std::map<std::string, const UOp*>& dims) : ctx_(ctx), dims_(dims) {}

  LoweredKernel lower(const Kernel& k) {
    LoweredKernel out{k.name, {}, {}, {}, k.loc};
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      Tensor t = Tensor::input(ctx_, p.name, *spec_dtype(p.dtype), declared_shape(p));
      // Tensor::input numbers inputs across the Context; a kernel's own slots count from 0.
      const UOp* param = ctx_.make(Op::PARAM, t.dtype(), {t.uop()->src(0)},
                                   ParamArg{static_cast<int32_t>(i), -1, ctx_.intern(p.name)});
      out.inputs.emplace_back(&ctx_, param);
      names_.insert_or_assign(p.name, out.inputs.back());
    }
    std::map<std::string, const Param*> outputs;
    for (const Param& p : k.outputs) outputs[p.name] = &p;
    for (const Stmt& s : k.body) {
      Value v = eval(*s.value);
      std::optional<Tensor> t = to_tensor(ctx_, v);
      if (!t)
        fail(s.value->loc, span_of(*s.value), "cannot assign to '" + s.target + "'", "a tensor or a number",
             describe(v));
      if (auto it = outputs.find(s.target); it != outputs.end()) check_output(s, *it->second, *t);
      names_.insert_or_assign(s.target, *t);
    }
    for (const Param& p : k.outputs) {
      out.outputs.push_back(names_.at(p.name));
      out.output_names.push_back(p.name);
    }
    return out;
  }

 private:
  std::vector<TDim> declared_shape(const Param& p) {
    std::vector<TDim> dims;
    for (const ShapeItem& item : p.shape) dims.push_back(item.is_literal ? TDim(item.size) : TDim(dims_.at(item.dim)));
    return dims;
  }

  void check_output(const Stmt& s, const Param& p, const Tensor& t) {
    DType want = *spec_dtype(p.dtype);
    Shape shape;
    for (const TDim& d : declared_shape(p)) shape.push_back(simplify_dim(d.get(ctx_)));
    bool same = shape.size() == t.ndim();
    for (size_t i = 0; same && i < shape.size(); ++i) same = simplify_dim(t.shape()[i]) == shape[i];
    if (!same)
      fail(s.loc, s.target.size(), "output '" + s.target + "' has the wrong shape", shape_str(shape),
           shape_str(t.shape()));
    if (t.dtype() != want)
      fail(s.loc, s.target.size(), "output '" + s.target + "' has the wrong dtype", dtype_name(want),
           dtype_name(t.dtype()));
  }

  // Runs a Tensor API call; its ShapeError becomes a diagnostic at `at`.
  template <class F> Value build(const Expr& at, F&& f) {
    try {
      Value v;
      v.kind = Value::Kind::Tensor;
      v.t = f();
      return v;
    } catch (const ShapeError& e) {
      fail(at.loc, span_of(at), e.what());
    }
  }

  Tensor operand(const Expr& op, const Expr& e) {
    Value v = eval(e);
    std::optional<Tensor> t = to_tensor(ctx_, v);
    if (!t)
      fail(e.loc, span_of(e),
           std::string("wrong operand for '") + (op.kind == ExprKind::Unary ? "-" : spelling(op.op)) + "'",
           "a tensor or a number", describe(v));
    return *t;
  }

  Value eval(const Expr& e) {
    Value v;
    v.spelling = e.name;
    switch (e.kind) {
      case ExprKind::Number:
        v.kind = e.is_float ? Value::Kind::Float : Value::Kind::Int;
        v.i = e.int_value;
        v.f = e.float_value;
        return v;
      case ExprKind::Bool:
        v.kind = Value::Kind::Bool;
        v.b = e.bool_value;
        return v;
      case ExprKind::Name:
        if (auto it = names_.find(e.name); it != names_.end()) {
          v.kind = Value::Kind::Tensor;
          v.t = it->second;
        } else if (auto d = dims_.find(e.name); d != dims_.end()) {
          v.kind = Value::Kind::Dim;
          v.dim = d->second;
        } else if (auto dt = spec_dtype(e.name)) {
          v.kind = Value::Kind::DType;
          v.dtype = *dt;
        } else {
          fail(e.loc, e.name.size(), "unknown name '" + e.name + "'");
        }
        return v;
      case ExprKind::Unary: {
        const Expr& x = *e.operands[0];
        if (x.kind == ExprKind::Number) {  // a negative literal stays a literal: `axis=-1`
          v = eval(x);
          v.i = -v.i;
          v.f = -v.f;
          v.spelling = "-" + v.spelling;
          return v;
        }
        Tensor t = operand(e, x);
        return build(e, [&] { return t.neg(); });
      }
      case ExprKind::Binary: {
        Tensor a = operand(e, *e.operands[0]), b = operand(e, *e.operands[1]);
        return build(e, [&] { return binary(e.op, a, b); });
      }
      case ExprKind::Call:
      case ExprKind::Method:
        return call(e);
      case ExprKind::Tuple:
        v.kind = Value::Kind::Tuple;
        for (const ExprPtr& item : e.operands) v.items.push_back(eval(*item));
        return v;
    }
    return v;
  }

  static Tensor binary(BinOp op, const Tensor& a, const Tensor& b) {
    switch (op) {
      case BinOp::Add:
        return a.add(b);
      case BinOp::Sub:
        return a.sub(b);
      case BinOp::Mul:
        return a.mul(b);
      case BinOp::Div:
        return a.div(b);
      case BinOp::Mod:
        return a.mod(b);
      case BinOp::MatMul:
        return a.matmul(b);
      case BinOp::Pow:
        return a.pow(b);
      case BinOp::Lt:
        return a.lt(b);
      case BinOp::Le:
        return a.le(b);
      case BinOp::Gt:
        return a.gt(b);
      case BinOp::Ge:
        return a.ge(b);
      case BinOp::Eq:
        return a.eq(b);
      case BinOp::Ne:
        return a.ne(b);
    }
    return a;
  }

  Value call(const Expr& e) {
    const auto& table = op_table();
    auto it = table.find(e.name);
    if (it == table.end()) fail(e.loc, e.name.size(), "unknown op '" + e.name + "'");
    const OpDef& op = it->second;
    std::vector<const Expr*> positional;
    if (e.receiver) positional.push_back(e.receiver.get());
    for (const ExprPtr& o : e.operands) positional.push_back(o.get());
    if (positional.size() != op.positional.size())
      fail(e.loc, e.name.size(), "wrong number of arguments to '" + e.name + "'", std::to_string(op.positional.size()),
           std::to_string(positional.size()));
    Args args;
    for (size_t i = 0; i < positional.size(); ++i) {
      const auto& [name, type] = op.positional[i];
      args.pos.push_back(argument(*positional[i], type, "argument '" + std::string(name) + "' of '" + e.name + "'"));
    }
    for (const Kwarg& k : e.kwargs) {
      auto kw =
          std::find_if(op.keywords.begin(), op.keywords.end(), [&](const Keyword& w) { return w.name == k.name; });
      if (kw == op.keywords.end()) {
        std::string allowed;
        for (const Keyword& w : op.keywords) allowed += (allowed.empty() ? "" : ", ") + std::string(w.name);
        fail(k.loc, k.name.size(), "unknown keyword '" + k.name + "' for '" + e.name + "'",
             allowed.empty() ? "no keywords" : "one of " + allowed, "'" + k.name + "'");
      }
      args.kw[kw->name] = argument(*k.value, kw->type, "keyword '" + k.name + "' of '" + e.name + "'");
    }
    for (const Keyword& w : op.keywords) {
      if (args.kw.count(w.name)) continue;
      if (w.required) fail(e.loc, e.name.size(), "missing keyword '" + std::string(w.name) + "' for '" + e.name + "'");
      args.kw[w.name] = w.def;
    }
    return build(e, [&] { return op.build(args); });
  }

  Arg argument(const Expr& e, Type type, const std::string& what) {
    Value v = eval(e);
    std::optional<Arg> a = convert(ctx_, v, type);
    if (!a) fail(e.loc, span_of(e), "wrong type for " + what, type_name(type), describe(v));
    return *a;
  }

  Context& ctx_;
  const std::map<std::string, const UOp*>& dims_;
  std::map<std::string, Tensor> names_;  // inputs, and outputs and locals assigned so far
};

}  // namespace

LowerResult lower_spec(Context& ctx, const Spec& spec, const SourceFile& /*file*/) {
  LowerResult result;
  std::map<std::string, const UOp*> dims;
  for (const Dim& d : spec.dims) dims[d.name] = ctx.var(d.name, d.min, d.max);
  for (const Kernel& k : spec.kernels) {
    try {
      result.kernels.push_back(Lowerer(ctx, dims).lower(k));
    } catch (const LowerError& e) {
      result.diagnostics.push_back(e.d);
    }
  }
  sort_by_location(result.diagnostics);
  return result;
}

}  // namespace kiln::frontend

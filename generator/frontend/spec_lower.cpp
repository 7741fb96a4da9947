#include "generator/frontend/spec_lower.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_ops.h"

namespace kiln::frontend {
namespace {

using namespace spec_ops;  // NOLINT: the lowerer speaks the op table's vocabulary throughout

// The first error of a kernel: lowering stops there, so one mistake gives one message.
struct LowerError {
  Diagnostic d;
};

[[noreturn]] void fail(Loc loc, size_t length, std::string message, std::string expected = {}, std::string got = {}) {
  throw LowerError{diagnostic(loc, length, std::move(message), std::move(expected), std::move(got))};
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
    case ExprKind::String:
      return e.name.size() + 2;
    case ExprKind::Index:
    case ExprKind::Slice:
      return 1;
    case ExprKind::Binary:
      return std::string_view(spelling(e.op)).size();
    case ExprKind::Unary:
    case ExprKind::Tuple:
      return 1;
  }
  return 1;
}

class Lowerer {
 public:
  Lowerer(Context& ctx, const std::map<std::string, const UOp*>& dims) : ctx_(ctx), dims_(dims) {}

  LoweredKernel lower(const Kernel& k) {
    LoweredKernel out{k.name, {}, {}, {}, k.loc};
    for (size_t i = 0; i < k.params.size(); ++i) {
      const Param& p = k.params[i];
      // a kernel's own slots count from 0, whatever else the Context holds
      out.inputs.push_back(Tensor::input(ctx_, int32_t(i), p.name, *spec_dtype(p.dtype), declared_shape(p)));
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
           std::string("wrong operand for '") + (op.kind == ExprKind::Unary ? op.name : spelling(op.op)) + "'",
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
        } else if (e.name == "None") {
          v.kind = Value::Kind::None;
        } else {
          fail(e.loc, e.name.size(), "unknown name '" + e.name + "'");
        }
        return v;
      case ExprKind::String:
        v.kind = Value::Kind::String;
        return v;
      case ExprKind::Unary: {
        const Expr& x = *e.operands[0];
        if (e.name == "~") {
          Tensor t = operand(e, x);
          return build(e, [&] { return t.bitwise_not(); });
        }
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
      case ExprKind::Index:
        return index(e);
      case ExprKind::Slice:
        fail(e.loc, 1, "a slice is only allowed inside '[ ]'");
    }
    return v;
  }

  // x[i, a:b:s, None, ...]: bounds are sizes (integers, dims, expressions of them); a step is an
  // integer; None inserts an axis; `...` stands for the axes no other index reads.
  Value index(const Expr& e) {
    Value x = eval(*e.receiver);
    if (x.kind != Value::Kind::Tensor) fail(e.loc, 1, "wrong operand for '[ ]'", "a tensor", describe(x));
    auto bound = [&](const Expr& b) {
      Value v = eval(b);
      std::optional<Arg> a = convert(ctx_, v, Type::Sizes);
      if (!a || v.kind == Value::Kind::Tuple) fail(b.loc, span_of(b), "wrong type for an index", "a size", describe(v));
      return a->dims[0];
    };
    std::vector<Index> items;
    for (const ExprPtr& item : e.operands) {
      if (item->kind == ExprKind::Name && item->name == "None" && !names_.count("None")) {
        items.emplace_back(std::nullopt);
        continue;
      }
      if (item->kind == ExprKind::Name && item->name == "...") {
        items.emplace_back(Ellipsis{});
        continue;
      }
      if (item->kind != ExprKind::Slice) {
        items.emplace_back(bound(*item));
        continue;
      }
      Slice s;
      if (item->operands[0]) s.start = bound(*item->operands[0]);
      if (item->operands[1]) s.stop = bound(*item->operands[1]);
      if (const Expr* step = item->operands[2].get()) {
        Value v = eval(*step);
        if (v.kind != Value::Kind::Int)
          fail(step->loc, span_of(*step), "wrong type for a slice step", "an integer", describe(v));
        s.step = v.i;
      }
      items.emplace_back(s);
    }
    return build(e, [&] { return x.t->getitem(items); });
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
      case BinOp::And:
        return a.bitwise_and(b);
      case BinOp::Or:
        return a.bitwise_or(b);
      case BinOp::Xor:
        return a.bitwise_xor(b);
      case BinOp::Shl:
        return a.lshift(b);
      case BinOp::Shr:
        return a.rshift(b);
    }
    return a;
  }

  // Arguments bind as in Python: positional ones fill the parameters in order (a variadic one
  // takes the rest), keywords fill them by name, the others take their defaults.
  Value call(const Expr& e) {
    const auto& table = op_table();
    auto it = table.find(e.name);
    if (it == table.end()) fail(e.loc, e.name.size(), "unknown op '" + e.name + "'");
    const OpDef& op = it->second;
    std::vector<const Expr*> positional;
    if (e.receiver) positional.push_back(e.receiver.get());
    for (const ExprPtr& o : e.operands) positional.push_back(o.get());
    size_t required = 0;
    bool variadic = false;
    for (const Parameter& p : op.params) {
      required += p.required;
      variadic |= p.variadic;
    }
    auto arity = [&] {
      if (variadic) return "at least " + std::to_string(required);
      if (required == op.params.size()) return std::to_string(required);
      return std::to_string(required) + " to " + std::to_string(op.params.size());
    };
    auto wrong_number = [&] {
      fail(e.loc, e.name.size(), "wrong number of arguments to '" + e.name + "'", arity(),
           std::to_string(positional.size()));
    };
    if (!variadic && positional.size() > op.params.size()) wrong_number();
    Args args;
    bool required_by_keyword = false;
    for (size_t i = 0; i < op.params.size() && i < positional.size(); ++i) {
      const Parameter& p = op.params[i];
      std::string what = "argument '" + std::string(p.name) + "' of '" + e.name + "'";
      if (!p.variadic) {
        args.by_name[p.name] = argument(*positional[i], p.type, what);
        continue;
      }
      args.by_name[p.name] = rest_of(std::span(positional).subspan(i), p, e, what);
      break;
    }
    for (const Kwarg& k : e.kwargs) {
      auto p = std::find_if(op.params.begin(), op.params.end(), [&](const Parameter& w) {
        return w.name == k.name || (!w.alias.empty() && w.alias == k.name);
      });
      // the first parameter is tinygrad's `self` (or the tensors of cat): never a keyword
      if (p == op.params.end() || p == op.params.begin()) {
        std::string allowed;
        for (size_t i = 1; i < op.params.size(); ++i)
          allowed += (allowed.empty() ? "" : ", ") + std::string(op.params[i].name);
        fail(k.loc, k.name.size(), "unknown keyword '" + k.name + "' for '" + e.name + "'",
             allowed.empty() ? "no keywords" : "one of " + allowed, "'" + k.name + "'");
      }
      if (args.by_name.count(p->name))
        fail(k.loc, k.name.size(), "argument '" + std::string(p->name) + "' of '" + e.name + "' given twice",
             "it by position or by keyword", "both");
      args.by_name[p->name] = argument(*k.value, p->type, "keyword '" + k.name + "' of '" + e.name + "'");
      required_by_keyword |= p->required;
    }
    for (const Parameter& p : op.params) {
      if (args.by_name.count(p.name)) continue;
      if (p.required) {
        if (positional.size() < required && !required_by_keyword) wrong_number();
        fail(e.loc, e.name.size(), "missing argument '" + std::string(p.name) + "' for '" + e.name + "'");
      }
      args.by_name[p.name] = p.def;
    }
    return build(e, [&] { return op.build(args); });
  }

  // A variadic parameter: one argument as itself (a tuple or one value), several as a tuple of
  // them, where a tuple among them would be ambiguous.
  Arg rest_of(std::span<const Expr* const> given, const Parameter& p, const Expr& call, const std::string& what) {
    if (given.size() == 1) return argument(*given[0], p.type, what);
    Value all;
    all.kind = Value::Kind::Tuple;
    for (const Expr* g : given) {
      all.items.push_back(eval(*g));
      if (all.items.back().kind == Value::Kind::Tuple)
        fail(g->loc, span_of(*g), "cannot mix a tuple with separate arguments for " + what,
             "one tuple or separate " + std::string(p.type == Type::Tensors ? "tensors" : "values"),
             describe(all.items.back()));
    }
    for (size_t i = 0; i < given.size(); ++i) {
      Value one;
      one.kind = Value::Kind::Tuple;
      one.items = {all.items[i]};
      if (!convert(ctx_, one, p.type))
        fail(given[i]->loc, span_of(*given[i]), "wrong type for " + what, item_type_name(p.type),
             describe(all.items[i]));
    }
    std::optional<Arg> a = convert(ctx_, all, p.type);
    if (!a) fail(call.loc, call.name.size(), "wrong type for " + what, type_name(p.type), describe(all));
    return *a;
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

LowerResult lower_spec(Context& ctx, const Spec& spec, const SourceFile& /*file*/,
                       const std::map<std::string, Specialization>& bucket, std::string_view only) {
  LowerResult result;
  std::map<std::string, const UOp*> dims;
  for (const Dim& d : spec.dims) {
    auto b = bucket.find(d.name);
    if (b == bucket.end()) {
      dims[d.name] = ctx.var(d.name, d.min, d.max);
    } else if (!b->second.multiple) {
      dims[d.name] = ctx.cint(b->second.value, dtypes::weakint);
    } else {
      int64_t k = b->second.value;
      dims[d.name] = ctx.var(d.name, (d.min + k - 1) / k * k, d.max / k * k, dtypes::weakint, k);
    }
    result.dims.push_back(dims[d.name]);
  }
  for (const Kernel& k : spec.kernels) {
    if (!only.empty() && k.name != only) continue;
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

#include "generator/frontend/spec_lower.h"

#include <algorithm>
#include <map>
#include <optional>
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

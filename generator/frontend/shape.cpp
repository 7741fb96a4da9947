#include "generator/frontend/shape.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "generator/ir/text.h"
#include "generator/symbolic/symbolic.h"

namespace kiln {

static std::string dim_expr(const UOp* d, bool paren) {
  switch (d->op) {
    case Op::CONST:
      return std::to_string(d->ival());
    case Op::DEFINE_VAR:
      return std::string(d->arg<VarArg>().name);
    default:
      break;
  }
  const char* sym = d->op == Op::ADD        ? "+"
                    : d->op == Op::MUL      ? "*"
                    : d->op == Op::FLOORDIV ? "//"
                    : d->op == Op::FLOORMOD ? "%"
                                            : nullptr;
  if (!sym || d->nsrc() != 2) return print(d);
  if (d->op == Op::ADD && d->src(1)->op == Op::CONST && d->src(1)->ival() < 0) {
    std::string s = dim_expr(d->src(0), true) + "-" + std::to_string(-d->src(1)->ival());
    return paren ? "(" + s + ")" : s;
  }
  std::string s = dim_expr(d->src(0), true) + sym + dim_expr(d->src(1), true);
  return paren && d->op == Op::ADD ? "(" + s + ")" : s;
}

std::string dim_str(const UOp* d) { return dim_expr(d, false); }

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + dim_str(s[i]);
  return r + "]";
}

const UOp* simplify_dim(const UOp* d) {
  if (const UOp* c = fold_int_constants(d)) return c;  // most dims are numbers
  return simplify(d);
}

const UOp* dim_product(const Shape& s) {
  if (s.empty()) return nullptr;
  return simplify_dim(uprod(s, s[0]));
}

bool dim_is(const UOp* d, int64_t v) { return d->op == Op::CONST && d->ival() == v; }

std::span<const UOp* const> tensor_sources(const UOp* u) {
  switch (u->op) {
    case Op::PARAM:
    case Op::CONST:
    case Op::DEFINE_VAR:
    case Op::IOTA:
      return {};
    case Op::RESHAPE:
    case Op::EXPAND:
    case Op::PERMUTE:
    case Op::PAD:
    case Op::SHRINK:
    case Op::FLIP:
    case Op::REDUCE:
      return u->src().subspan(0, 1);
    default:
      return u->src();
  }
}

static bool same_count(const Shape& a, const Shape& b) {
  const UOp* pa = a.empty() ? nullptr : dim_product(a);
  const UOp* pb = b.empty() ? nullptr : dim_product(b);
  auto is_one = [](const UOp* p) { return p == nullptr || dim_is(p, 1); };
  if (is_one(pa) || is_one(pb)) return is_one(pa) && is_one(pb);
  // equal as written, or provably (n + 255 - (n + 255) % 256 is 256 * ((n + 255) // 256))
  return pa == pb || dim_is(simplify_dim(Expr(pa) - Expr(pb)), 0);
}

// the message is built only when the check fails (shapes are inferred for every node scheduled)
template <class Message> static void need(bool ok, const Message& what) {
  if (!ok) throw ShapeError(what());
}

// The element count at every dim's maximum fits in int64 (a weakint dim saturates at its maximum,
// so reaching it counts as overflow): indexing such a shape could not be computed.
static void need_count_fits(const Shape& s, const std::string& op) {
  int64_t n = 1;
  bool ok = true;
  for (const UOp* d : s) {
    int64_t v = d->vmax().i;
    ok &= v != std::numeric_limits<int64_t>::max() && !__builtin_mul_overflow(n, v, &n);
  }
  need(ok, [&] {
    return op + ": expected a shape of at most " + std::to_string(std::numeric_limits<int64_t>::max()) +
           " elements, got " + shape_str(s);
  });
}

static std::vector<int64_t> const_list(const UOp* stack, const char* what) {
  std::vector<int64_t> r;
  for (const UOp* s : stack->src()) {
    need(s->op == Op::CONST, [&] { return std::string(what) + ": expected constant arguments, got " + print(s); });
    r.push_back(s->ival());
  }
  return r;
}

Shape infer_shape(const UOp* u, std::span<const Shape* const> src_shapes) {
  std::string name(op_name(u->op));
  std::string lower = name;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (u->op == Op::PARAM) {
    need(u->nsrc() == 1 && u->src(0)->op == Op::STACK, [&] { return std::string("input: expected a STACK of dims"); });
    Shape s(u->src(0)->src().begin(), u->src(0)->src().end());
    for (const UOp* d : s)
      need(d->vmin().i >= 0, [&] {
        return std::string("input " + std::string(u->arg<ParamArg>().name) + ": negative dim in " + shape_str(s));
      });
    return s;
  }
  if (u->op == Op::CONST || u->op == Op::DEFINE_VAR) return {};
  if (u->op == Op::IOTA) {
    need(u->nsrc() == 1 && u->src(0)->vmin().i >= 0,
         [&] { return std::string("iota: expected a non-negative length"); });
    return {u->src(0)};
  }
  need(!src_shapes.empty(), [&] { return std::string(name + ": expected a tensor source"); });
  const Shape& in = *src_shapes[0];
  size_t n = in.size();
  auto rank_check = [&](const UOp* stack, const char* arg) {
    need(stack->op == Op::STACK && stack->nsrc() == n, [&] {
      return std::string(lower + ": expected " + std::to_string(n) + " " + arg + " for shape " + shape_str(in) +
                         ", got " + std::to_string(stack->nsrc()));
    });
  };
  switch (u->op) {
    case Op::RESHAPE: {
      Shape out(u->src(1)->src().begin(), u->src(1)->src().end());
      for (const UOp* d : out)
        need(d->vmin().i >= 0, [&] { return std::string("reshape: negative dim in " + shape_str(out)); });
      need(same_count(in, out), [&] {
        return std::string("reshape: expected a shape with as many elements as " + shape_str(in) + ", got " +
                           shape_str(out));
      });
      need_count_fits(out, "reshape");
      return out;
    }
    case Op::EXPAND: {
      Shape out(u->src(1)->src().begin(), u->src(1)->src().end());
      need(out.size() == n, [&] {
        return std::string("expand: expected rank " + std::to_string(n) + " like " + shape_str(in) + ", got " +
                           shape_str(out));
      });
      for (size_t i = 0; i < n; ++i)
        need(in[i] == out[i] || dim_is(in[i], 1), [&] {
          return std::string("expand: expected dim " + std::to_string(i) + " of " + shape_str(in) +
                             " to be 1 or equal, got " + shape_str(out));
        });
      need_count_fits(out, "expand");
      return out;
    }
    case Op::PERMUTE: {
      rank_check(u->src(1), "axes");
      auto order = const_list(u->src(1), "permute");
      std::vector<int64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      bool ok = true;
      for (size_t i = 0; i < n; ++i) ok &= sorted[i] == int64_t(i);
      std::string os = "(";
      for (size_t i = 0; i < n; ++i) os += (i ? ", " : "") + std::to_string(order[i]);
      need(ok, [&] {
        return std::string("permute: expected a permutation of the " + std::to_string(n) + " axes of " + shape_str(in) +
                           ", got " + os + ")");
      });
      Shape out;
      for (int64_t o : order) out.push_back(in[size_t(o)]);
      return out;
    }
    case Op::PAD: {
      rank_check(u->src(1), "pads before");
      rank_check(u->src(2), "pads after");
      Shape out;
      for (size_t i = 0; i < n; ++i) {
        const UOp *b = u->src(1)->src(i), *a = u->src(2)->src(i);
        need(b->vmin().i >= 0 && a->vmin().i >= 0, [&] {
          return std::string("pad: expected non-negative pads, got (" + dim_str(b) + ", " + dim_str(a) + ") on axis " +
                             std::to_string(i));
        });
        out.push_back(simplify_dim(Expr(in[i]) + Expr(b) + Expr(a)));
      }
      need_count_fits(out, "pad");
      return out;
    }
    case Op::SHRINK: {
      rank_check(u->src(1), "begins");
      rank_check(u->src(2), "ends");
      Shape out;
      for (size_t i = 0; i < n; ++i) {
        const UOp *b = u->src(1)->src(i), *e = u->src(2)->src(i);
        const UOp* len = simplify_dim(Expr(e) - Expr(b));
        const UOp* rest = simplify_dim(Expr(in[i]) - Expr(e));
        need(b->vmin().i >= 0 && len->vmin().i >= 0 && rest->vmin().i >= 0, [&] {
          return std::string("shrink: expected 0 <= begin <= end <= " + dim_str(in[i]) + " on axis " +
                             std::to_string(i) + ", got (" + dim_str(b) + ", " + dim_str(e) + ")");
        });
        out.push_back(len);
      }
      return out;
    }
    case Op::FLIP: {
      rank_check(u->src(1), "flags");
      for (int64_t f : const_list(u->src(1), "flip"))
        need(f == 0 || f == 1, [&] { return std::string("flip: expected flags 0 or 1"); });
      return in;
    }
    case Op::REDUCE: {
      need(u->nsrc() == 2 && u->src(1)->op == Op::STACK,
           [&] { return std::string("reduce: expected a STACK of axes"); });
      Shape out = in;
      for (int64_t a : const_list(u->src(1), "reduce")) {
        need(a >= 0 && a < int64_t(n), [&] {
          return std::string("reduce: expected an axis in [0, " + std::to_string(n) + ") for shape " + shape_str(in) +
                             ", got " + std::to_string(a));
        });
        out[size_t(a)] = u->ctx().cint(1);
      }
      return out;
    }
    default:
      break;
  }
  need(is_alu(u->op) || u->op == Op::CAST || u->op == Op::BITCAST,
       [&] { return std::string(name + ": not a tensor op"); });
  for (const Shape* s : src_shapes)
    need(*s == in, [&] {
      return std::string(name + ": expected operands of equal shape, got " + shape_str(in) + " and " + shape_str(*s));
    });
  if (u->op == Op::WHERE)
    need(is_bool(u->src(0)->dtype),
         [&] { return std::string("where: expected a bool condition, got " + to_string(u->src(0)->dtype)); });
  return in;
}

const Shape& ShapeCache::shape_of(const UOp* t) {
  if (auto it = memo_.find(t->id); it != memo_.end()) return it->second;
  // iterative post-order over tensor edges
  std::vector<std::pair<const UOp*, size_t>> stack{{t, 0}};
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    auto srcs = tensor_sources(u);
    if (i < srcs.size()) {
      const UOp* s = srcs[i++];
      if (!memo_.contains(s->id)) stack.push_back({s, 0});
      continue;
    }
    std::vector<const Shape*> ins;
    for (const UOp* s : srcs) ins.push_back(&memo_.at(s->id));
    const UOp* done = u;
    stack.pop_back();
    if (!memo_.contains(done->id)) memo_.emplace(done->id, infer_shape(done, ins));
  }
  return memo_.at(t->id);
}

Shape shape_of(const UOp* t) {
  ShapeCache c;
  return c.shape_of(t);
}

}  // namespace kiln

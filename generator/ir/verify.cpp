#include "generator/ir/verify.h"

#include "generator/ir/text.h"

namespace kiln {

std::optional<std::string> verify_node(const UOp* u) {
  auto nsrc = [&](size_t n) -> std::optional<std::string> {
    if (u->nsrc() != n) return "takes " + std::to_string(n) + " source(s), has " + std::to_string(u->nsrc());
    return std::nullopt;
  };
  // weak literals and Invalid may sit next to any dtype of their family
  auto compatible = [](DType want, const UOp* s) {
    if (s->is_invalid() || s->dtype == want) return true;
    if (s->op == Op::CONST && is_weak(s->dtype)) return is_float(want) || (is_int(want) && is_int(s->dtype));
    return least_upper_dtype(want, s->dtype) == want && is_weak(s->dtype);
  };
  switch (u->op) {
    case Op::CONST: {
      if (u->nsrc() != 0) return "a CONST has no sources";
      if (!u->has_arg<ConstValue>()) return "a CONST needs a value";
      const ConstValue& v = u->cval();
      if (v.is_invalid()) return is_bool(u->dtype) ? std::nullopt : std::optional<std::string>("Invalid is bool");
      if (is_bool(u->dtype) && !v.is_bool()) return "a bool CONST holds true or false";
      if (is_int(u->dtype) && !v.is_int()) return "an int CONST holds an integer";
      if (is_float(u->dtype) && !v.is_float()) return "a float CONST holds a float";
      if (is_int(u->dtype) && !fits(u->dtype, exact_value(u->dtype, v.i))) return "CONST out of its dtype's range";
      return std::nullopt;
    }
    case Op::DEFINE_VAR: {
      if (!u->has_arg<VarArg>()) return "a VAR needs a name and bounds";
      const auto& v = u->arg<VarArg>();
      if (!is_int(u->dtype) && !is_float(u->dtype)) return "a VAR is an integer or a float";
      if (is_int(u->dtype) ? exact_value(u->dtype, v.min) > exact_value(u->dtype, v.max) : !(v.fmin <= v.fmax))
        return "a VAR's range is empty";
      if (v.multiple_of < 1) return "multiple_of must be positive";
      return nsrc(0);
    }
    case Op::RANGE:
      if (!u->has_arg<RangeArg>()) return "a RANGE needs an axis";
      if (u->nsrc() < 1 || !is_int(u->src(0)->dtype)) return "a RANGE's first source is its integer end";
      if (!is_int(u->dtype)) return "a RANGE is an integer";
      return std::nullopt;
    case Op::SPECIAL:
      if (!u->has_arg<Name>()) return "a SPECIAL needs a name";
      return nsrc(1);
    case Op::CAST:
    case Op::BITCAST:
      if (auto e = nsrc(1)) return e;
      if (u->src(0)->dtype.count != u->dtype.count) return "a cast keeps the number of lanes";
      return std::nullopt;
    case Op::STACK: {  // a vector of its lanes (the frontend's shape STACKs are not vectors)
      if (u->dtype.count < 2) return std::nullopt;
      if (auto e = nsrc(u->dtype.count)) return e;
      for (const UOp* s : u->src())
        if (!compatible(u->dtype.base(), s)) return "a STACK's lanes are scalars of its element dtype";
      return std::nullopt;
    }
    case Op::WMMA:  // D = A * B + C of one warp: each item's fragments (codegen/opt/tensor_cores.cpp)
      if (auto e = nsrc(3)) return e;
      if (!u->has_arg<Name>()) return "a WMMA names its shape";
      for (const UOp* s : u->src())
        if (s->dtype.count < 2 || !is_float(s->dtype)) return "a WMMA's fragments are float vectors";
      if (u->dtype != u->src(2)->dtype) return "a WMMA has its accumulator's dtype";
      return std::nullopt;
    case Op::GEP:
      if (auto e = nsrc(1)) return e;
      if (!u->has_arg<int64_t>() || u->arg<int64_t>() < 0 || u->arg<int64_t>() >= u->src(0)->dtype.count)
        return "a GEP reads a lane its vector has";
      if (u->dtype != u->src(0)->dtype.base()) return "a GEP has its vector's element dtype";
      return std::nullopt;
    case Op::INDEX:
      if (u->dtype.count != 1) return "an INDEX addresses a scalar element (a vector access is the LOAD's or STORE's)";
      return std::nullopt;
    case Op::LOAD:
      if (u->dtype.count > 1 && (u->nsrc() < 1 || u->src(0)->op != Op::INDEX ||
                                 u->src(0)->dtype.scalar != u->dtype.scalar || u->src(0)->dtype.count != 1))
        return "a vector LOAD reads consecutive elements at an INDEX of its element dtype";
      return std::nullopt;
    case Op::STORE:
      if (u->nsrc() == 2 && u->src(1)->dtype.count > 1 &&
          (u->src(0)->op != Op::INDEX || u->src(0)->dtype.scalar != u->src(1)->dtype.scalar))
        return "a vector STORE writes consecutive elements at an INDEX of its element dtype";
      return std::nullopt;
    default:
      break;
  }
  if (!is_alu(u->op)) return std::nullopt;
  size_t n = in_group(u->op, G_UNARY) ? 1 : in_group(u->op, G_BINARY) ? 2 : 3;
  if (auto e = nsrc(n)) return e;
  for (const UOp* s : u->src())  // lanewise: every operand has the op's lanes
    if (s->dtype.count != u->dtype.count && !s->is_invalid())
      return "operand of " + std::to_string(s->dtype.count) + " lane(s) in an op of " + std::to_string(u->dtype.count);
  if (in_group(u->op, G_COMPARISON)) {
    if (!is_bool(u->dtype)) return "a comparison is bool";
    return std::nullopt;
  }
  if (u->op == Op::WHERE) {
    if (!is_bool(u->src(0)->dtype) && !u->src(0)->is_invalid()) return "a WHERE condition is bool";
    if (!compatible(u->dtype, u->src(1)) || !compatible(u->dtype, u->src(2)))
      return "WHERE branches must have the WHERE's dtype";
    return std::nullopt;
  }
  if (u->op == Op::SHL || u->op == Op::SHR) {
    if (!is_int(u->dtype)) return "shifts are integer ops";
    if (!compatible(u->dtype, u->src(0))) return "a shift has its left operand's dtype";
    return std::nullopt;
  }
  for (const UOp* s : u->src())
    if (!compatible(u->dtype, s))
      return "operand of dtype " + to_string(s->dtype) + " in a " + to_string(u->dtype) + " op";
  return std::nullopt;
}

std::optional<std::string> verify(const UOp* root) {
  // post-order, as toposort; a graph verified before (the most of it, after every stage) is not
  // walked again: nodes are immutable, and verify_node() reads a node and its sources only
  Context& ctx = root->ctx();
  if (ctx.verified(root->id)) return std::nullopt;
  uint32_t epoch = ctx.new_epoch();
  std::vector<std::pair<const UOp*, uint32_t>> stack{{root, 0}};
  ctx.mark(root->id) = epoch;
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->nsrc()) {
      const UOp* s = u->src(i++);
      if (ctx.mark(s->id) != epoch && !ctx.verified(s->id)) {
        ctx.mark(s->id) = epoch;
        stack.push_back({s, 0});
      }
      continue;
    }
    if (auto e = verify_node(u)) {
      std::string text = print(u);
      if (text.size() > 300) text = text.substr(0, 300) + "...";
      return std::string(op_name(u->op)) + ": " + *e + ": " + text;
    }
    ctx.set_verified(u->id);  // it and everything below it
    stack.pop_back();
  }
  return std::nullopt;
}

}  // namespace kiln

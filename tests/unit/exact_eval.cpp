#include "tests/unit/exact_eval.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "generator/ir/text.h"
#include "tests/unit/ref_alu.h"

namespace kiln::exact {

namespace {

__extension__ using u128 = unsigned __int128;

bool is_leaf(const UOp* u) { return u->op == Op::DEFINE_VAR || u->op == Op::RANGE || u->op == Op::SPECIAL; }

std::optional<ConstValue> bitcast(DType from, DType to, const ConstValue& v) {
  if (bitsize(from) != bitsize(to)) return std::nullopt;
  uint64_t bits = 0;
  if (from.scalar == Scalar::Float32) {
    float f = static_cast<float>(v.f);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    bits = b;
  } else if (from.scalar == Scalar::Float64) {
    std::memcpy(&bits, &v.f, 8);
  } else if (is_int(from) || is_bool(from)) {
    bits = uint64_t(v.i);
  } else {
    return std::nullopt;  // half and bfloat16 bit patterns: not needed yet
  }
  if (bitsize(to) < 64) bits &= (uint64_t(1) << bitsize(to)) - 1;
  if (to.scalar == Scalar::Float32) {
    uint32_t b = uint32_t(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return ConstValue::of_float(f);
  }
  if (to.scalar == Scalar::Float64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return ConstValue::of_float(d);
  }
  if (is_int(to)) return ref::to_dtype(to, ConstValue::of_int(int64_t(bits)));
  return std::nullopt;
}

bool truthy(const ConstValue& v) { return v.is_float() ? v.f != 0.0 : v.i != 0; }

Value eval_node(const UOp* u, const std::vector<const Value*>& in, const Env& env) {
  switch (u->op) {
    case Op::CONST:
      return {u->cval()};
    case Op::DEFINE_VAR:
    case Op::RANGE:
    case Op::SPECIAL: {
      auto it = env.find(u);
      if (it == env.end()) throw NotEvaluable("no value for " + print(u).substr(0, 80));
      return {it->second};
    }
    case Op::STACK: {
      Value r;
      for (const Value* v : in) r.insert(r.end(), v->begin(), v->end());
      return r;
    }
    case Op::AFTER:
      return *in[0];
    default:
      break;
  }
  if (!is_alu(u->op) && u->op != Op::CAST && u->op != Op::BITCAST)
    throw NotEvaluable("no semantics for " + std::string(op_name(u->op)));
  size_t lanes = 1;
  for (const Value* v : in) lanes = std::max(lanes, v->size());
  for (const Value* v : in)
    if (v->size() != 1 && v->size() != lanes) throw NotEvaluable("vector width mismatch");
  Value r(lanes);
  std::vector<ConstValue> ops(in.size());
  for (size_t l = 0; l < lanes; ++l) {
    bool undefined = false, invalid = false;
    for (size_t i = 0; i < in.size(); ++i) {
      const Lane& x = (*in[i])[in[i]->size() == 1 ? 0 : l];
      if (!x)
        undefined = true;
      else
        ops[i] = *x;
    }
    if (undefined) continue;
    if (u->op == Op::WHERE) {  // an Invalid branch that is not taken does not matter
      if (ops[0].is_invalid())
        r[l] = ConstValue::invalid();
      else
        r[l] = ref::to_dtype(u->dtype, truthy(ops[0]) ? ops[1] : ops[2]);
      continue;
    }
    for (const ConstValue& x : ops) invalid |= x.is_invalid();
    if (invalid)
      r[l] = ConstValue::invalid();
    else if (u->op == Op::BITCAST)
      r[l] = bitcast(u->src(0)->dtype, u->dtype, ops[0]);
    else
      r[l] = ref::alu(u->op, u->dtype, ops, operand_dtype(u));
  }
  return r;
}

struct Domain {
  const UOp* leaf;
  int64_t lo, hi, step;
  u128 size() const { return u128(uint64_t(hi) - uint64_t(lo)) / u128(step) + 1; }
  int64_t at(uint64_t k) const { return int64_t(uint64_t(lo) + k * uint64_t(step)); }
};

ConstValue leaf_value(const UOp* leaf, int64_t v) {
  return is_bool(leaf->dtype) ? ConstValue::of_bool(v != 0) : ConstValue::of_int(v);
}

}  // namespace

std::vector<const UOp*> leaves(const UOp* root) {
  std::vector<const UOp*> out;
  for (const UOp* u : toposort(root))
    if (is_leaf(u)) out.push_back(u);
  std::sort(out.begin(), out.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });
  return out;
}

Value evaluate(const UOp* root, const Env& env) {
  std::unordered_map<const UOp*, Value> val;
  std::vector<const Value*> in;
  for (const UOp* u : toposort(root)) {
    in.clear();
    for (const UOp* s : u->src()) in.push_back(&val.at(s));
    val[u] = eval_node(u, in, env);
  }
  return val.at(root);
}

std::string to_string(const Value& v) {
  auto lane = [](const Lane& l) {
    return l ? (l->is_invalid() ? "invalid"
                                : kiln::to_string(*l, l->is_float()  ? dtypes::float64
                                                      : l->is_bool() ? dtypes::bool_
                                                                     : dtypes::int64))
             : std::string("undefined");
  };
  if (v.size() == 1) return lane(v[0]);
  std::string s = "<";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + lane(v[i]);
  return s + ">";
}

Comparison compare(const UOp* ours, const UOp* expected, uint64_t seed, size_t exhaustive_limit, size_t samples) {
  Comparison c;
  std::vector<const UOp*> ls = leaves(ours);
  for (const UOp* l : leaves(expected))
    if (std::find(ls.begin(), ls.end(), l) == ls.end()) ls.push_back(l);
  std::sort(ls.begin(), ls.end(), [](const UOp* a, const UOp* b) { return a->id < b->id; });

  std::vector<Domain> dom;
  u128 total = 1;
  for (const UOp* l : ls) {
    if (!is_int(l->dtype) && !is_bool(l->dtype)) {
      c.result = Comparison::Result::NotEvaluable;
      c.why = "variable of dtype " + kiln::to_string(l->dtype);
      return c;
    }
    int64_t step = l->op == Op::DEFINE_VAR ? std::max<int64_t>(1, l->arg<VarArg>().multiple_of) : 1;
    int64_t lo = l->vmin().i, hi = l->vmax().i;  // as carried: a uint64 from 2^63 up is negative
    i128 x = l->exact_lo();
    if (step > 1) x = x >= 0 ? (x + step - 1) / step * step : -((-x) / step * step);
    lo = carried_value(l->dtype, x);
    if (l->exact_hi() < x) {
      c.result = Comparison::Result::NotEvaluable;
      c.why = "empty domain for " + print(l).substr(0, 80);
      return c;
    }
    dom.push_back({l, lo, hi, step});
    total *= dom.back().size();
    if (total > u128(exhaustive_limit)) total = u128(exhaustive_limit) + 1;
  }

  auto check = [&](const Env& env) -> bool {  // false: stop (a difference or not evaluable)
    try {
      for (const Domain& d : dom) {
        if (d.leaf->op == Op::DEFINE_VAR) continue;
        Value end = evaluate(d.leaf->src(0), env);
        // not a point of the iteration space
        if (!end[0] || exact_value(d.leaf->dtype, env.at(d.leaf).i) >= exact_value(d.leaf->src(0)->dtype, end[0]->i))
          return true;
      }
      Value a = evaluate(ours, env), b = evaluate(expected, env);
      ++c.points;
      bool same = a.size() == b.size();
      for (size_t i = 0; same && i < a.size(); ++i)
        if (b[i]) same = a[i] && *a[i] == *b[i];
      if (same) return true;
      c.result = Comparison::Result::Differ;
      std::string at;
      for (const Domain& d : dom) {
        const UOp* l = d.leaf;
        std::string name = l->op == Op::DEFINE_VAR ? std::string(l->arg<VarArg>().name)
                           : l->op == Op::SPECIAL  ? std::string(l->arg<Name>().s)
                                                   : "r" + std::to_string(l->arg<RangeArg>().axis);
        at += (at.empty() ? "" : " ") + name + "=" + std::to_string(env.at(l).i);
      }
      c.why = "at " + (at.empty() ? std::string("(no variables)") : at) + ": ours " + to_string(a) + ", expected " +
              to_string(b);
    } catch (const NotEvaluable& e) {
      c.result = Comparison::Result::NotEvaluable;
      c.why = e.what();
    }
    return false;
  };

  Env env;
  if (total <= u128(exhaustive_limit)) {
    c.exhaustive = true;
    std::vector<uint64_t> k(dom.size(), 0);
    while (true) {
      for (size_t i = 0; i < dom.size(); ++i) env[dom[i].leaf] = leaf_value(dom[i].leaf, dom[i].at(k[i]));
      if (!check(env)) return c;
      size_t i = 0;
      for (; i < dom.size(); ++i) {
        if (++k[i] < dom[i].size()) break;
        k[i] = 0;
      }
      if (i == dom.size()) break;
    }
  } else {
    std::mt19937_64 rng(seed);
    size_t corners = dom.size() <= 10 ? size_t(1) << dom.size() : 1024;
    for (size_t p = 0; p < corners + samples; ++p) {
      for (size_t i = 0; i < dom.size(); ++i) {
        const Domain& d = dom[i];
        uint64_t n = d.size() > u128(UINT64_MAX) ? UINT64_MAX : uint64_t(d.size() - 1);
        uint64_t k;
        if (p < corners)
          k = dom.size() <= 10 ? ((p >> i) & 1) * n : (rng() & 1) * n;
        else if (p % 4 == 0)
          k = std::min<uint64_t>(n, rng() % 4);  // near the low end
        else if (p % 4 == 1)
          k = n - std::min<uint64_t>(n, rng() % 4);  // near the high end
        else
          k = n == UINT64_MAX ? rng() : rng() % (n + 1);
        env[d.leaf] = leaf_value(d.leaf, d.at(k));
      }
      if (!check(env)) return c;
    }
  }
  if (c.points == 0) {
    c.result = Comparison::Result::NotEvaluable;
    c.why = "no point of the domain is inside every range";
  }
  return c;
}

}  // namespace kiln::exact

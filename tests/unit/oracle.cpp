#include "tests/unit/oracle.h"

#include <cmath>
#include <cstring>
#include <unordered_map>

#include "generator/frontend/shape.h"
#include "tests/unit/exact_eval.h"
#include "tests/unit/ref_alu.h"

namespace kiln::oracle {

std::vector<double> Array::doubles() const {
  std::vector<double> r;
  // a uint64 from 2^63 up is carried as a negative int64: its double is of the unsigned reading
  for (const ConstValue& v : values)
    r.push_back(v.kind == ConstValue::Kind::Int ? double(exact_value(dtype, v.i)) : v.as_double());
  return r;
}

static int64_t eval_dim(const UOp* d, const Bindings& b) {
  exact::Env env;
  for (const UOp* l : exact::leaves(d)) {
    if (l->op != Op::DEFINE_VAR) throw OracleError("dim has a non-variable leaf");
    auto it = b.vars.find(std::string(l->arg<VarArg>().name));
    if (it == b.vars.end()) throw OracleError("no value for " + std::string(l->arg<VarArg>().name));
    env[l] = ConstValue::of_int(it->second);
  }
  exact::Value v = exact::evaluate(d, env);
  if (v.size() != 1 || !v[0]) throw OracleError("dim is undefined");
  return v[0]->i;
}

std::vector<int64_t> eval_shape(std::span<const UOp* const> dims, const Bindings& b) {
  std::vector<int64_t> r;
  for (const UOp* d : dims) r.push_back(eval_dim(d, b));
  return r;
}

static int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// Floats are evaluated as float64: the reference is exact where the kernel may round.
static DType eval_dtype(DType d) { return is_float(d) ? DType(dtypes::float64) : d.base(); }

static ConstValue from_double(DType d, double x) {
  if (is_float(d)) return ConstValue::of_float(x);
  if (is_bool(d)) return ConstValue::of_bool(x != 0);
  return ref::to_dtype(d, ConstValue::of_int(int64_t(std::llround(x))));
}

// For each output position, the input position it reads (-1 for padding).
template <class F> static Array remap(const Array& in, std::vector<int64_t> out_shape, F&& src_index) {
  Array out{out_shape, in.dtype, {}};
  int64_t n = numel(out_shape);
  std::vector<int64_t> idx(out_shape.size(), 0), in_idx(in.shape.size());
  ConstValue zero = from_double(in.dtype, 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t off = 0;
    bool valid = src_index(idx, in_idx);
    if (valid)
      for (size_t i = 0; i < in_idx.size(); ++i) off = off * in.shape[i] + in_idx[i];
    out.values.push_back(valid ? in.values[size_t(off)] : zero);
    for (size_t i = idx.size(); i-- > 0;) {
      if (++idx[i] < out_shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

static std::vector<int64_t> consts(const UOp* stack) {
  std::vector<int64_t> r;
  for (const UOp* s : stack->src()) r.push_back(s->ival());
  return r;
}

static ConstValue bitcast_value(DType from, DType to, const ConstValue& v) {
  uint64_t bits = 0;
  if (from == dtypes::float32) {
    float f = float(v.f);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = u;
  } else if (from == dtypes::float64) {
    std::memcpy(&bits, &v.f, 8);
  } else if (is_int(from) || is_bool(from)) {
    bits = uint64_t(v.i);
    if (bitsize(from) < 64) bits &= (uint64_t(1) << bitsize(from)) - 1;
  } else {
    throw OracleError("bitcast from " + to_string(from) + " unsupported");
  }
  if (to == dtypes::float32) {
    uint32_t u = uint32_t(bits);
    float f;
    std::memcpy(&f, &u, 4);
    return ConstValue::of_float(f);
  }
  if (to == dtypes::float64) {
    double f;
    std::memcpy(&f, &bits, 8);
    return ConstValue::of_float(f);
  }
  if (is_int(to)) return ref::to_dtype(to, ConstValue::of_int(int64_t(bits)));
  throw OracleError("bitcast to " + to_string(to) + " unsupported");
}

static Array eval_node(const UOp* u, const std::vector<const Array*>& in, const Bindings& b) {
  switch (u->op) {
    case Op::PARAM: {
      auto shape = eval_shape(u->src(0)->src(), b);
      auto it = b.inputs.find(u->arg<ParamArg>().slot);
      if (it == b.inputs.end()) throw OracleError("no input for slot " + std::to_string(u->arg<ParamArg>().slot));
      if (int64_t(it->second.size()) != numel(shape)) throw OracleError("input size mismatch");
      Array a{shape, u->dtype, {}};
      for (double x : it->second) a.values.push_back(from_double(u->dtype, x));
      return a;
    }
    case Op::CONST:
      return {{}, u->dtype, {u->cval()}};
    case Op::IOTA: {
      auto n = eval_shape(u->src(), b);
      Array a{n, u->dtype, {}};
      for (int64_t i = 0; i < n[0]; ++i) a.values.push_back(from_double(u->dtype, double(i)));
      return a;
    }
    case Op::DEFINE_VAR:
      return {{}, u->dtype, {ConstValue::of_int(eval_dim(u, b))}};
    case Op::RESHAPE: {
      Array a = *in[0];
      a.shape = eval_shape(u->src(1)->src(), b);
      if (numel(a.shape) != int64_t(a.values.size())) throw OracleError("reshape size mismatch");
      return a;
    }
    case Op::EXPAND:
      return remap(*in[0], eval_shape(u->src(1)->src(), b), [&](const auto& o, auto& i) {
        for (size_t k = 0; k < i.size(); ++k) i[k] = in[0]->shape[k] == 1 ? 0 : o[k];
        return true;
      });
    case Op::PERMUTE: {
      auto order = consts(u->src(1));
      std::vector<int64_t> s;
      for (int64_t o : order) s.push_back(in[0]->shape[size_t(o)]);
      return remap(*in[0], s, [&](const auto& o, auto& i) {
        for (size_t k = 0; k < o.size(); ++k) i[size_t(order[k])] = o[k];
        return true;
      });
    }
    case Op::PAD: {
      auto bef = eval_shape(u->src(1)->src(), b), aft = eval_shape(u->src(2)->src(), b);
      std::vector<int64_t> s = in[0]->shape;
      for (size_t k = 0; k < s.size(); ++k) s[k] += bef[k] + aft[k];
      return remap(*in[0], s, [&](const auto& o, auto& i) {
        for (size_t k = 0; k < i.size(); ++k) {
          i[k] = o[k] - bef[k];
          if (i[k] < 0 || i[k] >= in[0]->shape[k]) return false;
        }
        return true;
      });
    }
    case Op::SHRINK: {
      auto beg = eval_shape(u->src(1)->src(), b), end = eval_shape(u->src(2)->src(), b);
      std::vector<int64_t> s;
      for (size_t k = 0; k < beg.size(); ++k) s.push_back(end[k] - beg[k]);
      return remap(*in[0], s, [&](const auto& o, auto& i) {
        for (size_t k = 0; k < i.size(); ++k) i[k] = o[k] + beg[k];
        return true;
      });
    }
    case Op::FLIP: {
      auto f = consts(u->src(1));
      return remap(*in[0], in[0]->shape, [&](const auto& o, auto& i) {
        for (size_t k = 0; k < i.size(); ++k) i[k] = f[k] ? in[0]->shape[k] - 1 - o[k] : o[k];
        return true;
      });
    }
    case Op::REDUCE: {
      Op op = u->arg<ReduceArg>().op;
      DType ed = eval_dtype(u->dtype);
      std::vector<int64_t> s = in[0]->shape;
      for (int64_t a : consts(u->src(1))) s[size_t(a)] = 1;
      ConstValue init = op == Op::ADD   ? from_double(ed, 0)
                        : op == Op::MUL ? from_double(ed, 1)
                        : is_float(ed)  ? ConstValue::of_float(-INFINITY)
                        : is_bool(ed)   ? ConstValue::of_bool(false)
                                        : ConstValue::of_int(int_min(ed));
      Array out{s, u->dtype, std::vector<ConstValue>(size_t(numel(s)), init)};
      std::vector<int64_t> idx(in[0]->shape.size(), 0);
      for (const ConstValue& v : in[0]->values) {
        int64_t off = 0;
        for (size_t k = 0; k < idx.size(); ++k) off = off * s[k] + (s[k] == 1 ? 0 : idx[k]);
        ConstValue args[2] = {out.values[size_t(off)], v};
        auto r = ref::alu(op, ed, args);
        if (!r) throw OracleError("reduce undefined");
        out.values[size_t(off)] = *r;
        for (size_t k = idx.size(); k-- > 0;) {
          if (++idx[k] < in[0]->shape[k]) break;
          idx[k] = 0;
        }
      }
      return out;
    }
    case Op::BITCAST: {
      Array a{in[0]->shape, u->dtype, {}};
      for (const ConstValue& v : in[0]->values) a.values.push_back(bitcast_value(in[0]->dtype, u->dtype, v));
      return a;
    }
    default:
      break;
  }
  if (!is_alu(u->op) && u->op != Op::CAST) throw OracleError("no semantics for " + std::string(op_name(u->op)));
  DType ed = eval_dtype(u->dtype);
  // a comparison's or a cast's operands are read at their own dtype (a uint64 unsigned)
  DType od = operand_dtype(u);
  if (od != dtypes::void_) od = eval_dtype(od);
  Array out{in[0]->shape, u->dtype, {}};
  std::vector<ConstValue> args(in.size());
  for (size_t e = 0; e < in[0]->values.size(); ++e) {
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k]->shape != out.shape) throw OracleError("operand shapes differ");
      args[k] = in[k]->values[e];
    }
    auto r = ref::alu(u->op, ed, args, od);
    if (!r) {
      if (!is_float(ed)) throw OracleError("undefined " + std::string(op_name(u->op)) + " on integers");
      r = ConstValue::of_float(NAN);
    }
    out.values.push_back(*r);
  }
  return out;
}

Array evaluate(const UOp* root, const Bindings& b) {
  std::unordered_map<const UOp*, Array> memo;
  std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    auto srcs = tensor_sources(u);
    if (i < srcs.size()) {
      const UOp* s = srcs[i++];
      if (!memo.contains(s)) stack.push_back({s, 0});
      continue;
    }
    const UOp* done = u;
    stack.pop_back();
    if (memo.contains(done)) continue;
    std::vector<const Array*> in;
    for (const UOp* s : srcs) in.push_back(&memo.at(s));
    memo.emplace(done, eval_node(done, in, b));
  }
  return memo.at(root);
}

}  // namespace kiln::oracle

#include "generator/ir/text.h"

#include "generator/ir/verify.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>

namespace kiln {

// ---------------------------------------------------------------- printing

static std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string to_string(const ConstValue& v, DType d) {
  if (v.is_invalid()) return "invalid";
  if (is_bool(d)) return (v.is_float() ? v.f != 0 : v.i != 0) ? "true" : "false";
  if (v.is_float()) return float_repr(v.f);
  if (v.is_bool()) return v.i ? "true" : "false";
  // uint64 values are carried as int64 bit patterns
  if (d.scalar == Scalar::Uint64) return std::to_string(static_cast<uint64_t>(v.i));
  return std::to_string(v.i);
}

static std::string op_lower(Op op) {
  std::string s(op_name(op));
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// the head and the atoms of a node: "(OP:dtype atoms" without sources or the closing paren
static std::string head(const UOp* u) {
  std::string s = "(";
  s += u->op == Op::DEFINE_VAR ? "VAR" : std::string(op_name(u->op));
  s += ":" + to_string(u->dtype);
  auto atom = [&](const std::string& a) { s += " " + a; };
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, ConstValue>)
          atom(to_string(v, u->dtype));
        else if constexpr (std::is_same_v<T, VarArg>) {
          atom(std::string(v.name));
          auto bound = [&](int64_t i, double f) {
            if (is_float(u->dtype)) return float_repr(f);
            return to_string(ConstValue::of_int(i), u->dtype.base());
          };
          atom(bound(v.min, v.fmin));
          atom(bound(v.max, v.fmax));
          if (v.multiple_of != 1) atom("mul=" + std::to_string(v.multiple_of));
        } else if constexpr (std::is_same_v<T, RangeArg>) {
          atom(std::to_string(v.axis));
          atom(std::string(axis_type_name(v.type)));
          if (v.sub != -1) atom("sub=" + std::to_string(v.sub));
        } else if constexpr (std::is_same_v<T, ParamArg>) {
          atom("slot=" + std::to_string(v.slot));
          if (v.size != -1) atom("size=" + std::to_string(v.size));
          if (!v.name.empty()) atom("name=" + std::string(v.name));
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          atom(op_lower(v.op));
          if (v.horizontal != 0) atom("h=" + std::to_string(v.horizontal));
        } else if constexpr (std::is_same_v<T, Name>)
          atom(std::string(v.s));
        else if constexpr (std::is_same_v<T, int64_t>)
          atom(std::to_string(v));
      },
      u->arg());
  if (u->tag != 0) atom("tag=" + std::to_string(u->tag));
  return s;
}

std::string print(const UOp* root) {
  // iterative tree walk writing straight into the output: linear in the text it produces
  std::string out;
  std::vector<std::pair<const UOp*, uint32_t>> stack{{root, 0}};
  out += head(root);
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->nsrc()) {
      const UOp* s = u->src(i++);
      out += ' ';
      out += head(s);
      stack.push_back({s, 0});
      continue;
    }
    out += ')';
    stack.pop_back();
  }
  return out;
}

std::string print_graph(const UOp* root) {
  std::unordered_map<const UOp*, size_t> num;
  std::string out;
  for (const UOp* u : toposort(root)) {
    size_t n = num.size();
    num[u] = n;
    out += "%" + std::to_string(n) + " = " + head(u);
    for (const UOp* x : u->src()) out += " %" + std::to_string(num[x]);
    out += ")\n";
  }
  return out;
}

// ---------------------------------------------------------------- parsing

namespace {

class Parser {
 public:
  Parser(Context& ctx, std::string_view text, bool verify) : ctx_(ctx), t_(text), verify_(verify) {}

  const UOp* parse_all(ParseError* err) {
    const UOp* r = nullptr;
    skip_ws();
    if (peek() == '%') {
      // bindings form: %name = node, ... ; the last binding is the root
      while (!failed_ && pos_ < t_.size()) {
        std::string_view name = atom();
        skip_ws();
        if (peek() != '=') {
          fail("expected '=' after " + std::string(name));
          break;
        }
        ++pos_;
        const UOp* u = node();
        if (!u) break;
        refs_[std::string(name)] = u;
        r = u;
        skip_ws();
      }
    } else {
      r = node();
      skip_ws();
      if (r && pos_ < t_.size()) fail("unexpected text after the expression");
    }
    if (failed_) {
      if (err) *err = err_;
      return nullptr;
    }
    if (!r) {
      if (err) *err = {pos_, "empty input"};
      return nullptr;
    }
    return r;
  }

 private:
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  std::string_view atom() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[pos_])) && t_[pos_] != '(' &&
           t_[pos_] != ')' && t_[pos_] != '=')
      ++pos_;
    // keyword atoms keep their '=' (key=value) unless the '=' ends a binding name
    if (pos_ < t_.size() && t_[pos_] == '=' && b < pos_ && t_[b] != '%') {
      ++pos_;
      while (pos_ < t_.size() && !std::isspace(static_cast<unsigned char>(t_[pos_])) && t_[pos_] != '(' &&
             t_[pos_] != ')')
        ++pos_;
    }
    return t_.substr(b, pos_ - b);
  }
  std::nullptr_t fail(std::string msg, size_t at = std::string::npos) {
    if (!failed_) {
      failed_ = true;
      err_ = {at == std::string::npos ? pos_ : at, std::move(msg)};
    }
    return nullptr;
  }

  static std::optional<int64_t> to_int(std::string_view s) {
    int64_t v = 0;
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
  }
  static std::optional<double> to_float(std::string_view s) {
    if (s == "inf" || s == "+inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan" || s == "-nan") return NAN;
    std::string tmp(s);
    char* end = nullptr;
    double v = std::strtod(tmp.c_str(), &end);
    if (tmp.empty() || end != tmp.c_str() + tmp.size()) return std::nullopt;
    return v;
  }

  // Iterative, so nesting depth is bounded by memory, not by the stack.
  const UOp* node() {
    struct Frame {
      Op op;
      DType dt;
      size_t head_at;
      std::vector<std::pair<std::string_view, size_t>> atoms;
      std::vector<const UOp*> srcs;
    };
    std::vector<Frame> st;
    while (true) {
      skip_ws();
      const UOp* done = nullptr;
      if (peek() == '%') {
        size_t at = pos_;
        std::string_view name = atom();
        auto it = refs_.find(std::string(name));
        if (it == refs_.end()) return fail("undefined reference " + std::string(name), at);
        done = it->second;
      } else if (peek() == '(') {
        ++pos_;
        size_t head_at = pos_;
        std::string_view hd = atom();
        auto colon = hd.find(':');
        if (colon == std::string_view::npos) return fail("expected OP:dtype, got '" + std::string(hd) + "'", head_at);
        std::string_view opname = hd.substr(0, colon), dtname = hd.substr(colon + 1);
        auto op = opname == "VAR" ? std::optional<Op>(Op::DEFINE_VAR) : parse_op(opname);
        if (!op) return fail("unknown op '" + std::string(opname) + "'", head_at);
        auto dt = parse_dtype(dtname);
        if (!dt) return fail("unknown dtype '" + std::string(dtname) + "'", head_at + colon + 1);
        st.push_back(Frame{*op, *dt, head_at, {}, {}});
        continue;
      } else if (st.empty()) {
        return fail(pos_ >= t_.size() ? "unexpected end of input, expected '('" : "expected '('");
      } else if (pos_ >= t_.size()) {
        return fail("unexpected end of input, expected ')'");
      } else if (peek() == ')') {
        ++pos_;
        Frame f = std::move(st.back());
        st.pop_back();
        done = build(f.op, f.dt, f.atoms, f.srcs, f.head_at);
        if (!done) return nullptr;
      } else {
        size_t at = pos_;
        std::string_view a = atom();
        if (a.empty()) return fail("unexpected character '" + std::string(1, peek()) + "'");
        if (!st.back().srcs.empty()) return fail("argument '" + std::string(a) + "' after the sources", at);
        st.back().atoms.push_back({a, at});
        continue;
      }
      if (st.empty()) return done;
      st.back().srcs.push_back(done);
    }
  }

  const UOp* build(Op op, DType dt, std::vector<std::pair<std::string_view, size_t>>& atoms,
                   std::vector<const UOp*>& srcs, size_t at) {
    int32_t tag = 0;
    // keyword atoms
    std::map<std::string_view, std::pair<std::string_view, size_t>> kw;
    std::vector<std::pair<std::string_view, size_t>> pos;
    for (auto& [a, p] : atoms) {
      auto eqp = a.find('=');
      if (eqp != std::string_view::npos)
        kw[a.substr(0, eqp)] = {a.substr(eqp + 1), p};
      else
        pos.push_back({a, p});
    }
    auto take_kw_int = [&](std::string_view k, int64_t def) -> std::optional<int64_t> {
      auto it = kw.find(k);
      if (it == kw.end()) return def;
      auto v = to_int(it->second.first);
      if (!v) {
        fail("expected an integer for " + std::string(k) + ", got '" + std::string(it->second.first) + "'",
             it->second.second);
        return std::nullopt;
      }
      kw.erase(it);
      return v;
    };
    auto t = take_kw_int("tag", 0);
    if (!t) return nullptr;
    tag = int32_t(*t);
    auto want = [&](size_t natoms, size_t nsrc_min, size_t nsrc_max) -> bool {
      if (pos.size() != natoms) {
        fail(std::string(op == Op::DEFINE_VAR ? "VAR" : op_name(op)) + " takes " + std::to_string(natoms) +
                 " argument(s), got " + std::to_string(pos.size()),
             at);
        return false;
      }
      if (srcs.size() < nsrc_min || srcs.size() > nsrc_max) {
        std::string n = nsrc_min == nsrc_max ? std::to_string(nsrc_min)
                                             : std::to_string(nsrc_min) + ".." + std::to_string(nsrc_max);
        fail(std::string(op == Op::DEFINE_VAR ? "VAR" : op_name(op)) + " takes " + n + " source(s), got " +
                 std::to_string(srcs.size()),
             at);
        return false;
      }
      return true;
    };
    auto int_at = [&](size_t i) -> std::optional<int64_t> {
      auto v = to_int(pos[i].first);
      if (!v) fail("expected an integer, got '" + std::string(pos[i].first) + "'", pos[i].second);
      return v;
    };
    // an integer of dtype dt, as carried: uint64 takes 0..2^64-1
    auto int_of = [&](DType dt, size_t i) -> std::optional<int64_t> {
      std::string_view v = pos[i].first;
      if (dt.scalar != Scalar::Uint64) return int_at(i);
      uint64_t u = 0;
      auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), u);
      if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) {
        fail("expected an integer in 0..18446744073709551615 for ulong, got '" + std::string(v) + "'", pos[i].second);
        return std::nullopt;
      }
      return int64_t(u);
    };
    const UOp* r = nullptr;
    switch (op) {
      case Op::CONST: {
        if (!want(1, 0, 0)) return nullptr;
        std::string_view v = pos[0].first;
        ConstValue c;
        if (v == "invalid")
          c = ConstValue::invalid();
        else if (is_bool(dt)) {
          if (v == "true" || v == "True" || v == "1")
            c = ConstValue::of_bool(true);
          else if (v == "false" || v == "False" || v == "0")
            c = ConstValue::of_bool(false);
          else
            return fail("expected true or false, got '" + std::string(v) + "'", pos[0].second);
        } else if (is_float(dt)) {
          auto f = to_float(v);
          if (!f) return fail("expected a number, got '" + std::string(v) + "'", pos[0].second);
          c = ConstValue::of_float(*f);
        } else if (dt.scalar == Scalar::Uint64) {
          auto u = int_of(dt, 0);
          if (!u) return nullptr;
          c = ConstValue::of_int(*u);
        } else if (is_int(dt)) {
          auto i = to_int(v);
          if (!i) return fail("expected an integer, got '" + std::string(v) + "'", pos[0].second);
          if (*i < int_min(dt) || *i > int_max(dt))
            return fail("constant " + std::string(v) + " out of range for " + to_string(dt), pos[0].second);
          c = ConstValue::of_int(*i);
        } else {
          return fail("a CONST needs a bool, int or float dtype, got " + to_string(dt), at);
        }
        r = ctx_.make(Op::CONST, c.is_invalid() ? dtypes::bool_ : dt, {}, c, tag);
        break;
      }
      case Op::DEFINE_VAR: {
        if (!want(3, 0, 0)) return nullptr;
        if (is_float(dt)) {
          auto lo = to_float(pos[1].first), hi = to_float(pos[2].first);
          if (!lo) return fail("expected a number, got '" + std::string(pos[1].first) + "'", pos[1].second);
          if (!hi) return fail("expected a number, got '" + std::string(pos[2].first) + "'", pos[2].second);
          if (!(*lo <= *hi))
            return fail("VAR range is empty: min " + std::string(pos[1].first) + " > max " + std::string(pos[2].first),
                        pos[1].second);
          r = ctx_.make(Op::DEFINE_VAR, dt, {}, VarArg{pos[0].first, 0, 0, 1, *lo, *hi}, tag);
          break;
        }
        if (!is_int(dt)) return fail("a VAR needs an integer or float dtype, got " + to_string(dt), at);
        auto lo = int_of(dt, 1), hi = int_of(dt, 2);
        if (!lo || !hi) return nullptr;
        if (exact_value(dt, *lo) > exact_value(dt, *hi))
          return fail("VAR range is empty: min " + std::string(pos[1].first) + " > max " + std::string(pos[2].first),
                      pos[1].second);
        auto mul = take_kw_int("mul", 1);
        if (!mul) return nullptr;
        if (*mul < 1) return fail("mul must be positive", at);
        r = ctx_.make(Op::DEFINE_VAR, dt, {}, VarArg{pos[0].first, *lo, *hi, *mul}, tag);
        break;
      }
      case Op::RANGE: {
        if (!want(2, 1, 64)) return nullptr;
        auto axis = int_at(0);
        if (!axis) return nullptr;
        std::optional<AxisType> type;
        for (int i = 0; i <= int(AxisType::Lane); ++i)
          if (axis_type_name(AxisType(i)) == pos[1].first) type = AxisType(i);
        if (!type) return fail("unknown axis type '" + std::string(pos[1].first) + "'", pos[1].second);
        auto sub = take_kw_int("sub", -1);
        if (!sub) return nullptr;
        r = ctx_.make(Op::RANGE, dt, srcs, RangeArg{int32_t(*axis), *type, int32_t(*sub)}, tag);
        break;
      }
      case Op::PARAM:
      case Op::BUFFER: {
        if (!want(0, 0, 64)) return nullptr;
        auto slot = take_kw_int("slot", -1), size = take_kw_int("size", -1);
        if (!slot || !size) return nullptr;
        std::string_view name;
        if (auto it = kw.find("name"); it != kw.end()) name = it->second.first, kw.erase(it);
        r = ctx_.make(op, dt, srcs, ParamArg{int32_t(*slot), *size, name}, tag);
        break;
      }
      case Op::REDUCE: {
        if (!want(1, 1, 64)) return nullptr;
        std::string up(pos[0].first);
        for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
        auto rop = parse_op(up);
        if (!rop || !(*rop == Op::ADD || *rop == Op::MUL || *rop == Op::MAX))
          return fail("REDUCE op must be add, mul or max, got '" + std::string(pos[0].first) + "'", pos[0].second);
        auto h = take_kw_int("h", 0);
        if (!h) return nullptr;
        r = ctx_.make(op, dt, srcs, ReduceArg{*rop, int32_t(*h)}, tag);
        break;
      }
      default: {
        if (is_alu(op)) {
          size_t n = in_group(op, G_UNARY) ? 1 : in_group(op, G_BINARY) ? 2 : 3;
          if (!want(0, n, n)) return nullptr;
          if (in_group(op, G_COMPARISON) && !is_bool(dt))
            return fail(std::string(op_name(op)) + " has dtype bool, got " + to_string(dt), at);
          if (op == Op::WHERE && !is_bool(srcs[0]->dtype))
            return fail("WHERE condition must be bool, got " + to_string(srcs[0]->dtype), at);
        } else if ((op == Op::CAST || op == Op::BITCAST) && !want(0, 1, 1)) {
          return nullptr;
        }
        Arg arg;
        if (pos.size() > 1) return fail(std::string(op_name(op)) + ": too many arguments", pos[1].second);
        if (pos.size() == 1) {
          if (auto i = to_int(pos[0].first))
            arg = *i;
          else
            arg = Name{pos[0].first};
        }
        r = ctx_.make(op, dt, srcs, arg, tag);
        break;
      }
    }
    if (!kw.empty())
      return fail("unknown argument '" + std::string(kw.begin()->first) + "='", kw.begin()->second.second);
    if (verify_ && r)
      if (auto e = verify_node(r)) return fail(std::string(op == Op::DEFINE_VAR ? "VAR" : op_name(op)) + ": " + *e, at);
    return r;
  }

  Context& ctx_;
  std::string_view t_;
  bool verify_;
  size_t pos_ = 0;
  bool failed_ = false;
  ParseError err_;
  std::unordered_map<std::string, const UOp*> refs_;
};

}  // namespace

const UOp* parse(Context& ctx, std::string_view text, ParseError* err) {
  return Parser(ctx, text, false).parse_all(err);
}
const UOp* parse_verified(Context& ctx, std::string_view text, ParseError* err) {
  return Parser(ctx, text, true).parse_all(err);
}

}  // namespace kiln

// The bounds prover's second opinion (bounds.cpp asks where its polynomials are inconclusive): Z3
// decides whether an index can leave its buffer. The index, its gate and the buffer's size become
// integer terms over the dims (in their declared ranges), the loops (each below its end) and, for
// what has no exact form here (a cast that may wrap, bits of a non-bool), a fresh integer inside
// the node's range. Every integer node is also given its [vmin, vmax], which range analysis proves.
// The query is "the gate holds and the index is below 0 or its last lane at or past the size";
// unsat is a proof. Z3's resource limit, not a clock, bounds the search, so the same kernel gets
// the same answer on every machine.
#include <z3++.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "generator/codegen/bounds_poly.h"
#include "generator/codegen/passes.h"

namespace kiln::codegen::bounds_detail {
namespace {

constexpr unsigned kResourceLimit = 2'000'000;  // Z3's rlimit units: about 2.4 s on a Xeon core
constexpr int64_t kCaseSplit = 64;              // the most values of one dim the solver tries one by one

class Translator {
 public:
  explicit Translator(z3::context& c) : c_(c) {}

  // The term of an integer node, or of a bool node as a Z3 bool.
  z3::expr term(const UOp* u) {
    if (auto it = memo_.find(u); it != memo_.end()) return it->second;
    z3::expr e = make(u);
    if (u->dtype.count == 1 && signed_int(u->dtype)) {
      // range analysis' bounds hold for every value (a dtype's own limits say nothing)
      if (u->imin() > int_min(u->dtype)) facts_.push_back(e >= c_.int_val(u->imin()));
      if (u->imax() < int_max(u->dtype)) facts_.push_back(e <= c_.int_val(u->imax()));
    }
    memo_.emplace(u, e);
    return e;
  }
  const std::vector<z3::expr>& facts() const { return facts_; }
  struct Dim {
    z3::expr v;
    int64_t lo, hi;  // its declared range
  };
  const std::vector<Dim>& dims() const { return dims_; }

 private:
  std::string name(char kind) { return kind + std::to_string(names_++); }
  z3::expr fresh(const UOp* u) {
    return is_bool(u->dtype) ? c_.bool_const(name('n').c_str()) : c_.int_const(name('n').c_str());
  }
  // integers carried in int64 and read as such (uint64's upper half is carried negative)
  static bool signed_int(DType d) { return is_int(d) && d.scalar != Scalar::Uint64; }
  static z3::expr floordiv(const z3::expr& a, const z3::expr& b) {
    // Z3's division is Euclidean (the remainder is never negative): one less where b < 0 leaves one
    z3::expr q = a / b;
    return z3::ite(b > 0 || z3::mod(a, b) == 0, q, q - 1);
  }
  static z3::expr cdiv(const z3::expr& a, const z3::expr& b) {
    z3::expr f = floordiv(a, b);
    return z3::ite((a >= 0) == (b > 0) || z3::mod(a, b) == 0, f, f + 1);
  }
  // true where the node's value is its operands' exact result: range analysis found it strictly
  // inside its dtype (where it could wrap or saturate it gives the dtype's limits)
  static bool exact_int(const UOp* u) {
    return signed_int(u->dtype) && u->imin() > int_min(u->dtype) && u->imax() < int_max(u->dtype);
  }

  z3::expr make(const UOp* u) {
    if (u->dtype.count != 1) return fresh(u);
    if (u->op == Op::CONST) {
      if (is_bool(u->dtype)) return c_.bool_val(u->cval().i != 0);
      if (is_int(u->dtype)) return c_.int_val(u->ival());
      return fresh(u);
    }
    if (u->op == Op::DEFINE_VAR) {
      // one constant per name: the same dim in another dtype is the same value
      std::string_view n = u->arg<VarArg>().name;
      z3::expr v = c_.int_const(("v_" + std::string(n)).c_str());
      if (!seen_.insert(std::string(n)).second) return v;
      if (n == kCoreVar) core_ = v;
      if (n == kCoresVar) cores_ = v;
      if (n != kCoreVar && n != kCoresVar) dims_.push_back({v, u->imin(), u->imax()});
      if ((n == kCoreVar || n == kCoresVar) && core_ && cores_)
        facts_.push_back(*core_ < *cores_);  // the runtime calls core 0 .. cores - 1
      return v;
    }
    if (u->op == Op::RANGE || u->op == Op::SPECIAL) {
      z3::expr v = c_.int_const(name('r').c_str());
      facts_.push_back(v >= 0);
      facts_.push_back(v < term(u->src(0)));
      return v;
    }
    auto s = [&](size_t i) { return term(u->src(i)); };
    bool b = is_bool(u->dtype);
    switch (u->op) {
      case Op::ADD:
        if (b) return s(0) || s(1);
        if (exact_int(u)) return s(0) + s(1);
        break;
      case Op::SUB:
        if (exact_int(u)) return s(0) - s(1);
        break;
      case Op::MUL:
        if (b) return s(0) && s(1);
        if (exact_int(u)) return s(0) * s(1);
        break;
      case Op::NEG:
        if (exact_int(u)) return -s(0);
        break;
      case Op::MAX:
        if (b) return s(0) || s(1);
        if (signed_int(u->dtype)) return z3::ite(s(0) >= s(1), s(0), s(1));
        break;
      case Op::FLOORDIV:
        if (exact_int(u)) return floordiv(s(0), s(1));
        break;
      case Op::FLOORMOD:
        if (exact_int(u)) return s(0) - floordiv(s(0), s(1)) * s(1);
        break;
      case Op::CDIV:
        if (exact_int(u)) return cdiv(s(0), s(1));
        break;
      case Op::CMOD:
        if (exact_int(u)) return s(0) - cdiv(s(0), s(1)) * s(1);
        break;
      case Op::AND:
        if (b) return s(0) && s(1);
        break;
      case Op::OR:
        if (b) return s(0) || s(1);
        break;
      case Op::XOR:
        if (b) return s(0) != s(1);
        if (u->src(1)->op == Op::CONST && u->src(1)->ival() == -1) return -s(0) - 1;  // ~x
        break;
      case Op::CMPLT:
        if (signed_int(u->src(0)->dtype) || is_bool(u->src(0)->dtype)) {
          if (is_bool(u->src(0)->dtype)) return !s(0) && s(1);
          return s(0) < s(1);
        }
        break;
      case Op::CMPNE:
      case Op::CMPEQ:
        if (signed_int(u->src(0)->dtype) || is_bool(u->src(0)->dtype))
          return u->op == Op::CMPNE ? s(0) != s(1) : s(0) == s(1);
        break;
      case Op::WHERE:
        if (b || signed_int(u->dtype)) return z3::ite(s(0), s(1), s(2));
        break;
      case Op::CAST:
        // to a type that holds the operand's whole range: the same value
        if (signed_int(u->dtype) && signed_int(u->src(0)->dtype) && u->src(0)->imin() >= int_min(u->dtype) &&
            u->src(0)->imax() <= int_max(u->dtype))
          return s(0);
        if (signed_int(u->dtype) && is_bool(u->src(0)->dtype)) return z3::ite(s(0), c_.int_val(1), c_.int_val(0));
        break;
      default:
        break;
    }
    return fresh(u);
  }

  z3::context& c_;
  std::unordered_map<const UOp*, z3::expr> memo_;
  std::vector<z3::expr> facts_;
  std::optional<z3::expr> core_, cores_;
  std::vector<Dim> dims_;
  std::unordered_set<std::string> seen_;  // the vars' names
  int names_ = 0;
};

// the query's answer within `rlimit`
z3::check_result check(z3::context& c, const std::vector<z3::expr>& query, unsigned rlimit) {
  z3::solver s(c);
  z3::params p(c);
  p.set("rlimit", rlimit);
  s.set(p);
  for (const z3::expr& e : query) s.add(e);
  return s.check();
}

}  // namespace

bool solver_proves(const UOp* addr, const UOp* gate, const UOp* size, int per, int lanes) {
  try {
    z3::context c;
    Translator t(c);
    z3::expr i = t.term(addr), n = t.term(size) * per;
    std::optional<z3::expr> g;
    if (gate) g = t.term(gate);
    std::vector<z3::expr> query(t.facts().begin(), t.facts().end());  // after every term: theirs too
    if (g) query.push_back(*g);
    query.push_back(i < 0 || i + (lanes - 1) >= n);
    // most queries are decided quickly; the search for the rest is long
    if (z3::check_result r = check(c, query, kResourceLimit / 5); r != z3::unknown) return r == z3::unsat;
    // Products and divisions by a dim are nonlinear. Where a dim takes few values, each value makes
    // them linear, and a case is decided far faster than the whole: every case must be unsat.
    const Translator::Dim* fewest = nullptr;
    for (const Translator::Dim& d : t.dims())
      if (!fewest || d.hi - d.lo < fewest->hi - fewest->lo) fewest = &d;
    if (fewest && fewest->hi - fewest->lo < kCaseSplit) {
      bool all = true;
      for (int64_t x = fewest->lo; x <= fewest->hi && all; ++x) {
        query.push_back(fewest->v == c.int_val(x));
        z3::check_result r = check(c, query, kResourceLimit);
        if (r == z3::sat) return false;  // a way out at this value
        all = r == z3::unsat;
        query.pop_back();
      }
      if (all) return true;
    }
    return check(c, query, kResourceLimit) == z3::unsat;
  } catch (const z3::exception&) {
    return false;  // not a proof
  }
}

}  // namespace kiln::codegen::bounds_detail

// Rules as data are proven: every rw(lhs, rhs) rule of the symbolic matchers is translated to
// Z3 and checked for lhs == rhs wherever lhs is defined, in two theories: unbounded integers
// (the index type) and 32-bit wrapping integers (fixed-width ints). A rule whose dtype
// constraints exclude a theory is not checked in it; ops outside integer/bool algebra (casts,
// floats, ranges) are skipped and counted.
#include <gtest/gtest.h>

#if KILN_HAVE_Z3
#include <z3++.h>

#include <map>
#include <optional>
#include <string>

#include "generator/symbolic/symbolic.h"

namespace kiln {
namespace {

enum class Sort { Any, Int, Bool };

class Translator {
 public:
  Translator(z3::context& c, bool bv) : c_(c), bv_(bv) {}

  // nullopt: the pattern uses something outside the theory
  std::optional<z3::expr> tr(const UPat& p, Sort want, int root_op = -1) {
    const PatNode& n = p.node();
    if (!n.alternatives.empty() || n.mode == UPat::SrcMode::Repeat || n.any_len) return std::nullopt;
    if (!dtypes_ok(n)) return std::nullopt;
    bool bool_dt =
        !n.dtypes.empty() && std::all_of(n.dtypes.begin(), n.dtypes.end(), [](DType d) { return is_bool(d); });
    if (bool_dt) {
      if (want == Sort::Int) return std::nullopt;
      want = Sort::Bool;
    }
    if (n.src.empty() && n.capture >= 0 && (n.ops.empty() || n.single_op == int(Op::CONST)) && !n.const_num && !n.arg)
      return capture(n.capture, want);
    if (n.const_num) {
      if (n.const_num->is_float()) return std::nullopt;
      if (want == Sort::Bool) return c_.bool_val(n.const_num->i != 0);
      return lit(n.const_num->i);
    }
    if (n.arg) {
      const auto* cv = std::get_if<ConstValue>(&*n.arg);
      if (!cv || !cv->is_bool() || want == Sort::Int) return std::nullopt;
      return c_.bool_val(cv->i != 0);
    }
    int opi = root_op >= 0 ? root_op : n.single_op;
    if (opi < 0) return std::nullopt;
    Op op = Op(opi);
    std::optional<z3::expr> r = node(op, n, want);
    if (r && n.capture >= 0) {  // a named inner node must equal its binding elsewhere
      auto it = caps_.find(n.capture);
      if (it == caps_.end())
        caps_.emplace(n.capture, *r);
      else
        side_.push_back(it->second == *r);
    }
    return r;
  }

  std::vector<z3::expr> side_;  // definedness of the translated expressions

 private:
  bool dtypes_ok(const PatNode& n) const {
    if (n.dtypes.empty()) return true;
    for (DType d : n.dtypes)
      if (is_bool(d) || (bv_ ? d == dtypes::int32 : d == dtypes::weakint)) return true;
    return false;
  }
  z3::expr lit(int64_t v) { return bv_ ? c_.bv_val(v, 32) : c_.int_val(v); }
  std::optional<z3::expr> capture(int slot, Sort want) {
    auto it = caps_.find(slot);
    if (it != caps_.end()) {
      if ((want == Sort::Bool) != it->second.is_bool() && want != Sort::Any) return std::nullopt;
      return it->second;
    }
    std::string name(capture_name(slot));
    z3::expr e = want == Sort::Bool ? c_.bool_const(name.c_str())
                 : bv_              ? c_.bv_const(name.c_str(), 32)
                                    : c_.int_const(name.c_str());
    caps_.emplace(slot, e);
    return e;
  }
  // floor division and modulo (the seeds' // and %), defined where the divisor is non-zero
  z3::expr floordiv(const z3::expr& a, const z3::expr& b) {
    side_.push_back(b != lit(0));
    if (bv_) {
      z3::expr q = z3::to_expr(c_, Z3_mk_bvsdiv(c_, a, b)), r = z3::to_expr(c_, Z3_mk_bvsrem(c_, a, b));
      return z3::ite(r != lit(0) && ((r < lit(0)) != (b < lit(0))), q - lit(1), q);
    }
    // Z3's integer div is Euclidean; floor it for negative divisors
    z3::expr e = a / b, m = z3::mod(a, b);
    return z3::ite(b > 0 || m == 0, e, e - 1);
  }
  z3::expr floormod(const z3::expr& a, const z3::expr& b) { return a - floordiv(a, b) * b; }

  std::optional<z3::expr> node(Op op, const PatNode& n, Sort want) {
    auto src = [&](size_t i, Sort s) { return i < n.src.size() ? tr(n.src[i], s) : std::nullopt; };
    auto ints2 = [&]() -> std::optional<std::pair<z3::expr, z3::expr>> {
      auto a = src(0, Sort::Int), b = src(1, Sort::Int);
      if (!a || !b || a->is_bool() || b->is_bool()) return std::nullopt;
      return std::make_pair(*a, *b);
    };
    switch (op) {
      case Op::ADD:
      case Op::MUL:
      case Op::FLOORDIV:
      case Op::FLOORMOD: {
        if (want == Sort::Bool || n.src.size() != 2) return std::nullopt;
        auto ab = ints2();
        if (!ab) return std::nullopt;
        auto [a, b] = *ab;
        if (op == Op::ADD) return a + b;
        if (op == Op::MUL) return a * b;
        if (op == Op::FLOORDIV) return floordiv(a, b);
        return floormod(a, b);
      }
      case Op::MAX: {
        if (want == Sort::Bool) return std::nullopt;
        auto ab = ints2();
        if (!ab) return std::nullopt;
        return z3::ite(ab->first >= ab->second, ab->first, ab->second);
      }
      case Op::CMPLT: {
        if (want == Sort::Int) return std::nullopt;
        auto ab = ints2();
        if (!ab) return std::nullopt;
        return ab->first < ab->second;
      }
      case Op::CMPNE:
      case Op::XOR:
      case Op::AND:
      case Op::OR: {
        if (n.src.size() != 2) return std::nullopt;
        Sort s = (op == Op::CMPNE) ? Sort::Any : want;
        auto a = src(0, s);
        if (!a) return std::nullopt;
        auto b = src(1, a->is_bool() ? Sort::Bool : Sort::Int);
        if (!b || a->is_bool() != b->is_bool()) return std::nullopt;
        if (op == Op::CMPNE) return want == Sort::Int ? std::nullopt : std::optional<z3::expr>(*a != *b);
        if (a->is_bool()) {
          if (op == Op::XOR) return *a != *b;
          return op == Op::AND ? (*a && *b) : (*a || *b);
        }
        if (!bv_) return std::nullopt;  // bitwise ops on unbounded ints: not in this theory
        return op == Op::XOR ? (*a ^ *b) : op == Op::AND ? (*a & *b) : (*a | *b);
      }
      case Op::WHERE: {
        if (n.src.size() != 3) return std::nullopt;
        auto cnd = src(0, Sort::Bool);
        auto t = src(1, want);
        if (!cnd || !t) return std::nullopt;
        auto f = src(2, t->is_bool() ? Sort::Bool : Sort::Int);
        if (!f || t->is_bool() != f->is_bool()) return std::nullopt;
        return z3::ite(*cnd, *t, *f);
      }
      case Op::TRUNC:
        return n.src.size() == 1 ? src(0, want) : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  z3::context& c_;
  bool bv_;
  std::map<int, z3::expr> caps_;
};

struct Tally {
  int proven = 0, skipped = 0;
  std::vector<std::string> failures;
};

void prove(const PatternMatcher& pm, bool bv, Tally& t) {
  for (const Rule* r : pm.rules()) {
    if (!r->rhs) continue;
    std::vector<int> roots;
    const PatNode& root = r->pat.node();
    if (root.single_op >= 0 || root.ops.empty())
      roots.push_back(root.single_op);
    else
      root.ops.for_each([&](Op o) { roots.push_back(int(o)); });
    for (int op : roots) {
      z3::context c;
      Translator tr(c, bv);
      auto lhs = tr.tr(r->pat, Sort::Any, op);
      if (!lhs) {
        ++t.skipped;
        continue;
      }
      std::vector<z3::expr> lhs_defined = tr.side_;
      tr.side_.clear();
      auto rhs = tr.tr(*r->rhs, lhs->is_bool() ? Sort::Bool : Sort::Int);
      if (!rhs || rhs->is_bool() != lhs->is_bool()) {
        ++t.skipped;
        continue;
      }
      z3::solver s(c);
      for (const auto& e : lhs_defined) s.add(e);
      z3::expr rhs_defined = c.bool_val(true);
      for (const auto& e : tr.side_) rhs_defined = rhs_defined && e;
      s.add(!rhs_defined || *lhs != *rhs);
      if (s.check() == z3::unsat) {
        ++t.proven;
      } else {
        t.failures.push_back(r->name + " (" + (bv ? "int32" : "index") + ", root " +
                             std::string(op >= 0 ? op_name(Op(op)) : "any") + "): counterexample " +
                             s.get_model().to_string());
      }
    }
  }
}

TEST(RuleProofs, RulesAsDataAreSound) {
  PatternMatcher all = sym() + pm_cast_weak() + pm_move_where_on_load();
  Tally index, wrap;
  prove(all, false, index);
  prove(all, true, wrap);
  std::string fails;
  for (const auto& f : index.failures) fails += f + "\n";
  for (const auto& f : wrap.failures) fails += f + "\n";
  EXPECT_TRUE(fails.empty()) << fails;
  std::cout << "rules as data: index ints " << index.proven << " proven, " << index.skipped << " outside the theory; "
            << "int32 " << wrap.proven << " proven, " << wrap.skipped << " outside the theory\n";
  // the proofs must cover the algebra: most rw() rules are integer algebra
  EXPECT_GE(index.proven, 20);
  EXPECT_GE(wrap.proven, 10);
}

TEST(RuleProofs, AWrongRuleIsCaught) {
  using namespace pat;
  // (x // c0) * c0 -> x is false for x not a multiple of c0
  PatternMatcher wrong({rw((x / c0) * c0, x), rw(x + 0, x)});
  Tally t;
  prove(wrong, false, t);
  EXPECT_EQ(t.proven, 1);
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_NE(t.failures[0].find("test_rule_proofs.cpp"), std::string::npos) << t.failures[0];
}

}  // namespace
}  // namespace kiln

#else
TEST(RuleProofs, NeedsZ3) { GTEST_FAIL() << "kiln was configured without Z3 (libz3-dev): rule proofs cannot run"; }
#endif

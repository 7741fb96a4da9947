// The bounds prover's insides (bounds.h is its interface): exact polynomials over atoms (the dims,
// loops and opaque dim expressions), their bounds, the text of an index, and the Prover, whose
// exact forms and per-node bounds are in bounds_exact.cpp and whose proofs are in bounds.cpp.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "generator/codegen/bounds.h"
#include "generator/ir/dtype.h"
#include "generator/ir/uop.h"

namespace kiln::codegen::bounds_detail {

inline constexpr size_t kMaxCandidates = 16;  // bounds kept per node and side
inline constexpr size_t kMaxDegree = 6;       // of a monomial
inline constexpr int kRelaxDepth = 3;         // opaque dim expressions replaced by their bounds, nested
inline const i128 kHuge = i128(1) << 100;     // coefficients past this give up (sums stay in i128)

struct Overflow {};

// Z3's verdict (bounds_z3.cpp): true where no value of the dims and loops puts the index (of
// `lanes` elements) below 0 or past `size` * `per` while `gate` (or null) holds.
bool solver_proves(const UOp* addr, const UOp* gate, const UOp* size, int per, int lanes);

inline i128 gcd(i128 a, i128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
inline i128 floor_div(i128 a, i128 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline i128 checked_mul(i128 a, i128 b) {
  i128 r;
  if (__builtin_mul_overflow(a, b, &r)) throw Overflow{};
  return r;
}

// A polynomial with rational coefficients (numerators over one denominator) in atoms: dims, dim
// expressions kiln keeps opaque, quotients of them by constants, and (before they are bounded) loops.
struct Poly {
  std::map<std::vector<uint32_t>, i128> t;  // monomial (atom ids, sorted, repeated for a power) -> numerator
  i128 den = 1;
  bool operator==(const Poly&) const = default;
};

inline void normalize(Poly& p) {
  for (auto it = p.t.begin(); it != p.t.end();) it = it->second == 0 ? p.t.erase(it) : std::next(it);
  if (p.den < 0) {
    p.den = -p.den;
    for (auto& [m, c] : p.t) c = -c;
  }
  i128 g = p.den;
  for (const auto& [m, c] : p.t) g = gcd(g, c);
  if (g > 1) {
    for (auto& [m, c] : p.t) c /= g;
    p.den /= g;
  }
  if (p.den > kHuge) throw Overflow{};
  for (const auto& [m, c] : p.t)
    if (c > kHuge || c < -kHuge) throw Overflow{};
}
inline Poly konst(i128 c) {
  Poly p;
  if (c) p.t[{}] = c;
  normalize(p);
  return p;
}
inline Poly monomial(uint32_t a) {
  Poly p;
  p.t[{a}] = 1;
  return p;
}
inline Poly add(const Poly& a, const Poly& b, i128 sb = 1) {  // a + sb * b
  i128 g = gcd(a.den, b.den);
  i128 fa = b.den / g, fb = a.den / g;
  Poly r;
  r.den = checked_mul(a.den, fa);
  for (const auto& [m, c] : a.t) r.t[m] += checked_mul(c, fa);
  for (const auto& [m, c] : b.t) r.t[m] += checked_mul(sb * c, fb);
  normalize(r);
  return r;
}
inline Poly mul(const Poly& a, const Poly& b) {
  Poly r;
  r.den = checked_mul(a.den, b.den);
  for (const auto& [ma, ca] : a.t)
    for (const auto& [mb, cb] : b.t) {
      std::vector<uint32_t> m(ma.size() + mb.size());
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), m.begin());
      if (m.size() > kMaxDegree) throw Overflow{};
      r.t[m] += checked_mul(ca, cb);
    }
  normalize(r);
  return r;
}
inline Poly scale(const Poly& a, i128 num, i128 den) {
  Poly r = a;
  for (auto& [m, c] : r.t) c = checked_mul(c, num);
  r.den = checked_mul(r.den, den);
  normalize(r);
  return r;
}

struct Bounds {
  std::vector<Poly> lo, hi;  // the value is at least every lo and at most every hi, at every point
};

inline void push(std::vector<Poly>& v, Poly p) {
  if (v.size() < kMaxCandidates && std::find(v.begin(), v.end(), p) == v.end()) v.push_back(std::move(p));
}

struct Atom {
  // Loop: depends on a loop, bounded before any proof; Digit: (node % divisor) // (divisor / m), in [0, m - 1]
  enum Kind { Dim, Quotient, Remainder, Digit, Loop } kind;
  const UOp* node;  // Dim and Loop: the node; Quotient and Remainder: the dividend
  int64_t divisor = 0;
  i128 lo = 0, hi = 0;
};

// an INDEX's comparison `x < y` (upper: x <= y - 1) or `!(x < y)` (x >= y)
struct Conjunct {
  const UOp* x;
  const UOp* y;
  bool upper;
};

inline bool const_int(const UOp* u, int64_t& v) {
  if (u->op != Op::CONST || !is_int(u->dtype)) return false;
  v = u->ival();
  return true;
}

// the divisor c of `x op c` when it is a positive constant and the op floors there
inline int64_t floor_divisor(const UOp* u) {
  int64_t c = 0;
  if (u->nsrc() != 2 || !const_int(u->src(1), c)) return 0;
  bool nonneg = u->src(0)->exact_lo() >= 0;
  switch (u->op) {
    case Op::FLOORDIV:
    case Op::FLOORMOD:
      return c > 0 ? c : 0;
    case Op::CDIV:
    case Op::CMOD:
      return c > 0 && nonneg ? c : 0;
    case Op::SHR:
      return c >= 0 && c < 62 && nonneg ? int64_t(1) << c : 0;
    case Op::AND:
      return c > 0 && (c & (c + 1)) == 0 && nonneg ? c + 1 : 0;
    default:
      return 0;
  }
}
inline bool is_quotient(const UOp* u) { return u->op == Op::FLOORDIV || u->op == Op::CDIV || u->op == Op::SHR; }
inline bool is_remainder(const UOp* u) { return u->op == Op::FLOORMOD || u->op == Op::CMOD || u->op == Op::AND; }

inline std::string expr_text(const UOp* u) {
  int64_t c = 0;
  if (const_int(u, c)) return std::to_string(c);
  if (u->op == Op::CONST && u->dtype == dtypes::bool_) return u->ival() ? "true" : "false";
  if (u->op == Op::DEFINE_VAR) return std::string(u->arg<VarArg>().name);
  if (u->op == Op::RANGE) return "r" + std::to_string(u->arg<RangeArg>().axis);
  if (u->op == Op::SPECIAL) return std::string(u->arg<Name>().s);
  if (u->op == Op::CAST) return expr_text(u->src(0));
  const char* sym = nullptr;
  switch (u->op) {
    case Op::ADD:
      sym = " + ";
      break;
    case Op::SUB:
      sym = " - ";
      break;
    case Op::MUL:
      sym = "*";
      break;
    case Op::CDIV:
      sym = " / ";
      break;
    case Op::FLOORDIV:
      sym = " // ";
      break;
    case Op::CMOD:
    case Op::FLOORMOD:
      sym = " % ";
      break;
    case Op::SHR:
      sym = " >> ";
      break;
    case Op::SHL:
      sym = " << ";
      break;
    case Op::AND:
      sym = " & ";
      break;
    case Op::XOR:
      sym = " ^ ";
      break;
    case Op::CMPLT:
      sym = " < ";
      break;
    default:
      break;
  }
  std::string out;
  auto operand = [&](const UOp* s) {
    bool leaf = s->op == Op::CONST || s->op == Op::DEFINE_VAR || s->op == Op::RANGE || s->op == u->op;
    return leaf ? expr_text(s) : "(" + expr_text(s) + ")";
  };
  if (sym && u->nsrc() == 2) return operand(u->src(0)) + sym + operand(u->src(1));
  out = std::string(op_name(u->op));
  std::transform(out.begin(), out.end(), out.begin(), [](char ch) { return char(std::tolower(ch)); });
  out += '(';
  for (size_t i = 0; i < u->nsrc(); ++i) out += (i ? ", " : "") + expr_text(u->src(i));
  return out + ')';
}

inline std::string num_text(i128 v) {
  if (v < 0) return "-" + num_text(-v);
  std::string s;
  do {
    s.insert(s.begin(), char('0' + int(v % 10)));
    v /= 10;
  } while (v);
  return s;
}

class Prover {
 public:
  AccessProof prove(const UOp* access);

 private:
  bool dims_only(const UOp* u);
  uint32_t atom(Atom::Kind k, const UOp* node, int64_t divisor = 0, int64_t m = 0);
  const Poly& exact(const UOp* u);
  Poly compute_exact(const UOp* u);
  const UOp* canonical(const UOp* u);
  const UOp* symbolic_quotient(const UOp* u);
  const Bounds& bounds(const UOp* u);
  Bounds op_bounds(const UOp* u);
  std::vector<Poly> bound_poly(const Poly& p, bool upper);
  std::vector<Poly> eliminate(const Poly& p, const std::vector<Conjunct>& cs, uint32_t used, bool upper);
  std::pair<i128, i128> range_of(const Poly& p);  // numerators over p.den
  int sign(const Poly& p);
  bool above_minus_one(const Poly& p, int depth);
  Poly substitute(const Poly& p, uint32_t a, const Poly& with);
  std::string text(const Poly& p);

  std::vector<Atom> atoms_;
  std::map<std::tuple<int, uint32_t, int64_t>, uint32_t> atom_of_;
  std::unordered_map<const UOp*, bool> dims_only_;
  std::unordered_map<const UOp*, Poly> exact_;
  std::unordered_map<const UOp*, Bounds> bounds_;
  // while a gated access is proven: bounds its comparisons give the values they compare
  std::vector<std::pair<Poly, Bounds>> gate_bounds_;
  // the first node of each op and operand polynomials (max(a, b) and max(b, a) are one atom), and
  // of each dividend polynomial
  std::map<std::tuple<int, int, std::vector<std::pair<std::map<std::vector<uint32_t>, i128>, i128>>>, const UOp*>
      by_op_;
  std::map<std::pair<std::map<std::vector<uint32_t>, i128>, i128>, const UOp*> by_poly_;
};

}  // namespace kiln::codegen::bounds_detail

// vectorize: a Lane loop (a RANGE of AxisType::Lane with a constant end W, made by the LANES opt)
// whose body is elementwise over its lanes becomes a loop of W / n iterations over vectors of
// n = vector_bytes / itemsize lanes (the target's vector registers), in the vector IR of ops.def:
// each iteration is the n consecutive lanes from L = r' * n on, loads and stores of consecutive
// elements are vector LOADs and STOREs, arithmetic is lanewise on T.vec(n), a value the loop does
// not vary is broadcast by STACK, and an accumulator of one element per lane is a BUFFER of
// vectors. Every renderer then writes the loop as it is.
//
// It runs on the final graph, after the decompositions and the dtypes are committed: what it
// qualifies is what the renderer gets (the exp2 polynomial's bit casts vectorize, a libm call
// would not), and the rules of the stages before never see vectors.
//
// A loop qualifies when every node of its body (the nodes that depend on its range, as the
// linearizer places them) is one of: integer index math affine in the lane; a load or store of
// consecutive elements (an input or output at stride 1 with no gate, or an accumulator of one
// element per lane); arithmetic, comparisons, selects and casts of such values, in elements of 4
// or 8 bytes, one size per loop (a comparison's mask has the size of what it compares), W lanes
// being whole vectors. Lanes must not see each other's elements: a buffer the loop stores to at
// several addresses (the rows of a register tile) is stored at addresses provably a vector's
// lanes apart or more, and read where it is stored or as far from it, and a stored value that
// varies with the lane is a vector. An
// accumulator that a loop left scalar stores to stays scalar, and so do the loops that use it (an
// accumulator of vectors is read element by element only, as a horizontal sum does). Other loops
// stay scalar loops for the C compiler to vectorize.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "generator/codegen/passes.h"

namespace kiln::codegen {

namespace {

// the bytes of a value a vector can hold (4 or 8), or 0
int vector_elem_size(DType d) {
  if (d.count != 1 || d.ptr) return 0;
  switch (d.scalar) {
    case Scalar::Int32:
    case Scalar::Uint32:
    case Scalar::Float32:
      return 4;
    case Scalar::Int64:
    case Scalar::Uint64:
    case Scalar::Float64:
      return 8;
    default:
      return 0;
  }
}

const UOp* through_after(const UOp* b) {
  while (b->op == Op::AFTER) b = b->src(0);
  return b;
}

// the accumulator an INDEX addresses (through AFTER), or null for a buffer in memory
const UOp* register_of(const UOp* idx) {
  if (idx->op != Op::INDEX) return nullptr;
  const UOp* b = through_after(idx->src(0));
  return b->op == Op::BUFFER ? b : nullptr;
}

// An integer index expression as a polynomial over the nodes that are no sum or product (ranges,
// vars, divisions): monomial (its atoms' ids, sorted) -> coefficient. Too many terms or a
// coefficient past 2^62: none.
using Monomial = std::vector<uint32_t>;
using Poly = std::map<Monomial, i128>;
constexpr i128 kPolyLimit = i128(1) << 62;
constexpr size_t kPolyTerms = 64;

class Polys {
 public:
  std::optional<Poly> of(const UOp* u) {
    if (auto it = memo_.find(u); it != memo_.end()) return it->second;
    std::optional<Poly> p = make(u);
    memo_.emplace(u, p);
    return p;
  }
  const UOp* atom(uint32_t id) const { return atoms_.at(id); }

 private:
  static bool fits(const Poly& p) {
    if (p.size() > kPolyTerms) return false;
    for (const auto& [m, c] : p)
      if (c >= kPolyLimit || c <= -kPolyLimit) return false;
    return true;
  }
  static void add_to(Poly& p, const Monomial& m, i128 c) {
    if ((p[m] += c) == 0) p.erase(m);
  }
  std::optional<Poly> make(const UOp* u) {
    Poly p;
    if (!is_int(u->dtype) || u->dtype.count != 1) return std::nullopt;
    if (u->op == Op::CONST) {
      if (u->ival() != 0) p[{}] = u->ival();
      return fits(p) ? std::optional<Poly>(p) : std::nullopt;
    }
    auto operands = [&]() -> std::optional<std::pair<Poly, Poly>> {
      std::optional<Poly> a = of(u->src(0)), b = of(u->src(1));
      if (!a || !b) return std::nullopt;
      return std::pair{*a, *b};
    };
    if ((u->op == Op::ADD || u->op == Op::SUB) && u->nsrc() == 2) {
      auto ab = operands();
      if (!ab) return std::nullopt;
      p = ab->first;
      for (const auto& [m, c] : ab->second) add_to(p, m, u->op == Op::ADD ? c : -c);
    } else if (u->op == Op::MUL && u->nsrc() == 2) {
      auto ab = operands();
      if (!ab || ab->first.size() * ab->second.size() > kPolyTerms) return std::nullopt;
      for (const auto& [ma, ca] : ab->first)
        for (const auto& [mb, cb] : ab->second) {
          Monomial m = ma;
          m.insert(m.end(), mb.begin(), mb.end());
          std::sort(m.begin(), m.end());
          i128 c = ca * cb;  // each under 2^62: the product fits in 128 bits
          if (c >= kPolyLimit || c <= -kPolyLimit) return std::nullopt;  // so do 64 such terms summed
          add_to(p, m, c);
        }
    } else if (u->op == Op::NEG && u->nsrc() == 1) {
      std::optional<Poly> a = of(u->src(0));
      if (!a) return std::nullopt;
      for (const auto& [m, c] : *a) p[m] = -c;
    } else if (u->op == Op::CAST && is_int(u->src(0)->dtype) && u->vmin().i == u->src(0)->vmin().i &&
               u->vmax().i == u->src(0)->vmax().i) {
      return of(u->src(0));  // every value fits: the same numbers
    } else {
      atoms_[u->id] = u;
      p[{u->id}] = 1;
    }
    if (!fits(p)) return std::nullopt;
    return p;
  }
  std::unordered_map<const UOp*, std::optional<Poly>> memo_;
  std::unordered_map<uint32_t, const UOp*> atoms_;
};

// Whether the vectors of `width` lanes at index expressions a and b (of the same lane stride)
// never overlap: |a - b| >= width for every value the nodes take where the loop runs. A var is
// bounded by the ranges around the loop too: a range of N / c iterations runs only where N >= c
// (the columns of a register tile: its rows N apart, N at least the tile's width there).
bool apart(Polys& polys, const UOp* a, const UOp* b, int64_t width) {
  std::optional<Poly> pa = polys.of(a), pb = polys.of(b);
  if (!pa || !pb) return false;
  Poly d = *pa;
  for (const auto& [m, c] : *pb)
    if ((d[m] -= c) == 0) d.erase(m);
  if (d.empty()) return false;
  std::unordered_map<const UOp*, i128> at_least;  // var -> its least value where the loop runs
  for (const UOp* top : {a, b})
    for (const UOp* r : toposort(top)) {
      if (r->op != Op::RANGE) continue;
      const UOp* e = r->src(0);
      const UOp* var = e->op == Op::DEFINE_VAR ? e : nullptr;
      i128 least = 1;
      if (e->op == Op::CDIV && e->src(0)->op == Op::DEFINE_VAR && e->src(1)->op == Op::CONST && e->src(1)->ival() > 0)
        var = e->src(0), least = e->src(1)->ival();
      if (var && least > at_least[var]) at_least[var] = least;
    }
  i128 lo = 0, hi = 0;
  for (const auto& [m, c] : d) {
    i128 mlo = c, mhi = c;  // the monomial's interval
    for (uint32_t id : m) {
      const UOp* x = polys.atom(id);
      i128 xlo = x->exact_lo(), xhi = x->exact_hi();
      if (auto it = at_least.find(x); it != at_least.end()) xlo = std::max(xlo, it->second);
      if (xlo > xhi || xlo <= -kPolyLimit || xhi >= kPolyLimit) return false;
      i128 cands[] = {mlo * xlo, mlo * xhi, mhi * xlo, mhi * xhi};
      mlo = *std::min_element(std::begin(cands), std::end(cands));
      mhi = *std::max_element(std::begin(cands), std::end(cands));
      if (mlo <= -kPolyLimit || mhi >= kPolyLimit) return false;
    }
    lo += mlo, hi += mhi;
  }
  return lo >= width || hi <= -width;
}

struct LaneLoop {
  const UOp* range = nullptr;
  int size = 0;                     // the element size of its vectors (0: it stays scalar)
  std::vector<const UOp*> body;     // every node of its body, in toposort order
  std::vector<const UOp*> vec;      // the nodes that become vectors
  std::vector<const UOp*> buffers;  // the accumulators it keeps as vectors
};

class Vectorizer {
 public:
  Vectorizer(const UOp* sink, int vector_bytes) : sink_(sink), topo_(toposort(sink)), vbytes_(vector_bytes) {}

  const UOp* run() {
    uint32_t max_id = 0;
    for (const UOp* u : topo_) max_id = std::max(max_id, u->id);
    pos_.assign(size_t(max_id) + 1, 0);
    for (size_t i = 0; i < topo_.size(); ++i) pos_[topo_[i]->id] = uint32_t(i);
    facts_.resize(topo_.size());
    std::vector<LaneLoop> loops;
    for (size_t i = 0; i < topo_.size(); ++i) {
      const UOp* r = topo_[i];
      if (r->op != Op::RANGE || r->arg<RangeArg>().type != AxisType::Lane || r->src(0)->op != Op::CONST) continue;
      LaneLoop l;
      l.range = r;
      if (plan(i, l)) loops.push_back(std::move(l));
    }
    drop_scalar_stored(loops);
    if (std::none_of(loops.begin(), loops.end(), [](const LaneLoop& l) { return l.size != 0; })) return sink_;
    return rewrite(loops);
  }

 private:
  // What plan() knows of a node, by position. An entry counts only in the loop whose stamp it
  // carries; others read as fresh.
  struct Fact {
    uint32_t stamp = 0;
    bool body = false, vec = false, has_stride = false;
    int64_t stride = 0;  // the lane stride of index math (when has_stride)
  };
  Fact& fact(const UOp* u) {
    Fact& f = facts_[pos_[u->id]];
    if (f.stamp != stamp_) f = Fact{stamp_};
    return f;
  }

  // whether the Lane loop at topo_[at] can run as vectors, and how (in `l`)
  bool plan(size_t at, LaneLoop& l) {
    const UOp* lane = topo_[at];
    int64_t width = lane->src(0)->ival();
    ++stamp_;
    Fact& lf = fact(lane);
    lf.body = lf.has_stride = true, lf.stride = 1;
    std::vector<std::pair<const UOp*, const UOp*>> loaded, stored;  // (buffer, address)
    int size = 0;
    bool closed = false;
    auto elem = [&](DType d) {  // a vector element: the loop's one size
      int b = vector_elem_size(d);
      if (b == 0 || (size != 0 && b != size)) return false;
      size = b;
      return true;
    };
    auto in_body = [&](const UOp* s) { return fact(s).body; };
    auto is_vec = [&](const UOp* s) { return fact(s).vec; };
    auto stride = [&](const UOp* s) { return fact(s).has_stride ? fact(s).stride : 0; };
    auto make_vec = [&](const UOp* u) {
      fact(u).vec = true;
      l.vec.push_back(u);
    };
    // an INDEX the loop reads or writes one vector at: the buffer (through AFTER) or null
    auto access = [&](const UOp* idx) -> const UOp* {
      if (idx->op != Op::INDEX || idx->nsrc() != 2) return nullptr;
      const UOp* buf = through_after(idx->src(0));
      const UOp* addr = idx->src(1);
      if (buf->op == Op::PARAM) {
        const Fact& a = fact(addr);
        return a.has_stride && a.stride == 1 && !a.vec ? buf : nullptr;
      }
      if (buf->op == Op::BUFFER && addr == lane && buf->arg<ParamArg>().size == width) return buf;
      return nullptr;
    };
    for (size_t i = at + 1; i < topo_.size(); ++i) {
      const UOp* u = topo_[i];
      if (!std::any_of(u->src().begin(), u->src().end(), in_body)) continue;
      if (u->op == Op::END) {
        if (u->src(1) != lane) return false;  // a loop inside: not elementwise over the lanes
        closed = true;
        continue;  // what follows the loop is not in it
      }
      if (u->op == Op::RANGE) return false;  // a loop whose end depends on the lane
      fact(u).body = true;
      l.body.push_back(u);
      if (u->op == Op::AFTER || u->op == Op::GROUP || u->op == Op::INDEX) continue;  // checked where used
      bool any_vec = std::any_of(u->src().begin(), u->src().end(), is_vec);
      if (u->op == Op::LOAD) {
        const UOp* buf = access(u->src(0));
        if (!buf || !elem(u->dtype)) return false;
        if (buf->op == Op::PARAM) loaded.push_back({buf, u->src(0)->src(1)});
        if (buf->op == Op::BUFFER) l.buffers.push_back(buf);
        make_vec(u);
        continue;
      }
      if (u->op == Op::STORE) {
        const UOp* buf = access(u->src(0));
        if (!buf || !elem(u->src(0)->dtype)) return false;
        if (in_body(u->src(1)) && !is_vec(u->src(1))) return false;  // a lane's index as a value
        std::pair<const UOp*, const UOp*> at{buf, u->src(0)->src(1)};
        if (buf->op == Op::PARAM && std::find(stored.begin(), stored.end(), at) == stored.end()) stored.push_back(at);
        if (buf->op == Op::BUFFER) l.buffers.push_back(buf);
        continue;
      }
      if (!any_vec && is_int(u->dtype)) {  // index math: affine in the lane
        int64_t s0 = stride(u->src(0));
        int64_t s1 = u->nsrc() > 1 ? stride(u->src(1)) : 0;
        auto konst = [&](size_t k) { return u->nsrc() > k && u->src(k)->op == Op::CONST; };
        int64_t su = 0;
        if (u->op == Op::ADD && u->nsrc() == 2) {
          su = s0 + s1;
        } else if (u->op == Op::SUB && u->nsrc() == 2) {
          su = s0 - s1;
        } else if (u->op == Op::MUL && (konst(0) || konst(1))) {
          su = konst(1) ? s0 * u->src(1)->ival() : s1 * u->src(0)->ival();
        } else if (u->op == Op::CAST && is_int(u->src(0)->dtype) && u->vmin().i == u->src(0)->vmin().i &&
                   u->vmax().i == u->src(0)->vmax().i) {
          su = s0;  // every value fits: the same numbers
        } else {
          return false;
        }
        Fact& f = fact(u);
        f.has_stride = true, f.stride = su;
        continue;
      }
      // a vector value: every operand that varies is a vector
      for (const UOp* s : u->src())
        if (in_body(s) && !is_vec(s)) return false;
      if (!vector_op(u, elem)) return false;
      make_vec(u);
    }
    if (!closed) return false;
    // the lanes of one vector never meet another's: the addresses a buffer is stored at are a
    // vector's lanes apart, and what is read of it is read where it is stored or as far away
    Polys polys;
    for (size_t i = 0; i < stored.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (stored[i].first == stored[j].first && !apart(polys, stored[i].second, stored[j].second, width))
          return false;
    for (auto [buf, addr] : loaded)
      for (auto [sbuf, saddr] : stored)
        if (sbuf == buf && saddr != addr && !apart(polys, addr, saddr, width)) return false;
    if (size == 0 || width * size % vbytes_ != 0) return false;  // whole vectors of the target's width
    if (vbytes_ / size < 2) return false;  // a "vector" of one element (Cortex-M: 4 bytes) is a scalar
    l.size = size;
    return true;
  }

  // whether u, all of whose varying operands are vectors, is lanewise on vectors of the loop's
  // elements (`elem` checks a dtype against the loop's one element size)
  template <class Elem> static bool vector_op(const UOp* u, Elem& elem) {
    if (is_bool(u->dtype)) {
      if (in_group(u->op, G_COMPARISON)) return elem(u->src(0)->dtype);
      return u->op == Op::AND || u->op == Op::OR || u->op == Op::XOR;
    }
    if (!elem(u->dtype)) return false;
    bool flt = is_float(u->dtype);
    switch (u->op) {
      case Op::ADD:
      case Op::SUB:
      case Op::MUL:
      case Op::NEG:
      case Op::MAX:
        return true;
      case Op::FDIV:
      case Op::RECIPROCAL:
        return flt;
      case Op::CDIV:
      case Op::CMOD:
      case Op::AND:
      case Op::OR:
      case Op::XOR:
      case Op::SHL:
      case Op::SHR:
        return !flt;
      case Op::WHERE:  // a mask compares elements of the loop's size, so it is as wide as the branches
        return true;
      case Op::CAST:
      case Op::BITCAST:
        return !is_bool(u->src(0)->dtype) && elem(u->src(0)->dtype);
      default:
        return false;
    }
  }

  // An accumulator that a scalar loop stores to stays scalar, and so do the loops that use it.
  void drop_scalar_stored(std::vector<LaneLoop>& loops) {
    std::vector<uint8_t> in_vector(topo_.size(), 0), scalar_stored(topo_.size(), 0);  // by position
    auto store_is_scalar = [&](const UOp* store) {
      if (const UOp* b = register_of(store->src(0))) scalar_stored[pos_[b->id]] = 1;
    };
    for (const LaneLoop& l : loops)
      for (const UOp* u : l.body) in_vector[pos_[u->id]] = 1;
    for (const UOp* u : topo_)
      if (u->op == Op::STORE && !in_vector[pos_[u->id]]) store_is_scalar(u);
    for (bool changed = true; changed;) {
      changed = false;
      for (LaneLoop& l : loops) {
        if (l.size == 0) continue;
        if (std::none_of(l.buffers.begin(), l.buffers.end(), [&](const UOp* b) { return scalar_stored[pos_[b->id]]; }))
          continue;
        l.size = 0, changed = true;  // its stores are scalar stores now
        for (const UOp* u : l.body)
          if (u->op == Op::STORE) store_is_scalar(u);
      }
    }
  }

  const UOp* broadcast(const UOp* s, int n) {
    std::vector<const UOp*> lanes(size_t(n), s);
    return s->ctx().make(Op::STACK, s->dtype.vec(n), lanes);
  }

  // One pass over the graph: the ranges of the chosen loops, their bodies and their accumulators
  // as vectors; the nodes that use them (scalar reads of an accumulator, the loops' ENDs) follow.
  const UOp* rewrite(const std::vector<LaneLoop>& loops) {
    Context& ctx = sink_->ctx();
    std::vector<int> lanes(topo_.size(), 0);    // by position: n for a node that becomes a vector
    std::vector<int> in_loop(topo_.size(), 0);  // by position: n for a node of a chosen loop's body
    std::vector<int> vbuf(topo_.size(), 0), vrange(topo_.size(), 0);
    for (const LaneLoop& l : loops) {
      if (l.size == 0) continue;
      int n = vbytes_ / l.size;
      vrange[pos_[l.range->id]] = n;
      for (const UOp* u : l.body) in_loop[pos_[u->id]] = n;
      for (const UOp* u : l.vec) lanes[pos_[u->id]] = n;
      for (const UOp* b : l.buffers) vbuf[pos_[b->id]] = n;
    }
    std::vector<const UOp*> val(topo_.size(), nullptr), loop(topo_.size(), nullptr);
    auto v = [&](const UOp* s) { return val[pos_[s->id]]; };
    auto as_vector = [&](const UOp* s, int n) { return lanes[pos_[s->id]] ? v(s) : broadcast(v(s), n); };
    std::vector<const UOp*> src;
    for (size_t i = 0; i < topo_.size(); ++i) {
      const UOp* u = topo_[i];
      src.clear();
      // a chosen range: r' of W / n iterations; its value is the first lane of each, r' * n. One
      // vector is no loop: its value is 0, and the ENDs and AFTERs that list it drop it
      if (int n = vrange[i]; n && u->src(0)->ival() == n) {
        val[i] = ctx.cint(0, u->dtype);
        continue;
      }
      if (int n = vrange[i]) {
        const UOp* end = ctx.cint(u->src(0)->ival() / n, u->src(0)->dtype);
        loop[i] = ctx.make(Op::RANGE, u->dtype, {end}, u->arg(), u->tag);
        val[i] = ctx.make(Op::MUL, u->dtype, {loop[i], ctx.cint(n, u->dtype)});
        continue;
      }
      if (int n = vbuf[i]) {  // an accumulator of W / n vectors
        const auto& pa = u->arg<ParamArg>();
        const UOp* size = ctx.cint(pa.size / n, u->src(0)->dtype);
        val[i] = ctx.make(Op::BUFFER, u->dtype.elem().vec(n).as_ptr(u->dtype.addrspace), {size},
                          ParamArg{pa.slot, pa.size / n, pa.name}, u->tag);
        continue;
      }
      int n = lanes[i];
      bool structural = u->op == Op::END || u->op == Op::AFTER;  // they list ranges as loops, not values
      for (size_t k = 0; k < u->nsrc(); ++k) {
        const UOp* s = u->src(k);
        const UOp* r = structural && k > 0 ? loop[pos_[s->id]] : nullptr;
        if (structural && k > 0 && vrange[pos_[s->id]] && !r) continue;  // a loop of one vector: none
        if (r)
          src.push_back(r);
        else if (n && u->op != Op::LOAD)
          src.push_back(as_vector(s, n));
        else if (u->op == Op::STORE && k == 1 && in_loop[i])
          src.push_back(as_vector(s, in_loop[i]));
        else
          src.push_back(v(s));
      }
      // an END or AFTER that listed only a loop of one vector is what it closed or ordered
      if (structural && src.size() == 1) {
        val[i] = src[0];
        continue;
      }
      // index math of that loop's 0: x + 0 is x, x * 0 is 0
      auto zero = [](const UOp* s) { return s->op == Op::CONST && is_int(s->dtype) && s->ival() == 0; };
      if (!n && is_int(u->dtype) && u->dtype.count == 1 && src.size() == 2 && (u->op == Op::ADD || u->op == Op::MUL) &&
          (zero(src[0]) || zero(src[1]))) {
        const UOp* other = zero(src[0]) ? src[1] : src[0];
        val[i] = u->op == Op::MUL ? ctx.cint(0, u->dtype) : other->dtype == u->dtype ? other : nullptr;
        if (val[i]) continue;
      }
      // an AFTER of an accumulator of vectors has its dtype
      bool vector_acc = u->op == Op::AFTER && src[0] != u->src(0) && src[0]->dtype.ptr;
      DType d = n ? u->dtype.vec(n) : vector_acc ? src[0]->dtype : u->dtype;
      bool same = d == u->dtype && std::equal(src.begin(), src.end(), u->src().begin(), u->src().end());
      val[i] = same ? u : ctx.make(u->op, d, src, u->arg(), u->tag);
    }
    return v(sink_);
  }

  const UOp* sink_;
  std::vector<const UOp*> topo_;
  int vbytes_;
  std::vector<uint32_t> pos_;  // by node id: the position in topo_
  std::vector<Fact> facts_;    // plan()'s, by position
  uint32_t stamp_ = 0;         // the loop plan() is at
};

}  // namespace

const UOp* vectorize_lanes(const UOp* sink, int vector_bytes) { return Vectorizer(sink, vector_bytes).run(); }

}  // namespace kiln::codegen

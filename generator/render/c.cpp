#include "generator/render/c.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <concepts>
#include <cstring>
#include <limits>
#include <vector>

namespace kiln::render {

namespace {

// The renderer appends its C piece by piece to one string, cat(s, "const ", t, " val", n, ...),
// instead of concatenating temporary strings: rendering is a visible share of a compile. cat grows
// the string once for all its pieces, then copies them in (no per-piece length checks).
size_t most(std::string_view v) { return v.size(); }
size_t most(char) { return 1; }
template <size_t N> size_t most(const char (&)[N]) { return N - 1; }
template <std::integral I> size_t most(I) { return 20; }  // digits and sign of any 64-bit integer

char* write(char* p, std::string_view v) {
  if (!v.empty()) std::memcpy(p, v.data(), v.size());
  return p + v.size();
}
char* write(char* p, char c) {
  *p = c;
  return p + 1;
}
template <size_t N> char* write(char* p, const char (&lit)[N]) {
  std::memcpy(p, lit, N - 1);  // a literal: a fixed size, copied inline
  return p + N - 1;
}
template <std::integral I> char* write(char* p, I v) { return std::to_chars(p, p + 20, v).ptr; }

// No piece may point into s itself (growing s may move it).
template <class... T> void cat(std::string& s, const T&... parts) {
  size_t n = s.size();
  s.resize(n + (most(parts) + ...));
  char* p = s.data() + n;
  ((p = write(p, parts)), ...);
  s.resize(size_t(p - s.data()));
}
template <class T> void put(std::string& s, const T& part) { cat(s, part); }

std::string_view ctype(DType d) {
  if (d.count != 1) throw InternalError("render C: vector dtype " + to_string(d) + " (devectorize first)");
  switch (d.scalar) {
    case Scalar::Bool:
      return "bool";
    case Scalar::Int8:
      return "int8_t";
    case Scalar::Uint8:
      return "uint8_t";
    case Scalar::Int16:
      return "int16_t";
    case Scalar::Uint16:
      return "uint16_t";
    case Scalar::Int32:
      return "int32_t";
    case Scalar::Uint32:
      return "uint32_t";
    case Scalar::Int64:
      return "int64_t";
    case Scalar::Uint64:
      return "uint64_t";
    case Scalar::Float16:
      return "_Float16";
    case Scalar::BFloat16:
      return "float";  // computed in float, rounded to bfloat16 after every op
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      throw InternalError("render C: no C type for " + to_string(d) + " (commit weak / lower index first)");
  }
}

// the type a buffer stores: bfloat16 travels as its 16 bits
std::string_view stype(DType d) { return d == dtypes::bfloat16 ? "uint16_t" : ctype(d); }

void float_literal(std::string& s, double v, DType d) {
  if (std::isnan(v)) return put(s, "NAN");
  if (std::isinf(v)) return put(s, v > 0 ? "INFINITY" : "(-INFINITY)");
  char buf[64];
  std::to_chars_result r =
      d == dtypes::float64 ? std::to_chars(buf, buf + sizeof buf, v) : std::to_chars(buf, buf + sizeof buf, float(v));
  std::string_view num(buf, size_t(r.ptr - buf));
  std::string_view point = num.find_first_of(".e") == std::string_view::npos ? ".0" : "";
  if (d == dtypes::float64) return cat(s, num, point);
  if (d == dtypes::float32) return cat(s, num, point, 'f');
  cat(s, "((", ctype(d), ')', num, point, "f)");
}

void int_literal(std::string& s, int64_t v, DType d) {
  if (is_bool(d)) return put(s, v ? '1' : '0');
  if (d == dtypes::uint64) return cat(s, uint64_t(v), "ull");
  if (d == dtypes::int64) {
    if (v == std::numeric_limits<int64_t>::min()) return put(s, "INT64_MIN");
    return cat(s, v, "ll");
  }
  if (v == std::numeric_limits<int32_t>::min()) return put(s, "INT32_MIN");
  std::string_view u = d == dtypes::uint32 ? "u" : "";
  if (bitsize(d) < 32) return cat(s, "((", ctype(d), ')', v, u, ')');
  cat(s, v, u);
}

bool identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Vector types: a Lane loop whose body is elementwise over its lanes is written with GNU C vector
// types of the width the compiler targets (KILN_VBYTES, from the ISA macros: AVX-512 64 bytes,
// AVX 32, otherwise 16). A loop of W lanes runs W / lanes-per-vector chunks, unrolled, so the same
// C is right for every ISA the consumer compiles it for. Values of 4 or 8 bytes only, one size
// per loop (a comparison's mask has the size of what it compares).
std::string_view vector_type(DType d) {  // "kiln_" alone: none
  switch (d.scalar) {
    case Scalar::Float32:
      return "kiln_vf32";
    case Scalar::Int32:
      return "kiln_vi32";
    case Scalar::Uint32:
      return "kiln_vu32";
    case Scalar::Float64:
      return "kiln_vf64";
    case Scalar::Int64:
      return "kiln_vi64";
    case Scalar::Uint64:
      return "kiln_vu64";
    default:
      return "kiln_";
  }
}
std::string_view vsuffix(DType d) { return vector_type(d).substr(5); }  // vf32, ...: the helpers' suffix

// lanes per vector of elements of `size` bytes
std::string_view lanes_macro(int size) { return size == 8 ? "KILN_V64" : "KILN_V32"; }

class CRenderer {
 public:
  CRenderer(std::span<const UOp* const> lin, std::string_view name, std::span<const UOp* const> vars)
      : lin_(lin), name_(name), vars_(vars) {}

  std::string run() {
    uint32_t max_id = 0;
    for (const UOp* u : lin_) max_id = std::max(max_id, u->id);
    pos_.assign(size_t(max_id) + 1, 0);
    for (size_t i = 0; i < lin_.size(); ++i) pos_[lin_[i]->id] = uint32_t(i);
    nodes_.assign(lin_.size(), Node{});
    analyze();
    plan_lanes();
    out_.clear();
    out_.reserve(32 * lin_.size() + 256);
    pool_.reserve(16 * lin_.size());
    if (vector_loops_ > 0)
      out_ +=
          "#ifndef __GNUC__\n#error \"this kernel uses GNU C vector types: compile it with GCC or Clang\"\n#endif\n";
    cat(out_, "void ", name_, "(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n",
        "  (void)bufs;\n  (void)vars;\n  (void)cores;\n");
    if (!uses_core_) out_ += "  if (core != 0) return;  /* not shared among cores: core 0 does it all */\n";
    for (const UOp* u : lin_)
      if (at(u).needed) line(u);
    return std::move(out_);
  }

 private:
  // uses, the loop depth of every node, which buffers are written, and what the stores need
  void analyze() {
    int d = 1;
    for (size_t i = 0; i < lin_.size(); ++i) {
      const UOp* u = lin_[i];
      for (const UOp* s : u->src()) {
        // every node of the graph is in the linear program (at() finds it there)
        if (lin_[pos_[s->id]] != s)
          throw InternalError("render C: " + std::string(op_name(s->op)) + " is missing from the linear program");
        Node& n = at(s);
        if (u->op != Op::PARAM && u->op != Op::BUFFER) ++n.uses;
        n.user = u;  // the last user in program order
      }
      if (u->op == Op::END) --d;
      nodes_[i].depth = d;
      if (u->op == Op::RANGE) ++d;
      if (u->op == Op::STORE && u->src(0)->op == Op::INDEX) at(u->src(0)->src(0)).written = true;
    }
    // what the stores need: one sweep from the end, as sources come before their users; a
    // buffer's size expression is metadata, not code
    nodes_.back().needed = true;
    for (size_t i = lin_.size(); i-- > 0;) {
      const UOp* u = lin_[i];
      if (!nodes_[i].needed) continue;
      uses_core_ |= u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == ".core";
      if (u->op == Op::PARAM || u->op == Op::BUFFER) continue;
      for (const UOp* s : u->src()) at(s).needed = true;
    }
  }

  // Which Lane loops are written as vectors (see vector_type). A loop qualifies when every node in
  // its body varies with the lane and is one of: integer index math affine in the lane; a load or
  // store of consecutive elements (an input or output read at stride 1 with no gate, or an
  // accumulator of one element per lane); arithmetic, comparisons, selects and casts of such
  // values. Lanes must not see each other's elements: a buffer the loop stores to is read only
  // where it is stored. Other loops stay scalar loops for the C compiler to vectorize. An
  // accumulator that a scalar loop stores to stays scalar, and so do the loops that use it (an
  // accumulator of vectors is addressed by element only to be read, as a horizontal sum does).
  void plan_lanes() {
    std::vector<LaneLoop> loops;
    for (size_t i = 0; i < lin_.size(); ++i) {
      const UOp* r = lin_[i];
      if (r->op != Op::RANGE || r->arg<RangeArg>().type != AxisType::Lane || r->src(0)->op != Op::CONST) continue;
      LaneLoop l;
      l.range = r;
      if (plan_lane_loop(i, l)) loops.push_back(std::move(l));
    }
    if (loops.empty()) return;
    std::vector<uint8_t> in_vector(lin_.size(), 0), scalar_stored(lin_.size(), 0);  // by position
    auto store_is_scalar = [&](const UOp* store) {
      if (const UOp* b = register_of(store->src(0))) scalar_stored[pos_[b->id]] = 1;
    };
    for (const LaneLoop& l : loops)
      for (size_t i = l.first; i < l.last; ++i) in_vector[i] = nodes_[i].needed;
    for (const UOp* u : lin_)
      if (u->op == Op::STORE && !in_vector[pos_[u->id]]) store_is_scalar(u);
    for (bool changed = true; changed;) {
      changed = false;
      for (LaneLoop& l : loops) {
        if (l.size == 0) continue;
        if (std::none_of(l.buffers.begin(), l.buffers.end(), [&](const UOp* b) { return scalar_stored[pos_[b->id]]; }))
          continue;
        l.size = 0, changed = true;  // its stores are scalar stores now
        for (size_t i = l.first; i < l.last; ++i)
          if (nodes_[i].needed && lin_[i]->op == Op::STORE) store_is_scalar(lin_[i]);
      }
    }
    for (const LaneLoop& l : loops) {
      if (l.size == 0) continue;
      at(l.range).lane_size = uint8_t(l.size);
      ++vector_loops_;
      for (const UOp* u : l.vec) at(u).vec = true;
      for (const UOp* b : l.buffers) at(b).vbuf = uint8_t(l.size);
    }
  }

  // the accumulator an INDEX addresses (through AFTER), or null for a buffer in memory
  static const UOp* register_of(const UOp* idx) {
    if (idx->op != Op::INDEX) return nullptr;
    const UOp* b = idx->src(0);
    while (b->op == Op::AFTER) b = b->src(0);
    return b->op == Op::BUFFER ? b : nullptr;
  }

  struct LaneLoop {
    const UOp* range = nullptr;
    int size = 0;                     // the element size of its vectors
    size_t first = 0, last = 0;       // its body: lin_[first, last) (the nodes needed)
    std::vector<const UOp*> vec;      // the nodes that are vectors
    std::vector<const UOp*> buffers;  // the accumulators it keeps as vectors
  };

  // What plan_lane_loop knows of a node, by position (a table, not hash sets: it runs per compile).
  // An entry counts only in the loop whose stamp it carries; others read as fresh.
  struct LaneFact {
    uint32_t stamp = 0;
    bool varies = false, vec = false, has_stride = false;
    int64_t stride = 0;              // the lane stride of index math (when has_stride)
    const UOp* stored_at = nullptr;  // a buffer's address where the loop stores it
  };
  LaneFact& fact(const UOp* u) {
    LaneFact& f = facts_[pos_[u->id]];
    if (f.stamp != stamp_) f = LaneFact{stamp_};
    return f;
  }

  // whether the Lane loop at lin_[at] can be written as vectors, and how (in `l`)
  bool plan_lane_loop(size_t at, LaneLoop& l) {
    const UOp* lane = lin_[at];
    int64_t width = lane->src(0)->ival();
    std::vector<const UOp*>& buffers = l.buffers;
    if (facts_.empty()) facts_.resize(lin_.size());
    ++stamp_;
    LaneFact& lf = fact(lane);
    lf.varies = lf.has_stride = true, lf.stride = 1;
    std::vector<std::pair<const UOp*, const UOp*>> loaded;  // (buffer, address)
    int size = 0;
    auto elem = [&](DType d) {  // a vector element: the loop's one size
      int b = vsuffix(d).empty() ? 0 : itemsize(d);
      if (b == 0 || (size != 0 && b != size)) return false;
      size = b;
      return true;
    };
    auto varies = [&](const UOp* s) { return fact(s).varies; };
    auto is_vec = [&](const UOp* s) { return fact(s).vec; };
    auto stride = [&](const UOp* s) { return fact(s).has_stride ? fact(s).stride : 0; };
    auto make_vec = [&](const UOp* u) {
      fact(u).vec = true;
      l.vec.push_back(u);
    };
    // an INDEX the loop reads or writes one vector at: the buffer (through AFTER) or null
    auto access = [&](const UOp* idx) -> const UOp* {
      if (idx->op != Op::INDEX || idx->nsrc() != 2) return nullptr;
      const UOp* buf = idx->src(0);
      while (buf->op == Op::AFTER) buf = buf->src(0);
      const UOp* addr = idx->src(1);
      if (buf->op == Op::PARAM) {
        const LaneFact& a = fact(addr);
        return a.has_stride && a.stride == 1 && !a.vec ? buf : nullptr;
      }
      if (buf->op == Op::BUFFER && addr == lane && buf->arg<ParamArg>().size == width) return buf;
      return nullptr;
    };
    // the body, checked as it is read: most loops fail early
    size_t i = at + 1;
    for (; i < lin_.size() && lin_[i]->op != Op::END; ++i) {
      const UOp* u = lin_[i];
      if (u->op == Op::RANGE) return false;  // a loop inside: not elementwise over the lanes
      if (!nodes_[i].needed) continue;
      bool v = std::any_of(u->src().begin(), u->src().end(), varies);
      if (u->op == Op::CONST || u->op == Op::AFTER || u->op == Op::GROUP) {
        if (v) fact(u).varies = true;
        continue;
      }
      if (!v) return false;  // loop-carried work that is not per lane (a scalar accumulator)
      fact(u).varies = true;
      bool any_vec = std::any_of(u->src().begin(), u->src().end(), is_vec);
      switch (u->op) {
        case Op::INDEX:
          continue;  // checked by its load or store
        case Op::LOAD: {
          const UOp* buf = access(u->src(0));
          if (!buf || !elem(u->dtype)) return false;
          if (buf->op == Op::PARAM) loaded.push_back({buf, u->src(0)->src(1)});
          if (buf->op == Op::BUFFER) buffers.push_back(buf);
          make_vec(u);
          continue;
        }
        case Op::STORE: {
          const UOp* buf = access(u->src(0));
          if (!buf || !elem(u->src(0)->dtype)) return false;
          if (buf->op == Op::PARAM) {
            const UOp*& at_addr = fact(buf).stored_at;
            if (at_addr && at_addr != u->src(0)->src(1)) return false;
            at_addr = u->src(0)->src(1);
          }
          if (buf->op == Op::BUFFER) buffers.push_back(buf);
          continue;
        }
        default:
          break;
      }
      if (!any_vec && is_int(u->dtype)) {  // index math: affine in the lane
        int64_t s0 = stride(u->src(0));
        int64_t s1 = u->nsrc() > 1 ? stride(u->src(1)) : 0;
        auto konst = [&](size_t k) { return u->nsrc() > k && u->src(k)->op == Op::CONST; };
        int64_t su = 0;
        if (u->op == Op::ADD) {
          su = s0 + s1;
        } else if (u->op == Op::SUB) {
          su = s0 - s1;
        } else if (u->op == Op::MUL && (konst(0) || konst(1))) {
          su = konst(1) ? s0 * u->src(1)->ival() : s1 * u->src(0)->ival();
        } else if (u->op == Op::CAST && is_int(u->src(0)->dtype) && u->vmin().i == u->src(0)->vmin().i &&
                   u->vmax().i == u->src(0)->vmax().i) {
          su = s0;  // every value fits: the same numbers
        } else {
          return false;
        }
        LaneFact& f = fact(u);
        f.has_stride = true, f.stride = su;
        continue;
      }
      // a vector value: every operand that varies is a vector
      for (const UOp* s : u->src())
        if (varies(s) && !is_vec(s)) return false;
      bool ok = false;
      if (is_bool(u->dtype)) {
        ok = u->op == Op::CMPLT || u->op == Op::CMPNE || u->op == Op::CMPEQ
                 ? elem(u->src(0)->dtype)
                 : (u->op == Op::AND || u->op == Op::OR || u->op == Op::XOR);
      } else if (elem(u->dtype)) {
        bool flt = is_float(u->dtype);
        switch (u->op) {
          case Op::ADD:
          case Op::SUB:
          case Op::MUL:
          case Op::NEG:
          case Op::MAX:
            ok = true;
            break;
          case Op::FDIV:
          case Op::RECIPROCAL:
            ok = flt;
            break;
          case Op::CDIV:
          case Op::CMOD:
          case Op::AND:
          case Op::OR:
          case Op::XOR:
          case Op::SHL:
          case Op::SHR:
            ok = !flt;
            break;
          case Op::WHERE:
            ok = !is_vec(u->src(0)) || itemsize(u->dtype) == size;
            break;
          case Op::CAST:
          case Op::BITCAST:
            ok = !is_bool(u->src(0)->dtype) && elem(u->src(0)->dtype);
            break;
          default:
            ok = false;
        }
      }
      if (!ok) return false;
      make_vec(u);
    }
    if (i == lin_.size() || lin_[i]->src(1) != lane) return false;
    l.first = at + 1, l.last = i;
    for (auto [buf, addr] : loaded)
      if (const UOp* st = fact(buf).stored_at; st && st != addr) return false;
    if (size == 0 || width * size % 64 != 0) return false;  // whole vectors at every width (64 bytes at most)
    l.size = size;
    return true;
  }

  // Starts a line of C at u's loop depth; the caller appends the rest, newline included.
  std::string& line_at(const UOp* u) {
    out_.append(size_t(2 * at(u).depth), ' ');
    return out_;
  }

  std::string_view ex(const UOp* u) const {
    const Node& n = at(u);
    if (!n.rendered) throw InternalError("render C: " + std::string(op_name(u->op)) + " used before it is rendered");
    return {pool_.data() + n.expr.at, n.expr.size};
  }
  // How users spell u: the parts, appended to the pool. None may point into the pool itself.
  template <class... T> void set_expr(const UOp* u, const T&... parts) {
    size_t start = pool_.size();
    cat(pool_, parts...);
    Node& n = at(u);
    n.expr = {uint32_t(start), uint32_t(pool_.size() - start)};
    n.rendered = true;
  }

  // a value, the expression in e_: inlined into its single user at the same depth, else a named local
  void value(const UOp* u, std::string_view prefix) {
    if (at(u).uses == 1 && single_user_same_depth(u)) return set_expr(u, '(', e_, ')');
    int n = counter_++;
    cat(line_at(u), "const ", at(u).vec ? vtype(u->dtype) : ctype(u->dtype), ' ', prefix, n, " = ", e_, ";\n");
    set_expr(u, prefix, n);
  }

  bool single_user_same_depth(const UOp* u) {
    const UOp* user = at(u).user;
    return user && at(user).depth == at(u).depth && user->op != Op::END;
  }

  // integer ops whose result range analysis cannot bound inside the dtype wrap via unsigned
  bool may_overflow(const UOp* u) const {
    if (!is_int(u->dtype)) return false;
    if (bitsize(u->dtype) < 32) return false;  // computed in int, narrowed on use
    if (is_unsigned(u->dtype)) return false;   // unsigned arithmetic wraps in C
    return u->vmin().i == int_min(u->dtype) || u->vmax().i == int_max(u->dtype);
  }

  // appends an ALU node's expression to e
  void alu(const UOp* u, std::string& e) {
    DType d = u->dtype;
    auto s = [&](size_t i) { return ex(u->src(i)); };
    bool flt = is_float(d);
    std::string_view f = d == dtypes::float64 ? "" : "f";
    auto fn = [&](std::string_view name) {
      if (d == dtypes::float16) return cat(e, "(_Float16)", name, "f((float)", s(0), ')');
      cat(e, name, f, '(', s(0), ')');
    };
    // op is spaced (" + "); with `wrap` the integer math goes through unsigned when it may overflow
    auto binary = [&](std::string_view op) { cat(e, s(0), op, s(1)); };
    auto wrap = [&](std::string_view op) {
      if (!may_overflow(u)) return binary(op);
      cat(e, '(', ctype(d), ")((u", ctype(d), ')', s(0), op, "(u", ctype(d), ')', s(1), ')');
    };
    // ints narrower than int are computed in int: the result is cast back
    bool narrow = is_int(d) && bitsize(d) < 32;
    auto narrowed = [&](auto body) {
      if (narrow) cat(e, '(', ctype(d), ")(");
      body();
      if (narrow) e += ')';
    };
    switch (u->op) {
      case Op::ADD:
        return narrowed([&] { wrap(" + "); });
      case Op::SUB:
        return narrowed([&] { wrap(" - "); });
      case Op::MUL:
        return narrowed([&] { wrap(" * "); });
      case Op::NEG:
        if (!flt && may_overflow(u)) return cat(e, '(', ctype(d), ")(0u - (u", ctype(d), ')', s(0), ')');
        return narrowed([&] { cat(e, '-', s(0)); });
      case Op::FDIV:
        return binary(" / ");
      case Op::CDIV:
        return narrowed([&] { binary(" / "); });
      case Op::CMOD:
        return narrowed([&] { binary(" % "); });
      case Op::FLOORDIV:
        return cat(e, "kiln_floordiv_", bitsize(d) == 64 ? "i64" : "i32", '(', s(0), ", ", s(1), ')');
      case Op::FLOORMOD:
        return cat(e, "kiln_floormod_", bitsize(d) == 64 ? "i64" : "i32", '(', s(0), ", ", s(1), ')');
      case Op::MAX:
        if (flt) return cat(e, "kiln_max", d == dtypes::float64 ? 'd' : 'f', '(', s(0), ", ", s(1), ')');
        return cat(e, s(0), " > ", s(1), " ? ", s(0), " : ", s(1));
      case Op::CMPLT:
        return binary(" < ");
      case Op::CMPNE:
        return binary(" != ");
      case Op::CMPEQ:
        return binary(" == ");
      case Op::AND:
        return narrowed([&] { binary(" & "); });
      case Op::OR:
        return narrowed([&] { binary(" | "); });
      case Op::XOR:
        return narrowed([&] { binary(" ^ "); });
      case Op::SHL:
        if (may_overflow(u)) return cat(e, '(', ctype(d), ")((u", ctype(d), ')', s(0), " << ", s(1), ')');
        return narrowed([&] { binary(" << "); });
      case Op::SHR:
        return narrowed([&] { binary(" >> "); });
      case Op::WHERE:
        return cat(e, s(0), " ? ", s(1), " : ", s(2));
      case Op::EXP2:
        return fn("exp2");
      case Op::LOG2:
        return fn("log2");
      case Op::SIN:
        return fn("sin");
      case Op::SQRT:
        return fn("sqrt");
      case Op::TRUNC:
        if (flt) return fn("trunc");
        return put(e, s(0));
      case Op::RECIPROCAL:
        float_literal(e, 1.0, d);
        return cat(e, " / ", s(0));
      case Op::POW:
        if (d == dtypes::float16) return cat(e, "(_Float16)powf((float)", s(0), ", (float)", s(1), ')');
        return cat(e, "pow", f, '(', s(0), ", ", s(1), ')');
      default:
        throw InternalError("render C: ALU op " + std::string(op_name(u->op)) + " (decompose it first)");
    }
  }

  // an INDEX's gate (null when always valid) and the index it guards
  static std::pair<const UOp*, const UOp*> gated(const UOp* idx) {
    const UOp* i = idx->src(1);
    if (i->op == Op::WHERE && i->src(2)->is_invalid()) return {i->src(0), i->src(1)};
    return {nullptr, i};
  }

  // appends the element of buffer `buf` at index i (one element of an accumulator of vectors is
  // its vector's lane)
  void address(std::string& o, const UOp* buf, const UOp* i) {
    const UOp* b = buf;
    while (b->op == Op::AFTER) b = b->src(0);
    if (b->op == Op::BUFFER && at(b).vbuf) {
      std::string_view v = lanes_macro(at(b).vbuf);
      return cat(o, ex(b), '[', ex(i), " / ", v, "][", ex(i), " % ", v, ']');
    }
    cat(o, ex(b), '[', ex(i), ']');
  }

  std::string_view buffer_of(const UOp* p) {  // through AFTER to the accumulator
    while (p->op == Op::AFTER) p = p->src(0);
    return ex(p);
  }

  void line(const UOp* u) {
    if (lane_ && (at(u).vec || u->op == Op::STORE)) return vector_line(u);
    DType d = u->dtype;
    switch (u->op) {
      case Op::SINK:
        out_ += "}\n";
        return;
      case Op::CONST:
        if (u->is_invalid()) return;
        e_.clear();
        if (is_float(d))
          float_literal(e_, u->cval().f, d);
        else
          int_literal(e_, u->cval().i, d);
        return set_expr(u, e_);
      case Op::PARAM: {
        const auto& pa = u->arg<ParamArg>();
        std::string_view t = stype(d.elem()), cq = at(u).written ? "" : "const ";
        cat(line_at(u), cq, t, "* restrict data", pa.slot, " = (", cq, t, "*)bufs[", pa.slot, "];  /* ", pa.name,
            " */\n");
        return set_expr(u, "data", pa.slot);
      }
      case Op::DEFINE_VAR: {
        std::string_view vn = u->arg<VarArg>().name;
        if (vn == ".core" || vn == ".cores") {  // the function's own arguments
          std::string_view arg = vn.substr(1), t = ctype(d);
          cat(line_at(u), "const ", t, " var_", arg, " = (", t, ')', arg, ";\n");
          return set_expr(u, "var_", arg);
        }
        size_t j = 0;
        while (j < vars_.size() && vars_[j]->arg<VarArg>().name != vn) ++j;
        if (j == vars_.size())
          throw InternalError("render C: variable " + std::string(vn) + " is not a kernel argument");
        e_.clear();
        if (identifier(vn))
          cat(e_, "var_", vn);
        else
          cat(e_, "var", j);
        std::string_view t = ctype(d);
        cat(line_at(u), "const ", t, ' ', e_, " = (", t, ")vars[", j, "];\n");
        return set_expr(u, e_);
      }
      case Op::BUFFER: {  // an accumulator register
        const auto& pa = u->arg<ParamArg>();
        if (int vsize = at(u).vbuf)  // an array of vectors, one element per lane
          cat(line_at(u), vtype(d.elem()), " acc", pa.slot, '[', pa.size, " / ", lanes_macro(vsize), "];\n");
        else if (pa.size > 1)
          cat(line_at(u), ctype(d.elem()), " acc", pa.slot, '[', pa.size, "];\n");
        else
          cat(line_at(u), ctype(d.elem()), " acc", pa.slot, ";\n");
        return set_expr(u, "acc", pa.slot);
      }
      case Op::RANGE: {
        int32_t axis = u->arg<RangeArg>().axis;
        std::string_view t = ctype(d), bound = ex(u->src(0));
        if (int size = at(u).lane_size) {  // lanes as vectors: the index is the first lane of each
          lanes_ = lanes_macro(size);
          lane_ = u;
          cat(line_at(u), "#pragma GCC unroll ", u->src(0)->ival() * size / 16, '\n');
          cat(line_at(u), "for (", t, " ridx", axis, " = 0; ridx", axis, " < ", bound, "; ridx", axis, " += ", lanes_,
              ") {\n");
        } else {
          cat(line_at(u), "for (", t, " ridx", axis, " = 0; ridx", axis, " < ", bound, "; ridx", axis, "++) {\n");
        }
        return set_expr(u, "ridx", axis);
      }
      case Op::END:
        if (u->src(1) == lane_) lane_ = nullptr;
        return put(line_at(u), "}\n");
      case Op::AFTER:
      case Op::GROUP:
      case Op::INDEX:
      case Op::NOOP:  // a store of what its target holds, folded away
        return;       // ordering only / rendered where loaded or stored
      case Op::LOAD: {
        const UOp* src = u->src(0);
        int n = counter_++;
        std::string& o = line_at(u);
        cat(o, "const ", ctype(d), " val", n, " = ");
        if (src->op == Op::INDEX) {
          auto [gate, i] = gated(src);
          if (gate) cat(o, ex(gate), " ? ");
          if (d == dtypes::bfloat16) o += "kiln_bf16_to_f32(";
          address(o, src->src(0), i);
          if (d == dtypes::bfloat16) o += ')';
          if (gate) {
            o += " : ";
            zero(o, d);
          }
        } else {
          o += buffer_of(src);
        }
        o += ";\n";
        return set_expr(u, "val", n);
      }
      case Op::STORE: {
        const UOp* dst = u->src(0);
        std::string_view v = ex(u->src(1));
        std::string& o = line_at(u);
        if (dst->op != Op::INDEX) return cat(o, buffer_of(dst), " = ", v, ";\n");
        auto [gate, i] = gated(dst);
        if (gate) cat(o, "if (", ex(gate), ") ");
        address(o, dst->src(0), i);
        if (dst->dtype == dtypes::bfloat16) return cat(o, " = kiln_f32_to_bf16(", v, ");\n");
        return cat(o, " = ", v, ";\n");
      }
      case Op::CAST: {
        std::string_view x = ex(u->src(0));
        e_.clear();
        if (is_bool(d))
          cat(e_, x, " != 0");
        else if (d == dtypes::bfloat16)
          cat(e_, "kiln_bf16_round((", ctype(d), ')', x, ')');
        else
          cat(e_, '(', ctype(d), ')', x);
        return value(u, "cast");
      }
      case Op::BITCAST: {
        int n = counter_++;
        DType from = u->src(0)->dtype;
        std::string_view x = ex(u->src(0));
        std::string& o = line_at(u);
        cat(o, stype(d), " bits", n, "; { const ", stype(from), " from = ");
        if (from == dtypes::bfloat16)
          cat(o, "kiln_f32_to_bf16(", x, ')');
        else
          o += x;
        cat(o, "; memcpy(&bits", n, ", &from, sizeof bits", n, "); }\n");
        if (d == dtypes::bfloat16) return set_expr(u, "kiln_bf16_to_f32(bits", n, ')');
        return set_expr(u, "bits", n);
      }
      default:
        break;
    }
    if (u->op == Op::WHERE && u->src(2)->is_invalid()) return;  // a gated index: rendered by its load or store
    if (!is_alu(u->op)) throw InternalError("render C: " + std::string(op_name(u->op)) + " cannot be rendered");
    e_.clear();
    bool bf16 = d == dtypes::bfloat16;  // computed in float, rounded after every op
    if (bf16) e_ += "kiln_bf16_round(";
    alu(u, e_);
    if (bf16) e_ += ')';
    value(u, "alu");
  }

  // the vector type of a value in the current Lane loop; a bool is a mask as wide as what it compares
  std::string_view vtype(DType d) const {
    if (is_bool(d)) return lanes_ == "KILN_V64" ? "kiln_vi64" : "kiln_vi32";
    return vector_type(d);
  }
  std::string_view vname(DType d) const { return vtype(d).substr(5); }  // vf32, ...: the helpers' suffix
  std::string_view vunsigned() const { return lanes_ == "KILN_V64" ? "kiln_vu64" : "kiln_vu32"; }

  // appends an operand as a vector: a vector as it is, a scalar broadcast (true as the all-ones mask)
  void vop(std::string& o, const UOp* s) {
    if (at(s).vec) return put(o, ex(s));
    if (is_bool(s->dtype))
      return cat(o, "kiln_splat_", vname(s->dtype), "(-(", lanes_ == "KILN_V64" ? "int64_t" : "int32_t", ")(", ex(s),
                 "))");
    cat(o, "kiln_splat_", vname(s->dtype), '(', ex(s), ')');
  }

  // appends where a vector of the loop's chunk is read or written: an accumulator's vector, or the
  // consecutive elements of a buffer from the chunk's first lane on
  void vplace(std::string& o, const UOp* idx) {
    if (in_register(idx)) return cat(o, buffer_of(idx->src(0)), '[', ex(lane_), " / ", lanes_, ']');
    cat(o, '&', buffer_of(idx->src(0)), '[', ex(idx->src(1)), ']');
  }
  static bool in_register(const UOp* idx) {
    const UOp* b = idx->src(0);
    while (b->op == Op::AFTER) b = b->src(0);
    return b->op == Op::BUFFER;
  }

  // a node of a Lane loop written as vectors (plan_lanes chose the loop)
  void vector_line(const UOp* u) {
    DType d = u->dtype;
    if (u->op == Op::LOAD) {
      const UOp* idx = u->src(0);
      int n = counter_++;
      std::string& o = line_at(u);
      cat(o, "const ", vtype(d), " val", n, " = ");
      if (in_register(idx)) {
        vplace(o, idx);
      } else {
        cat(o, "kiln_load_", vname(d), '(');
        vplace(o, idx);
        o += ')';
      }
      o += ";\n";
      return set_expr(u, "val", n);
    }
    if (u->op == Op::STORE) {
      const UOp* idx = u->src(0);
      std::string& o = line_at(u);
      bool reg = in_register(idx);
      if (!reg) cat(o, "kiln_store_", vname(idx->dtype), '(');
      vplace(o, idx);
      o += reg ? " = " : ", ";
      vop(o, u->src(1));
      o += reg ? ";\n" : ");\n";
      return;
    }
    std::string& e = e_;
    e.clear();
    auto a = [&](size_t i) { vop(e, u->src(i)); };
    auto binary = [&](std::string_view op) {  // op is spaced: " + "
      a(0);
      e += op;
      a(1);
    };
    auto wrap = [&](std::string_view op) {  // through unsigned when integer math may overflow
      if (is_float(d) || !may_overflow(u)) return binary(op);
      cat(e, '(', vtype(d), ")((", vunsigned(), ')');
      a(0);
      cat(e, op, '(', vunsigned(), ')');
      a(1);
      e += ')';
    };
    switch (u->op) {
      case Op::ADD:
        wrap(" + ");
        break;
      case Op::SUB:
        wrap(" - ");
        break;
      case Op::MUL:
        wrap(" * ");
        break;
      case Op::SHL:
        wrap(" << ");
        break;
      case Op::NEG:
        if (is_float(d) || !may_overflow(u)) {
          e += '-';
          a(0);
        } else {
          cat(e, '(', vtype(d), ")(-(", vunsigned(), ')');
          a(0);
          e += ')';
        }
        break;
      case Op::FDIV:
      case Op::CDIV:
        binary(" / ");
        break;
      case Op::CMOD:
        binary(" % ");
        break;
      case Op::RECIPROCAL:
        cat(e, "kiln_splat_", vname(d), '(');
        float_literal(e, 1.0, d);
        e += ") / ";
        a(0);
        break;
      case Op::AND:
        binary(" & ");
        break;
      case Op::OR:
        binary(" | ");
        break;
      case Op::XOR:
        binary(" ^ ");
        break;
      case Op::SHR:
        binary(" >> ");
        break;
      case Op::MAX:
        cat(e, "kiln_max_", vname(d), '(');
        binary(", ");
        e += ')';
        break;
      case Op::CMPLT:
        binary(" < ");
        break;
      case Op::CMPNE:
        binary(" != ");
        break;
      case Op::CMPEQ:
        binary(" == ");
        break;
      case Op::WHERE:
        if (at(u->src(0)).vec)
          cat(e, "kiln_select_", vname(d), '(', ex(u->src(0)), ", ");
        else
          cat(e, ex(u->src(0)), " ? ");
        a(1);
        e += at(u->src(0)).vec ? ", " : " : ";
        a(2);
        if (at(u->src(0)).vec) e += ')';
        break;
      case Op::CAST:
        e += "__builtin_convertvector(";
        a(0);
        cat(e, ", ", vtype(d), ')');
        break;
      case Op::BITCAST:
        cat(e, '(', vtype(d), ")(");
        a(0);
        e += ')';
        break;
      default:
        throw InternalError("render C: " + std::string(op_name(u->op)) + " in a vector loop");
    }
    value(u, is_bool(d) ? "mask" : "vec");
  }

  void zero(std::string& o, DType d) const {
    if (is_float(d)) return float_literal(o, 0.0, d);
    int_literal(o, 0, d);
  }

  struct Span {
    uint32_t at = 0, size = 0;
  };
  std::span<const UOp* const> lin_;
  std::string_view name_;
  std::span<const UOp* const> vars_;
  std::string out_;
  std::string pool_;  // every node's expression, one after another (expr_ says where)
  std::string e_;     // the expression being built
  int counter_ = 0;
  bool uses_core_ = false;
  // What the renderer knows of a node, by its position in the program (pos_ maps node ids there):
  // tables by node id would be as large as the Context, and clearing them would cost more than
  // most of the rendering.
  struct Node {
    int depth = 0, uses = 0;
    const UOp* user = nullptr;  // the last user in the program
    Span expr;                  // how users spell the value, in pool_
    bool rendered = false, written = false, needed = false;
    // vector loops (plan_lanes): whether a node is a vector value; the element size a Lane RANGE
    // is written with; the element size of an accumulator kept as vectors (0: none of these)
    bool vec = false;
    uint8_t lane_size = 0, vbuf = 0;
  };
  Node& at(const UOp* u) { return nodes_[pos_[u->id]]; }
  const Node& at(const UOp* u) const { return nodes_[pos_[u->id]]; }
  std::vector<uint32_t> pos_;    // by node id: the position in lin_
  std::vector<Node> nodes_;      // by position
  std::vector<LaneFact> facts_;  // plan_lane_loop's, by position
  uint32_t stamp_ = 0;           // the loop plan_lane_loop is at
  int vector_loops_ = 0;
  const UOp* lane_ = nullptr;  // the Lane loop being written as vectors
  std::string_view lanes_;     // its lanes per vector (a macro of the preamble)
};

}  // namespace

namespace {

// GNU C vector types as wide as the ISA the C is compiled for, and their helpers (see vsuffix)
std::string vector_preamble() {
  std::string s =
      "#if defined(__GNUC__)\n"
      "/* vectors as wide as the compiler's ISA (or -DKILN_VBYTES=16/32/64): Lane loops run in chunks of them */\n"
      "#ifndef KILN_VBYTES\n"
      "#if defined(__AVX512F__)\n#define KILN_VBYTES 64\n"
      "#elif defined(__AVX__)\n#define KILN_VBYTES 32\n"
      "#else\n#define KILN_VBYTES 16\n#endif\n#endif\n"
      "#define KILN_V32 (KILN_VBYTES / 4)\n#define KILN_V64 (KILN_VBYTES / 8)\n";
  for (int bits : {32, 64}) {
    std::string b = std::to_string(bits), i = "kiln_vi" + b, u = "kiln_vu" + b, f = "kiln_vf" + b;
    std::string it = "int" + b + "_t", ut = "uint" + b + "_t", ft = bits == 32 ? "float" : "double";
    for (auto [name, t] : {std::pair{i, it}, {u, ut}, {f, ft}}) {
      std::string sfx = name.substr(5);
      s += "typedef " + t + " " + name + " __attribute__((vector_size(KILN_VBYTES)));\n";
      s += "KILN_INLINE " + name + " kiln_load_" + sfx + "(const " + t + "* p) {\n  " + name +
           " v;\n  memcpy(&v, p, sizeof v);\n  return v;\n}\n";
      s += "KILN_INLINE void kiln_store_" + sfx + "(" + t + "* p, " + name + " v) { memcpy(p, &v, sizeof v); }\n";
      if (name == f)
        s += "KILN_INLINE " + f + " kiln_splat_" + sfx + "(" + t + " x) {\n  " + ut +
             " bits;\n  memcpy(&bits, &x, sizeof bits);\n  return (" + f + ")kiln_splat_vu" + b + "(bits);\n}\n";
      else
        s += "KILN_INLINE " + name + " kiln_splat_" + sfx + "(" + t + " x) { return (" + name + "){0} + x; }\n";
      s += "KILN_INLINE " + name + " kiln_select_" + sfx + "(" + i + " m, " + name + " a, " + name +
           " b) {\n  return (" + name + ")((m & (" + i + ")a) | (~m & (" + i + ")b));\n}\n";
      std::string pick = name == f ? "(a > b) | (a != a)" : "a > b";  // NaN propagates, like the IR's MAX
      s += "KILN_INLINE " + name + " kiln_max_" + sfx + "(" + name + " a, " + name + " b) { return kiln_select_" + sfx +
           "(" + pick + ", a, b); }\n";
    }
  }
  return s + "#endif\n";
}

}  // namespace

std::string c_preamble() {
  return "#include <math.h>\n"
         "#include <stdbool.h>\n"
         "#include <stdint.h>\n"
         "#include <string.h>\n"
         "/* helpers: clang warns about unused static functions in a .c file, the attribute says they may be */\n"
         "#if defined(__GNUC__)\n#define KILN_INLINE static inline __attribute__((unused))\n"
         "#else\n#define KILN_INLINE static inline\n#endif\n"
         "KILN_INLINE int32_t kiln_floordiv_i32(int32_t a, int32_t b) {\n"
         "  int32_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "KILN_INLINE int64_t kiln_floordiv_i64(int64_t a, int64_t b) {\n"
         "  int64_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "KILN_INLINE int32_t kiln_floormod_i32(int32_t a, int32_t b) {\n"
         "  int32_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "KILN_INLINE int64_t kiln_floormod_i64(int64_t a, int64_t b) {\n"
         "  int64_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "/* bfloat16: stored as its 16 bits, computed in float and rounded (to nearest even) after every op */\n"
         "KILN_INLINE float kiln_bf16_to_f32(uint16_t b) {\n"
         "  uint32_t u = (uint32_t)b << 16;\n  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n"
         "KILN_INLINE uint16_t kiln_f32_to_bf16(float f) {\n"
         "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);\n"
         "  u += 0x7fffu + ((u >> 16) & 1u);\n  return (uint16_t)(u >> 16);\n}\n"
         "KILN_INLINE float kiln_bf16_round(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }\n"
         "/* max that propagates NaN, like the IR's MAX */\n"
         "KILN_INLINE float kiln_maxf(float a, float b) { return (a > b || a != a) ? a : b; }\n"
         "KILN_INLINE double kiln_maxd(double a, double b) { return (a > b || a != a) ? a : b; }\n" +
         vector_preamble();
}

std::string render_c(std::span<const UOp* const> linear, std::string_view name, std::span<const UOp* const> vars) {
  return CRenderer(linear, name, vars).run();
}

}  // namespace kiln::render

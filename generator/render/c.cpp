#include "generator/render/c.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::render {

namespace {

std::string ctype(DType d) {
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

std::string unsigned_of(DType d) { return "u" + ctype(d); }

// the type a buffer stores: bfloat16 travels as its 16 bits
std::string stype(DType d) { return d == dtypes::bfloat16 ? "uint16_t" : ctype(d); }

std::string round_bf16(DType d, std::string e) { return d == dtypes::bfloat16 ? "kiln_bf16_round(" + e + ")" : e; }

std::string float_literal(double v, DType d) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[64];
  std::to_chars_result r =
      d == dtypes::float64 ? std::to_chars(buf, buf + sizeof buf, v) : std::to_chars(buf, buf + sizeof buf, float(v));
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (d == dtypes::float64) return s;
  s += "f";
  return d == dtypes::float32 ? s : "((" + ctype(d) + ")" + s + ")";
}

std::string int_literal(int64_t v, DType d) {
  if (is_bool(d)) return v ? "1" : "0";
  if (d == dtypes::uint64) return std::to_string(uint64_t(v)) + "ull";
  if (d == dtypes::int64) {
    if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
    return std::to_string(v) + "ll";
  }
  if (v == std::numeric_limits<int32_t>::min()) return "INT32_MIN";
  std::string s = std::to_string(v) + (d == dtypes::uint32 ? "u" : "");
  return bitsize(d) < 32 ? "((" + ctype(d) + ")" + s + ")" : s;
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
std::string vsuffix(DType d) {
  switch (d.scalar) {
    case Scalar::Float32:
      return "vf32";
    case Scalar::Int32:
      return "vi32";
    case Scalar::Uint32:
      return "vu32";
    case Scalar::Float64:
      return "vf64";
    case Scalar::Int64:
      return "vi64";
    case Scalar::Uint64:
      return "vu64";
    default:
      return "";
  }
}

// lanes per vector of elements of `size` bytes
std::string lanes_macro(int size) { return size == 8 ? "KILN_V64" : "KILN_V32"; }

class CRenderer {
 public:
  CRenderer(std::span<const UOp* const> lin, std::string_view name, std::span<const UOp* const> vars)
      : lin_(lin), name_(name), vars_(vars) {}

  std::string run() {
    uint32_t max_id = 0;
    for (const UOp* u : lin_) max_id = std::max(max_id, u->id);  // sources are older than their users
    size_t n = size_t(max_id) + 1;
    depth_.assign(n, 0), uses_.assign(n, 0), user_.assign(n, nullptr), expr_.resize(n);
    rendered_.assign(n, 0), written_.assign(n, 0), needed_.assign(n, 0);
    vec_.assign(n, 0), lane_size_.assign(n, 0), vbuf_.assign(n, 0);
    analyze();
    plan_lanes();
    out_.clear();
    if (vector_loops_ > 0)
      out_ +=
          "#ifndef __GNUC__\n#error \"this kernel uses GNU C vector types: compile it with GCC or Clang\"\n#endif\n";
    out_ += "void " + name_ + "(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n" +
            "  (void)bufs;\n  (void)vars;\n  (void)cores;\n";
    if (!uses_core_) out_ += "  if (core != 0) return;  /* not shared among cores: core 0 does it all */\n";
    for (const UOp* u : lin_)
      if (needed_[u->id]) line(u);
    return out_;
  }

 private:
  // uses, the loop depth of every node, and which buffers are written. The tables are dense by node
  // id: every node of the graph is in the linear program.
  void analyze() {
    // what the stores need; a buffer's size expression is metadata, not code
    std::vector<const UOp*> stack{lin_.back()};
    while (!stack.empty()) {
      const UOp* u = stack.back();
      stack.pop_back();
      if (needed_[u->id]) continue;
      needed_[u->id] = 1;
      uses_core_ |= u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == ".core";
      if (u->op == Op::PARAM || u->op == Op::BUFFER) continue;
      for (const UOp* s : u->src()) stack.push_back(s);
    }
    int d = 1;
    for (const UOp* u : lin_) {
      if (u->op == Op::END) --d;
      depth_[u->id] = d;
      if (u->op == Op::RANGE) ++d;
      if (u->op != Op::PARAM && u->op != Op::BUFFER)
        for (const UOp* s : u->src()) ++uses_[s->id];
      if (u->op == Op::STORE && u->src(0)->op == Op::INDEX) written_[u->src(0)->src(0)->id] = 1;
      for (const UOp* s : u->src()) user_[s->id] = u;  // the last user in program order
    }
  }

  // Which Lane loops are written as vectors (see vsuffix). A loop qualifies when every node in its
  // body varies with the lane and is one of: integer index math affine in the lane; a load or
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
    std::unordered_set<const UOp*> in_vector, scalar_stored;
    for (const LaneLoop& l : loops) in_vector.insert(l.body.begin(), l.body.end());
    for (const UOp* u : lin_)
      if (u->op == Op::STORE && !in_vector.contains(u)) scalar_stored.insert(register_of(u->src(0)));
    for (bool changed = true; changed;) {
      changed = false;
      for (LaneLoop& l : loops) {
        if (l.size == 0) continue;
        if (std::none_of(l.buffers.begin(), l.buffers.end(), [&](const UOp* b) { return scalar_stored.contains(b); }))
          continue;
        l.size = 0, changed = true;  // its stores are scalar stores now
        for (const UOp* u : l.body)
          if (u->op == Op::STORE) scalar_stored.insert(register_of(u->src(0)));
      }
    }
    for (const LaneLoop& l : loops) {
      if (l.size == 0) continue;
      lane_size_[l.range->id] = l.size;
      ++vector_loops_;
      for (const UOp* u : l.vec) vec_[u->id] = 1;
      for (const UOp* b : l.buffers) vbuf_[b->id] = l.size;
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
    int size = 0;                       // the element size of its vectors
    std::vector<const UOp*> body, vec;  // its nodes; those that are vectors
    std::vector<const UOp*> buffers;    // the accumulators it keeps as vectors
  };

  // whether the Lane loop at lin_[at] can be written as vectors, and how (in `l`)
  bool plan_lane_loop(size_t at, LaneLoop& l) {
    const UOp* lane = lin_[at];
    int64_t width = lane->src(0)->ival();
    std::vector<const UOp*>& buffers = l.buffers;
    std::vector<const UOp*>& body = l.body;
    size_t i = at + 1;
    for (; i < lin_.size() && lin_[i]->op != Op::END; ++i) {
      if (lin_[i]->op == Op::RANGE) return false;  // a loop inside: not elementwise over the lanes
      if (needed_[lin_[i]->id]) body.push_back(lin_[i]);
    }
    if (i == lin_.size() || lin_[i]->src(1) != lane) return false;
    std::unordered_set<const UOp*> varies{lane}, vec;
    std::unordered_map<const UOp*, int64_t> stride{{lane, 1}};
    std::unordered_map<const UOp*, const UOp*> stored_at;   // buffer -> the address the loop stores it at
    std::vector<std::pair<const UOp*, const UOp*>> loaded;  // (buffer, address)
    int size = 0;
    auto elem = [&](DType d) {  // a vector element: the loop's one size
      int b = vsuffix(d).empty() ? 0 : itemsize(d);
      if (b == 0 || (size != 0 && b != size)) return false;
      size = b;
      return true;
    };
    auto is_vec = [&](const UOp* s) { return vec.contains(s); };
    // an INDEX the loop reads or writes one vector at: the buffer (through AFTER) or null
    auto access = [&](const UOp* idx) -> const UOp* {
      if (idx->op != Op::INDEX || idx->nsrc() != 2) return nullptr;
      const UOp* buf = idx->src(0);
      while (buf->op == Op::AFTER) buf = buf->src(0);
      const UOp* addr = idx->src(1);
      if (buf->op == Op::PARAM) {
        auto st = stride.find(addr);
        return st != stride.end() && st->second == 1 && !vec.contains(addr) ? buf : nullptr;
      }
      if (buf->op == Op::BUFFER && addr == lane && buf->arg<ParamArg>().size == width) return buf;
      return nullptr;
    };
    for (const UOp* u : body) {
      bool v = std::any_of(u->src().begin(), u->src().end(), [&](const UOp* s) { return varies.contains(s); });
      if (u->op == Op::CONST || u->op == Op::AFTER || u->op == Op::GROUP) {
        if (v) varies.insert(u);
        continue;
      }
      if (!v) return false;  // loop-carried work that is not per lane (a scalar accumulator)
      varies.insert(u);
      bool any_vec = std::any_of(u->src().begin(), u->src().end(), is_vec);
      switch (u->op) {
        case Op::INDEX:
          continue;  // checked by its load or store
        case Op::LOAD: {
          const UOp* buf = access(u->src(0));
          if (!buf || !elem(u->dtype)) return false;
          if (buf->op == Op::PARAM) loaded.push_back({buf, u->src(0)->src(1)});
          if (buf->op == Op::BUFFER) buffers.push_back(buf);
          vec.insert(u);
          continue;
        }
        case Op::STORE: {
          const UOp* buf = access(u->src(0));
          if (!buf || !elem(u->src(0)->dtype)) return false;
          if (buf->op == Op::PARAM) {
            auto [it, fresh] = stored_at.emplace(buf, u->src(0)->src(1));
            if (!fresh && it->second != u->src(0)->src(1)) return false;
          }
          if (buf->op == Op::BUFFER) buffers.push_back(buf);
          continue;
        }
        default:
          break;
      }
      if (!any_vec && is_int(u->dtype)) {  // index math: affine in the lane
        int64_t s0 = stride.contains(u->src(0)) ? stride[u->src(0)] : 0;
        int64_t s1 = u->nsrc() > 1 && stride.contains(u->src(1)) ? stride[u->src(1)] : 0;
        auto konst = [&](size_t k) { return u->nsrc() > k && u->src(k)->op == Op::CONST; };
        if (u->op == Op::ADD) {
          stride[u] = s0 + s1;
        } else if (u->op == Op::SUB) {
          stride[u] = s0 - s1;
        } else if (u->op == Op::MUL && (konst(0) || konst(1))) {
          stride[u] = konst(1) ? s0 * u->src(1)->ival() : s1 * u->src(0)->ival();
        } else if (u->op == Op::CAST && is_int(u->src(0)->dtype) && u->vmin().i == u->src(0)->vmin().i &&
                   u->vmax().i == u->src(0)->vmax().i) {
          stride[u] = s0;  // every value fits: the same numbers
        } else {
          return false;
        }
        continue;
      }
      // a vector value: every operand that varies is a vector
      for (const UOp* s : u->src())
        if (varies.contains(s) && !vec.contains(s)) return false;
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
            ok = !vec.contains(u->src(0)) || itemsize(u->dtype) == size;
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
      vec.insert(u);
    }
    for (auto [buf, addr] : loaded)
      if (auto it = stored_at.find(buf); it != stored_at.end() && it->second != addr) return false;
    if (size == 0 || width * size % 64 != 0) return false;  // whole vectors at every width (64 bytes at most)
    l.size = size;
    l.vec.assign(vec.begin(), vec.end());
    return true;
  }

  void emit(const UOp* at, const std::string& s) {
    out_.append(size_t(2 * depth_[at->id]), ' ');
    out_ += s;
    out_ += '\n';
  }

  const std::string& ex(const UOp* u) {
    if (!rendered_[u->id])
      throw InternalError("render C: " + std::string(op_name(u->op)) + " used before it is rendered");
    return expr_[u->id];
  }
  void set_expr(const UOp* u, std::string e) {
    expr_[u->id] = std::move(e);
    rendered_[u->id] = 1;
  }

  // a value: inlined into its single user at the same depth, else a named local
  void value(const UOp* u, std::string e, const char* prefix) {
    bool inline_it = uses_[u->id] == 1 && single_user_same_depth(u);
    if (inline_it) {
      set_expr(u, "(" + e + ")");
      return;
    }
    std::string n = prefix + std::to_string(counter_++);
    emit(u, "const " + (vec_[u->id] ? vtype(u->dtype) : ctype(u->dtype)) + " " + n + " = " + e + ";");
    set_expr(u, n);
  }

  bool single_user_same_depth(const UOp* u) {
    const UOp* user = user_[u->id];
    return user && depth_[user->id] == depth_[u->id] && user->op != Op::END;
  }

  // integer ops whose result range analysis cannot bound inside the dtype wrap via unsigned
  bool may_overflow(const UOp* u) const {
    if (!is_int(u->dtype)) return false;
    if (bitsize(u->dtype) < 32) return false;  // computed in int, narrowed on use
    if (is_unsigned(u->dtype)) return false;   // unsigned arithmetic wraps in C
    return u->vmin().i == int_min(u->dtype) || u->vmax().i == int_max(u->dtype);
  }

  std::string alu(const UOp* u) {
    DType d = u->dtype;
    auto s = [&](size_t i) { return ex(u->src(i)); };
    bool flt = is_float(d);
    std::string f = d == dtypes::float64 ? "" : "f";
    auto fn = [&](const char* name) {
      if (d == dtypes::float16) return "(_Float16)" + std::string(name) + "f((float)" + s(0) + ")";
      return std::string(name) + f + "(" + s(0) + ")";
    };
    auto wrap = [&](const char* op) {
      if (!may_overflow(u)) return s(0) + " " + op + " " + s(1);
      std::string ut = unsigned_of(d);
      return "(" + ctype(d) + ")((" + ut + ")" + s(0) + " " + op + " (" + ut + ")" + s(1) + ")";
    };
    auto narrow = [&](std::string e) { return is_int(d) && bitsize(d) < 32 ? "(" + ctype(d) + ")(" + e + ")" : e; };
    switch (u->op) {
      case Op::ADD:
        return narrow(flt ? s(0) + " + " + s(1) : wrap("+"));
      case Op::SUB:
        return narrow(flt ? s(0) + " - " + s(1) : wrap("-"));
      case Op::MUL:
        return narrow(flt ? s(0) + " * " + s(1) : wrap("*"));
      case Op::NEG:
        if (!flt && may_overflow(u)) return "(" + ctype(d) + ")(0u - (" + unsigned_of(d) + ")" + s(0) + ")";
        return narrow("-" + s(0));
      case Op::FDIV:
        return s(0) + " / " + s(1);
      case Op::CDIV:
        return narrow(s(0) + " / " + s(1));
      case Op::CMOD:
        return narrow(s(0) + " % " + s(1));
      case Op::FLOORDIV:
        return "kiln_floordiv_" + std::string(bitsize(d) == 64 ? "i64" : "i32") + "(" + s(0) + ", " + s(1) + ")";
      case Op::FLOORMOD:
        return "kiln_floormod_" + std::string(bitsize(d) == 64 ? "i64" : "i32") + "(" + s(0) + ", " + s(1) + ")";
      case Op::MAX:
        if (flt) return "kiln_max" + std::string(d == dtypes::float64 ? "d" : "f") + "(" + s(0) + ", " + s(1) + ")";
        return s(0) + " > " + s(1) + " ? " + s(0) + " : " + s(1);
      case Op::CMPLT:
        return s(0) + " < " + s(1);
      case Op::CMPNE:
        return s(0) + " != " + s(1);
      case Op::CMPEQ:
        return s(0) + " == " + s(1);
      case Op::AND:
        return narrow(s(0) + " & " + s(1));
      case Op::OR:
        return narrow(s(0) + " | " + s(1));
      case Op::XOR:
        return narrow(s(0) + " ^ " + s(1));
      case Op::SHL:
        return narrow(may_overflow(u) ? "(" + ctype(d) + ")((" + unsigned_of(d) + ")" + s(0) + " << " + s(1) + ")"
                                      : s(0) + " << " + s(1));
      case Op::SHR:
        return narrow(s(0) + " >> " + s(1));
      case Op::WHERE:
        return s(0) + " ? " + s(1) + " : " + s(2);
      case Op::EXP2:
        return fn("exp2");
      case Op::LOG2:
        return fn("log2");
      case Op::SIN:
        return fn("sin");
      case Op::SQRT:
        return fn("sqrt");
      case Op::TRUNC:
        return flt ? fn("trunc") : s(0);
      case Op::RECIPROCAL:
        return float_literal(1.0, d) + " / " + s(0);
      case Op::POW:
        if (d == dtypes::float16) return "(_Float16)powf((float)" + s(0) + ", (float)" + s(1) + ")";
        return "pow" + f + "(" + s(0) + ", " + s(1) + ")";
      default:
        throw InternalError("render C: ALU op " + std::string(op_name(u->op)) + " (decompose it first)");
    }
  }

  // the element an INDEX addresses, and its gate ("" when always valid)
  std::pair<std::string, std::string> address(const UOp* idx) {
    const UOp* buf = idx->src(0);
    const UOp* i = idx->src(1);
    std::string gate;
    if (i->op == Op::WHERE && i->src(2)->is_invalid()) {
      gate = ex(i->src(0));
      i = i->src(1);
    }
    const UOp* b = buf;
    while (b->op == Op::AFTER) b = b->src(0);
    if (b->op == Op::BUFFER && vbuf_[b->id]) {  // one element of an accumulator of vectors
      std::string v = lanes_macro(vbuf_[b->id]);
      return {buffer_of(buf) + "[" + ex(i) + " / " + v + "][" + ex(i) + " % " + v + "]", gate};
    }
    return {buffer_of(buf) + "[" + ex(i) + "]", gate};
  }

  std::string buffer_of(const UOp* p) {  // through AFTER to the accumulator
    while (p->op == Op::AFTER) p = p->src(0);
    return ex(p);
  }

  void line(const UOp* u) {
    if (lane_ && (vec_[u->id] || u->op == Op::STORE)) {
      vector_line(u);
      return;
    }
    switch (u->op) {
      case Op::SINK:
        out_ += "}\n";
        return;
      case Op::CONST:
        if (u->is_invalid()) return;
        set_expr(u, is_float(u->dtype) ? float_literal(u->cval().f, u->dtype) : int_literal(u->cval().i, u->dtype));
        return;
      case Op::PARAM: {
        const auto& pa = u->arg<ParamArg>();
        std::string n = "data" + std::to_string(pa.slot);
        std::string t = stype(u->dtype.elem());
        std::string cq = written_[u->id] ? "" : "const ";
        emit(u, cq + t + "* restrict " + n + " = (" + cq + t + "*)bufs[" + std::to_string(pa.slot) + "];  /* " +
                    std::string(pa.name) + " */");
        set_expr(u, n);
        return;
      }
      case Op::DEFINE_VAR: {
        std::string_view vn = u->arg<VarArg>().name;
        if (vn == ".core" || vn == ".cores") {  // the function's own arguments
          std::string arg(vn.substr(1));
          emit(u, "const " + ctype(u->dtype) + " var_" + arg + " = (" + ctype(u->dtype) + ")" + arg + ";");
          set_expr(u, "var_" + arg);
          return;
        }
        size_t j = 0;
        while (j < vars_.size() && vars_[j]->arg<VarArg>().name != vn) ++j;
        if (j == vars_.size())
          throw InternalError("render C: variable " + std::string(vn) + " is not a kernel argument");
        std::string n = identifier(vn) ? "var_" + std::string(vn) : "var" + std::to_string(j);
        emit(u, "const " + ctype(u->dtype) + " " + n + " = (" + ctype(u->dtype) + ")vars[" + std::to_string(j) + "];");
        set_expr(u, n);
        return;
      }
      case Op::BUFFER: {  // an accumulator register
        std::string n = "acc" + std::to_string(u->arg<ParamArg>().slot);
        int64_t size = u->arg<ParamArg>().size;
        if (int vsize = vbuf_[u->id])  // an array of vectors, one element per lane
          emit(u, vtype(u->dtype.elem()) + " " + n + "[" + std::to_string(size) + " / " + lanes_macro(vsize) + "];");
        else
          emit(u, ctype(u->dtype.elem()) + " " + n + (size > 1 ? "[" + std::to_string(size) + "]" : "") + ";");
        set_expr(u, n);
        return;
      }
      case Op::RANGE: {
        std::string n = "ridx" + std::to_string(u->arg<RangeArg>().axis);
        std::string t = ctype(u->dtype);
        if (int size = lane_size_[u->id]) {  // lanes as vectors: n is the first lane of each
          lanes_ = lanes_macro(size);
          lane_ = u;
          emit(u, "#pragma GCC unroll " + std::to_string(u->src(0)->ival() * size / 16));
          emit(u, "for (" + t + " " + n + " = 0; " + n + " < " + ex(u->src(0)) + "; " + n + " += " + lanes_ + ") {");
          set_expr(u, n);
          return;
        }
        emit(u, "for (" + t + " " + n + " = 0; " + n + " < " + ex(u->src(0)) + "; " + n + "++) {");
        set_expr(u, n);
        return;
      }
      case Op::END:
        if (u->src(1) == lane_) lane_ = nullptr;
        emit(u, "}");
        return;
      case Op::AFTER:
      case Op::GROUP:
      case Op::INDEX:
        return;  // ordering only / rendered where loaded or stored
      case Op::LOAD: {
        const UOp* src = u->src(0);
        if (src->op == Op::INDEX) {
          auto [addr, gate] = address(src);
          if (u->dtype == dtypes::bfloat16) addr = "kiln_bf16_to_f32(" + addr + ")";
          std::string e = gate.empty() ? addr : gate + " ? " + addr + " : " + zero(u->dtype);
          std::string n = "val" + std::to_string(counter_++);
          emit(u, "const " + ctype(u->dtype) + " " + n + " = " + e + ";");
          set_expr(u, n);
          return;
        }
        std::string n = "val" + std::to_string(counter_++);
        emit(u, "const " + ctype(u->dtype) + " " + n + " = " + buffer_of(src) + ";");
        set_expr(u, n);
        return;
      }
      case Op::STORE: {
        const UOp* dst = u->src(0);
        std::string v = ex(u->src(1));
        if (dst->op == Op::INDEX) {
          auto [addr, gate] = address(dst);
          if (dst->dtype == dtypes::bfloat16) v = "kiln_f32_to_bf16(" + v + ")";
          emit(u, (gate.empty() ? "" : "if (" + gate + ") ") + addr + " = " + v + ";");
        } else {
          emit(u, buffer_of(dst) + " = " + v + ";");
        }
        return;
      }
      case Op::CAST: {
        DType to = u->dtype;
        const std::string& x = ex(u->src(0));
        value(u, is_bool(to) ? x + " != 0" : round_bf16(to, "(" + ctype(to) + ")" + x), "cast");
        return;
      }
      case Op::BITCAST: {
        std::string n = "bits" + std::to_string(counter_++);
        DType from = u->src(0)->dtype;
        std::string x = from == dtypes::bfloat16 ? "kiln_f32_to_bf16(" + ex(u->src(0)) + ")" : ex(u->src(0));
        emit(u, stype(u->dtype) + " " + n + "; { const " + stype(from) + " from = " + x + "; memcpy(&" + n +
                    ", &from, sizeof " + n + "); }");
        set_expr(u, u->dtype == dtypes::bfloat16 ? "kiln_bf16_to_f32(" + n + ")" : n);
        return;
      }
      default:
        break;
    }
    if (u->op == Op::WHERE && u->src(2)->is_invalid()) return;  // a gated index: rendered by its load or store
    if (is_alu(u->op)) {
      value(u, round_bf16(u->dtype, alu(u)), "alu");
      return;
    }
    throw InternalError("render C: " + std::string(op_name(u->op)) + " cannot be rendered");
  }

  // the vector type of a value in the current Lane loop; a bool is a mask as wide as what it compares
  std::string vtype(DType d) const {
    if (is_bool(d)) return lanes_ == "KILN_V64" ? "kiln_vi64" : "kiln_vi32";
    return "kiln_" + vsuffix(d);
  }
  std::string vname(DType d) const { return vtype(d).substr(5); }  // vf32, ...: the helpers' suffix
  std::string vunsigned() const { return lanes_ == "KILN_V64" ? "kiln_vu64" : "kiln_vu32"; }

  // an operand as a vector: a vector as it is, a scalar broadcast (true as the all-ones mask)
  std::string vop(const UOp* s) {
    if (vec_[s->id]) return ex(s);
    if (is_bool(s->dtype))
      return "kiln_splat_" + vname(s->dtype) + "(-(" + std::string(lanes_ == "KILN_V64" ? "int64_t" : "int32_t") +
             ")(" + ex(s) + "))";
    return "kiln_splat_" + vname(s->dtype) + "(" + ex(s) + ")";
  }

  // where a vector of the loop's chunk is read or written: an accumulator's vector, or the
  // consecutive elements of a buffer from the chunk's first lane on
  std::string vplace(const UOp* idx) {
    const UOp* b = idx->src(0);
    while (b->op == Op::AFTER) b = b->src(0);
    if (b->op == Op::BUFFER) return buffer_of(idx->src(0)) + "[" + ex(lane_) + " / " + lanes_ + "]";
    return "&" + buffer_of(idx->src(0)) + "[" + ex(idx->src(1)) + "]";
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
      std::string n = "val" + std::to_string(counter_++);
      std::string e = in_register(idx) ? vplace(idx) : "kiln_load_" + vname(d) + "(" + vplace(idx) + ")";
      emit(u, "const " + vtype(d) + " " + n + " = " + e + ";");
      set_expr(u, n);
      return;
    }
    if (u->op == Op::STORE) {
      const UOp* idx = u->src(0);
      std::string v = vop(u->src(1));
      if (in_register(idx))
        emit(u, vplace(idx) + " = " + v + ";");
      else
        emit(u, "kiln_store_" + vname(idx->dtype) + "(" + vplace(idx) + ", " + v + ");");
      return;
    }
    auto a = [&](size_t i) { return vop(u->src(i)); };
    auto wrap = [&](const char* op) {
      if (is_float(d) || !may_overflow(u)) return a(0) + " " + op + " " + a(1);
      std::string ut = vunsigned();
      return "(" + vtype(d) + ")((" + ut + ")" + a(0) + " " + op + " (" + ut + ")" + a(1) + ")";
    };
    std::string e;
    switch (u->op) {
      case Op::ADD:
        e = wrap("+");
        break;
      case Op::SUB:
        e = wrap("-");
        break;
      case Op::MUL:
        e = wrap("*");
        break;
      case Op::SHL:
        e = wrap("<<");
        break;
      case Op::NEG:
        e = is_float(d) || !may_overflow(u) ? "-" + a(0) : "(" + vtype(d) + ")(-(" + vunsigned() + ")" + a(0) + ")";
        break;
      case Op::FDIV:
      case Op::CDIV:
        e = a(0) + " / " + a(1);
        break;
      case Op::CMOD:
        e = a(0) + " % " + a(1);
        break;
      case Op::RECIPROCAL:
        e = "kiln_splat_" + vname(d) + "(" + float_literal(1.0, d) + ") / " + a(0);
        break;
      case Op::AND:
        e = a(0) + " & " + a(1);
        break;
      case Op::OR:
        e = a(0) + " | " + a(1);
        break;
      case Op::XOR:
        e = a(0) + " ^ " + a(1);
        break;
      case Op::SHR:
        e = a(0) + " >> " + a(1);
        break;
      case Op::MAX:
        e = "kiln_max_" + vname(d) + "(" + a(0) + ", " + a(1) + ")";
        break;
      case Op::CMPLT:
        e = a(0) + " < " + a(1);
        break;
      case Op::CMPNE:
        e = a(0) + " != " + a(1);
        break;
      case Op::CMPEQ:
        e = a(0) + " == " + a(1);
        break;
      case Op::WHERE:
        e = vec_[u->src(0)->id] ? "kiln_select_" + vname(d) + "(" + ex(u->src(0)) + ", " + a(1) + ", " + a(2) + ")"
                                : ex(u->src(0)) + " ? " + a(1) + " : " + a(2);
        break;
      case Op::CAST:
        e = "__builtin_convertvector(" + a(0) + ", " + vtype(d) + ")";
        break;
      case Op::BITCAST:
        e = "(" + vtype(d) + ")(" + a(0) + ")";
        break;
      default:
        throw InternalError("render C: " + std::string(op_name(u->op)) + " in a vector loop");
    }
    value(u, e, is_bool(d) ? "mask" : "vec");
  }

  std::string zero(DType d) const { return is_float(d) ? float_literal(0.0, d) : int_literal(0, d); }

  std::span<const UOp* const> lin_;
  std::string name_;
  std::span<const UOp* const> vars_;
  std::string out_;
  int counter_ = 0;
  bool uses_core_ = false;
  std::vector<int> depth_, uses_;                     // by node id
  std::vector<const UOp*> user_;                      // by node id: the last user in the program
  std::vector<std::string> expr_;                     // by node id: how users spell the value
  std::vector<uint8_t> rendered_, written_, needed_;  // by node id
  // vector loops (plan_lanes), by node id: whether a node is a vector value; the lane stride of
  // index math; the element size a Lane RANGE is written with; the element size of an
  // accumulator kept as vectors (0: none of these)
  std::vector<uint8_t> vec_;
  std::vector<int> lane_size_, vbuf_;
  int vector_loops_ = 0;
  const UOp* lane_ = nullptr;  // the Lane loop being written as vectors
  std::string lanes_;          // its lanes per vector (a macro of the preamble)
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

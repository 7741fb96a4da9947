#include "generator/render/c.h"

#include <charconv>
#include <cmath>
#include <limits>
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
    analyze();
    out_ = "void " + name_ + "(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n" +
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
    emit(u, "const " + ctype(u->dtype) + " " + n + " = " + e + ";");
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
    return {buffer_of(buf) + "[" + ex(i) + "]", gate};
  }

  std::string buffer_of(const UOp* p) {  // through AFTER to the accumulator
    while (p->op == Op::AFTER) p = p->src(0);
    return ex(p);
  }

  void line(const UOp* u) {
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
        emit(u, ctype(u->dtype.elem()) + " " + n + (size > 1 ? "[" + std::to_string(size) + "]" : "") + ";");
        set_expr(u, n);
        return;
      }
      case Op::RANGE: {
        std::string n = "ridx" + std::to_string(u->arg<RangeArg>().axis);
        std::string t = ctype(u->dtype);
        emit(u, "for (" + t + " " + n + " = 0; " + n + " < " + ex(u->src(0)) + "; " + n + "++) {");
        set_expr(u, n);
        return;
      }
      case Op::END:
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
};

}  // namespace

std::string c_preamble() {
  return "#include <math.h>\n"
         "#include <stdbool.h>\n"
         "#include <stdint.h>\n"
         "#include <string.h>\n"
         "static inline int32_t kiln_floordiv_i32(int32_t a, int32_t b) {\n"
         "  int32_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "static inline int64_t kiln_floordiv_i64(int64_t a, int64_t b) {\n"
         "  int64_t q = a / b;\n  return q - ((a % b != 0) & ((a < 0) != (b < 0)));\n}\n"
         "static inline int32_t kiln_floormod_i32(int32_t a, int32_t b) {\n"
         "  int32_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "static inline int64_t kiln_floormod_i64(int64_t a, int64_t b) {\n"
         "  int64_t r = a % b;\n  return r + ((r != 0) & ((r < 0) != (b < 0))) * b;\n}\n"
         "/* bfloat16: stored as its 16 bits, computed in float and rounded (to nearest even) after every op */\n"
         "static inline float kiln_bf16_to_f32(uint16_t b) {\n"
         "  uint32_t u = (uint32_t)b << 16;\n  float f;\n  memcpy(&f, &u, 4);\n  return f;\n}\n"
         "static inline uint16_t kiln_f32_to_bf16(float f) {\n"
         "  uint32_t u;\n  memcpy(&u, &f, 4);\n"
         "  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);\n"
         "  u += 0x7fffu + ((u >> 16) & 1u);\n  return (uint16_t)(u >> 16);\n}\n"
         "static inline float kiln_bf16_round(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }\n"
         "/* max that propagates NaN, like the IR's MAX */\n"
         "static inline float kiln_maxf(float a, float b) { return (a > b || a != a) ? a : b; }\n"
         "static inline double kiln_maxd(double a, double b) { return (a > b || a != a) ? a : b; }\n";
}

std::string render_c(std::span<const UOp* const> linear, std::string_view name, std::span<const UOp* const> vars) {
  return CRenderer(linear, name, vars).run();
}

}  // namespace kiln::render

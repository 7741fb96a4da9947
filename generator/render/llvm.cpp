#include "generator/render/llvm.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "generator/render/llvm_types.h"

namespace kiln::render {

using namespace llvm_text;  // NOLINT: the types and literals of the text

namespace {

// ---------------------------------------------------------------- one kernel

struct Module {
  std::string text;             // the functions
  std::set<std::string> decls;  // the intrinsics they call, sorted: the same bytes every time
  std::string metadata;         // alias scopes
  int next_md = 0;
};

class LlvmRenderer {
 public:
  LlvmRenderer(Module& m, const LlvmKernel& k) : m_(m), k_(k), lin_(k.linear) {}

  void run() {
    if (lin_.empty()) throw InternalError("render LLVM: kernel " + k_.name + " is empty");
    uint32_t max_id = 0;
    for (const UOp* u : lin_) max_id = std::max(max_id, u->id);
    pos_.assign(size_t(max_id) + 1, 0);
    for (size_t i = 0; i < lin_.size(); ++i) pos_[lin_[i]->id] = uint32_t(i);
    names_.assign(lin_.size(), std::string());
    needed_.assign(lin_.size(), 0);
    analyze();
    alias_scopes();
    body_.reserve(64 * lin_.size());
    if (!uses_core_) {  // not shared among cores: core 0 does it all
      emit("%not_core0 = icmp ne i32 %core, 0");
      emit("br i1 %not_core0, label %done, label %start");
      label("start");
    }
    for (size_t i = 0; i < lin_.size(); ++i)
      if (needed_[i]) line(lin_[i]);
    std::string& o = m_.text;
    o += "define void @" + quoted_name(k_.name) +
         "(ptr noalias nocapture noundef readonly %bufs, ptr noalias nocapture noundef readonly %vars, "
         "i32 noundef %core, i32 noundef %cores) #0 {\nentry:\n";
    o += allocas_;
    o += body_;
    if (!uses_core_) o += "done:\n  ret void\n";
    o += "}\n\n";
  }

 private:
  // which nodes the stores need (a buffer's size expression is metadata, not code), and whether
  // the kernel reads its core: one sweep from the end, as sources come before their users
  void analyze() {
    for (size_t i = 0; i < lin_.size(); ++i)
      for (const UOp* s : lin_[i]->src())
        if (lin_[pos_[s->id]] != s) throw fail(std::string(op_name(s->op)) + " is missing from the linear program");
    needed_.back() = 1;
    for (size_t i = lin_.size(); i-- > 0;) {
      const UOp* u = lin_[i];
      if (!needed_[i]) continue;
      uses_core_ |= u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == ".core";
      if (u->op == Op::PARAM || u->op == Op::BUFFER) continue;
      for (const UOp* s : u->src()) needed_[pos_[s->id]] = 1;
    }
  }

  // One scope per kernel buffer (restrict) and per accumulator: an access through one is in its
  // scope and aliases none of the others. (LLVM knows an alloca from a buffer only where it can
  // prove the alloca never escapes; without the scopes its vectorizer checks at run time.) Past
  // kMaxScopes memories the accumulators go without: the lists grow as the square.
  void alias_scopes() {
    constexpr size_t kMaxScopes = 64;
    std::vector<std::pair<std::string, std::string>> mems;  // key, label
    std::set<std::string> seen;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < lin_.size(); ++i) {
        const UOp* u = lin_[i];
        if (!needed_[i] || u->op != (pass == 0 ? Op::PARAM : Op::BUFFER)) continue;
        if (pass == 1 && mems.size() >= kMaxScopes) break;
        std::string key = mem_key(u);
        if (!seen.insert(key).second) continue;
        mems.push_back(
            {key, u->op == Op::PARAM ? "bufs[" + num(u->arg<ParamArg>().slot) + "]" : "acc" + num(int64_t(i))});
      }
    if (mems.size() < 2) return;
    int domain = m_.next_md++;
    m_.metadata += "!" + num(domain) + " = distinct !{!" + num(domain) + ", !\"" + escaped(k_.name) + "\"}\n";
    std::vector<int> scope;
    for (const auto& [key, label] : mems) {
      int id = m_.next_md++;
      scope.push_back(id);
      m_.metadata += "!" + num(id) + " = distinct !{!" + num(id) + ", !" + num(domain) + ", !\"" + label + "\"}\n";
    }
    for (size_t k = 0; k < mems.size(); ++k) {
      int self = m_.next_md++, others = m_.next_md++;
      m_.metadata += "!" + num(self) + " = !{!" + num(scope[k]) + "}\n";
      std::string list;
      for (size_t j = 0; j < mems.size(); ++j)
        if (j != k) list += (list.empty() ? "!" : ", !") + num(scope[j]);
      m_.metadata += "!" + num(others) + " = !{" + list + "}\n";
      scope_md_[mems[k].first] = ", !alias.scope !" + num(self) + ", !noalias !" + num(others);
    }
  }
  std::string mem_key(const UOp* buf) const {
    return buf->op == Op::PARAM ? "p" + num(buf->arg<ParamArg>().slot) : "a" + num(int64_t(pos_[buf->id]));
  }

  static std::string quoted_name(const std::string& n) {
    bool plain = !n.empty() && !std::isdigit(static_cast<unsigned char>(n[0]));
    for (char c : n) plain &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    return plain ? n : "\"" + escaped(n) + "\"";
  }

  InternalError fail(const std::string& what) const {
    return InternalError("render LLVM: kernel " + k_.name + ": " + what);
  }

  void emit(const std::string& s) {
    body_ += "  ";
    body_ += s;
    body_ += '\n';
  }
  void label(const std::string& l) {
    body_ += l + ":\n";
    block_ = l;
  }
  std::string tmp() { return "%t" + num(tmp_++); }
  // emits `%tN = <rhs>` and returns %tN
  std::string let(const std::string& rhs) {
    std::string t = tmp();
    emit(t + " = " + rhs);
    return t;
  }

  const std::string& ex(const UOp* u) const {
    const std::string& n = names_[pos_[u->id]];
    if (n.empty()) throw fail(std::string(op_name(u->op)) + " used before it is rendered");
    return n;
  }
  // an operand as a value of `want` lanes: a scalar is broadcast to a vector
  std::string operand(const UOp* s, int want) {
    const std::string& v = ex(s);
    if (want == 1 || s->dtype.count != 1) return v;
    std::string et(scalar_type(s->dtype));
    std::string one = let("insertelement <1 x " + et + "> poison, " + et + " " + v + ", i64 0");
    return let("shufflevector <1 x " + et + "> " + one + ", <1 x " + et + "> poison, <" + num(want) +
               " x i32> zeroinitializer");
  }
  void set(const UOp* u, std::string v) { names_[pos_[u->id]] = std::move(v); }

  // declares an intrinsic (once per module) and returns a call to it
  std::string call(const std::string& ret, const std::string& fn, const std::vector<std::string>& typed_args,
                   const std::vector<std::string>& arg_types) {
    std::string decl = "declare " + ret + " @" + fn + "(";
    for (size_t i = 0; i < arg_types.size(); ++i) decl += (i ? ", " : "") + arg_types[i];
    m_.decls.insert(decl + ")");
    std::string c = "call " + ret + " @" + fn + "(";
    for (size_t i = 0; i < typed_args.size(); ++i) c += (i ? ", " : "") + typed_args[i];
    return let(c + ")");
  }

  // ---- bfloat16: its 16 bits <-> float, rounding to nearest even (NaN stays a quiet NaN)
  std::string f32_to_bf16_bits32(const std::string& v, int n) {  // the bf16 bits in the low half of an i32
    std::string i32 = vector_of(n, "i32"), b1 = vector_of(n, "i1");
    auto c = [&](int64_t x) { return splat(n, "i32", num(x)); };
    std::string u = let("bitcast " + vector_of(n, "float") + " " + v + " to " + i32);
    std::string a = let("and " + i32 + " " + u + ", " + c(0x7fffffff));
    std::string nan = let("icmp ugt " + i32 + " " + a + ", " + c(0x7f800000));
    std::string hi = let("lshr " + i32 + " " + u + ", " + c(16));
    std::string quiet = let("or " + i32 + " " + hi + ", " + c(0x40));
    std::string lsb = let("and " + i32 + " " + hi + ", " + c(1));
    std::string r = let("add " + i32 + " " + u + ", " + c(0x7fff));
    r = let("add " + i32 + " " + r + ", " + lsb);
    r = let("lshr " + i32 + " " + r + ", " + c(16));
    return let("select " + b1 + " " + nan + ", " + i32 + " " + quiet + ", " + i32 + " " + r);
  }
  std::string bits32_to_f32(const std::string& bits, int n) {
    std::string i32 = vector_of(n, "i32");
    std::string s = let("shl " + i32 + " " + bits + ", " + splat(n, "i32", "16"));
    return let("bitcast " + i32 + " " + s + " to " + vector_of(n, "float"));
  }
  std::string f32_to_bf16(const std::string& v, int n) {
    return let("trunc " + vector_of(n, "i32") + " " + f32_to_bf16_bits32(v, n) + " to " + vector_of(n, "i16"));
  }
  std::string bf16_to_f32(const std::string& bits16, int n) {
    return bits32_to_f32(let("zext " + vector_of(n, "i16") + " " + bits16 + " to " + vector_of(n, "i32")), n);
  }
  std::string bf16_round(const std::string& v, int n) { return bits32_to_f32(f32_to_bf16_bits32(v, n), n); }

  // ---- memory

  // the buffer an INDEX addresses, through AFTER
  static const UOp* buffer_of(const UOp* p) {
    while (p->op == Op::AFTER) p = p->src(0);
    return p;
  }
  // an INDEX's gate (null when always valid) and the index it guards
  static std::pair<const UOp*, const UOp*> gated(const UOp* idx) {
    const UOp* i = idx->src(1);
    if (i->op == Op::WHERE && i->src(2)->is_invalid()) return {i->src(0), i->src(1)};
    return {nullptr, i};
  }
  std::string alias_md(const UOp* buf) const {
    auto it = scope_md_.find(mem_key(buf));
    return it == scope_md_.end() ? "" : it->second;
  }
  // the address of element i of the buffer: i counts scalar elements in every buffer, an accumulator
  // of vectors too (its vector i / n holds elements i..i+n-1: ops.def's vector contract)
  std::string address(const UOp* buf, const UOp* i) {
    DType elem = buf->dtype.elem().base();
    std::string et = buf->op == Op::BUFFER ? ty(elem) : mem_ty(elem);
    int budget = 16;
    return let("getelementptr inbounds " + et + ", ptr " + ex(buf) + ", i64 " + offset64(i, budget));
  }
  // An int32 index as the i64 the address needs, its sums and products that cannot overflow widened
  // term by term (the same value): sign-extending the whole would hide from LLVM that the elements
  // of a Lane loop are consecutive once it is unrolled (a sum of a multiple of 64 and a lane becomes
  // an `or`, which a sext does not pass), and turn its vector loads into gathers. `budget` bounds
  // the terms so that a shared DAG is not written out as a tree.
  std::string offset64(const UOp* i, int& budget) {
    if (i->dtype == dtypes::int64) return ex(i);
    bool wide = i->dtype == dtypes::int32 && (i->op == Op::ADD || i->op == Op::MUL) && !may_overflow(i);
    if (i->op == Op::CONST) return int_literal(i->cval().i, dtypes::int64);
    if (wide && budget > 0) {
      --budget;
      std::string a = offset64(i->src(0), budget), b = offset64(i->src(1), budget);
      return let(std::string(i->op == Op::ADD ? "add nsw i64 " : "mul nsw i64 ") + a + ", " + b);
    }
    if (is_unsigned(i->dtype) || is_bool(i->dtype)) return let("zext " + ty(i->dtype) + " " + ex(i) + " to i64");
    return let("sext " + ty(i->dtype) + " " + ex(i) + " to i64");
  }
  // a value of dtype d as it is stored, from memory's representation and back
  std::string to_memory(const std::string& v, DType d, bool reg) {
    if (reg) return v;
    if (is_bool(d)) return let("zext " + ty(d) + " " + v + " to " + mem_ty(d));
    if (d.scalar == Scalar::BFloat16) return f32_to_bf16(v, d.count);
    return v;
  }
  std::string from_memory(const std::string& v, DType d, bool reg) {
    if (reg) return v;
    if (is_bool(d)) return let("icmp ne " + mem_ty(d) + " " + v + ", " + zero_of(DType(Scalar::Int8).vec(d.count)));
    if (d.scalar == Scalar::BFloat16) return bf16_to_f32(v, d.count);
    return v;
  }
  static int align_of(DType d) { return std::max(1, bitsize(d) / 8); }  // of one element: vectors are unaligned

  void load(const UOp* u) {
    DType d = u->dtype;
    const UOp* src = u->src(0);
    if (src->op != Op::INDEX) {  // an accumulator itself
      const UOp* b = buffer_of(src);
      return set(u, let("load " + ty(d) + ", ptr " + ex(b) + ", align " + num(align_of(d)) + alias_md(b)));
    }
    const UOp* buf = buffer_of(src->src(0));
    bool reg = buf->op == Op::BUFFER;
    auto [gate, i] = gated(src);
    std::string mt = reg ? ty(d) : mem_ty(d), md = alias_md(buf), al = ", align " + num(align_of(d));
    if (!gate) {
      std::string p = address(buf, i);
      return set(u, from_memory(let("load " + mt + ", ptr " + p + al + md), d, reg));
    }
    if (gate->dtype.count > 1) {  // lanes of a vector load, each with its own gate
      std::string p = address(buf, i);
      std::string v =
          call(mt, "llvm.masked.load." + suffix_mem(d, reg) + ".p0",
               {"ptr " + p, "i32 " + num(align_of(d)), ty(gate->dtype) + " " + ex(gate), mt + " zeroinitializer"},
               {"ptr", "i32", ty(gate->dtype), mt});
      return set(u, from_memory(v, d, reg));
    }
    // a branch around the access: no memory is touched when the gate is false
    int n = block_id_++;
    std::string from = block_, yes = "load" + num(n), join = "loaded" + num(n);
    emit("br i1 " + ex(gate) + ", label %" + yes + ", label %" + join);
    label(yes);
    std::string p = address(buf, i);
    std::string v = from_memory(let("load " + mt + ", ptr " + p + al + md), d, reg);
    std::string in = block_;
    emit("br label %" + join);
    label(join);
    set(u, let("phi " + ty(d) + " [ " + v + ", %" + in + " ], [ " + zero_of(d) + ", %" + from + " ]"));
  }
  std::string suffix_mem(DType d, bool reg) {
    if (reg || (!is_bool(d) && d.scalar != Scalar::BFloat16)) return suffix(d);
    return "v" + num(d.count) + (is_bool(d) ? "i8" : "i16");
  }

  void store(const UOp* u) {
    const UOp* dst = u->src(0);
    const UOp* val = u->src(1);
    DType d = val->dtype;
    if (dst->op != Op::INDEX) {
      const UOp* b = buffer_of(dst);
      return emit("store " + ty(d) + " " + ex(val) + ", ptr " + ex(b) + ", align " + num(align_of(d)) + alias_md(b));
    }
    const UOp* buf = buffer_of(dst->src(0));
    bool reg = buf->op == Op::BUFFER;
    auto [gate, i] = gated(dst);
    std::string mt = reg ? ty(d) : mem_ty(d), md = alias_md(buf), al = ", align " + num(align_of(d));
    if (!gate) {
      std::string v = to_memory(ex(val), d, reg);
      return emit("store " + mt + " " + v + ", ptr " + address(buf, i) + al + md);
    }
    if (gate->dtype.count > 1) {
      std::string v = to_memory(ex(val), d, reg);
      std::string decl = "declare void @llvm.masked.store." + suffix_mem(d, reg) + ".p0(" + mt + ", ptr, i32, " +
                         ty(gate->dtype) + ")";
      m_.decls.insert(decl);
      return emit("call void @llvm.masked.store." + suffix_mem(d, reg) + ".p0(" + mt + " " + v + ", ptr " +
                  address(buf, i) + ", i32 " + num(align_of(d)) + ", " + ty(gate->dtype) + " " + ex(gate) + ")");
    }
    int n = block_id_++;
    std::string yes = "store" + num(n), join = "stored" + num(n);
    emit("br i1 " + ex(gate) + ", label %" + yes + ", label %" + join);
    label(yes);
    std::string v = to_memory(ex(val), d, reg);
    emit("store " + mt + " " + v + ", ptr " + address(buf, i) + al + md);
    emit("br label %" + join);
    label(join);
  }

  // ---- values

  // integer ops whose result range analysis cannot bound inside the dtype wrap (as the C's do)
  static bool may_overflow(const UOp* u) {
    if (!is_int(u->dtype)) return false;
    if (bitsize(u->dtype) < 32) return true;  // C computes in int and narrows: wraps
    if (is_unsigned(u->dtype)) return true;   // unsigned arithmetic wraps in C
    return u->vmin().i == int_min(u->dtype) || u->vmax().i == int_max(u->dtype);
  }

  // narrow integers shift and divide as C does: promoted to int, the result narrowed
  std::string promoted(const UOp* u, const std::string& op) {
    DType d = u->dtype;
    int n = d.count;
    std::string t = ty(d);
    std::string a = operand(u->src(0), n), b = operand(u->src(1), n);
    if (bitsize(d) >= 32) return let(op + " " + t + " " + a + ", " + b);
    std::string w = vector_of(n, "i32"), ext = is_unsigned(d) ? "zext " : "sext ";
    std::string wa = let(ext + t + " " + a + " to " + w), wb = let(ext + t + " " + b + " to " + w);
    return let("trunc " + w + " " + let(op + " " + w + " " + wa + ", " + wb) + " to " + t);
  }

  // floor division and modulo (index math): C's quotient or remainder, corrected toward -inf
  std::string floor_divmod(const UOp* u, bool mod) {
    DType d = u->dtype;
    int n = d.count;
    std::string t = ty(d), b1 = vector_of(n, "i1"), z = splat(n, std::string(scalar_type(d)), "0");
    std::string a = operand(u->src(0), n), b = operand(u->src(1), n);
    if (is_unsigned(d)) return let(std::string(mod ? "urem " : "udiv ") + t + " " + a + ", " + b);
    std::string q = let("sdiv " + t + " " + a + ", " + b), r = let("srem " + t + " " + a + ", " + b);
    std::string nz = let("icmp ne " + t + " " + r + ", " + z);
    std::string an = let("icmp slt " + t + " " + a + ", " + z), bn = let("icmp slt " + t + " " + b + ", " + z);
    std::string fix = let("and " + b1 + " " + nz + ", " + let("xor " + b1 + " " + an + ", " + bn));
    if (mod)
      return let("add " + t + " " + r + ", " +
                 let("select " + b1 + " " + fix + ", " + t + " " + b + ", " + t + " " + z));
    return let("sub " + t + " " + q + ", " + let("zext " + b1 + " " + fix + " to " + t));
  }

  // a libm function through its intrinsic; half computes in float, as the C's (_Float16)expf((float)x)
  std::string math(const UOp* u, const std::string& name) {
    DType d = u->dtype;
    int n = d.count;
    bool half = d.scalar == Scalar::Float16;
    DType cd = half ? DType(dtypes::float32).vec(n) : d;
    std::vector<std::string> args, types;
    for (const UOp* s : u->src()) {
      std::string v = operand(s, n);
      if (half) v = let("fpext " + ty(d) + " " + v + " to " + ty(cd));
      args.push_back(ty(cd) + " " + v);
      types.push_back(ty(cd));
    }
    std::string r = call(ty(cd), "llvm." + name + "." + suffix(cd), args, types);
    if (half) r = let("fptrunc " + ty(cd) + " " + r + " to " + ty(d));
    return r;
  }

  std::string cast(const UOp* u) {
    DType d = u->dtype, f = u->src(0)->dtype;
    int n = d.count;
    std::string x = operand(u->src(0), n), ft = ty(f.vec(n)), dt = ty(d);
    if (is_bool(d)) {
      if (is_bool(f)) return x;
      if (is_float(f)) return let("fcmp une " + ft + " " + x + ", " + zero_of(f.vec(n)));
      return let("icmp ne " + ft + " " + x + ", " + zero_of(f.vec(n)));
    }
    std::string r;
    if (is_float(d)) {
      // bfloat16 is a float: the conversion is to float, then rounded (as the C's kiln_bf16_round)
      DType via = d.scalar == Scalar::BFloat16 ? DType(dtypes::float32).vec(n) : d;
      std::string vt = ty(via);
      if (is_bool(f) || is_unsigned(f)) {
        r = let("uitofp " + ft + " " + x + " to " + vt);
      } else if (is_int(f)) {
        r = let("sitofp " + ft + " " + x + " to " + vt);
      } else {
        int fb = bitsize(f.scalar == Scalar::BFloat16 ? dtypes::float32 : f), tb = bitsize(via);
        r = fb == tb ? x : let(std::string(fb < tb ? "fpext " : "fptrunc ") + ft + " " + x + " to " + vt);
      }
      return d.scalar == Scalar::BFloat16 ? bf16_round(r, n) : r;
    }
    // to an integer
    if (is_float(f)) return let(std::string(is_unsigned(d) ? "fptoui " : "fptosi ") + ft + " " + x + " to " + dt);
    int fb = is_bool(f) ? 1 : bitsize(f), tb = bitsize(d);
    if (fb == tb) return x;
    if (fb > tb) return let("trunc " + ft + " " + x + " to " + dt);
    return let(std::string(is_bool(f) || is_unsigned(f) ? "zext " : "sext ") + ft + " " + x + " to " + dt);
  }

  std::string bitcast(const UOp* u) {
    DType d = u->dtype, f = u->src(0)->dtype;
    std::string x = ex(u->src(0));
    std::string ft = ty(f);
    if (f.scalar == Scalar::BFloat16) x = f32_to_bf16(x, f.count), ft = mem_ty(f);
    std::string dt = d.scalar == Scalar::BFloat16 ? mem_ty(d) : ty(d);
    std::string r = ft == dt ? x : let("bitcast " + ft + " " + x + " to " + dt);
    if (d.scalar == Scalar::BFloat16) r = bf16_to_f32(r, d.count);
    return r;
  }

  std::string alu(const UOp* u) {
    DType d = u->dtype;
    int n = d.count;
    std::string t = ty(d);
    bool flt = is_float(d);
    auto a = [&](size_t i) { return operand(u->src(i), std::max<int>(n, u->src(i)->dtype.count)); };
    auto bin = [&](const std::string& op) { return let(op + " " + t + " " + a(0) + ", " + a(1)); };
    std::string nsw = may_overflow(u) ? "" : " nsw";
    switch (u->op) {
      case Op::ADD:
        return bin(flt ? "fadd contract" : "add" + nsw);
      case Op::SUB:
        return bin(flt ? "fsub contract" : "sub" + nsw);
      case Op::MUL:
        return bin(flt ? "fmul contract" : "mul" + nsw);
      case Op::NEG:
        if (flt) return let("fneg contract " + t + " " + a(0));
        return let("sub" + nsw + " " + t + " " + zero_of(d) + ", " + a(0));
      case Op::FDIV:
        return bin("fdiv");
      case Op::RECIPROCAL:
        return let("fdiv " + t + " " + splat(n, scalar_type(d), float_literal(1.0, d)) + ", " + a(0));
      case Op::CDIV:
        return promoted(u, is_unsigned(d) ? "udiv" : "sdiv");
      case Op::CMOD:
        return promoted(u, is_unsigned(d) ? "urem" : "srem");
      case Op::FLOORDIV:
        return floor_divmod(u, false);
      case Op::FLOORMOD:
        return floor_divmod(u, true);
      case Op::AND:
        return bin("and");
      case Op::OR:
        return bin("or");
      case Op::XOR:
        return bin("xor");
      case Op::SHL:
        return promoted(u, "shl");
      case Op::SHR:
        return promoted(u, is_unsigned(d) ? "lshr" : "ashr");
      case Op::MAX: {
        if (!flt) {
          std::string fn = std::string(is_unsigned(d) || is_bool(d) ? "llvm.umax." : "llvm.smax.") + suffix(d);
          return call(t, fn, {t + " " + a(0), t + " " + a(1)}, {t, t});
        }
        // (a > b || a != a) ? a : b: NaN propagates, and max(-0, +0) is the second, as kiln_maxf
        std::string x = a(0), y = a(1), b1 = vector_of(n, "i1");
        std::string gt = let("fcmp ogt " + t + " " + x + ", " + y), nan = let("fcmp uno " + t + " " + x + ", " + x);
        return let("select " + b1 + " " + let("or " + b1 + " " + gt + ", " + nan) + ", " + t + " " + x + ", " + t +
                   " " + y);
      }
      case Op::CMPLT:
      case Op::CMPNE:
      case Op::CMPEQ: {
        DType s = u->src(0)->dtype.count >= u->src(1)->dtype.count ? u->src(0)->dtype : u->src(1)->dtype;
        std::string st = ty(s.vec(n));
        std::string op;
        if (is_float(s))
          op = u->op == Op::CMPLT ? "fcmp olt " : u->op == Op::CMPNE ? "fcmp une " : "fcmp oeq ";
        else if (u->op == Op::CMPLT)
          op = is_unsigned(s) || is_bool(s) ? "icmp ult " : "icmp slt ";
        else
          op = u->op == Op::CMPNE ? "icmp ne " : "icmp eq ";
        return let(op + st + " " + a(0) + ", " + a(1));
      }
      case Op::WHERE: {
        const UOp* c = u->src(0);
        std::string cond = c->dtype.count == 1 ? ex(c) : operand(c, n);
        return let("select " + ty(c->dtype) + " " + cond + ", " + t + " " + a(1) + ", " + t + " " + a(2));
      }
      case Op::EXP2:
        return math(u, "exp2");
      case Op::LOG2:
        return math(u, "log2");
      case Op::SIN:
        return math(u, "sin");
      case Op::SQRT:
        return math(u, "sqrt");
      case Op::POW:
        return math(u, "pow");
      case Op::TRUNC:
        if (flt) return math(u, "trunc");
        return a(0);
      default:
        throw fail("ALU op " + std::string(op_name(u->op)) + " (decompose it first)");
    }
  }

  void line(const UOp* u) {
    DType d = u->dtype;
    switch (u->op) {
      case Op::SINK:
        return emit("ret void");
      case Op::CONST:
        if (u->is_invalid()) return;
        // a vector CONST has every lane the same
        return set(u, splat(d.count, scalar_type(d),
                            is_float(d) ? float_literal(u->cval().f, d) : int_literal(u->cval().i, d)));
      case Op::PARAM: {
        const auto& pa = u->arg<ParamArg>();
        std::string p = let("getelementptr inbounds ptr, ptr %bufs, i64 " + num(pa.slot));
        std::string v = "%data" + num(pa.slot) + "." + num(pos_[u->id]);
        emit(v + " = load ptr, ptr " + p + ", align 8");
        return set(u, v);
      }
      case Op::DEFINE_VAR: {
        std::string_view vn = u->arg<VarArg>().name;
        std::string t = ty(d);
        if (vn == ".core" || vn == ".cores") {  // the function's own arguments
          std::string arg = "%" + std::string(vn.substr(1));
          if (t == "i32") return set(u, arg);
          return set(u, let((bitsize(d) > 32 ? "sext i32 " : "trunc i32 ") + arg + " to " + t));
        }
        size_t j = 0;
        while (j < k_.vars.size() && k_.vars[j]->arg<VarArg>().name != vn) ++j;
        if (j == k_.vars.size()) throw fail("variable " + std::string(vn) + " is not a kernel argument");
        std::string p = let("getelementptr inbounds i64, ptr %vars, i64 " + num(int64_t(j)));
        std::string v = let("load i64, ptr " + p + ", align 8");
        if (t != "i64") v = let("trunc i64 " + v + " to " + t);
        return set(u, v);
      }
      case Op::BUFFER: {  // an accumulator register: an alloca, which SROA makes registers
        const auto& pa = u->arg<ParamArg>();
        std::string v = "%acc" + num(pos_[u->id]), et = ty(d.elem());
        int al = std::max(1, itemsize(d.elem()));
        allocas_ +=
            "  " + v + " = alloca " + et + ", i32 " + num(std::max<int64_t>(1, pa.size)) + ", align " + num(al) + "\n";
        return set(u, v);
      }
      case Op::RANGE: {
        std::string t = ty(d), i = "%r" + num(pos_[u->id]), head = "loop" + num(pos_[u->id]);
        std::string bound = operand(u->src(0), 1), from = block_;
        emit("br label %" + head);
        label(head);
        emit(i + " = phi " + t + " [ 0, %" + from + " ], [ " + i + ".next, %" + head + ".latch ]");
        std::string c = let("icmp slt " + t + " " + i + ", " + bound);
        emit("br i1 " + c + ", label %" + head + ".body, label %" + head + ".exit");
        label(head + ".body");
        return set(u, i);
      }
      case Op::END: {
        const UOp* r = u->src(u->nsrc() - 1);
        if (r->op != Op::RANGE) throw fail("END of a " + std::string(op_name(r->op)) + " (split ends first)");
        std::string i = ex(r), head = "loop" + num(pos_[r->id]);
        emit("br label %" + head + ".latch");
        label(head + ".latch");
        emit(i + ".next = add nuw nsw " + ty(r->dtype) + " " + i + ", 1");
        emit("br label %" + head);
        label(head + ".exit");
        return;
      }
      case Op::AFTER:
      case Op::GROUP:
      case Op::INDEX:
      case Op::NOOP:  // a store of what its target holds, folded away
        return;       // ordering only / rendered where loaded or stored
      case Op::LOAD:
        return load(u);
      case Op::STORE:
        return store(u);
      case Op::CAST:
        return set(u, cast(u));
      case Op::BITCAST:
        return set(u, bitcast(u));
      case Op::STACK: {  // a vector from its lanes
        std::string v = "poison", et(scalar_type(d));
        for (size_t k = 0; k < u->nsrc(); ++k)
          v = let("insertelement " + ty(d) + " " + v + ", " + et + " " + ex(u->src(k)) + ", i64 " + num(int64_t(k)));
        return set(u, v);
      }
      default:
        break;
    }
    if (u->op == Op::WHERE && u->src(2)->is_invalid()) return;  // a gated index: rendered by its load or store
    if (!is_alu(u->op)) throw fail(std::string(op_name(u->op)) + " cannot be rendered");
    std::string v = alu(u);
    if (d.scalar == Scalar::BFloat16 && !is_bool(d)) v = bf16_round(v, d.count);  // rounded after every op
    set(u, v);
  }

  Module& m_;
  const LlvmKernel& k_;
  std::span<const UOp* const> lin_;
  std::vector<uint32_t> pos_;                    // by node id: the position in lin_
  std::vector<std::string> names_;               // by position: how users spell the value
  std::vector<uint8_t> needed_;                  // by position
  std::map<std::string, std::string> scope_md_;  // by mem_key: the metadata the accesses carry
  std::string allocas_, body_, block_ = "entry";
  int tmp_ = 0, block_id_ = 0;
  bool uses_core_ = false;
};

}  // namespace

std::string render_llvm_module(const target::Target& t, std::string_view module_name,
                               std::span<const LlvmKernel> kernels) {
  if (t.triple.empty()) throw InternalError("render LLVM: target " + t.name + " has no LLVM triple");
  Module m;
  for (const LlvmKernel& k : kernels) LlvmRenderer(m, k).run();
  std::string s = "; ModuleID = '" + escaped(module_name) + "'\nsource_filename = \"" + escaped(module_name) +
                  "\"\ntarget triple = \"" + t.triple + "\"\n\n";
  s += m.text;
  for (const std::string& d : m.decls) s += d + "\n";
  s += std::string(m.decls.empty() ? "" : "\n") +
       // unwind tables for a hosted target's debuggers and profilers; a freestanding one has no
       // unwinder to reference (ARM's tables name __aeabi_unwind_cpp_pr0)
       "attributes #0 = { nounwind " + (t.freestanding ? "" : "uwtable ") +
       "\"frame-pointer\"=\"none\" \"target-cpu\"=\"" + t.cpu + "\" \"target-features\"=\"" + t.features +
       "\" \"prefer-vector-width\"=\"" + num(8 * t.vector_bytes) + "\" \"min-legal-vector-width\"=\"0\" }\n";
  if (!m.metadata.empty()) s += "\n" + m.metadata;
  return s;
}

}  // namespace kiln::render

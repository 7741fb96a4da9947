// The LLVM renderer's program walk: one function per kernel, one line of IR per needed node of the
// linear program in its order (memory in llvm_memory.cpp, values in llvm_ops.cpp), and the module.
#include "generator/render/llvm.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "generator/render/llvm_internal.h"
#include "generator/render/llvm_types.h"

namespace kiln::render {

using namespace llvm_text;  // NOLINT: the types and literals of the text

namespace llvm_detail {

void LlvmRenderer::run() {
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

// which nodes the stores need (a buffer's size expression is metadata, not code), and whether
// the kernel reads its core: one sweep from the end, as sources come before their users
void LlvmRenderer::analyze() {
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
void LlvmRenderer::alias_scopes() {
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
std::string LlvmRenderer::mem_key(const UOp* buf) const {
  return buf->op == Op::PARAM ? "p" + num(buf->arg<ParamArg>().slot) : "a" + num(int64_t(pos_[buf->id]));
}

std::string LlvmRenderer::quoted_name(const std::string& n) {
  bool plain = !n.empty() && !std::isdigit(static_cast<unsigned char>(n[0]));
  for (char c : n) plain &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  return plain ? n : "\"" + escaped(n) + "\"";
}

// an operand as a value of `want` lanes: a scalar is broadcast to a vector
std::string LlvmRenderer::operand(const UOp* s, int want) {
  const std::string& v = ex(s);
  if (want == 1 || s->dtype.count != 1) return v;
  std::string et(scalar_type(s->dtype));
  std::string one = let("insertelement <1 x " + et + "> poison, " + et + " " + v + ", i64 0");
  return let("shufflevector <1 x " + et + "> " + one + ", <1 x " + et + "> poison, <" + num(want) +
             " x i32> zeroinitializer");
}

// declares an intrinsic (once per module) and returns a call to it
std::string LlvmRenderer::call(const std::string& ret, const std::string& fn,
                               const std::vector<std::string>& typed_args, const std::vector<std::string>& arg_types) {
  std::string decl = "declare " + ret + " @" + fn + "(";
  for (size_t i = 0; i < arg_types.size(); ++i) decl += (i ? ", " : "") + arg_types[i];
  m_.decls.insert(decl + ")");
  std::string c = "call " + ret + " @" + fn + "(";
  for (size_t i = 0; i < typed_args.size(); ++i) c += (i ? ", " : "") + typed_args[i];
  return let(c + ")");
}

void LlvmRenderer::line(const UOp* u) {
  DType d = u->dtype;
  switch (u->op) {
    case Op::SINK:
      return emit("ret void");
    case Op::CONST:
      if (u->is_invalid()) return;
      // a vector CONST has every lane the same
      return set(
          u, splat(d.count, scalar_type(d), is_float(d) ? float_literal(u->cval().f, d) : int_literal(u->cval().i, d)));
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

}  // namespace llvm_detail

std::string render_llvm_module(const target::Target& t, std::string_view module_name,
                               std::span<const LlvmKernel> kernels) {
  if (t.triple.empty()) throw InternalError("render LLVM: target " + t.name + " has no LLVM triple");
  llvm_detail::Module m;
  for (const LlvmKernel& k : kernels) llvm_detail::LlvmRenderer(m, k).run();
  std::string s = "; ModuleID = '" + escaped(module_name) + "'\nsource_filename = \"" + escaped(module_name) +
                  "\"\ntarget triple = \"" + t.triple + "\"\n\n";
  s += m.text;
  for (const std::string& d : m.decls) s += d + "\n";
  // SVE for fixed-width vectors: at least vector_bytes, at most SVE's 2048 bits (the code runs
  // under a predicate of its own lanes, so on any longer vector too)
  const bool sve = t.features.find("+sve") != std::string::npos;
  const std::string vscale = sve ? "vscale_range(" + num(t.vector_bytes / 16) + ",16) " : "";
  s += std::string(m.decls.empty() ? "" : "\n") +
       // unwind tables for a hosted target's debuggers and profilers; a freestanding one has no
       // unwinder to reference (ARM's tables name __aeabi_unwind_cpp_pr0)
       "attributes #0 = { nounwind " + (t.freestanding ? "" : "uwtable ") + vscale +
       "\"frame-pointer\"=\"none\" \"target-cpu\"=\"" + t.cpu + "\" \"target-features\"=\"" + t.features +
       "\" \"prefer-vector-width\"=\"" + num(8 * t.vector_bytes) + "\" \"min-legal-vector-width\"=\"0\" }\n";
  if (!m.metadata.empty()) s += "\n" + m.metadata;
  return s;
}

}  // namespace kiln::render

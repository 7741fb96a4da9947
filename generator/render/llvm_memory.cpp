// The LLVM renderer's memory: loads and stores (gated by a branch or masked), addresses, alias
// metadata, and values as memory holds them (bool as a byte, bfloat16 as its 16 bits).
#include <algorithm>
#include <string>

#include "generator/render/llvm_internal.h"
#include "generator/render/llvm_types.h"

namespace kiln::render {

using namespace llvm_text;  // NOLINT: the types and literals of the text

namespace llvm_detail {

// ---- memory

// the buffer an INDEX addresses, through AFTER
const UOp* LlvmRenderer::buffer_of(const UOp* p) {
  while (p->op == Op::AFTER) p = p->src(0);
  return p;
}
// an INDEX's gate (null when always valid) and the index it guards
std::pair<const UOp*, const UOp*> LlvmRenderer::gated(const UOp* idx) {
  const UOp* i = idx->src(1);
  if (i->op == Op::WHERE && i->src(2)->is_invalid()) return {i->src(0), i->src(1)};
  return {nullptr, i};
}
std::string LlvmRenderer::alias_md(const UOp* buf) const {
  auto it = scope_md_.find(mem_key(buf));
  return it == scope_md_.end() ? "" : it->second;
}
// the address of element i of the buffer: i counts scalar elements in every buffer, an accumulator
// of vectors too (its vector i / n holds elements i..i+n-1: ops.def's vector contract)
std::string LlvmRenderer::address(const UOp* buf, const UOp* i) {
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
std::string LlvmRenderer::offset64(const UOp* i, int& budget) {
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
std::string LlvmRenderer::to_memory(const std::string& v, DType d, bool reg) {
  if (reg) return v;
  if (is_bool(d)) return let("zext " + ty(d) + " " + v + " to " + mem_ty(d));
  if (d.scalar == Scalar::BFloat16) return f32_to_bf16(v, d.count);
  return v;
}
std::string LlvmRenderer::from_memory(const std::string& v, DType d, bool reg) {
  if (reg) return v;
  if (is_bool(d)) return let("icmp ne " + mem_ty(d) + " " + v + ", " + zero_of(DType(Scalar::Int8).vec(d.count)));
  if (d.scalar == Scalar::BFloat16) return bf16_to_f32(v, d.count);
  return v;
}
int LlvmRenderer::align_of(DType d) { return std::max(1, bitsize(d) / 8); }  // of one element: vectors are unaligned

void LlvmRenderer::load(const UOp* u) {
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
std::string LlvmRenderer::suffix_mem(DType d, bool reg) {
  if (reg || (!is_bool(d) && d.scalar != Scalar::BFloat16)) return suffix(d);
  return "v" + num(d.count) + (is_bool(d) ? "i8" : "i16");
}

void LlvmRenderer::store(const UOp* u) {
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
    std::string decl =
        "declare void @llvm.masked.store." + suffix_mem(d, reg) + ".p0(" + mt + ", ptr, i32, " + ty(gate->dtype) + ")";
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

}  // namespace llvm_detail

}  // namespace kiln::render

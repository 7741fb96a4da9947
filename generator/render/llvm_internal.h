// The LLVM renderer's parts (private to generator/render/llvm*.cpp): the renderer of one kernel,
// whose members are defined by concern: the program walk and the module (llvm.cpp), memory
// (llvm_memory.cpp), ALU ops and conversions (llvm_ops.cpp); types and literals are llvm_types.h's.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "generator/render/llvm.h"
#include "generator/render/llvm_types.h"

namespace kiln::render::llvm_detail {

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

  void run();

 private:
  // ---- the program walk (llvm.cpp)
  void analyze();
  void alias_scopes();
  std::string mem_key(const UOp* buf) const;
  static std::string quoted_name(const std::string& n);

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
  std::string tmp() { return "%t" + llvm_text::num(tmp_++); }
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
  std::string operand(const UOp* s, int want);
  void set(const UOp* u, std::string v) { names_[pos_[u->id]] = std::move(v); }

  std::string call(const std::string& ret, const std::string& fn, const std::vector<std::string>& typed_args,
                   const std::vector<std::string>& arg_types);
  void line(const UOp* u);

  // ---- memory (llvm_memory.cpp)
  static const UOp* buffer_of(const UOp* p);
  static std::pair<const UOp*, const UOp*> gated(const UOp* idx);
  std::string alias_md(const UOp* buf) const;
  std::string address(const UOp* buf, const UOp* i);
  std::string offset64(const UOp* i, int& budget);
  std::string to_memory(const std::string& v, DType d, bool reg);
  std::string from_memory(const std::string& v, DType d, bool reg);
  static int align_of(DType d);
  void load(const UOp* u);
  std::string suffix_mem(DType d, bool reg);
  void store(const UOp* u);

  // ---- values (llvm_ops.cpp)
  std::string f32_to_bf16_bits32(const std::string& v, int n);
  std::string bits32_to_f32(const std::string& bits, int n);
  std::string f32_to_bf16(const std::string& v, int n);
  std::string bf16_to_f32(const std::string& bits16, int n);
  std::string bf16_round(const std::string& v, int n);
  static bool may_overflow(const UOp* u);
  std::string promoted(const UOp* u, const std::string& op);
  std::string floor_divmod(const UOp* u, bool mod);
  std::string math(const UOp* u, const std::string& name);
  std::string cast(const UOp* u);
  std::string bitcast(const UOp* u);
  std::string alu(const UOp* u);

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

}  // namespace kiln::render::llvm_detail

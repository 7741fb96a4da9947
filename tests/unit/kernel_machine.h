// What the graph and the linear kernel interpreters share (kernel_interp.cpp, kernel_linear.cpp):
// the dtype byte layouts, and the evaluation of pure ops and of loads and stores.
#pragma once

#include <span>
#include <string>
#include <utility>

#include "tests/unit/kernel_interp.h"
#include "tests/unit/ref_alu.h"

namespace kiln::interp::detail {

bool is_storable(DType d);
void encode(DType d, const ConstValue& v, std::byte* p);
ConstValue decode(DType d, const std::byte* p);  // a bool byte other than 0/1: invalid
double to_double(DType d, const ConstValue& v);
ConstValue zero_of(DType d);
bool truthy(const ConstValue& v);
std::string show(const UOp* u);  // the node, printed and cut short
std::string kernel_name(const UOp* sink, std::string fallback);

// ---------------------------------------------------------------- what both interpreters share

// The value of a pure op from its operands, and the element an INDEX addresses, with the exact
// dtype semantics. Each interpreter answers `operand` its own way: the graph form evaluates on
// demand, the linear form reads the latest evaluation.
class Machine {
 public:
  Machine(std::string name, std::span<Buf* const> params, const Vars& vars)
      : params_(params), vars_(vars), name_(std::move(name)) {}
  virtual ~Machine() = default;

 protected:
  struct Access {
    Buf* buf = nullptr;
    int32_t slot = 0;
    int64_t index = 0;
    bool valid = false;
  };

  virtual ConstValue operand(const UOp* u) = 0;
  virtual std::string location() const { return ""; }  // " (at axis0=1 ...)" while loops run

  [[noreturn]] void fail(const UOp* u, const std::string& what) const {
    throw InterpError("kernel " + name_ + ": " + std::string(op_name(u->op)) + ": " + what + location() + " in " +
                      show(u));
  }

  Buf* param_buf(const UOp* p) const {
    int32_t slot = p->arg<ParamArg>().slot;
    if (slot < 0 || size_t(slot) >= params_.size() || !params_[size_t(slot)])
      fail(p, "no buffer for slot " + std::to_string(slot));
    return params_[size_t(slot)];
  }

  void check_param(const UOp* p) {
    Buf* b = param_buf(p);
    if (!p->dtype.ptr || p->dtype.elem() != b->dtype())
      fail(p, "dtype " + to_string(p->dtype) + " but the buffer holds " + to_string(b->dtype()));
    int64_t count = p->arg<ParamArg>().size;
    if (p->nsrc() > 0) count = int_of(operand(p->src(0)), p);
    if (count >= 0 && count != b->numel())
      fail(p, "element count " + std::to_string(count) + " but the buffer has " + std::to_string(b->numel()));
  }

  int64_t int_of(const ConstValue& v, const UOp* u) const {
    if (!v.is_int() && !v.is_bool()) fail(u, "expected an integer");
    return v.i;
  }

  // INDEX(PARAM, i[, gate]); an Invalid index (WHERE(cond, i, Invalid) with cond false) or a false
  // gate addresses nothing.
  Access access(const UOp* idx) {
    if (idx->op != Op::INDEX || idx->nsrc() < 2) fail(idx, "expected INDEX(PARAM, idx)");
    const UOp* p = idx->src(0);
    while (p->op == Op::AFTER) p = p->src(0);  // ordering only
    if (p->op != Op::PARAM) fail(idx, "indexes a " + std::string(op_name(p->op)) + ", not a PARAM");
    Access a{param_buf(p), p->arg<ParamArg>().slot, 0, false};
    if (idx->nsrc() > 2 && !truthy(operand(idx->src(2)))) return a;
    ConstValue i = operand(idx->src(1));
    if (i.is_invalid()) return a;
    a.index = int_of(i, idx);
    if (a.index < 0 || a.index >= a.buf->numel())
      fail(idx, "index " + std::to_string(a.index) + " out of bounds of param " + std::to_string(a.slot) + " '" +
                    std::string(p->arg<ParamArg>().name) + "' with " + std::to_string(a.buf->numel()) + " elements");
    a.valid = true;
    return a;
  }

  ConstValue load(const UOp* idx) {
    Access a = access(idx);
    if (!a.valid) return zero_of(a.buf->dtype());
    ConstValue v = a.buf->get(a.index);
    if (v.is_invalid()) fail(idx, "reads a bool that was never written at " + std::to_string(a.index));
    return v;
  }

  // STORE(INDEX, value[, gate]); the slot written, or -1 when the gate or the index said no
  int32_t store(const UOp* st) {
    if (st->nsrc() < 2) fail(st, "expected STORE(INDEX, value)");
    if (st->nsrc() > 2 && !truthy(operand(st->src(2)))) return -1;
    Access a = access(st->src(0));
    if (!a.valid) return -1;
    DType vd = st->src(1)->dtype, bd = a.buf->dtype();
    if (vd != bd && !(is_weak(vd) && weak_of(bd) == vd))
      fail(st, "stores a " + to_string(vd) + " into a " + to_string(bd) + " buffer");
    ConstValue v = operand(st->src(1));
    if (v.is_invalid()) fail(st, "stores Invalid");
    a.buf->set(a.index, v);
    return a.slot;
  }

  // (a vector op is evaluated lane by lane: the scalar semantics of its element dtype)
  ConstValue alu(const UOp* u, Op op, std::span<const ConstValue> args) const {
    auto r = ref::alu(op, u->dtype.base(), args);
    if (!r) {
      std::string ops;
      for (const ConstValue& a : args)
        ops += (ops.empty() ? "" : ", ") + (a.is_float() ? std::to_string(a.f) : std::to_string(a.i));
      fail(u, "undefined result for (" + ops + ")");
    }
    return *r;
  }

  // the ops whose value is a function of their operands (and the vars)
  ConstValue value(const UOp* u) {
    switch (u->op) {
      case Op::CONST:
        return u->cval();
      case Op::DEFINE_VAR:
        return var(u);
      case Op::WHERE: {
        ConstValue c = operand(u->src(0));
        if (c.is_invalid()) fail(u, "the condition is Invalid");
        return ref::to_dtype(u->dtype.base(), operand(u->src(truthy(c) ? 1 : 2)));
      }
      case Op::CAST:
        return cast(u);
      case Op::BITCAST:
        return bitcast(u);
      case Op::EXP2:
      case Op::LOG2:
      case Op::SIN:
      case Op::SQRT:
      case Op::RECIPROCAL:
      case Op::NEG:
      case Op::TRUNC:
      case Op::ADD:
      case Op::MUL:
      case Op::SHL:
      case Op::SHR:
      case Op::CDIV:
      case Op::MAX:
      case Op::CMOD:
      case Op::CMPLT:
      case Op::CMPNE:
      case Op::CMPEQ:
      case Op::XOR:
      case Op::OR:
      case Op::AND:
      case Op::SUB:
      case Op::FDIV:
      case Op::POW:
      case Op::FLOORDIV:
      case Op::FLOORMOD:
      case Op::MULACC: {
        ConstValue args[3];
        if (u->nsrc() > 3) fail(u, "too many sources");
        for (size_t k = 0; k < u->nsrc(); ++k) args[k] = operand(u->src(k));
        return alu(u, u->op, std::span(args, u->nsrc()));
      }
      case Op::RANGE:  // each interpreter binds loops, reads memory and reduces its own way
      case Op::INDEX:
      case Op::LOAD:
      case Op::REDUCE:
      case Op::THREEFRY:
      case Op::SPECIAL:
      case Op::BUFFER:
      case Op::NOOP:
      case Op::REWRITE_ERROR:
      case Op::PARAM:
      case Op::FUNCTION:
      case Op::CALL:
      case Op::PROGRAM:
      case Op::LINEAR:
      case Op::SOURCE:
      case Op::BINARY:
      case Op::SINK:
      case Op::AFTER:
      case Op::GROUP:
      case Op::STACK:
      case Op::TUPLE:
      case Op::GETTUPLE:
      case Op::GETADDR:
      case Op::SHRINK:
      case Op::STORE:
      case Op::WMMA:
      case Op::GEP:
      case Op::BARRIER:
      case Op::IF:
      case Op::END:
      case Op::ENDIF:
      case Op::WAIT:
      case Op::CUSTOM:
      case Op::CUSTOMI:
      case Op::INS:
      case Op::CONTIGUOUS:
      case Op::CONTIGUOUS_BACKWARD:
      case Op::DETACH:
      case Op::STAGE:
      case Op::COPY:
      case Op::MSELECT:
      case Op::MSTACK:
      case Op::CUSTOM_FUNCTION:
      case Op::RESHAPE:
      case Op::PERMUTE:
      case Op::EXPAND:
      case Op::PAD:
      case Op::FLIP:
      case Op::IOTA:
      case Op::UNSHARD:
      case Op::ALLREDUCE:
        break;
    }
    fail(u, "not supported");
  }

  std::span<Buf* const> params_;
  const Vars& vars_;
  std::string name_;

 private:
  ConstValue bitcast(const UOp* u) {
    DType from = u->src(0)->dtype.base(), to = u->dtype.base();
    if (!is_storable(from) || !is_storable(to) || itemsize(from) != itemsize(to))
      fail(u, "bitcast from " + to_string(from) + " to " + to_string(to) + " not supported");
    std::byte bytes[8];
    encode(from, ref::to_dtype(from, operand(u->src(0))), bytes);
    ConstValue v = decode(to, bytes);
    if (v.is_invalid()) fail(u, "the bits are not a bool");
    return v;
  }

  ConstValue cast(const UOp* u) {
    ConstValue v = operand(u->src(0));
    if (u->src(0)->dtype.scalar == Scalar::Uint64 && is_float(u->dtype) && v.is_int())
      v = ConstValue::of_float(double(uint64_t(v.i)));
    return alu(u, Op::CAST, std::span(&v, 1));
  }

  ConstValue var(const UOp* u) {
    const VarArg& va = u->arg<VarArg>();
    auto it = vars_.find(std::string(va.name));
    if (it == vars_.end()) fail(u, "no value for " + std::string(va.name));
    if (is_float(u->dtype)) return ConstValue::of_float(double(it->second));
    if (it->second < va.min || it->second > va.max || (va.multiple_of > 1 && it->second % va.multiple_of != 0))
      fail(u, std::string(va.name) + " = " + std::to_string(it->second) + " is outside its bounds");
    return ref::to_dtype(u->dtype, ConstValue::of_int(it->second));
  }
};

}  // namespace kiln::interp::detail

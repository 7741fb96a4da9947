// The linear-program interpreter: a linearized kernel run the way the rendered C runs it.
#include <functional>
#include <map>
#include <unordered_map>

#include "generator/codegen/passes.h"
#include "tests/unit/kernel_interp.h"
#include "tests/unit/kernel_machine.h"

namespace kiln::interp {

namespace {

using namespace detail;

// ---------------------------------------------------------------- the linear form

// Runs a linearized kernel the way the rendered C does: one pass over the list, a RANGE jumping
// back from its END. A value is the latest evaluation of its node, and is visible only where C's
// block scoping would show it: in the iteration of its loop that evaluated it, and in the loops
// inside it. Accumulator registers (BUFFERs in the Reg space) hold `size` elements (lanes), each
// a vector of n for a BUFFER of T.vec(n). Vector values (ops.def) are evaluated lane by lane.
class LinearRun : Machine {
 public:
  LinearRun(std::span<const UOp* const> lin, std::string name, std::span<Buf* const> params, const Vars& vars)
      : Machine(std::move(name), params, vars), lin_(lin) {
    if (lin.empty() || lin.back()->op != Op::SINK) throw InterpError("run_linear: the list must end with the SINK");
    size_t n = lin.back()->ctx().size();
    pos_.assign(n, -1);
    scope_.assign(n, nullptr);
    stamp_.assign(n, 0);
    evaluated_.assign(n, 0);
    std::vector<const UOp*> open;
    for (size_t p = 0; p < lin.size(); ++p) {
      const UOp* u = lin[p];
      if (pos_[u->id] >= 0) fail(u, "listed twice");
      pos_[u->id] = int64_t(p);
      if (u->op == Op::END) {
        if (u->nsrc() != 2 || open.empty() || u->src(1) != open.back())
          fail(u, "does not close the innermost open loop");
        end_pos_[u->src(1)] = p;
        open.pop_back();
      }
      scope_[u->id] = open.empty() ? nullptr : open.back();
      if (u->op == Op::RANGE) open.push_back(u);
    }
    if (!open.empty()) fail(open.back(), "never closed");
  }

  void run() {
    for (size_t p = 0; p < lin_.size(); ++p) {
      const UOp* u = lin_[p];
      if (u->op == Op::RANGE) {
        int64_t end = int_of(operand(u->src(0)), u);
        if (end <= 0) {
          p = end_pos_.at(u);  // an empty loop: continue after its END
          continue;
        }
        loop_end_[u] = end;
        set(u, ConstValue::of_int(0));
        stamp_[u->id] = ++clock_;  // the first iteration
      } else if (u->op == Op::END) {
        const UOp* r = u->src(1);
        int64_t next = values_.at(r).i + 1;
        if (next < loop_end_.at(r)) {
          values_[r] = ConstValue::of_int(next);
          stamp_[r->id] = ++clock_;
          p = size_t(pos_[r->id]);
        } else {
          stamp_[r->id] = 0;  // closed: what it evaluated is out of scope
        }
      } else if (u->op == Op::STORE && u->src(1)->dtype.count > 1) {
        store_vector(u);
      } else if (is_vector(u)) {
        set_vector(u);
      } else if (u->op == Op::STORE) {
        if (u->src(0)->op == Op::INDEX && !is_register(u->src(0)->src(0))) {
          store(u);
        } else {
          store_register(u);
        }
      } else if (u->op == Op::LOAD) {
        set(u, load_any(u));
      } else if (u->op == Op::PARAM) {
        check_param(u);
      } else if (u->op == Op::BUFFER) {
        if (u->dtype.addrspace != AddrSpace::Reg || u->arg<ParamArg>().size < 1)
          fail(u, "only registers (Reg address space, a known size) are supported");
        for (auto it = regs_.lower_bound({u->arg<ParamArg>().slot, 0});
             it != regs_.end() && it->first.first == u->arg<ParamArg>().slot;)
          it = regs_.erase(it);  // declared, not set
      } else if (u->op != Op::INDEX && u->op != Op::AFTER && u->op != Op::GROUP && u->op != Op::NOOP &&
                 u->op != Op::SINK) {  // the others are addresses and ordering
        set(u, value(u));
      }
    }
  }

 private:
  std::string location() const override {
    std::string at;
    for (const auto& [r, end] : loop_end_)
      if (stamp_[r->id] != 0)
        at += " axis" + std::to_string(r->arg<RangeArg>().axis) + "=" + std::to_string(values_.at(r).i);
    return at.empty() ? "" : " (at" + at + ")";
  }

  void set(const UOp* u, const ConstValue& v) {
    values_[u] = v;
    const UOp* s = scope_[u->id];
    evaluated_[u->id] = s ? stamp_[s->id] : 1;
  }

  static bool is_vector(const UOp* u) { return u->dtype.count > 1 && !u->dtype.ptr; }

  // a vector value: its lanes, each by the scalar semantics (operand() reads lane lane_ of vectors)
  void set_vector(const UOp* u) {
    size_t n = u->dtype.count;
    std::vector<ConstValue> lanes(n);
    if (u->op == Op::STACK) {
      if (u->nsrc() != n) fail(u, "a STACK of " + std::to_string(u->nsrc()) + " lanes");
      for (size_t k = 0; k < n; ++k) lanes[k] = operand(u->src(k));
    } else if (u->op == Op::LOAD) {
      auto [first, read] = vector_access(u, u->src(0), n);
      for (size_t k = 0; k < n; ++k) lanes[k] = read(first + int64_t(k));
    } else {
      for (size_t k = 0; k < n; ++k) {
        lane_ = int(k);
        lanes[k] = value(u);
        lane_ = -1;
      }
    }
    vectors_[u] = std::move(lanes);
    set(u, ConstValue::of_int(0));  // stamps its scope
  }

  void store_vector(const UOp* st) {
    if (st->nsrc() != 2) fail(st, "a gated vector store");
    const UOp* idx = st->src(0);
    size_t n = st->src(1)->dtype.count;
    operand(st->src(1));  // in scope
    const std::vector<ConstValue>& v = vectors_.at(st->src(1));
    if (idx->op != Op::INDEX) fail(st, "a vector store needs an INDEX");
    int64_t first = operand(idx->src(1)).i;
    if (!is_register(idx->src(0))) {
      Access a = access(idx);
      if (!a.valid) fail(st, "a vector store at an invalid index");
      if (st->src(1)->dtype.base() != a.buf->dtype()) fail(st, "stores a vector of another dtype");
      if (first + int64_t(n) > a.buf->numel()) fail(st, "a vector store past the end of the buffer");
      for (size_t k = 0; k < n; ++k) a.buf->set(first + int64_t(k), v[k]);
      return;
    }
    const UOp* acc = accumulator(st, idx->src(0));
    if (acc->dtype.elem() != st->src(1)->dtype) fail(st, "stores a vector into an accumulator of other vectors");
    if (first < 0 || first % int64_t(n) != 0 || first / int64_t(n) >= acc->arg<ParamArg>().size)
      fail(st, "vector " + std::to_string(first) + " out of bounds or not aligned");
    for (size_t k = 0; k < n; ++k) regs_[{acc->arg<ParamArg>().slot, first + int64_t(k)}] = v[k];
  }

  // the first element a vector LOAD reads, and how to read element i
  std::pair<int64_t, std::function<ConstValue(int64_t)>> vector_access(const UOp* u, const UOp* idx, size_t n) {
    if (idx->op != Op::INDEX || idx->nsrc() != 2) fail(u, "a vector load needs an ungated INDEX");
    int64_t first = operand(idx->src(1)).i;
    if (!is_register(idx->src(0))) {
      Access a = access(idx);
      if (!a.valid || first + int64_t(n) > a.buf->numel()) fail(u, "a vector load past the end of the buffer");
      Buf* b = a.buf;
      return {first, [this, b, u](int64_t i) {
                ConstValue v = b->get(i);
                if (v.is_invalid()) fail(u, "reads a bool that was never written");
                return v;
              }};
    }
    const UOp* acc = accumulator(u, idx->src(0));
    if (first < 0 || first % int64_t(n) != 0 || first / int64_t(n) >= acc->arg<ParamArg>().size)
      fail(u, "vector " + std::to_string(first) + " out of bounds or not aligned");
    int32_t slot = acc->arg<ParamArg>().slot;
    return {first, [this, slot, u](int64_t i) {
              auto it = regs_.find({slot, i});
              if (it == regs_.end()) fail(u, "reads an accumulator lane before it is set");
              return it->second;
            }};
  }

  ConstValue operand(const UOp* u) override {
    if (pos_[u->id] < 0) fail(u, "used but not in the list");
    if (is_vector(u)) {
      ConstValue stamp = scoped(u);
      (void)stamp;
      if (lane_ < 0) return ConstValue::of_int(0);  // ordering only (a vector store reads it itself)
      return vectors_.at(u)[size_t(lane_)];
    }
    return scoped(u);
  }

  ConstValue scoped(const UOp* u) {
    if (u->op == Op::RANGE) {
      if (stamp_[u->id] == 0) fail(u, "used outside its loop");
      return values_.at(u);
    }
    const UOp* s = scope_[u->id];
    uint64_t now = s ? stamp_[s->id] : 1;
    if (now == 0 || evaluated_[u->id] != now) fail(u, "read where it has not been evaluated (out of order or scope)");
    return values_.at(u);
  }

  static bool is_register(const UOp* a) {
    while (a->op == Op::AFTER) a = a->src(0);
    return a->op == Op::BUFFER;
  }

  // the register element an address names: a BUFFER/AFTER (element 0) or INDEX(that, lane)
  std::pair<const UOp*, int64_t> register_at(const UOp* user, const UOp* addr) {
    int64_t lane = 0;
    if (addr->op == Op::INDEX) {
      lane = operand(addr->src(1)).i;
      addr = addr->src(0);
    }
    const UOp* acc = accumulator(user, addr);
    int64_t size = acc->arg<ParamArg>().size * acc->dtype.elem().count;  // scalars (of vectors: their lanes)
    if (lane < 0 || lane >= size)
      fail(user, "register lane " + std::to_string(lane) + " out of bounds of " + std::to_string(size));
    return {acc, lane};
  }

  void store_register(const UOp* st) {
    auto [acc, lane] = register_at(st, st->src(0));
    if (st->nsrc() != 2) fail(st, "a gated store to an accumulator");
    DType d = acc->dtype.elem();
    if (st->src(1)->dtype != d)
      fail(st, "stores a " + to_string(st->src(1)->dtype) + " into a " + to_string(d) + " accumulator");
    ConstValue v = operand(st->src(1));
    if (v.is_invalid()) fail(st, "stores Invalid");
    regs_[{acc->arg<ParamArg>().slot, lane}] = ref::to_dtype(d, v);
  }

  // BUFFER, or AFTER(... BUFFER ...) whose first source leads to it
  const UOp* accumulator(const UOp* user, const UOp* a) const {
    while (a->op == Op::AFTER) a = a->src(0);
    if (a->op != Op::BUFFER) fail(user, "addresses a " + std::string(op_name(a->op)) + ", not a register");
    return a;
  }

  ConstValue load_any(const UOp* u) {
    if (u->nsrc() != 1) fail(u, "only LOAD(address) is supported");
    if (u->src(0)->op == Op::INDEX && !is_register(u->src(0)->src(0))) return load(u->src(0));
    auto [acc, lane] = register_at(u, u->src(0));
    auto it = regs_.find({acc->arg<ParamArg>().slot, lane});
    if (it == regs_.end())
      fail(u, "reads accumulator " + std::to_string(acc->arg<ParamArg>().slot) + " before it is set");
    return it->second;
  }

  std::span<const UOp* const> lin_;
  std::vector<int64_t> pos_;         // node id -> position in the list (-1: not listed)
  std::vector<const UOp*> scope_;    // node id -> the innermost loop around it (nullptr: top level)
  std::vector<uint64_t> stamp_;      // RANGE id -> its current iteration's stamp (0: not running)
  std::vector<uint64_t> evaluated_;  // node id -> the stamp of its scope when it was evaluated
  std::unordered_map<const UOp*, size_t> end_pos_;
  std::map<const UOp*, int64_t, bool (*)(const UOp*, const UOp*)> loop_end_{
      [](const UOp* a, const UOp* b) { return a->id < b->id; }};
  std::unordered_map<const UOp*, ConstValue> values_;
  std::map<std::pair<int32_t, int64_t>, ConstValue> regs_;           // (accumulator slot, lane) -> value
  std::unordered_map<const UOp*, std::vector<ConstValue>> vectors_;  // a vector value's lanes
  int lane_ = -1;  // the lane of the vector op being evaluated (-1: none)
  uint64_t clock_ = 1;
};

bool has_op(const UOp* sink, Op op) {
  for (const UOp* u : toposort(sink))
    if (u->op == op) return true;
  return false;
}

}  // namespace

void run_linear(std::span<const UOp* const> linear, std::span<Buf* const> params_by_slot, const Vars& vars) {
  if (linear.empty()) throw InterpError("run_linear: an empty list");
  for_each_core(linear, vars, [&](const Vars& v) {
    LinearRun(linear, kernel_name(linear.back(), "kernel"), params_by_slot, v).run();
  });
}

void run_stage(const UOp* sink, std::span<Buf* const> params_by_slot, const Vars& vars) {
  if (sink->op != Op::SINK) throw InterpError("run_stage: expected a SINK, got " + std::string(op_name(sink->op)));
  bool vectors = false;  // the linear form runs vectors (the graph form runs the scalar kernels)
  for (const UOp* u : toposort(sink)) vectors |= u->dtype.count > 1;
  if (!vectors && (has_op(sink, Op::REDUCE) || !has_op(sink, Op::BUFFER)))
    return run_kernel(sink, params_by_slot, vars);
  RewriteOptions ro;
  ro.name = "split ends";
  std::vector<const UOp*> lin = codegen::linearize(graph_rewrite(sink, codegen::pm_split_ends(), nullptr, ro));
  run_linear(lin, params_by_slot, vars);
}

}  // namespace kiln::interp

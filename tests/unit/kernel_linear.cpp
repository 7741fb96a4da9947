// The linear-program interpreter: a linearized kernel run the way the rendered C runs it.
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
// inside it. Accumulator registers (BUFFERs in the Reg space) hold `size` elements (lanes).
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

  ConstValue operand(const UOp* u) override {
    if (pos_[u->id] < 0) fail(u, "used but not in the list");
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
    if (lane < 0 || lane >= acc->arg<ParamArg>().size)
      fail(user,
           "register lane " + std::to_string(lane) + " out of bounds of " + std::to_string(acc->arg<ParamArg>().size));
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
    regs_[{acc->arg<ParamArg>().slot, lane}] = truncate_to(d, v);
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
  std::map<std::pair<int32_t, int64_t>, ConstValue> regs_;  // (accumulator slot, lane) -> value
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
  if (has_op(sink, Op::REDUCE) || !has_op(sink, Op::BUFFER)) return run_kernel(sink, params_by_slot, vars);
  RewriteOptions ro;
  ro.name = "split ends";
  std::vector<const UOp*> lin = codegen::linearize(graph_rewrite(sink, codegen::pm_split_ends(), nullptr, ro));
  run_linear(lin, params_by_slot, vars);
}

}  // namespace kiln::interp

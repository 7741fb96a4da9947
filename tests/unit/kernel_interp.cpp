#include "tests/unit/kernel_interp.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <unordered_map>

#include "generator/ir/text.h"
#include "tests/unit/exact_eval.h"
#include "tests/unit/kernel_machine.h"

namespace kiln::interp {

namespace {

// ---------------------------------------------------------------- typed bytes (see kernel_machine.h)

template <class T> void put(std::byte* p, T x) { std::memcpy(p, &x, sizeof(T)); }
template <class T> T take(const std::byte* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  return x;
}

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

// x is already a binary16 value (ref::to_dtype rounded it), so the encoding is exact.
uint16_t half_bits(double x) {
  float f = static_cast<float>(x);
  uint16_t sign = uint16_t((float_bits(f) >> 16) & 0x8000u);
  if (std::isnan(f)) return sign | 0x7e00u;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00u;
  if (a < 6.103515625e-05f) return sign | uint16_t(std::nearbyint(double(a) * 16777216.0));  // subnormal: 2^-24 steps
  uint32_t b = float_bits(a);
  uint32_t exp = ((b >> 23) & 0xffu) - 127u + 15u, mant = (b >> 13) & 0x3ffu;
  return uint16_t(sign | (exp << 10) | mant);
}

double half_value(uint16_t h) {
  double sign = (h & 0x8000u) ? -1.0 : 1.0;
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(double(mant), -24);
  return sign * std::ldexp(double(mant | 0x400), exp - 25);
}

// x is already a bfloat16 value: its float32 pattern has a zero low half.
uint16_t bf16_bits(double x) {
  float f = static_cast<float>(x);
  if (std::isnan(f)) return uint16_t(((float_bits(f) >> 16) & 0x8000u) | 0x7fc0u);
  return uint16_t(float_bits(f) >> 16);
}

double bf16_value(uint16_t b) { return double(std::bit_cast<float>(uint32_t(b) << 16)); }

}  // namespace

namespace detail {

bool is_storable(DType d) { return d.count == 1 && !d.ptr && !is_weak(d) && d.scalar != Scalar::Void; }

void encode(DType d, const ConstValue& v, std::byte* p) {
  switch (d.scalar) {
    case Scalar::Bool:
      return put<uint8_t>(p, v.i != 0);
    case Scalar::Int8:
      return put(p, int8_t(v.i));
    case Scalar::Uint8:
      return put(p, uint8_t(v.i));
    case Scalar::Int16:
      return put(p, int16_t(v.i));
    case Scalar::Uint16:
      return put(p, uint16_t(v.i));
    case Scalar::Int32:
      return put(p, int32_t(v.i));
    case Scalar::Uint32:
      return put(p, uint32_t(v.i));
    case Scalar::Int64:
    case Scalar::Uint64:
      return put(p, v.i);
    case Scalar::Float16:
      return put(p, half_bits(v.f));
    case Scalar::BFloat16:
      return put(p, bf16_bits(v.f));
    case Scalar::Float32:
      return put(p, static_cast<float>(v.f));
    case Scalar::Float64:
      return put(p, v.f);
    case Scalar::Void:
    case Scalar::WeakInt:
    case Scalar::WeakFloat:
      break;
  }
  throw InterpError("no memory layout for " + to_string(d));
}

// A bool byte other than 0/1 was never written: invalid.
ConstValue decode(DType d, const std::byte* p) {
  switch (d.scalar) {
    case Scalar::Bool: {
      uint8_t b = take<uint8_t>(p);
      return b > 1 ? ConstValue::invalid() : ConstValue::of_bool(b);
    }
    case Scalar::Int8:
      return ConstValue::of_int(take<int8_t>(p));
    case Scalar::Uint8:
      return ConstValue::of_int(take<uint8_t>(p));
    case Scalar::Int16:
      return ConstValue::of_int(take<int16_t>(p));
    case Scalar::Uint16:
      return ConstValue::of_int(take<uint16_t>(p));
    case Scalar::Int32:
      return ConstValue::of_int(take<int32_t>(p));
    case Scalar::Uint32:
      return ConstValue::of_int(take<uint32_t>(p));
    case Scalar::Int64:
    case Scalar::Uint64:
      return ConstValue::of_int(take<int64_t>(p));
    case Scalar::Float16:
      return ConstValue::of_float(half_value(take<uint16_t>(p)));
    case Scalar::BFloat16:
      return ConstValue::of_float(bf16_value(take<uint16_t>(p)));
    case Scalar::Float32:
      return ConstValue::of_float(take<float>(p));
    case Scalar::Float64:
      return ConstValue::of_float(take<double>(p));
    case Scalar::Void:
    case Scalar::WeakInt:
    case Scalar::WeakFloat:
      break;
  }
  throw InterpError("no memory layout for " + to_string(d));
}

double to_double(DType d, const ConstValue& v) {
  if (v.is_invalid()) return NAN;
  if (d.scalar == Scalar::Uint64) return double(uint64_t(v.i));
  return v.as_double();
}

ConstValue zero_of(DType d) {
  if (is_float(d)) return ConstValue::of_float(0.0);
  if (is_bool(d)) return ConstValue::of_bool(false);
  return ConstValue::of_int(0);
}

bool truthy(const ConstValue& v) { return v.is_float() ? v.f != 0.0 : v.i != 0; }

std::string show(const UOp* u) {
  std::string s = print(u);
  return s.size() > 160 ? s.substr(0, 160) + "..." : s;
}

std::string kernel_name(const UOp* sink, std::string fallback) {
  return sink->has_arg<Name>() ? std::string(sink->arg<Name>().s) : fallback;
}

}  // namespace detail

using namespace detail;

namespace {

// ---------------------------------------------------------------- the graph form

// Evaluates a kernel's values on demand. A node's value is cached with the versions of what it
// depends on (the RANGEs in its slice that no REDUCE inside it binds, and the buffers it loads
// from); a range's version changes with its loop variable, a buffer's with every store to it. So a
// shared node is computed once per iteration point, and a row statistic once per row.
class KernelRun : Machine {
 public:
  KernelRun(const UOp* sink, std::string name, std::span<Buf* const> params, const Vars& vars)
      : Machine(std::move(name), params, vars), sink_(sink) {
    index_.assign(sink->ctx().size(), -1);
    for (const UOp* u : toposort(sink)) add_node(u);
    version_.assign(nkeys_, 0);
    range_value_.assign(nkeys_, 0);
    bound_.assign(nkeys_, false);
    for (const UOp* u : toposort(sink))
      if (u->op == Op::PARAM) check_param(u);
  }

  void run() { exec(sink_); }

 private:
  struct Node {
    std::vector<uint32_t> deps;  // keys, sorted
    std::vector<uint64_t> stamp;
    ConstValue value;
    bool cached = false;
  };

  std::string location() const override {
    std::string at;
    for (const auto& [r, key] : range_key_)
      if (bound_[key])
        at += " axis" + std::to_string(r->arg<RangeArg>().axis) + "=" + std::to_string(range_value_[key]);
    return at.empty() ? "" : " (at" + at + ")";
  }

  void add_node(const UOp* u) {
    Node n;
    for (const UOp* s : u->src()) {
      std::vector<uint32_t> d = nodes_[size_t(index_[s->id])].deps;
      // AFTER(buf, statements): a read ordered after statements sees what they stored as of the
      // loop iteration it runs in (where the linearizer places it), not every later store to
      // the buffer: only the statements' loops, not their buffers, make it stale
      if (u->op == Op::AFTER && s != u->src(0)) std::erase_if(d, [&](uint32_t k) { return slot_keys_.contains(k); });
      std::vector<uint32_t> merged;
      std::set_union(n.deps.begin(), n.deps.end(), d.begin(), d.end(), std::back_inserter(merged));
      n.deps = std::move(merged);
    }
    auto add_key = [&](uint32_t k) {
      auto it = std::lower_bound(n.deps.begin(), n.deps.end(), k);
      if (it == n.deps.end() || *it != k) n.deps.insert(it, k);
    };
    if (u->op == Op::RANGE) add_key(range_key_[u] = nkeys_++);
    if (u->op == Op::PARAM) {
      int32_t slot = u->arg<ParamArg>().slot;
      if (!slot_key_.contains(slot)) slot_keys_.insert(slot_key_[slot] = nkeys_++);
    }
    if (u->op == Op::INDEX && u->nsrc() >= 1 && u->src(0)->op == Op::PARAM)
      add_key(slot_key_.at(u->src(0)->arg<ParamArg>().slot));
    if (u->op == Op::REDUCE)
      for (const UOp* r : u->src().subspan(1)) {
        auto it = range_key_.find(r);
        if (it != range_key_.end()) std::erase(n.deps, it->second);
      }
    n.stamp.resize(n.deps.size());
    index_[u->id] = int32_t(nodes_.size());
    nodes_.push_back(std::move(n));
  }

  // ---- statements

  void exec(const UOp* u) {
    if (u->op == Op::SINK || u->op == Op::GROUP) {
      for (const UOp* s : u->src()) exec(s);
    } else if (u->op == Op::END) {
      loop(u, u->src().subspan(1), 0, [&] { exec(u->src(0)); });
    } else if (u->op == Op::STORE) {
      if (int32_t slot = store(u); slot >= 0) version_[slot_key_.at(slot)] = ++clock_;
    } else if (u->op != Op::NOOP) {
      fail(u, "not supported as a statement");
    }
  }

  template <class F> void loop(const UOp* owner, std::span<const UOp* const> ranges, size_t k, const F& body) {
    if (k == ranges.size()) return body();
    const UOp* r = ranges[k];
    if (r->op != Op::RANGE) fail(owner, "expected a RANGE, got " + std::string(op_name(r->op)));
    uint32_t key = range_key_.at(r);
    if (bound_[key]) fail(r, "the range is already bound by an enclosing loop");
    int64_t end = int_of(eval(r->src(0)), r);
    bound_[key] = true;
    for (int64_t i = 0; i < end; ++i) {
      range_value_[key] = i;
      version_[key] = ++clock_;
      loop(owner, ranges, k + 1, body);
    }
    bound_[key] = false;
    version_[key] = ++clock_;  // values cached inside the loop must not outlive it
  }

  // ---- values

  ConstValue operand(const UOp* u) override { return eval(u); }

  ConstValue eval(const UOp* u) {
    int32_t i = index_[u->id];
    Node& n = nodes_[size_t(i)];
    bool fresh = n.cached;
    for (size_t k = 0; fresh && k < n.deps.size(); ++k) fresh = n.stamp[k] == version_[n.deps[k]];
    if (fresh) return n.value;
    ConstValue v = compute(u);
    for (size_t k = 0; k < n.deps.size(); ++k) n.stamp[k] = version_[n.deps[k]];
    n.value = v;
    n.cached = true;
    return v;
  }

  ConstValue reduce(const UOp* u) {
    const ReduceArg& ra = u->arg<ReduceArg>();
    if (ra.horizontal != 0 || (ra.op != Op::ADD && ra.op != Op::MUL && ra.op != Op::MAX))
      fail(u, "only ADD, MUL and MAX reduces over ranges are supported");
    if (u->nsrc() == 1) return ref::to_dtype(u->dtype, eval(u->src(0)));
    DType d = u->dtype;
    ConstValue acc = ra.op == Op::ADD   ? ref::to_dtype(d, ConstValue::of_int(0))
                     : ra.op == Op::MUL ? ref::to_dtype(d, ConstValue::of_int(1))
                     : is_float(d)      ? ConstValue::of_float(-INFINITY)
                     : is_bool(d)       ? ConstValue::of_bool(false)
                                        : ConstValue::of_int(int_min(d));
    loop(u, u->src().subspan(1), 0, [&] {
      ConstValue args[2] = {acc, eval(u->src(0))};
      acc = alu(u, ra.op, args);
    });
    return acc;
  }

  ConstValue compute(const UOp* u) {
    if (u->op == Op::RANGE) {
      uint32_t key = range_key_.at(u);
      if (!bound_[key]) fail(u, "used outside the loop that binds it");
      return ConstValue::of_int(range_value_[key]);
    }
    if (u->op == Op::INDEX) return load(u);
    if (u->op == Op::LOAD) {
      if (u->nsrc() != 1 || u->src(0)->op != Op::INDEX) fail(u, "only LOAD(INDEX) is supported");
      return load(u->src(0));
    }
    if (u->op == Op::REDUCE) return reduce(u);
    return value(u);
  }

  const UOp* sink_;
  std::vector<int32_t> index_;  // node id -> nodes_ index (-1: not in this kernel)
  std::vector<Node> nodes_;
  std::map<const UOp*, uint32_t, bool (*)(const UOp*, const UOp*)> range_key_{
      [](const UOp* a, const UOp* b) { return a->id < b->id; }};
  std::map<int32_t, uint32_t> slot_key_;
  std::set<uint32_t> slot_keys_;  // the keys of slot_key_
  uint32_t nkeys_ = 0;
  std::vector<uint64_t> version_;  // by key: ranges and buffers
  std::vector<int64_t> range_value_;
  std::vector<bool> bound_;
  uint64_t clock_ = 0;
};

}  // namespace

// ---------------------------------------------------------------- whole schedules

int64_t eval_dim(const UOp* d, const Vars& vars) {
  exact::Env env;
  for (const UOp* l : exact::leaves(d)) {
    if (l->op != Op::DEFINE_VAR) throw InterpError("a dim has a non-variable leaf: " + show(l));
    auto it = vars.find(std::string(l->arg<VarArg>().name));
    if (it == vars.end()) throw InterpError("no value for " + std::string(l->arg<VarArg>().name));
    env[l] = ConstValue::of_int(it->second);
  }
  exact::Value v = exact::evaluate(d, env);
  if (v.size() != 1 || !v[0] || !v[0]->is_int()) throw InterpError("a dim is undefined: " + show(d));
  return v[0]->i;
}

// ---------------------------------------------------------------- Buf

Buf::Buf(DType dtype, int64_t numel) : dtype_(dtype), numel_(numel) {
  if (!is_storable(dtype) || numel < 0)
    throw InterpError("cannot allocate " + std::to_string(numel) + " " + to_string(dtype));
  own_.assign(bytes(), std::byte{0});
  data_ = own_.data();
}

Buf::Buf(DType dtype, int64_t numel, std::byte* data) : dtype_(dtype), numel_(numel), data_(data) {
  if (!is_storable(dtype) || numel < 0)
    throw InterpError("cannot place " + std::to_string(numel) + " " + to_string(dtype));
}

ConstValue Buf::get(int64_t i) const { return decode(dtype_, data_ + size_t(i) * size_t(itemsize(dtype_))); }

void Buf::set(int64_t i, const ConstValue& v) {
  encode(dtype_, ref::to_dtype(dtype_, v), data_ + size_t(i) * size_t(itemsize(dtype_)));
}

void Buf::fill(std::span<const double> values) {
  if (int64_t(values.size()) != numel_)
    throw InterpError("fill: " + std::to_string(values.size()) + " values for " + std::to_string(numel_) + " elements");
  for (size_t i = 0; i < values.size(); ++i) {
    double x = values[i];
    ConstValue v = is_float(dtype_)  ? ConstValue::of_float(x)
                   : is_bool(dtype_) ? ConstValue::of_bool(x != 0)
                                     : ConstValue::of_int(int64_t(std::llround(x)));
    set(int64_t(i), v);
  }
}

void Buf::poison() { std::memset(data_, is_float(dtype_) ? 0xFF : 0xA5, bytes()); }

std::vector<double> Buf::doubles() const {
  std::vector<double> r;
  r.reserve(size_t(numel_));
  for (int64_t i = 0; i < numel_; ++i) r.push_back(to_double(dtype_, get(i)));
  return r;
}

std::vector<ConstValue> Buf::values() const {
  std::vector<ConstValue> r;
  r.reserve(size_t(numel_));
  for (int64_t i = 0; i < numel_; ++i) r.push_back(get(i));
  return r;
}

// ---------------------------------------------------------------- entry points

void for_each_core(std::span<const UOp* const> nodes, const Vars& vars, const std::function<void(const Vars&)>& run) {
  bool shared = false;
  for (const UOp* u : nodes) shared |= u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == ".core";
  if (!shared) return run(vars);  // runs whole (a C kernel returns at once on the other cores)
  auto it = vars.find(".cores");
  int64_t cores = it == vars.end() ? 1 : it->second;
  Vars v = vars;
  v[".cores"] = cores;
  for (int64_t c = 0; c < cores; ++c) {
    v[".core"] = c;
    run(v);
  }
}

void run_kernel(const UOp* sink, std::span<Buf* const> params_by_slot, const Vars& vars) {
  if (sink->op != Op::SINK) throw InterpError("run_kernel: expected a SINK, got " + std::string(op_name(sink->op)));
  for_each_core(toposort(sink), vars,
                [&](const Vars& v) { KernelRun(sink, kernel_name(sink, "kernel"), params_by_slot, v).run(); });
}

std::vector<Output> run_schedule(const schedule::Schedule& s, const Vars& vars,
                                 const std::vector<std::vector<double>>& inputs, const RunOptions& opts) {
  return run_schedule(s, vars, inputs, opts, [&](size_t k, std::span<Buf* const> params) {
    const schedule::Kernel& kernel = s.kernels[k];
    if (kernel.ast->op != Op::SINK) throw InterpError("kernel " + kernel.name + ": expected a SINK");
    for_each_core(toposort(kernel.ast), vars,
                  [&](const Vars& v) { KernelRun(kernel.ast, kernel_name(kernel.ast, kernel.name), params, v).run(); });
  });
}

std::vector<Output> run_schedule(const schedule::Schedule& s, const Vars& vars,
                                 const std::vector<std::vector<double>>& inputs, const RunOptions& opts,
                                 const KernelRunner& run) {
  using Kind = schedule::Buffer::Kind;
  size_t nb = s.buffers.size();
  std::vector<std::vector<int64_t>> shapes(nb);
  std::vector<int64_t> numels(nb);
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    int64_t prod = 1;
    for (const UOp* d : buf.shape) prod *= shapes[b].emplace_back(eval_dim(d, vars));
    numels[b] = eval_dim(buf.numel, vars);
    if (prod != numels[b])
      throw InterpError("buffer " + buf.name + ": numel " + std::to_string(numels[b]) + " but its shape has " +
                        std::to_string(prod) + " elements");
  }

  // The lifetime of an intermediate is the kernels that use it, as the kernels say.
  std::vector<int32_t> first(nb, INT32_MAX), last(nb, -1);
  for (size_t k = 0; k < s.kernels.size(); ++k)
    for (int32_t b : s.kernels[k].buffers) {
      if (b < 0 || size_t(b) >= nb)
        throw InterpError("kernel " + s.kernels[k].name + ": no buffer " + std::to_string(b));
      first[size_t(b)] = std::min(first[size_t(b)], int32_t(k));
      last[size_t(b)] = std::max(last[size_t(b)], int32_t(k));
    }

  int64_t ws = s.workspace_bytes ? eval_dim(s.workspace_bytes, vars) : 0;
  if (ws < 0) throw InterpError("negative workspace size " + std::to_string(ws));
  // 64-byte aligned, like the arena a runtime hands to native kernels
  size_t arena_bytes = (size_t(ws) + 63) / 64 * 64 + 64;
  std::unique_ptr<std::byte, decltype(&std::free)> arena(static_cast<std::byte*>(std::aligned_alloc(64, arena_bytes)),
                                                         &std::free);
  if (!arena) throw InterpError("cannot allocate a " + std::to_string(ws) + "-byte workspace");
  std::fill_n(arena.get(), arena_bytes, std::byte{0xFF});
  std::vector<int64_t> offsets(nb, -1);
  std::vector<Buf> bufs;
  bufs.reserve(nb);
  std::vector<guard::Pages> pages;
  auto own = [&](DType d, int64_t numel) -> Buf& {
    if (!opts.guard) return bufs.emplace_back(d, numel);
    size_t item = size_t(itemsize(d));
    return bufs.emplace_back(d, numel, pages.emplace_back(size_t(numel) * item, *opts.guard, item).data());
  };
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    if (buf.kind != Kind::Intermediate) {
      own(buf.dtype, numels[b]);
      if (buf.kind == Kind::Output) bufs.back().poison();
      if (buf.kind != Kind::Input) continue;
      if (buf.position < 0 || size_t(buf.position) >= inputs.size())
        throw InterpError("no values for input " + buf.name + " (position " + std::to_string(buf.position) + ")");
      bufs.back().fill(inputs[size_t(buf.position)]);
      continue;
    }
    if (!buf.offset) throw InterpError("intermediate " + buf.name + " has no workspace offset");
    int64_t off = offsets[b] = eval_dim(buf.offset, vars);
    int64_t bytes = numels[b] * itemsize(buf.dtype);
    if (off < 0 || off % 64 != 0 || off + bytes > ws)
      throw InterpError("intermediate " + buf.name + ": bytes [" + std::to_string(off) + ", " +
                        std::to_string(off + bytes) + ") do not fit a 64-byte aligned slot of the " +
                        std::to_string(ws) + "-byte workspace");
    if (opts.guard)
      own(buf.dtype, numels[b]);
    else
      bufs.emplace_back(buf.dtype, numels[b], arena.get() + off);
    bufs.back().poison();
  }

  if (opts.check_workspace_overlap)
    for (size_t a = 0; a < nb; ++a)
      for (size_t b = a + 1; b < nb; ++b) {
        if (offsets[a] < 0 || offsets[b] < 0 || last[a] < 0 || last[b] < 0) continue;
        bool live_together = first[a] <= last[b] && first[b] <= last[a];
        bool share_bytes =
            offsets[a] < offsets[b] + int64_t(bufs[b].bytes()) && offsets[b] < offsets[a] + int64_t(bufs[a].bytes());
        if (live_together && share_bytes)
          throw InterpError("intermediates " + s.buffers[a].name + " and " + s.buffers[b].name +
                            " share workspace bytes while both are live");
      }

  for (size_t k = 0; k < s.kernels.size(); ++k) {
    std::vector<Buf*> params;
    for (int32_t b : s.kernels[k].buffers) params.push_back(&bufs[size_t(b)]);
    run(k, params);
  }

  std::vector<Output> outs;
  for (size_t b = 0; b < nb; ++b) {
    const schedule::Buffer& buf = s.buffers[b];
    if (buf.kind != Kind::Output) continue;
    if (buf.position < 0) throw InterpError("output " + buf.name + " has no position");
    if (outs.size() <= size_t(buf.position)) outs.resize(size_t(buf.position) + 1);
    outs[size_t(buf.position)] = {buf.name, buf.dtype, shapes[b], bufs[b].doubles(), bufs[b].values()};
  }
  return outs;
}

}  // namespace kiln::interp

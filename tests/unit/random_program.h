// Shared by the execution tests: random inputs (never zero), tolerances per dtype, and a
// generator of random tensor programs (op chains over random shapes, dtypes and symbolic dims).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "generator/frontend/tensor.h"
#include "tests/unit/oracle.h"
#include "tests/unit/ref_alu.h"

namespace kiln::testing_programs {

inline double tolerance(DType d) {
  if (d == dtypes::float16) return 2e-2;
  if (d == dtypes::bfloat16) return 6e-2;
  if (d == dtypes::float32) return 2e-4;
  return 1e-9;
}

// "" where output `i`, `got`, matches the oracle's `want` (NaN where NaN, an infinity exactly, else
// within `tol` relative to max(1, |want|)), else where and how it first differs.
inline std::string compare_output(size_t i, const std::vector<double>& got, const std::vector<double>& want,
                                  double tol) {
  if (got.size() != want.size()) return "output " + std::to_string(i) + ": size differs";
  for (size_t j = 0; j < want.size(); ++j) {
    double g = got[j], w = want[j];
    bool same = std::isnan(w)   ? std::isnan(g)
                : std::isinf(w) ? g == w
                                : std::abs(g - w) <= tol * std::max(1.0, std::abs(w));
    if (!same) {
      std::ostringstream os;
      os << "output " << i << " at " << j << ": got " << g << ", want " << w;
      return os.str();
    }
  }
  return "";
}

// Random inputs, never zero: floats in +-[0.1, 2], ints in +-[1, 9], bools both ways.
inline std::vector<double> random_input(DType d, size_t n, std::mt19937_64& rng) {
  std::vector<double> v(n);
  std::uniform_real_distribution<double> mag(0.1, 2.0);
  std::uniform_int_distribution<int> ints(1, 9), coin(0, 1);
  for (double& x : v) {
    if (is_bool(d)) {
      x = coin(rng);
    } else if (is_float(d)) {
      x = mag(rng) * (coin(rng) ? 1 : -1);
      x = double(ref::to_dtype(d, ConstValue::of_float(x)).f);  // exactly representable in d
    } else {
      x = ints(rng) * (is_unsigned(d) || coin(rng) ? 1 : -1);
    }
  }
  return v;
}

// A test's tensor program in the making: its context and inputs, in the order of their slots.
struct ProgramInputs {
  Context ctx;
  std::vector<Tensor> ins;
  int programs = 0;  // programs scheduled so far (their kernels' name prefixes)
  Tensor input(std::string_view name, std::vector<Dim> dims, DType d = dtypes::float32) {
    ins.push_back(Tensor::input(ctx, name, d, dims));
    return ins.back();
  }
};

// Random inputs for the tensors `ins` at the shapes b.vars gives them, also bound in `b`.
inline std::vector<std::vector<double>> random_inputs(const std::vector<Tensor>& ins, oracle::Bindings& b,
                                                      std::mt19937_64& rng) {
  std::vector<std::vector<double>> inputs;
  for (const Tensor& t : ins) {
    size_t n = 1;
    for (int64_t d : oracle::eval_shape(t.shape(), b)) n *= size_t(d);
    inputs.push_back(random_input(t.dtype(), n, rng));
    b.inputs[t.uop()->arg<ParamArg>().slot] = inputs.back();
  }
  return inputs;
}

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed) : rng_(seed) {}

  // Builds a program into ctx; returns "" if it could not be built (a rejected shape).
  void build(Context& ctx, std::vector<Tensor>& ins, std::vector<Tensor>& outs, std::map<std::string, int64_t>& vars) {
    int rank = pick(1, 3);
    std::vector<const UOp*> dims;
    for (int i = 0; i < rank; ++i) {
      if (pick(0, 4) == 0 && vars.empty()) {
        int64_t hi = pick(2, 6);
        dims.push_back(ctx.var("N", 1, hi));
        int64_t v = std::vector<int64_t>{1, hi, pick(1, int(hi))}[size_t(pick(0, 2))];
        vars["N"] = v;
        keys_.push_back(-1);
      } else {
        dims.push_back(ctx.cint(std::vector<int64_t>{1, 2, 3, 4, 5, 7}[size_t(pick(0, 5))]));
        keys_.push_back(dims.back()->ival());
      }
    }
    build_ops(ctx, dims, ins, outs);
  }

  // A spec's declaration of a program's shape: symbolic dims over ranges, each with the buckets
  // kiln gen specializes (an exact value, or a multiple), and per axis a literal size or a dim.
  struct Bucket {
    int64_t value;
    bool multiple;
  };
  struct DeclaredDim {
    std::string name;
    int64_t lo, hi;
    std::vector<Bucket> buckets;
  };
  struct Shapes {
    std::vector<DeclaredDim> dims;
    std::vector<int> axis_dim;     // per axis: the index of its dim, or -1 for a literal
    std::vector<int64_t> literal;  // per axis: its size where literal
  };

  // Draws the shapes of a program (up to two dims, sizes up to 33, buckets), keeping its tensors
  // at most `max_elements` at the dims' largest values. Then build(ctx, shapes, dims, ...) builds
  // the program; a copy of this RandomProgram taken between the two builds the same program again
  // over other dims (a bucket's), as kiln gen lowers one spec per variant.
  Shapes declare(int64_t max_elements) {
    Shapes s;
    int rank = pick(1, 3);
    for (int i = 0; i < rank; ++i) {
      if (pick(0, 2) == 0) {
        if (s.dims.empty() || (s.dims.size() < 2 && pick(0, 1))) {
          int64_t lo = std::vector<int64_t>{1, 1, 2, 3}[size_t(pick(0, 3))];
          int64_t hi = std::max(lo + 1, std::vector<int64_t>{2, 4, 7, 8, 13, 16, 24, 33}[size_t(pick(0, 7))]);
          DeclaredDim d{s.dims.empty() ? "N" : "M", lo, hi, {}};
          for (int b = pick(0, 2); b > 0; --b) {
            if (pick(0, 1)) {
              d.buckets.push_back({pick(int(lo), int(hi)), false});
              continue;
            }
            int64_t k = std::vector<int64_t>{2, 4, 8, 16}[size_t(pick(0, 3))];
            if ((lo + k - 1) / k * k <= hi) d.buckets.push_back({k, true});
          }
          s.dims.push_back(d);
        }
        s.axis_dim.push_back(pick(0, int(s.dims.size()) - 1));
        s.literal.push_back(0);
      } else {
        s.axis_dim.push_back(-1);
        s.literal.push_back(std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32}[size_t(pick(0, 10))]);
      }
    }
    // the largest tensor: the shape at the dims' largest values, squared along the last axis by a
    // matmul-like step
    auto largest = [&] {
      int64_t n = 1, last = 1;
      for (size_t i = 0; i < s.axis_dim.size(); ++i) {
        last = s.axis_dim[i] < 0 ? s.literal[i] : s.dims[size_t(s.axis_dim[i])].hi;
        n *= last;
      }
      return n * last;
    };
    for (size_t i = 0; largest() > max_elements; i = (i + 1) % s.axis_dim.size())
      if (s.axis_dim[i] < 0 && s.literal[i] > 2)
        s.literal[i] = s.literal[i] / 2;
      else if (s.axis_dim[i] >= 0 && s.dims[size_t(s.axis_dim[i])].hi > 4)
        shrink(s.dims[size_t(s.axis_dim[i])]);
    return s;
  }

  // The program of `s` with dims[j] standing for s.dims[j] (its var, or a bucket's constant or
  // multiple): its choices depend on the declaration only, so every variant is the same program.
  void build(Context& ctx, const Shapes& s, const std::vector<const UOp*>& dims, std::vector<Tensor>& ins,
             std::vector<Tensor>& outs) {
    std::vector<const UOp*> axes;
    for (size_t i = 0; i < s.axis_dim.size(); ++i) {
      bool lit = s.axis_dim[i] < 0;
      axes.push_back(lit ? ctx.cint(s.literal[i]) : dims[size_t(s.axis_dim[i])]);
      keys_.push_back(lit ? s.literal[i] : -1 - s.axis_dim[i]);
    }
    build_ops(ctx, axes, ins, outs);
  }

 private:
  // the ops over the axes `dims` (keys_ says which are literal, and which are equal)
  void build_ops(Context& ctx, const std::vector<const UOp*>& dims, std::vector<Tensor>& ins,
                 std::vector<Tensor>& outs) {
    ctx_ = &ctx;
    dims_ = dims;
    int rank = int(dims_.size());
    is_int_ = pick(0, 3) == 0;
    DType d = is_int_ ? dtypes::int32 : dtypes::float32;
    int n_in = pick(1, 3);
    for (int i = 0; i < n_in; ++i) {
      ins.push_back(Tensor::input(ctx, "in" + std::to_string(i), d, dims_of()));
      pool_.push_back(ins.back());
    }
    int steps = pick(2, 9);
    for (int i = 0; i < steps; ++i) pool_.push_back(step());
    outs.push_back(pool_.back());
    if (pick(0, 2) == 0) outs.push_back(pool_[size_t(pick(int(n_in), int(pool_.size()) - 1))]);
    if (pick(0, 3) == 0) outs.push_back(pool_.back().sum({pick(0, rank - 1)}));
  }
  // a smaller range, its buckets kept inside it
  static void shrink(DeclaredDim& d) {
    d.hi = std::max(d.lo + 1, d.hi / 2);
    std::erase_if(d.buckets, [&](const Bucket& b) {
      return b.multiple ? (d.lo + b.value - 1) / b.value * b.value > d.hi : b.value > d.hi;
    });
  }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<Dim> dims_of() const {
    std::vector<Dim> r;
    for (const UOp* d : dims_) r.push_back(d);
    return r;
  }
  Tensor any() { return pool_[size_t(pick(0, int(pool_.size()) - 1))]; }
  int axis() { return pick(0, int(dims_.size()) - 1); }
  // a literal size (not a dim, even one a bucket makes constant)
  bool const_dim(int a, int64_t at_least) const { return keys_[size_t(a)] >= at_least; }

  // One op on the pool, giving a tensor of the program's shape and dtype.
  Tensor step() {
    Tensor x = any();
    switch (pick(0, 11)) {
      case 0:  // binary elementwise
      case 1: {
        Tensor y = any();
        switch (pick(0, 4)) {
          case 0:
            return x + y;
          case 1:
            return x - y;
          case 2:
            return is_int_ ? x * y.maximum(x.lift(-3)).minimum(x.lift(3)) : x * y;
          case 3:
            return x.maximum(y);
          default:
            return (x < y).where(x, y * 2);
        }
      }
      case 2: {  // unary, kept bounded
        if (is_int_) return pick(0, 1) ? x.abs() - 1 : x.idiv(x.lift(pick(2, 4)));
        switch (pick(0, 6)) {
          case 0:
            return x.tanh().exp();
          case 1:
            return x.sin() + x.cos();
          case 2:
            return x.sigmoid();
          case 3:
            return x.relu() - x;
          case 4:
            return (x.abs() + 1).log() * x.abs().sqrt();
          case 5:
            return x.cast(dtypes::float16).cast(dtypes::float32) * 0.5;
          default:
            return (x.abs() + 0.5).reciprocal();
        }
      }
      case 3:  // a reduction broadcast back (the softmax/layernorm pattern)
      case 4: {
        int a = axis();
        Tensor r = is_int_ || pick(0, 1) ? x.max({a}, true) : x.mean({a}, true);
        if (pick(0, 2) == 0) r = x.sum({a}, true) * (is_int_ ? x.lift(1) : x.lift(0.25));
        return x - r;
      }
      case 5: {  // a reduction of a product: a matmul-like contraction over one axis
        int a = axis();
        Tensor y = any();
        Tensor r = (x * y).sum({a}, true);
        return is_int_ ? r.maximum(x.lift(-50)).minimum(x.lift(50)) + x : (r * 0.25).tanh() + x;
      }
      case 6: {  // flip
        return x.flip({axis()}) + any();
      }
      case 7: {  // pad, transform, shrink back shifted
        int a = axis();
        if (!const_dim(a, 1)) return x * 2;
        std::vector<std::pair<Dim, Dim>> pads(dims_.size(), {Dim(0), Dim(0)}), keep;
        pads[size_t(a)] = {Dim(1), Dim(2)};
        Tensor p = is_int_ ? x.pad(pads) + 1 : x.pad(pads).exp();
        for (size_t i = 0; i < dims_.size(); ++i)
          keep.push_back(int(i) == a ? std::pair<Dim, Dim>{Dim(pick(0, 3)), Dim(0)}
                                     : std::pair<Dim, Dim>{Dim(0), dims_[i]});
        keep[size_t(a)].second = Dim(keep[size_t(a)].first.v + dims_[size_t(a)]->ival());
        return p.shrink(keep);
      }
      case 8: {  // rotate along an axis with shrink + cat
        int a = axis();
        if (!const_dim(a, 2)) return x + 1;
        int64_t n = dims_[size_t(a)]->ival(), k = pick(1, int(n) - 1);
        return Tensor::cat({x.slice(a, k, n), x.slice(a, 0, k)}, a);
      }
      case 9: {  // reshape to one axis and back
        if (dims_.size() < 2) return x.reshape({Dim(dims_[0])}) * 3;
        return (x.flatten() * 3).reshape(dims_of());
      }
      case 10: {  // a square transpose, or a matmul with a fresh-shaped contraction
        if (dims_.size() >= 2 && keys_[dims_.size() - 1] == keys_[dims_.size() - 2]) return x.transpose() + x;
        if (is_int_) return x * 2;
        Tensor w = x.unsqueeze(-1) * any().unsqueeze(-2);  // (..., n, n)
        return w.sum({int(dims_.size())}) * 0.1;
      }
      default: {  // casts through other dtypes
        if (is_int_) return x.cast(dtypes::int8).cast(dtypes::int32) + x.cast(dtypes::uint8).cast(dtypes::int32);
        return x.cast(dtypes::float64).exp2().cast(dtypes::float32).minimum(x.lift(4.0));
      }
    }
  }

  std::mt19937_64 rng_;
  Context* ctx_ = nullptr;
  std::vector<const UOp*> dims_;
  std::vector<int64_t> keys_;  // per axis: its literal size, or -1 - its dim's index (equal keys: equal sizes)
  std::vector<Tensor> pool_;
  bool is_int_ = false;
};

}  // namespace kiln::testing_programs

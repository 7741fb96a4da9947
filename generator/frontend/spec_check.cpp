#include "generator/frontend/spec_check.h"

#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace kiln::frontend {

namespace {

struct SpecDType {
  std::string_view name;
  DType dtype;
};

constexpr SpecDType kSpecDTypes[] = {
    {"bool", dtypes::bool_},  {"i8", dtypes::int8},     {"i16", dtypes::int16},     {"i32", dtypes::int32},
    {"i64", dtypes::int64},   {"u8", dtypes::uint8},    {"u16", dtypes::uint16},    {"u32", dtypes::uint32},
    {"u64", dtypes::uint64},  {"f16", dtypes::float16}, {"bf16", dtypes::bfloat16}, {"f32", dtypes::float32},
    {"f64", dtypes::float64},
};

// What a name inside a kernel refers to.
enum class NameKind { Dim, Input, Output, Local };

struct NameInfo {
  NameKind kind;
  int line;  // where declared (a local: where first assigned)
};

const char* kind_name(NameKind k) {
  switch (k) {
    case NameKind::Dim:
      return "dim";
    case NameKind::Input:
      return "input";
    case NameKind::Output:
      return "output";
    case NameKind::Local:
      return "local";
  }
  return "?";
}

class Checker {
 public:
  std::vector<Diagnostic> run(const Spec& spec) {
    check_dims(spec);
    std::map<std::string, int> kernel_lines;
    for (const Kernel& k : spec.kernels) {
      auto [it, inserted] = kernel_lines.emplace(k.name, k.loc.line);
      if (!inserted) redefinition(k.loc, k.name, "kernel", it->second);
      check_kernel(k);
    }
    sort_by_location(diags_);
    return std::move(diags_);
  }

 private:
  std::vector<Diagnostic> diags_;
  std::map<std::string, const Dim*> dims_;
  std::map<std::string, bool> dim_valid_;   // a dim with a bad range gives no size to compute with
  std::set<std::string> bound_dims_;        // of the kernel being checked
  std::set<std::string> unbound_reported_;  // a dim in no shape: reported at its first use only
  std::string kernel_name_;

  void report(Loc loc, size_t length, std::string message, std::string expected = {}, std::string got = {}) {
    diags_.push_back(diagnostic(loc, length, std::move(message), std::move(expected), std::move(got)));
  }

  void redefinition(Loc loc, const std::string& name, const char* first_kind, int first_line) {
    report(loc, name.size(),
           "redefinition of '" + name + "' (first defined as " + first_kind + " on line " + std::to_string(first_line) +
               ")");
  }

  void check_dims(const Spec& spec) {
    for (const Dim& d : spec.dims) {
      if (auto it = dims_.find(d.name); it != dims_.end()) {
        redefinition(d.loc, d.name, "dim", it->second->loc.line);
        continue;
      }
      dims_[d.name] = &d;
      dim_valid_[d.name] = check_dim_range(d);
      if (dim_valid_[d.name]) check_specializations(d);
    }
  }

  bool check_dim_range(const Dim& d) {
    std::string range = std::to_string(d.min) + ".." + std::to_string(d.max);
    size_t range_length = d.max_loc.offset + std::to_string(d.max).size() - d.min_loc.offset;
    if (d.min < 1) {
      report(d.min_loc, std::to_string(d.min).size(),
             "range of dim '" + d.name + "' starts below 1, but a size must be at least 1", "min >= 1",
             std::to_string(d.min));
      return false;
    }
    if (d.min > d.max) {
      report(d.min_loc, range_length, "range of dim '" + d.name + "' is empty: its minimum is above its maximum",
             "min <= max", range);
      return false;
    }
    return true;
  }

  void check_specializations(const Dim& d) {
    std::string range = std::to_string(d.min) + ".." + std::to_string(d.max);
    std::map<std::pair<bool, int64_t>, bool> seen;
    for (const Specialization& s : d.specializations) {
      std::string text = (s.multiple ? "%" : "") + std::to_string(s.value);
      if (s.multiple && (s.value < 1 || s.value > d.max)) {
        const char* why = s.value < 1 ? "is not a valid multiple" : "can never match: no size in range is a multiple";
        report(s.loc, text.size(), "specialization " + text + " of dim '" + d.name + "' " + why,
               "%k with k in 1.." + std::to_string(d.max), text);
      } else if (!s.multiple && (s.value < d.min || s.value > d.max)) {
        report(s.loc, text.size(), "specialization " + text + " of dim '" + d.name + "' is outside its range",
               "a value in " + range, text);
      } else if (seen[{s.multiple, s.value}]) {
        report(s.loc, text.size(), "duplicate specialization " + text + " of dim '" + d.name + "'");
      }
      seen[{s.multiple, s.value}] = true;
    }
  }

  // A parameter or output: its dtype, its shape, and its name in the kernel scope.
  void check_param(const Param& p, NameKind kind, std::map<std::string, NameInfo>& names) {
    if (!spec_dtype(p.dtype)) {
      std::string all;
      for (const SpecDType& t : kSpecDTypes) all += (all.empty() ? "" : ", ") + std::string(t.name);
      report(p.dtype_loc, p.dtype.size(), "unknown dtype", "one of " + all, "'" + p.dtype + "'");
    }
    check_shape(p);
    declare(p.loc, p.name, kind, names);
  }

  void declare(Loc loc, const std::string& name, NameKind kind, std::map<std::string, NameInfo>& names) {
    if (auto it = names.find(name); it != names.end())
      return redefinition(loc, name, kind_name(it->second.kind), it->second.line);
    names[name] = NameInfo{kind, loc.line};
  }

  // Sizes multiply at each dim's maximum; the product must fit in int64 for any index to.
  void check_shape(const Param& p) {
    int64_t elements = 1;
    bool overflow = false, known = true;
    std::string product;
    for (const ShapeItem& item : p.shape) {
      int64_t size = item.size;
      if (item.is_literal) {
        if (item.size < 1)
          report(item.loc, std::to_string(item.size).size(), "axis of '" + p.name + "' has no elements", "a size >= 1",
                 std::to_string(item.size));
      } else if (!dims_.count(item.dim)) {
        report(item.loc, item.dim.size(), "unknown dim '" + item.dim + "' in the shape of '" + p.name + "'",
               "a declared dim or an integer", "'" + item.dim + "'");
        known = false;
        continue;
      } else {
        if (!dim_valid_[item.dim]) known = false;
        size = dims_[item.dim]->max;
      }
      product += (product.empty() ? "" : " * ") + std::to_string(size);
      if (!overflow && __builtin_mul_overflow(elements, size, &elements)) overflow = true;
    }
    if (overflow && known)
      report(p.loc, p.name.size(), "number of elements of '" + p.name + "' overflows int64",
             "at most " + std::to_string(std::numeric_limits<int64_t>::max()), product);
  }

  void check_kernel(const Kernel& k) {
    // a call gives a dim only through an argument's shape: a dim the body names must be one of them
    bound_dims_.clear();
    unbound_reported_.clear();
    kernel_name_ = k.name;
    for (const std::vector<Param>* ps : {&k.params, &k.outputs})
      for (const Param& p : *ps)
        for (const ShapeItem& it : p.shape)
          if (!it.is_literal) bound_dims_.insert(it.dim);
    std::map<std::string, NameInfo> names;
    for (const auto& [name, dim] : dims_) names[name] = NameInfo{NameKind::Dim, dim->loc.line};
    for (const Param& p : k.params) check_param(p, NameKind::Input, names);
    for (const Param& p : k.outputs) check_param(p, NameKind::Output, names);

    // Where each name is first assigned, to tell "used too early" from "never defined".
    std::map<std::string, int> first_assignment;
    for (const Stmt& s : k.body) first_assignment.emplace(s.target, s.loc.line);

    std::map<std::string, int> assigned;  // outputs and locals assigned so far, with their line
    for (const Stmt& s : k.body) {
      check_expr(*s.value, names, assigned, first_assignment);
      auto it = names.find(s.target);
      if (it == names.end()) {
        names[s.target] = NameInfo{NameKind::Local, s.loc.line};
        assigned[s.target] = s.loc.line;
        continue;
      }
      switch (it->second.kind) {
        case NameKind::Dim:
        case NameKind::Input:
          report(s.loc, s.target.size(),
                 std::string("cannot assign to ") + kind_name(it->second.kind) + " '" + s.target + "' of kernel '" +
                     k.name + "'",
                 "an output or a new local name", std::string(kind_name(it->second.kind)) + " '" + s.target + "'");
          break;
        case NameKind::Output:
        case NameKind::Local:
          if (auto a = assigned.find(s.target); a != assigned.end() && it->second.kind == NameKind::Local) {
            redefinition(s.loc, s.target, "local", a->second);
          } else if (a != assigned.end()) {
            report(s.loc, s.target.size(),
                   std::string(kind_name(it->second.kind)) + " '" + s.target +
                       "' is assigned more than once (first on line " + std::to_string(a->second) + ")");
          } else {
            assigned[s.target] = s.loc.line;
          }
          break;
      }
    }
    for (const Param& p : k.outputs)
      if (!assigned.count(p.name) && names[p.name].kind == NameKind::Output && names[p.name].line == p.loc.line)
        report(p.loc, p.name.size(), "output '" + p.name + "' of kernel '" + k.name + "' is never assigned");
  }

  void check_expr(const Expr& e, const std::map<std::string, NameInfo>& names,
                  const std::map<std::string, int>& assigned, const std::map<std::string, int>& first_assignment) {
    if (e.kind == ExprKind::Name) {
      auto it = names.find(e.name);
      bool needs_assignment =
          it == names.end() || it->second.kind == NameKind::Output || it->second.kind == NameKind::Local;
      // Dtype names are values too, for casts: `x.cast(dtype=f16)`; so is None.
      bool builtin = it == names.end() && (spec_dtype(e.name) || e.name == "None" || e.name == "...");
      if (it != names.end() && it->second.kind == NameKind::Dim && !bound_dims_.count(e.name) &&
          unbound_reported_.insert(e.name).second)
        report(e.loc, e.name.size(),
               "dim '" + e.name + "' is in no argument's shape of kernel '" + kernel_name_ +
                   "', so no call can give its value (declare an input or output with it)");
      if (!needs_assignment || builtin || assigned.count(e.name)) return;
      if (auto later = first_assignment.find(e.name); later != first_assignment.end()) {
        report(e.loc, e.name.size(),
               "use of '" + e.name + "' before its assignment on line " + std::to_string(later->second));
      } else {
        report(e.loc, e.name.size(), "unknown name '" + e.name + "'");
      }
      return;
    }
    if (e.receiver) check_expr(*e.receiver, names, assigned, first_assignment);
    for (const ExprPtr& o : e.operands)
      if (o) check_expr(*o, names, assigned, first_assignment);
    std::map<std::string, Loc> seen;
    for (const Kwarg& k : e.kwargs) {
      check_expr(*k.value, names, assigned, first_assignment);
      if (auto it = seen.find(k.name); it != seen.end()) {
        report(k.loc, k.name.size(),
               "duplicate keyword argument '" + k.name + "' (first given at column " + std::to_string(it->second.col) +
                   ")");
      } else {
        seen[k.name] = k.loc;
      }
    }
  }
};

}  // namespace

std::optional<DType> spec_dtype(std::string_view name) {
  for (const SpecDType& t : kSpecDTypes)
    if (t.name == name) return t.dtype;
  return std::nullopt;
}

std::vector<Diagnostic> check_spec(const Spec& spec) { return Checker().run(spec); }

}  // namespace kiln::frontend

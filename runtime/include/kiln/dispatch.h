// What every generated <lib>_<part>_dispatch.cpp shares: a kernel's variants as a table (the CPU
// features its target needs, the buckets its dims must be in, how it runs), the pick of the first
// one whose guard holds, and the explanation of that pick. Only generated code includes this.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/kiln.h"

namespace kiln {
inline namespace runtime_v1 {
namespace detail {

struct Guard {
  int32_t dim;    // index into the call's dims
  bool multiple;  // dim % value == 0; else dim == value
  int64_t value;
};

struct Variant {
  const char* name;
  uint32_t features;  // KILN_CPU_* bits
  const Guard* guards;
  int32_t guard_count;
  Status (*run)(void* const* args, const int64_t* d, Context* ctx);
  size_t (*workspace)(const int64_t* d, int32_t cores);  // a call's bytes when `cores` share it
};

inline bool holds(const Variant& v, const int64_t* d, uint32_t features) {
  if ((v.features & features) != v.features) return false;
  for (int32_t i = 0; i < v.guard_count; ++i) {
    const Guard& g = v.guards[i];
    if (g.multiple ? d[g.dim] % g.value != 0 : d[g.dim] != g.value) return false;
  }
  return true;
}

// the max of two sizes, as the generated size expressions spell it
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// this CPU's features, read once before main (a call made earlier still gets a right answer: the
// portable variants)
inline const uint32_t kCpuFeatures = cpu_features();

// the first variant whose guard holds: the generic one holds for every shape in range
inline const Variant* pick(const Variant* vs, int32_t n, const int64_t* d) {
  for (int32_t i = 0; i < n; ++i)
    if (holds(vs[i], d, kCpuFeatures)) return &vs[i];
  return nullptr;
}

// <kernel>_explain's text: each variant in order, skipped (and why) or taken
inline std::string explain(const char* kernel, const Variant* vs, int32_t n, const int64_t* d,
                           const char* const* dim_names) {
  const uint32_t features = cpu_features();
  std::string s = std::string(kernel) + " on a CPU with " + cpu_features_string() + ":\n";
  for (int32_t i = 0; i < n; ++i) {
    const Variant& v = vs[i];
    s += "  " + std::string(v.name) + ": ";
    if ((v.features & features) != v.features) {
      s += "skipped, this CPU lacks its instructions\n";
      continue;
    }
    std::string why;
    for (int32_t j = 0; j < v.guard_count && why.empty(); ++j) {
      const Guard& g = v.guards[j];
      std::string x = std::string(dim_names[g.dim]) + " = " + std::to_string(d[g.dim]);
      if (g.multiple && d[g.dim] % g.value != 0) why = x + " is not a multiple of " + std::to_string(g.value);
      if (!g.multiple && d[g.dim] != g.value) why = x + " is not " + std::to_string(g.value);
    }
    if (!why.empty()) {
      s += "skipped, " + why + "\n";
      continue;
    }
    return s + "taken\n";
  }
  return s + "no variant holds (a kiln bug: the generic variant covers every shape in range)\n";
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

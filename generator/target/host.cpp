#include "generator/target/host.h"

namespace kiln::target {

std::string cannot_run_here(const Target& t) {
  if (t.arch == "any") return "";
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (t.arch != "x86_64") return "it is an x86_64 machine, the target's kernels are " + t.arch + " code";
  std::string missing;
  for (const std::string& f : t.runtime_features) {
    bool has = f == "avx2"       ? __builtin_cpu_supports("avx2")
               : f == "fma"      ? __builtin_cpu_supports("fma")
               : f == "avx512f"  ? __builtin_cpu_supports("avx512f")
               : f == "avx512bw" ? __builtin_cpu_supports("avx512bw")
               : f == "avx512dq" ? __builtin_cpu_supports("avx512dq")
               : f == "avx512vl" ? __builtin_cpu_supports("avx512vl")
                                 : false;
    if (!has) missing += (missing.empty() ? "" : " ") + f;
  }
  return missing.empty() ? "" : "its CPU lacks " + missing;
#else
  return "kiln runs " + t.arch + " kernels only through a runner on this machine";
#endif
}

}  // namespace kiln::target

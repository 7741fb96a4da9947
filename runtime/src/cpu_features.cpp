// The CPU features generated kernels are compiled for, detected once at run time.
#include "kiln/kiln.h"

#if defined(__linux__) || defined(__APPLE__)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#define KILN_CPU_FEATURES_ENV 1
#else
#define KILN_CPU_FEATURES_ENV 0
#endif

#if (defined(__arm__) || defined(__aarch64__) || defined(__riscv)) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/prctl.h>
#endif

namespace kiln {
inline namespace runtime_v1 {

static uint32_t detect_cpu_features() {
  uint32_t bits = 0;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  // __builtin_cpu_supports checks that the OS saves the AVX and AVX-512 registers (XGETBV) too.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) bits |= KILN_CPU_X86_AVX2;
  // AVX-512 kernels may use AVX2 code as well, so the bit comes only with AVX2's.
  if ((bits & KILN_CPU_X86_AVX2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    bits |= KILN_CPU_X86_AVX512;
  }
#endif
#if defined(__arm__) && defined(__linux__)
  constexpr unsigned long kHwcapNeon = 1ul << 12;  // HWCAP_NEON (asm/hwcap.h)
  if (getauxval(AT_HWCAP) & kHwcapNeon) bits |= KILN_CPU_ARM_NEON;
#endif
#if defined(__aarch64__) && defined(__linux__)
  // SVE (HWCAP_SVE, asm/hwcap.h) with this thread's vector length at 256 bits or more: the
  // aarch64-sve256 kernels use 8 lanes of float under a predicate. PR_SVE_GET_VL (51) is asked
  // only once SVE is there (it fails otherwise); its low 16 bits are the length in bytes.
  constexpr unsigned long kHwcapSve = 1ul << 22;
  constexpr int kPrSveGetVl = 51, kPrSveVlLenMask = 0xffff;
  if (getauxval(AT_HWCAP) & kHwcapSve) {
    const int vl = prctl(kPrSveGetVl, 0, 0, 0, 0);
    if (vl >= 0 && (vl & kPrSveVlLenMask) >= 32) bits |= KILN_CPU_ARM_SVE256;
  }
#endif
#if defined(__riscv) && defined(__linux__)
  // AT_HWCAP has one bit per single-letter extension the kernel enabled, V's at 'V' - 'A'
  // (the kernel sets it only where it saves the vector state)
  if (getauxval(AT_HWCAP) & (1ul << ('V' - 'A'))) bits |= KILN_CPU_RISCV_V;
#endif
  return bits;
}

#if KILN_CPU_FEATURES_ENV
// KILN_CPU_FEATURES="avx2" (names as cpu_features_string() writes them, separated by spaces or
// commas; "none" for none): the features the dispatch may use, of those detected. It only takes
// features away, never adds one the CPU lacks: a way to run and measure each target's variants on
// one machine (ONEDNN_MAX_CPU_ISA does as much for oneDNN). A list with an unknown name is
// reported on stderr and ignored whole. ("asimd", AArch64's own, has no bit: naming it keeps none.)
static uint32_t allowed_by_environment(const char* list) {
  struct Name {
    const char* name;
    uint32_t bit;
  };
  static const Name kNames[] = {{"avx2", KILN_CPU_X86_AVX2},
                                {"avx512", KILN_CPU_X86_AVX512},
                                {"neon", KILN_CPU_ARM_NEON},
                                {"rvv", KILN_CPU_RISCV_V},
                                {"sve256", KILN_CPU_ARM_SVE256},
                                {"asimd", 0},
                                {"none", 0}};
  uint32_t allowed = 0;
  bool named = false;  // an empty list (or separators alone) is no list
  for (const char* p = list; *p != '\0';) {
    const size_t len = std::strcspn(p, " ,");
    if (len > 0) {
      named = true;
      bool known = false;
      for (const Name& n : kNames)
        if (std::strlen(n.name) == len && std::strncmp(n.name, p, len) == 0) {
          allowed |= n.bit;
          known = true;
        }
      if (!known) {
        std::fprintf(stderr,
                     "kiln: KILN_CPU_FEATURES: unknown feature '%.*s': the list is ignored (known: avx2 avx512 "
                     "neon rvv sve256 asimd none)\n",
                     int(len), p);
        return ~0u;
      }
    }
    p += len;
    if (*p != '\0') ++p;
  }
  return named ? allowed : ~0u;
}
#endif

uint32_t cpu_features() {
  static const uint32_t bits = [] {
    uint32_t detected = detect_cpu_features();
#if KILN_CPU_FEATURES_ENV
    if (const char* list = std::getenv("KILN_CPU_FEATURES")) detected &= allowed_by_environment(list);
#endif
    return detected;
  }();
  return bits;
}

std::string cpu_features_string() {
  const uint32_t bits = cpu_features();
  std::string s;
  if (bits & KILN_CPU_X86_AVX2) s += "avx2";
  if (bits & KILN_CPU_X86_AVX512) s += s.empty() ? "avx512" : " avx512";
  if (bits & KILN_CPU_ARM_NEON) s += s.empty() ? "neon" : " neon";
  if (bits & KILN_CPU_RISCV_V) s += s.empty() ? "rvv" : " rvv";
  if (bits & KILN_CPU_ARM_SVE256) s += s.empty() ? "sve256" : " sve256";
#if defined(__aarch64__)
  s += s.empty() ? "asimd" : " asimd";  // part of AArch64: no bit, nothing to check
#endif
  return s.empty() ? "none" : s;
}

}  // namespace runtime_v1
}  // namespace kiln

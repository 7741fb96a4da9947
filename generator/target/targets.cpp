#include "generator/target/target.h"

#include <algorithm>
#include <cstdio>

namespace kiln::target {

// KILN_CPU_X86_AVX2, KILN_CPU_X86_AVX512, KILN_CPU_ARM_NEON, KILN_CPU_RISCV_V and KILN_CPU_ARM_SVE256
// (kiln/kernel_abi.h): this file includes nothing of kiln's so that a build system can compile it alone;
// test_targets.cpp checks the values agree.
constexpr uint32_t kX86Avx2 = 1u << 0, kX86Avx512 = 1u << 1, kArmNeon = 1u << 2, kRiscvV = 1u << 3,
                   kArmSve256 = 1u << 4;

const std::vector<Target>& targets() {
  static const std::vector<Target> all = [] {
    std::vector<Target> t(12);
    Target& avx512 = t[0];
    avx512.name = "x86_64-avx512", avx512.symbol = "x86_64_avx512", avx512.arch = "x86_64";
    avx512.triple = "x86_64-unknown-linux-gnu", avx512.cpu = "skylake-avx512";
    avx512.features = "+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx2,+fma";
    avx512.vector_bytes = 64, avx512.vector_registers = 32, avx512.fma_units = 2;
    avx512.l1d_bytes = 48 << 10, avx512.l2_bytes = 2 << 20;
    avx512.output = Output::Object;
    avx512.c_flags = {"-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx2", "-mfma"};
    avx512.arch_guard = "defined(__x86_64__)";
    avx512.runtime_bits = "KILN_CPU_X86_AVX512", avx512.runtime_mask = kX86Avx512;
    avx512.runtime_features = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx2", "fma"};

    Target& avx2 = t[1];
    avx2.name = "x86_64-avx2", avx2.symbol = "x86_64_avx2", avx2.arch = "x86_64";
    avx2.triple = "x86_64-unknown-linux-gnu", avx2.cpu = "haswell", avx2.features = "+avx2,+fma";
    avx2.vector_bytes = 32, avx2.vector_registers = 16, avx2.fma_units = 2;
    avx2.l1d_bytes = 32 << 10, avx2.l2_bytes = 256 << 10;
    avx2.output = Output::Object;
    avx2.c_flags = {"-mavx2", "-mfma"};
    avx2.arch_guard = "defined(__x86_64__)";
    avx2.runtime_bits = "KILN_CPU_X86_AVX2", avx2.runtime_mask = kX86Avx2;
    avx2.runtime_features = {"avx2", "fma"};

    // AArch64 Linux with SVE whose vectors hold 256 bits or more (Neoverse V1, A64FX): kernels use
    // 32-byte vectors, which LLVM writes as SVE instructions under a predicate of 8 lanes
    // (vscale_range: at least 256 bits, render/llvm.cpp), so they run on any longer vector too.
    // SVE of 128 bits (Neoverse N2, V2) gives such fixed-width code nothing over NEON: those take
    // aarch64-neon. The runtime checks HWCAP_SVE and the thread's vector length (PR_SVE_GET_VL).
    Target& sve = t[2];
    sve.name = "aarch64-sve256", sve.symbol = "aarch64_sve256", sve.arch = "aarch64";
    sve.triple = "aarch64-unknown-linux-gnu", sve.cpu = "generic", sve.features = "+neon,+fp-armv8,+sve";
    sve.vector_bytes = 32, sve.vector_registers = 32, sve.fma_units = 2;
    sve.l1d_bytes = 64 << 10, sve.l2_bytes = 1 << 20;
    sve.output = Output::Object;
    sve.c_flags = {"-march=armv8.2-a+sve"};
    sve.arch_guard = "defined(__aarch64__)";
    sve.runtime_bits = "KILN_CPU_ARM_SVE256", sve.runtime_mask = kArmSve256;
    sve.runtime_features = {"sve", "vl>=256"};

    // AArch64 Linux: Advanced SIMD (NEON) is part of the architecture, so the runtime checks
    // nothing; 32 registers of 16 bytes, two FMA pipes on the Cortex-A7x and Neoverse cores
    Target& a64 = t[3];
    a64.name = "aarch64-neon", a64.symbol = "aarch64_neon", a64.arch = "aarch64";
    a64.triple = "aarch64-unknown-linux-gnu", a64.cpu = "generic", a64.features = "+neon,+fp-armv8";
    a64.vector_bytes = 16, a64.vector_registers = 32, a64.fma_units = 2;
    a64.l1d_bytes = 64 << 10, a64.l2_bytes = 512 << 10;
    a64.output = Output::Object;
    a64.arch_guard = "defined(__aarch64__)";
    a64.runtime_bits = "0";
    a64.runtime_features = {"asimd"};

    // 32-bit ARMv7-A Linux, hard float: NEON is optional there (HWCAP_NEON); 16 q registers, no
    // fused multiply-add before VFPv4
    Target& a32 = t[4];
    a32.name = "armv7-neon", a32.symbol = "armv7_neon", a32.arch = "armv7";
    a32.triple = "armv7a-unknown-linux-gnueabihf", a32.cpu = "generic", a32.features = "+neon,+vfp3,+d32";
    a32.vector_bytes = 16, a32.vector_registers = 16, a32.fma_units = 1;
    a32.l1d_bytes = 32 << 10, a32.l2_bytes = 512 << 10;
    a32.output = Output::Object;
    a32.c_flags = {"-mfpu=neon"};
    a32.arch_guard = "defined(__arm__) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'A'";
    a32.runtime_bits = "KILN_CPU_ARM_NEON", a32.runtime_mask = kArmNeon;
    a32.runtime_features = {"neon"};

    // RV64GCV Linux: the vector extension (RVV 1.0) is optional (the V bit of AT_HWCAP); kernels
    // use fixed 16-byte vectors, which every V implementation holds (VLEN >= 128); the lp64d ABI
    // of Debian's riscv64 (doubles in float registers)
    Target& rv = t[5];
    rv.name = "riscv64-rvv", rv.symbol = "riscv64_rvv", rv.arch = "riscv64";
    rv.triple = "riscv64-unknown-linux-gnu", rv.cpu = "generic-rv64", rv.features = "+64bit,+m,+a,+f,+d,+c,+v";
    rv.abi = "lp64d";
    rv.vector_bytes = 16, rv.vector_registers = 32, rv.fma_units = 1;
    rv.l1d_bytes = 32 << 10, rv.l2_bytes = 512 << 10;
    rv.output = Output::Object;
    rv.c_flags = {"-march=rv64gcv"};
    rv.arch_guard = "defined(__riscv) && __riscv_xlen == 64";
    rv.runtime_bits = "KILN_CPU_RISCV_V", rv.runtime_mask = kRiscvV;
    rv.runtime_features = {"v"};

    // WebAssembly (WASI or the browser) with 128-bit SIMD: an engine validates the whole module, so
    // nothing can be checked at run time (a module with SIMD needs an engine with it: Node 16+,
    // every current browser); no threads
    Target& wasm = t[6];
    wasm.name = "wasm32-simd128", wasm.symbol = "wasm32_simd128", wasm.arch = "wasm32";
    wasm.triple = "wasm32-unknown-wasi", wasm.cpu = "generic", wasm.features = "+simd128";
    wasm.vector_bytes = 16, wasm.vector_registers = 16, wasm.fma_units = 1;
    wasm.threads = false;
    wasm.output = Output::Object;
    wasm.c_flags = {"-msimd128"};
    wasm.arch_guard = "defined(__wasm32__)";
    wasm.runtime_bits = "0";
    wasm.runtime_features = {"simd128"};

    // Cortex-M4 with its single-precision FPU (FPv4-SP-D16), hard-float ABI, bare metal: no
    // vector unit for floats (4-byte "vectors": scalars), no threads, nothing to detect at run time,
    // and no math library: kernels call nothing but the FPU's square root (float64 math is the
    // compiler runtime's soft float)
    Target& m4 = t[7];
    m4.name = "cortex-m4", m4.symbol = "cortex_m4", m4.arch = "armv7em";
    m4.triple = "thumbv7em-none-unknown-eabihf", m4.cpu = "cortex-m4", m4.features = "+vfp4d16sp,+thumb-mode";
    m4.vector_bytes = 4, m4.vector_registers = 16, m4.fma_units = 1;
    m4.l1d_bytes = 16 << 10, m4.l2_bytes = 16 << 10;  // no caches to speak of: tile for the register file
    m4.threads = false, m4.freestanding = true;
    m4.math_ops = {"sqrt"};
    m4.output = Output::Object;
    m4.c_flags = {"-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"};
    m4.arch_guard = "defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)";
    m4.runtime_bits = "0";

    // OpenCL C 1.2 for any OpenCL device (mobile GPUs, PoCL on a CPU): the limits are what every
    // device offers (work groups of 256 items, 32 KiB of local memory: OpenCL's minimum for a full
    // profile)
    // a GPU target: its grid's limits (global sizes as tinygrad's CUDA renderer bounds them, so
    // ids fit in int32 and the second and third dims in what older drivers take), 16-byte
    // vectors, no threads of kiln's own, nothing to detect on the CPU
    auto gpu = [](Target& g, Output output, int64_t local_xy, int64_t local_bytes) {
      g.vector_bytes = 16, g.vector_registers = 16, g.fma_units = 1;
      g.threads = false;
      g.output = output;
      g.runtime_bits = "0";
      g.gpu = true;
      g.global_max = {2147483647, 65535, 65535};
      g.local_max = {local_xy, local_xy, 64};
      g.local_max_total = local_xy;
      g.local_bytes = local_bytes;
    };
    Target& ocl = t[8];
    ocl.name = "opencl", ocl.symbol = "opencl", ocl.arch = "opencl";
    gpu(ocl, Output::OpenCL, 256, 32 << 10);

    // CUDA C++ for NVIDIA GPUs of compute capability 9.0 (Hopper) and 8.0 (Ampere) and newer: a
    // block holds up to 1024 threads (z up to 64) and 48 KiB of shared memory without opting in
    for (auto [i, sm] : {std::pair{9, 90}, {10, 80}}) {
      Target& cu = t[size_t(i)];
      cu.name = "cuda-sm" + std::to_string(sm), cu.symbol = "cuda_sm" + std::to_string(sm), cu.arch = "cuda";
      cu.cuda_arch = "sm_" + std::to_string(sm);
      gpu(cu, Output::Cuda, 1024, 48 << 10);
      cu.tensor_cores = {"m16n8k16 f16 f32", "m16n8k16 bf16 f32"};  // mma.sync since sm_80
    }

    // portable C: the consumer's compiler picks the machine; 16-byte vectors exist (or are
    // lowered) everywhere
    Target& cpu = t[11];
    cpu.name = "cpu", cpu.symbol = "cpu", cpu.arch = "any";
    cpu.vector_bytes = 16, cpu.vector_registers = 16, cpu.fma_units = 1;
    cpu.runtime_bits = "0";
    return t;
  }();
  return all;
}

const std::vector<const Target*>& cpu_targets() {
  static const std::vector<const Target*> cpu = [] {
    std::vector<const Target*> v;
    for (const Target& t : targets())
      if (!t.gpu) v.push_back(&t);
    return v;
  }();
  return cpu;
}

const Target* find(std::string_view name) {
  for (const Target& t : targets())
    if (t.name == name) return &t;
  return nullptr;
}

std::string known_names() {
  std::vector<std::string_view> names;
  for (const Target& t : targets()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

namespace {

std::string_view output_name(Output o) {
  switch (o) {
    case Output::CSource:
      return "c";
    case Output::Object:
      return "object";
    case Output::OpenCL:
      return "opencl";
    case Output::Cuda:
      return "cuda";
  }
  return "c";
}

std::string_view extension(Output o) {
  switch (o) {
    case Output::CSource:
      return ".c";
    case Output::Object:
      return ".o";
    case Output::OpenCL:
      return ".cl";
    case Output::Cuda:
      return ".cu";
  }
  return ".c";
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (int64_t x : v) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
  return s + "]";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

// a JSON string: the table holds printable ASCII only, so escaping quotes and backslashes suffices
std::string quoted(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::string_view x : v) s += (s.size() > 1 ? ", " : "") + quoted(x);
  return s + "]";
}

}  // namespace

std::string table_text() {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line, "%-15s %-7s %-7s %-6s %-5s %-9s %s\n", "target", "arch", "output", "vector", "regs",
                "threads", "runtime features");
  s += line;
  for (const Target& t : targets()) {
    std::string feats = t.runtime_features.empty() ? "(none)" : join(t.runtime_features, " ");
    std::snprintf(line, sizeof line, "%-15.*s %-7.*s %-7.*s %-6d %-5d %-9s %s\n", int(t.name.size()), t.name.data(),
                  int(t.arch.size()), t.arch.data(), int(output_name(t.output).size()), output_name(t.output).data(),
                  t.vector_bytes, t.vector_registers, t.threads ? "yes" : "no", feats.c_str());
    s += line;
  }
  return s;
}

std::string table_json() {
  std::string s = "[\n";
  bool first = true;
  for (const Target& t : targets()) {
    if (!first) s += ",\n";
    first = false;
    s += "  {\"name\": " + quoted(t.name) + ", \"symbol\": " + quoted(t.symbol) + ", \"arch\": " + quoted(t.arch);
    s += ", \"triple\": " + quoted(t.triple) + ", \"cpu\": " + quoted(t.cpu) + ", \"features\": " + quoted(t.features);
    s += ", \"abi\": " + quoted(t.abi);
    s += ", \"vector_bytes\": " + std::to_string(t.vector_bytes);
    s += ", \"vector_registers\": " + std::to_string(t.vector_registers);
    s += ", \"fma_units\": " + std::to_string(t.fma_units);
    s += ", \"l1d_bytes\": " + std::to_string(t.l1d_bytes) + ", \"l2_bytes\": " + std::to_string(t.l2_bytes);
    s += std::string(", \"threads\": ") + (t.threads ? "true" : "false");
    s += std::string(", \"freestanding\": ") + (t.freestanding ? "true" : "false");
    s += ", \"math_ops\": " + quoted_list(t.math_ops);
    s += ", \"output\": " + quoted(output_name(t.output));
    s += ", \"extension\": " + quoted(extension(t.output));
    s += ", \"c_flags\": " + quoted_list(t.c_flags) + ", \"arch_guard\": " + quoted(t.arch_guard);
    s += ", \"runtime_bits\": " + quoted(t.runtime_bits) + ", \"runtime_mask\": " + std::to_string(t.runtime_mask);
    s += ", \"runtime_features\": " + quoted_list(t.runtime_features);
    s += std::string(", \"gpu\": ") + (t.gpu ? "true" : "false");
    s += ", \"global_max\": " + int_list(t.global_max) + ", \"local_max\": " + int_list(t.local_max);
    s += ", \"local_max_total\": " + std::to_string(t.local_max_total);
    s += ", \"local_bytes\": " + std::to_string(t.local_bytes) + ", \"cuda_arch\": " + quoted(t.cuda_arch);
    s += ", \"tensor_cores\": " + quoted_list(t.tensor_cores) + "}";
  }
  return s + "\n]\n";
}

}  // namespace kiln::target

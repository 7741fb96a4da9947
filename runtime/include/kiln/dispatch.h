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

// One call's work on ctx's GPU, as a generated device variant (below) spells it: the call's
// buffers by number (uploaded from the host, or allocated), the kernels of `program` launched in
// order, the outputs downloaded. `program` is what the library embeds, as pieces ending in a
// null: the OpenCL C in pieces of a few KiB (no compiler's limit on a string literal refuses
// them), or a CUDA fatbin as one piece; it is built or loaded for the device at its first call
// through ctx and kept there. The first failure is kept and every step after it does nothing;
// finish() waits for the device and returns it. Calls through one Context take turns on its
// device. A buffer of SIZE_MAX bytes (a count that overflowed) is refused.
class DeviceCall {
 public:
  DeviceCall(const char* kernel, Context* ctx, const char* const* program, int32_t buffers) noexcept;
  ~DeviceCall();  // lets go of the call's device buffers
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  void upload(int32_t buffer, const void* host, size_t bytes) noexcept;
  void allocate(int32_t buffer, size_t bytes) noexcept;
  // argument `arg`'s view of a DeviceBuffer (`handle`) as the buffer, in place: refused where it is
  // another context's buffer or smaller than `bytes`
  void bind(int32_t buffer, const char* arg, void* handle, size_t bytes) noexcept;
  // `function` over global[0] x global[1] x global[2] work items (none where one is 0), taking the
  // buffers numbered `buffers` (its slots in order), then `nvars` dims as longs; with `local`, over
  // that many work groups of local[0] x local[1] x local[2] items each (a kernel with local memory)
  void launch(const char* function, const int32_t* buffers, int32_t count, const int64_t* vars, int32_t nvars,
              const int64_t* global, const int64_t* local = nullptr) noexcept;
  void download(int32_t buffer, void* host, size_t bytes) noexcept;
  Status finish() noexcept;

  struct Impl;  // the runtime's

 private:
  void make(int32_t buffer, const void* host, size_t bytes) noexcept;

  const char* kernel_;
  Context* ctx_ = nullptr;
  Impl* impl_ = nullptr;
  Status status_;
};

// A GPU variant: the kind of device it runs on (kiln::Device::Kind) and, for CUDA, the compute
// capability its kernels need (major * 10 + minor; 0 for none), the buckets its dims must be in,
// and how it runs there (through a DeviceCall)
struct DeviceVariant {
  const char* name;
  int32_t kind;
  int32_t arch;
  const Guard* guards;
  int32_t guard_count;
  Status (*run)(void* const* args, const int32_t* memory, const int64_t* d, Context* ctx);  // memory: per argument
};

inline bool guards_hold(const Guard* guards, int32_t n, const int64_t* d) {
  for (int32_t i = 0; i < n; ++i) {
    const Guard& g = guards[i];
    if (g.multiple ? d[g.dim] % g.value != 0 : d[g.dim] != g.value) return false;
  }
  return true;
}

inline bool holds(const Variant& v, const int64_t* d, uint32_t features) {
  return (v.features & features) == v.features && guards_hold(v.guards, v.guard_count, d);
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

// why a guard fails at d ("M = 3 is not 1"), or "" where it holds
inline std::string guard_failure(const Guard* guards, int32_t n, const int64_t* d, const char* const* dim_names) {
  for (int32_t j = 0; j < n; ++j) {
    const Guard& g = guards[j];
    std::string x = std::string(dim_names[g.dim]) + " = " + std::to_string(d[g.dim]);
    if (g.multiple && d[g.dim] % g.value != 0) return x + " is not a multiple of " + std::to_string(g.value);
    if (!g.multiple && d[g.dim] != g.value) return x + " is not " + std::to_string(g.value);
  }
  return "";
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
    std::string why = guard_failure(v.guards, v.guard_count, d, dim_names);
    if (!why.empty()) {
      s += "skipped, " + why + "\n";
      continue;
    }
    return s + "taken\n";
  }
  return s + "no variant holds (a kiln bug: the generic variant covers every shape in range)\n";
}

// the compute capability of ctx's CUDA device (major * 10 + minor), 0 for another device
int32_t device_arch(const Context* ctx) noexcept;

// whether variant v can run on ctx's device: its kind, and (CUDA) a capability at least v's
inline bool runs_on(const DeviceVariant& v, const Context* ctx, int32_t arch) {
  return v.kind == static_cast<int32_t>(ctx->device().kind()) && v.arch <= arch;
}

// A call through a GPU Context (ctx's device is not the CPU): refused as device_check() says where
// its device cannot be reached or the library has no variant for it (`built_for`: the library's
// GPU targets, "" for none); else the first for it whose guard holds runs.
inline Status device_run(const char* kernel, const DeviceVariant* vs, int32_t n, const char* built_for,
                         void* const* args, const int32_t* memory, const int64_t* d, Context* ctx) {
  if (ctx->status().ok()) {
    const int32_t arch = device_arch(ctx);
    for (int32_t i = 0; i < n; ++i)
      if (runs_on(vs[i], ctx, arch) && guards_hold(vs[i].guards, vs[i].guard_count, d))
        return vs[i].run(args, memory, d, ctx);
  }
  return device_check(kernel, ctx, built_for);
}

// <kernel>_explain's text for a call through a GPU Context: its device's variants in order, each
// skipped (and why) or taken; "error: ..." as device_run() would refuse the call
inline std::string device_explain(const char* kernel, const DeviceVariant* vs, int32_t n, const char* built_for,
                                  const int64_t* d, const char* const* dim_names, const Context* ctx) {
  std::string s = std::string(kernel) + " on " + ctx->device().name() + " (" + ctx->device_name() + "):\n";
  bool any = false;
  const int32_t arch = ctx->status().ok() ? device_arch(ctx) : 0;
  for (int32_t i = 0; i < n && ctx->status().ok(); ++i) {
    if (vs[i].kind != static_cast<int32_t>(ctx->device().kind())) continue;
    if (!runs_on(vs[i], ctx, arch)) {
      s += "  " + std::string(vs[i].name) + ": skipped, it needs compute capability " +
           std::to_string(vs[i].arch / 10) + "." + std::to_string(vs[i].arch % 10) + " (this device has " +
           std::to_string(arch / 10) + "." + std::to_string(arch % 10) + ")\n";
      continue;
    }
    any = true;
    std::string why = guard_failure(vs[i].guards, vs[i].guard_count, d, dim_names);
    s += "  " + std::string(vs[i].name) + ": " + (why.empty() ? "taken\n" : "skipped, " + why + "\n");
    if (why.empty()) return s;
  }
  if (!any) return "error: " + std::string(device_check(kernel, ctx, built_for).message());
  return s + "  no variant holds (a kiln bug: the generic variant covers every shape in range)\n";
}

}  // namespace detail
}  // namespace runtime_v1
}  // namespace kiln

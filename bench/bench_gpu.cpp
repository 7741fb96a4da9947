// kiln's GPU variants against the device's own best: the entry points of kiln_bench_gpu, which
// kiln_add_library() builds from bench/gpu.kiln (TARGETS cpu opencl, and cuda-sm80 cuda-sm90 where
// nvcc is here), called through a context on each GPU found (kiln::Device::opencl(),
// kiln::Device::cuda(0)) with device-resident buffers (kiln::DeviceBuffer), so that the figures
// are the kernels' and not the host link's. Each iteration times one kiln call (which waits for
// the device) and one baseline call on the same device, interleaved.
//   Gpu/<device>/sgemm/...      GFLOP/s; with cuBLAS (libcublas.so from the CUDA toolkit, found at
//                               run time) as base_GFLOP/s and x_cublas = cuBLAS time / kiln time
//   Gpu/cuda/hgemm/...          float16 inputs, float sums (the tensor cores): GFLOP/s, with cuBLAS's
//                               GemmEx of the same types as the baseline
//   Gpu/<device>/bias_relu/...  relu(a * b + c): GB/s (16 bytes an element: three read, one
//   Gpu/<device>/softmax/...    written; softmax 8: its row read once, written once) against the
//                               device's own copy of as many bytes (clEnqueueCopyBuffer,
//                               cuMemcpyDtoD): copy_GB/s and x_copy = kiln GB/s / copy GB/s
// Devices whose context does not open (no driver, no platform) are not registered: one line on
// stderr says why. Each row checks once that the device's result agrees with the same library's
// CPU variant. Run: kiln_bench --benchmark_filter=Gpu
#include "bench/bench_gpu.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/interleaved.h"
#include "bench/random.h"
#include "kiln_bench_gpu.h"

namespace kiln::bench {
namespace {

// ---------------------------------------------------------------- the devices' own calls

// A copy between two buffers of the OpenCL device a kiln::DeviceBuffer lives on, on a queue of its
// own in the runtime's context (found from the buffer), through the library the runtime loaded.
class OpenclCopy {
 public:
  bool open(const kiln::DeviceBuffer& any) {
    const char* path = std::getenv("KILN_OPENCL_LIBRARY");
    lib_ = dlopen(path != nullptr ? path : "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr || !sym(get_mem_info_, "clGetMemObjectInfo") || !sym(get_context_info_, "clGetContextInfo") ||
        !sym(create_queue_, "clCreateCommandQueue") || !sym(copy_, "clEnqueueCopyBuffer") ||
        !sym(finish_, "clFinish") || !sym(release_queue_, "clReleaseCommandQueue"))
      return false;
    void* context = nullptr;
    void* device = nullptr;
    constexpr uint32_t kMemContext = 0x1106, kContextDevices = 0x1081;  // CL_MEM_CONTEXT, CL_CONTEXT_DEVICES
    if (get_mem_info_(any.handle(), kMemContext, sizeof context, &context, nullptr) != 0 ||
        get_context_info_(context, kContextDevices, sizeof device, &device, nullptr) != 0)
      return false;
    int32_t err = 0;
    queue_ = create_queue_(context, device, 0, &err);
    return queue_ != nullptr && err == 0;
  }
  ~OpenclCopy() {
    if (queue_ != nullptr) release_queue_(queue_);
    if (lib_ != nullptr) dlclose(lib_);
  }
  bool operator()(const kiln::DeviceBuffer& from, const kiln::DeviceBuffer& to, size_t bytes) {
    return copy_(queue_, from.handle(), to.handle(), 0, 0, bytes, 0, nullptr, nullptr) == 0 && finish_(queue_) == 0;
  }

 private:
  template <class F> bool sym(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib_, name));
    return f != nullptr;
  }
  void* lib_ = nullptr;
  void* queue_ = nullptr;
  int32_t (*get_mem_info_)(void*, uint32_t, size_t, void*, size_t*) = nullptr;
  int32_t (*get_context_info_)(void*, uint32_t, size_t, void*, size_t*) = nullptr;
  void* (*create_queue_)(void*, void*, uint64_t, int32_t*) = nullptr;
  int32_t (*copy_)(void*, void*, void*, size_t, size_t, size_t, uint32_t, const void*, void*) = nullptr;
  int32_t (*finish_)(void*) = nullptr;
  int32_t (*release_queue_)(void*) = nullptr;
};

// The CUDA driver's copy and cuBLAS's sgemm and GemmEx, in the primary context of device 0 (the one the kiln
// runtime's calls run in), made current on the calling thread for each call.
class CudaCalls {
 public:
  bool open() {
    const char* path = std::getenv("KILN_CUDA_LIBRARY");
    cuda_ = dlopen(path != nullptr ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int device = 0;
    if (cuda_ == nullptr || !sym(cuda_, init_, "cuInit") || !sym(cuda_, device_get_, "cuDeviceGet") ||
        !sym(cuda_, retain_, "cuDevicePrimaryCtxRetain") || !sym(cuda_, release_, "cuDevicePrimaryCtxRelease_v2") ||
        !sym(cuda_, push_, "cuCtxPushCurrent_v2") || !sym(cuda_, pop_, "cuCtxPopCurrent_v2") ||
        !sym(cuda_, copy_, "cuMemcpyDtoD_v2") || !sym(cuda_, sync_, "cuCtxSynchronize") || init_(0) != 0 ||
        device_get_(&device, 0) != 0 || retain_(&context_, device) != 0)
      return false;
    device_ = device;
    // cuBLAS where the toolkit's is found: on the library path, or where the toolkit installs it
    for (const char* name : {"libcublas.so.13", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13"})
      if ((cublas_ = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (cublas_ != nullptr && sym(cublas_, blas_create_, "cublasCreate_v2") &&
        sym(cublas_, blas_destroy_, "cublasDestroy_v2") && sym(cublas_, sgemm_, "cublasSgemm_v2") &&
        sym(cublas_, gemm_ex_, "cublasGemmEx") && push()) {
      if (blas_create_(&handle_) != 0) handle_ = nullptr;
      pop();
    }
    return true;
  }
  ~CudaCalls() {
    if (handle_ != nullptr && push()) {
      blas_destroy_(handle_);
      pop();
    }
    if (context_ != nullptr) release_(device_);
    if (cublas_ != nullptr) dlclose(cublas_);
    if (cuda_ != nullptr) dlclose(cuda_);
  }
  bool has_cublas() const { return handle_ != nullptr; }
  bool copy(const kiln::DeviceBuffer& from, const kiln::DeviceBuffer& to, size_t bytes) {
    if (!push()) return false;
    const bool ok = copy_(address(to), address(from), bytes) == 0 && sync_() == 0;
    pop();
    return ok;
  }
  // row-major c[m, n] = a[m, k] b[k, n]: column-major c^T = b^T a^T
  bool sgemm(const kiln::DeviceBuffer& a, const kiln::DeviceBuffer& b, const kiln::DeviceBuffer& c, int m, int n,
             int k) {
    if (!push()) return false;
    const float one = 1.0f, zero = 0.0f;
    constexpr int kNoTranspose = 0;  // CUBLAS_OP_N
    const bool ok =
        sgemm_(handle_, kNoTranspose, kNoTranspose, n, m, k, &one, reinterpret_cast<const float*>(address(b)), n,
               reinterpret_cast<const float*>(address(a)), k, &zero, reinterpret_cast<float*>(address(c)), n) == 0 &&
        sync_() == 0;
    pop();
    return ok;
  }
  // the same with float16 a and b and a float c, summed in float (cublasGemmEx: CUDA_R_16F = 2,
  // CUDA_R_32F = 0, CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1, as the toolkit's headers have them)
  bool hgemm(const kiln::DeviceBuffer& a, const kiln::DeviceBuffer& b, const kiln::DeviceBuffer& c, int m, int n,
             int k) {
    if (!push()) return false;
    const float one = 1.0f, zero = 0.0f;
    constexpr int kNoTranspose = 0, kHalf = 2, kFloat = 0, kComputeFloat = 68, kDefaultAlgo = -1;
    const bool ok = gemm_ex_(handle_, kNoTranspose, kNoTranspose, n, m, k, &one, address_of(b), kHalf, n, address_of(a),
                             kHalf, k, &zero, address_of(c), kFloat, n, kComputeFloat, kDefaultAlgo) == 0 &&
                    sync_() == 0;
    pop();
    return ok;
  }

 private:
  static void* address_of(const kiln::DeviceBuffer& d) { return d.handle(); }
  template <class F> static bool sym(void* lib, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    return f != nullptr;
  }
  static uint64_t address(const kiln::DeviceBuffer& d) { return reinterpret_cast<uintptr_t>(d.handle()); }
  bool push() { return push_(context_) == 0; }
  void pop() {
    void* popped = nullptr;
    pop_(&popped);
  }
  void* cuda_ = nullptr;
  void* cublas_ = nullptr;
  void* context_ = nullptr;
  void* handle_ = nullptr;
  int device_ = 0;
  int (*init_)(unsigned) = nullptr;
  int (*device_get_)(int*, int) = nullptr;
  int (*retain_)(void**, int) = nullptr;
  int (*release_)(int) = nullptr;
  int (*push_)(void*) = nullptr;
  int (*pop_)(void**) = nullptr;
  int (*copy_)(uint64_t, uint64_t, size_t) = nullptr;
  int (*sync_)() = nullptr;
  int (*blas_create_)(void**) = nullptr;
  int (*blas_destroy_)(void*) = nullptr;
  int (*sgemm_)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
                float*, int) = nullptr;
  int (*gemm_ex_)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                  const void*, void*, int, int, int, int) = nullptr;
};

// One GPU the benchmarks run on: its context, and its own copy (and sgemm, for CUDA).
struct Gpu {
  std::string name;  // "opencl", "cuda"
  std::unique_ptr<kiln::Context> ctx;
  std::unique_ptr<OpenclCopy> opencl;
  std::unique_ptr<CudaCalls> cuda;

  bool copy(const kiln::DeviceBuffer& from, const kiln::DeviceBuffer& to, size_t bytes) const {
    return opencl != nullptr ? (*opencl)(from, to, bytes) : cuda->copy(from, to, bytes);
  }
};

std::vector<std::unique_ptr<Gpu>>& gpus() {
  static std::vector<std::unique_ptr<Gpu>> all;
  return all;
}

// ---------------------------------------------------------------- the rows

// A device buffer holding `host`, or one of `floats` floats; the status of whichever failed
kiln::DeviceBuffer on_device(kiln::Context& ctx, size_t floats, const std::vector<float>* host, kiln::Status* failed) {
  kiln::DeviceBuffer d(ctx, floats * sizeof(float));
  kiln::Status s = d.status();
  if (s.ok() && host != nullptr) s = d.upload(host->data(), floats * sizeof(float));
  if (!s.ok() && failed->ok()) *failed = s;
  return d;
}

// Checks the device's output (in `out`) against `cpu_call`'s, then times `kiln_call` and
// `base_call` one after the other per iteration. `work` is the flops or bytes of one call; the
// counters name the baseline `base` ("cublas", "copy").
template <class KilnCall, class CpuCall, class BaseCall>
void side_by_side(benchmark::State& state, KilnCall kiln_call, CpuCall cpu_call, kiln::DeviceBuffer& out,
                  size_t out_floats, const char* base, BaseCall base_call, double work, bool flops) {
  std::vector<float> got(out_floats, std::nanf("")), want(out_floats, std::nanf(""));
  kiln::Status s = out.upload(got.data(), out_floats * sizeof(float));  // poisoned: what kiln skips shows
  if (s.ok()) s = kiln_call();                                          // warm: the program built, the first launch
  if (s.ok()) s = out.download(got.data(), out_floats * sizeof(float));
  kiln::Context cpu(int(std::max(1u, std::thread::hardware_concurrency())));
  if (s.ok()) s = cpu_call(&cpu, want.data());
  if (!s.ok()) return state.SkipWithError(s.message().c_str());
  if (double d = difference(got, want); !(d <= 1e-3))
    return state.SkipWithError(("the device's result and the CPU's differ by " + std::to_string(d)).c_str());
  if (base != nullptr && !base_call()) return state.SkipWithError((std::string(base) + " failed").c_str());
  const std::string unit = flops ? "GFLOP/s" : "GB/s";
  interleave(state, kiln_call, base_call, work, flops, base ? std::string(base) + "_" + unit : "",
             std::string("x_") + (base ? base : ""));
}

// c[m, n] = a[m, k] @ b[k, n] (a, b of T, c float) through the library's `entry` on the device,
// checked against the same entry's CPU variant, timed against `base` (cuBLAS's) where cuBLAS is here
template <class T, class Entry, class Base>
void gemm_row(benchmark::State& state, const Gpu* gpu, const std::vector<T>& a, const std::vector<T>& b, Entry entry,
              Base base) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  kiln::Status failed;
  kiln::DeviceBuffer da(*gpu->ctx, a.size() * sizeof(T)), db(*gpu->ctx, b.size() * sizeof(T));
  for (auto [d, h] : {std::pair{&da, &a}, {&db, &b}}) {
    kiln::Status s = d->status();
    if (s.ok()) s = d->upload(h->data(), h->size() * sizeof(T));
    if (!s.ok() && failed.ok()) failed = s;
  }
  kiln::DeviceBuffer dc = on_device(*gpu->ctx, size_t(m * n), nullptr, &failed),
                     dw = on_device(*gpu->ctx, size_t(m * n), nullptr, &failed);
  if (!failed.ok()) return state.SkipWithError(failed.message().c_str());
  const bool cublas = gpu->cuda != nullptr && gpu->cuda->has_cublas();
  side_by_side(
      state,
      [&] {
        return entry(da.view<T>({m, k}), db.view<T>({k, n}), dc.view<float>({m, n}), gpu->ctx.get());
      },
      [&](kiln::Context* cpu, float* want) {
        return entry(kiln::TensorView(a.data(), {m, k}), kiln::TensorView(b.data(), {k, n}),
                     kiln::TensorView(want, {m, n}), cpu);
      },
      dc, size_t(m * n), cublas ? "cublas" : nullptr, [&] { return base(da, db, dw, int(m), int(n), int(k)); },
      2.0 * double(m) * double(n) * double(k), true);
}

void sgemm(benchmark::State& state, const Gpu* gpu) {
  gemm_row(
      state, gpu, random_floats(size_t(state.range(0) * state.range(2)), 1),
      random_floats(size_t(state.range(2) * state.range(1)), 2),
      [](auto a, auto b, auto c, kiln::Context* ctx) { return kiln_bench_gpu::sgemm(a, b, c, ctx); },
      [&](auto&&... args) { return gpu->cuda->sgemm(args...); });
}

// float16 bits of random floats
std::vector<kiln::float16> halves(const std::vector<float>& v) {
  std::vector<kiln::float16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const _Float16 x = static_cast<_Float16>(v[i]);
    std::memcpy(&h[i].bits, &x, sizeof x);
  }
  return h;
}

void hgemm(benchmark::State& state, const Gpu* gpu) {
  gemm_row(
      state, gpu, halves(random_floats(size_t(state.range(0) * state.range(2)), 7)),
      halves(random_floats(size_t(state.range(2) * state.range(1)), 8)),
      [](auto a, auto b, auto c, kiln::Context* ctx) { return kiln_bench_gpu::hgemm(a, b, c, ctx); },
      [&](auto&&... args) { return gpu->cuda->hgemm(args...); });
}

void bias_relu(benchmark::State& state, const Gpu* gpu) {
  const int64_t n = state.range(0);
  std::vector<float> a = random_floats(size_t(n), 3), b = random_floats(size_t(n), 4), c = random_floats(size_t(n), 5);
  kiln::Status failed;
  kiln::DeviceBuffer da = on_device(*gpu->ctx, size_t(n), &a, &failed),
                     db = on_device(*gpu->ctx, size_t(n), &b, &failed),
                     dc = on_device(*gpu->ctx, size_t(n), &c, &failed),
                     dy = on_device(*gpu->ctx, size_t(n), nullptr, &failed),
                     from = on_device(*gpu->ctx, size_t(2 * n), nullptr, &failed),
                     to = on_device(*gpu->ctx, size_t(2 * n), nullptr, &failed);
  if (!failed.ok()) return state.SkipWithError(failed.message().c_str());
  const size_t bytes = size_t(n) * sizeof(float);
  side_by_side(
      state,
      [&] {
        return kiln_bench_gpu::bias_relu(da.view<float>({n}), db.view<float>({n}), dc.view<float>({n}),
                                         dy.view<float>({n}), gpu->ctx.get());
      },
      [&](kiln::Context* cpu, float* want) {
        return kiln_bench_gpu::bias_relu(kiln::TensorView(a.data(), {n}), kiln::TensorView(b.data(), {n}),
                                         kiln::TensorView(c.data(), {n}), kiln::TensorView(want, {n}), cpu);
      },
      dy, size_t(n), "copy", [&] { return gpu->copy(from, to, 2 * bytes); }, 4.0 * double(bytes), false);
}

void softmax(benchmark::State& state, const Gpu* gpu) {
  const int64_t r = state.range(0), d = state.range(1);
  std::vector<float> x = random_floats(size_t(r * d), 6);
  kiln::Status failed;
  kiln::DeviceBuffer dx = on_device(*gpu->ctx, x.size(), &x, &failed),
                     dy = on_device(*gpu->ctx, x.size(), nullptr, &failed),
                     from = on_device(*gpu->ctx, x.size(), nullptr, &failed),
                     to = on_device(*gpu->ctx, x.size(), nullptr, &failed);
  if (!failed.ok()) return state.SkipWithError(failed.message().c_str());
  const size_t bytes = x.size() * sizeof(float);
  side_by_side(
      state,
      [&] {
        return kiln_bench_gpu::softmax_rows(dx.view<float>({r, d}), dy.view<float>({r, d}), gpu->ctx.get());
      },
      [&](kiln::Context* cpu, float* want) {
        return kiln_bench_gpu::softmax_rows(kiln::TensorView(x.data(), {r, d}), kiln::TensorView(want, {r, d}), cpu);
      },
      dy, x.size(), "copy", [&] { return gpu->copy(from, to, bytes); }, 2.0 * double(bytes), false);
}

// the GPU `name` on `device`, or nullptr after a line on stderr that says why not
std::unique_ptr<Gpu> open_gpu(const char* name, kiln::Device device) {
  auto gpu = std::make_unique<Gpu>();
  gpu->name = name;
  gpu->ctx = std::make_unique<kiln::Context>(device);
  if (!gpu->ctx->status().ok()) {
    std::fprintf(stderr, "Gpu/%s: not run: %s\n", name, gpu->ctx->status().message().c_str());
    return nullptr;
  }
  kiln::DeviceBuffer probe(*gpu->ctx, 64);
  if (device.kind() == kiln::Device::Kind::OpenCL) {
    gpu->opencl = std::make_unique<OpenclCopy>();
    if (probe.status().ok() && gpu->opencl->open(probe)) return gpu;
  } else {
    gpu->cuda = std::make_unique<CudaCalls>();
    if (gpu->cuda->open()) return gpu;
  }
  std::fprintf(stderr, "Gpu/%s: not run: its driver's copy could not be reached\n", name);
  return nullptr;
}

}  // namespace

void register_gpu_benchmarks() {
  std::vector<std::pair<const char*, kiln::Device>> devices = {{"opencl", kiln::Device::opencl()}};
#if KILN_BENCH_CUDA
  devices.emplace_back("cuda", kiln::Device::cuda(0));
#endif
  for (auto& [name, device] : devices) {
    std::unique_ptr<Gpu> gpu = open_gpu(name, device);
    if (gpu == nullptr) continue;
    const std::string at = "Gpu/" + gpu->name + "/";
    std::fprintf(stderr, "Gpu/%s: runs on %s\n", gpu->name.c_str(), gpu->ctx->device_name().c_str());
    benchmark::RegisterBenchmark((at + "sgemm").c_str(), sgemm, gpu.get())
        ->ArgNames({"m", "n", "k"})
        ->Args({256, 256, 256})     // small: a smoke run
        ->Args({4096, 4096, 4096})  // the M % 64, N % 64 bucket
        ->Args({4000, 4000, 4000})  // the generic variant
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    if (gpu->cuda != nullptr)  // the tensor cores: the CUDA targets' (OpenCL's variants are sgemm's kind)
      benchmark::RegisterBenchmark((at + "hgemm").c_str(), hgemm, gpu.get())
          ->ArgNames({"m", "n", "k"})
          ->Args({4096, 4096, 4096})  // M % 64, N % 64, L % 16: whole tiles
          ->Args({4000, 4000, 4000})  // L % 16, M and N padded to whole tiles
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime();
    benchmark::RegisterBenchmark((at + "bias_relu").c_str(), bias_relu, gpu.get())
        ->ArgNames({"n"})
        ->Arg(1 << 20)
        ->Arg(1 << 26)  // 1 GiB moved: out of every cache
        ->Arg((1 << 26) - 1)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    benchmark::RegisterBenchmark((at + "softmax").c_str(), softmax, gpu.get())
        ->ArgNames({"r", "d"})
        ->Args({256, 1024})
        ->Args({16384, 4096})
        ->Args({16383, 4000})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    gpus().push_back(std::move(gpu));
  }
}

}  // namespace kiln::bench

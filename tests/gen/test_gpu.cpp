// tests/gen/dispatch.kiln built with GPU targets and called through a GPU Context:
//   kiln_opencl_tests: TARGETS cpu opencl (kiln_gen_ocl), through kiln::Device::opencl() on PoCL,
//     which CI installs;
//   kiln_cuda_tests (KILN_TEST_CUDA): TARGETS cpu cuda-sm90 cuda-sm80 (kiln_gen_cuda), through
//     kiln::Device::cuda(0) on a GPU, or where there is none on the fake driver
//     (tests/gen/fake_cuda.cpp: the driver API over host memory, the kernels' CUDA C++ compiled
//     for the host and run a thread at a time over the launch's blocks).
// Every kernel at shapes in each bucket and in the generic variant, on random inputs and edge
// values, with the outputs poisoned first, against a float64 reference; explain names the device
// variant a call takes; bad calls are refused with the CPU's statuses and write nothing; buffers
// too large to count are refused before anything runs; calls from two threads through one
// context; the CPU calls of the same library; device buffers (kiln::DeviceBuffer) that chain calls
// without copies, and their misuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/gen/sanitized.h"
#ifndef KILN_TEST_CUDA
#define KILN_TEST_CUDA 0
#endif
#if KILN_TEST_CUDA
#include <dlfcn.h>

#include "kiln_gen_cuda.h"
namespace lib = kiln_gen_cuda;
#else
#include "kiln_gen_ocl.h"
namespace lib = kiln_gen_ocl;
#endif

namespace {

#if KILN_TEST_CUDA
const kiln::Device kDevice = kiln::Device::cuda(0);
const std::string kOn = " on cuda-sm90";  // the fake driver's device has compute capability 9.0
#else
const kiln::Device kDevice = kiln::Device::opencl();
const std::string kOn = " on opencl";
#endif

const float kNaN = std::numeric_limits<float>::quiet_NaN();

struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// random values in [-1, 1], never zero, with edge values (halves, -0.5, 1) at the front
template <class T> std::vector<T> inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.05, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = T(rng() % 2 ? u(rng) : -u(rng));
  const T edges[] = {T(0.5), T(-0.5), T(1), T(-1)};
  for (size_t i = 0; i < n && i < 4; ++i) v[i] = edges[i];
  return v;
}

#if KILN_TEST_CUDA
// the fake driver, unless KILN_CUDA_LIBRARY names a real one (scripts/gpu-check.sh, on a GPU)
struct FakeCuda {
  FakeCuda() {
    if (std::getenv("KILN_CUDA_LIBRARY") == nullptr) setenv("KILN_CUDA_LIBRARY", KILN_FAKE_CUDA, 1);
    setenv("KILN_FAKE_CUDA_KERNELS", KILN_FAKE_CUDA_KERNELS, 1);
  }
};
const FakeCuda kFakeCuda;
#endif

// the device the tests run on, or why there is none (the test is skipped only where that is
// expected: under a sanitizer, whose uninstrumented PoCL cannot run, or Bazel's sandbox)
class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kSanitized && !KILN_TEST_CUDA) GTEST_SKIP() << "PoCL's LLVM is not instrumented: the dev build runs this";
    ctx_ = std::make_unique<kiln::Context>(kDevice, 2);
    kiln::Status st = ctx_->status();
    if (!st.ok() && std::getenv("TEST_SRCDIR") != nullptr) GTEST_SKIP() << "under Bazel's sandbox: " << st.message();
    ASSERT_TRUE(st.ok()) << st.message() << " (CI installs PoCL: pocl-opencl-icd)";
  }
  kiln::Context* gpu() { return ctx_.get(); }

 private:
  ScopedEnv cache_{"POCL_CACHE_DIR", ::testing::TempDir().c_str()};
  std::unique_ptr<kiln::Context> ctx_;
};

// the variant the generated explain says a call takes
std::string taken(const std::string& explanation) {
  size_t end = explanation.find(": taken");
  if (end == std::string::npos) return "none in: " + explanation;
  size_t start = explanation.rfind('\n', end);
  return explanation.substr(start + 3, end - start - 3);
}

// |got - want| within tol * (1 + scale), NaN where want is NaN
template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, const std::vector<double>& scale,
                  double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      ASSERT_TRUE(std::isnan(want[i]) ? std::isnan(double(got[i])) : double(got[i]) == want[i])
          << what << " [" << i << "]: " << got[i];
      continue;
    }
    ASSERT_NEAR(double(got[i]), want[i], tol * (1 + scale[i])) << what << " [" << i << "]";
  }
}

// a @ b in float64, and the sum of |a||b| each entry's rounding scales with
void matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k, int64_t n,
            std::vector<double>& c, std::vector<double>& scale) {
  c.assign(size_t(m * n), 0);
  scale.assign(size_t(m * n), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) {
        double x = double(a[size_t(i * k + p)]) * double(b[size_t(p * n + j)]);
        c[size_t(i * n + j)] += x;
        scale[size_t(i * n + j)] += std::fabs(x);
      }
}

TEST_F(Gpu, GemmAtEveryBucketAndTheGenericVariantMatchesTheReference) {
  struct Shape {
    int64_t m, k, n;
    std::string variant;  // its guard (and " on <target>")
  };
  const Shape shapes[] = {{1, 8, 64, "gemm[M == 1 && N % 64 == 0]"},
                          {1, 64, 37, "gemm[M == 1]"},
                          {16, 5, 128, "gemm[M % 16 == 0 && N % 64 == 0]"},
                          {32, 1, 200, "gemm[M % 16 == 0]"},
                          {7, 17, 192, "gemm[N % 64 == 0]"},
                          {63, 64, 199, "gemm[any shape in range]"}};
  for (const Shape& s : shapes) {
    std::vector<float> a = inputs<float>(size_t(s.m * s.k), 1), b = inputs<float>(size_t(s.k * s.n), 2);
    std::vector<float> c(size_t(s.m * s.n), kNaN);
    kiln::TensorView va(a.data(), {s.m, s.k}), vb(b.data(), {s.k, s.n}), vc(c.data(), {s.m, s.n});
    const std::string explained = lib::gemm_explain(va, vb, vc, gpu());
    EXPECT_EQ(taken(explained), s.variant + kOn) << explained;
    EXPECT_EQ(explained.rfind("gemm on " + kDevice.name() + " (" + gpu()->device_name() + "):\n", 0), 0u) << explained;
    kiln::Status st = lib::gemm(va, vb, vc, gpu());
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<double> want, scale;
    matmul(a, b, s.m, s.k, s.n, want, scale);
    expect_close(c, want, scale, 1e-6,
                 "gemm " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n));
  }
}

// half-precision inputs rounded to their 16 bits (float16: through _Float16; bfloat16: to nearest
// even), with the values they hold as floats for the reference
template <class H> std::vector<H> narrowed(std::vector<float>& v) {
  std::vector<H> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    if constexpr (std::is_same_v<H, kiln::float16>) {
      const _Float16 h = static_cast<_Float16>(v[i]);
      std::memcpy(&out[i].bits, &h, 2);
      v[i] = static_cast<float>(h);
    } else {
      std::memcpy(&u, &v[i], 4);
      u += 0x7fffu + ((u >> 16) & 1u);  // (a quiet NaN stays one)
      out[i].bits = uint16_t(u >> 16);
      u = uint32_t(out[i].bits) << 16;
      std::memcpy(&v[i], &u, 4);
    }
  }
  return out;
}

// hgemm (float16 inputs, float sums) and bgemm (bfloat16 in and out): in the M % 16, N % 64, H % 16
// bucket the CUDA targets' variant runs on the tensor cores (TC: on the fake driver through
// kiln_mma_on_host, cuda_on_host.py's; on a GPU, mma.sync), and so does the H % 16 variant, M and
// N padded to whole tiles (PADTO: the reads past the ends give 0, the stores there are gated off);
// the others (H not a multiple of 16, M == 1) take the usual kernels; a NaN in a spreads along
// its row. The tensor cores' products of halves are exact (float16 x float16 and bfloat16 x
// bfloat16 fit a float), so hgemm's results are those of its float sums.
TEST_F(Gpu, HalfPrecisionMatmulsOnTheTensorCoresWhereTheShapeIsInWholeTiles) {
  struct Shape {
    int64_t m, h, n;
    std::string variant;
  };
  const Shape shapes[] = {{16, 16, 64, "[M % 16 == 0 && N % 64 == 0 && H % 16 == 0]"},
                          {48, 128, 192, "[M % 16 == 0 && N % 64 == 0 && H % 16 == 0]"},
                          {64, 16, 128, "[M % 16 == 0 && N % 64 == 0 && H % 16 == 0]"},  // a warp: 1 x 4 products
                          {61, 48, 100, "[H % 16 == 0]"},  // M, N padded to 64 and 32: 2 warps, the second's rows gated
                          {32, 17, 128, "[M % 16 == 0 && N % 64 == 0]"},
                          {5, 32, 70, "[H % 16 == 0]"},
                          {1, 33, 64, "[M == 1 && N % 64 == 0]"}};
  for (const Shape& s : shapes) {
    const std::string at = std::to_string(s.m) + "x" + std::to_string(s.h) + "x" + std::to_string(s.n);
    std::vector<float> a = inputs<float>(size_t(s.m * s.h), 21), b = inputs<float>(size_t(s.h * s.n), 22);
    if (s.m > 2) a[size_t(s.h + 3)] = kNaN;  // row 1
    std::vector<double> want, scale;
    {  // float16 in, float out
      std::vector<kiln::float16> ha = narrowed<kiln::float16>(a), hb = narrowed<kiln::float16>(b);
      std::vector<float> c(size_t(s.m * s.n), -kNaN);
      kiln::TensorView va(ha.data(), {s.m, s.h}), vb(hb.data(), {s.h, s.n}), vc(c.data(), {s.m, s.n});
      EXPECT_EQ(taken(lib::hgemm_explain(va, vb, vc, gpu())), "hgemm" + s.variant + kOn);
      kiln::Status st = lib::hgemm(va, vb, vc, gpu());
      ASSERT_TRUE(st.ok()) << st.message();
      matmul(a, b, s.m, s.h, s.n, want, scale);
      expect_close(c, want, scale, 1e-6, "hgemm " + at);
    }
    {  // bfloat16 in and out: each product and the result rounded to bfloat16 (2^-8) off the tensor cores
      std::vector<kiln::bfloat16> ba = narrowed<kiln::bfloat16>(a), bb = narrowed<kiln::bfloat16>(b);
      std::vector<kiln::bfloat16> c(size_t(s.m * s.n), kiln::bfloat16{0x7fc1});
      kiln::TensorView va(ba.data(), {s.m, s.h}), vb(bb.data(), {s.h, s.n}), vc(c.data(), {s.m, s.n});
      EXPECT_EQ(taken(lib::bgemm_explain(va, vb, vc, gpu())), "bgemm" + s.variant + kOn);
      kiln::Status st = lib::bgemm(va, vb, vc, gpu());
      ASSERT_TRUE(st.ok()) << st.message();
      matmul(a, b, s.m, s.h, s.n, want, scale);
      std::vector<float> got(c.size());
      for (size_t i = 0; i < c.size(); ++i) {
        const uint32_t u = uint32_t(c[i].bits) << 16;
        std::memcpy(&got[i], &u, 4);
      }
      for (size_t i = 0; i < want.size(); ++i) scale[i] += std::fabs(want[i]);
      expect_close(got, want, scale, 1.0 / 128, "bgemm " + at);
    }
  }
}

TEST_F(Gpu, EveryOtherKernelMatchesTheReference) {
  for (int64_t n : {1, 64, 77, 200}) {  // axpy in f64, NaN and inf through it
    std::vector<double> x = inputs<double>(size_t(n), 3), y = inputs<double>(size_t(n), 4), z(size_t(n), NAN);
    if (n > 8) x[5] = INFINITY, y[6] = NAN, x[7] = -0.0;
    ASSERT_TRUE(lib::axpy(kiln::TensorView(x.data(), {n}), kiln::TensorView(y.data(), {n}),
                          kiln::TensorView(z.data(), {n}), gpu())
                    .ok());
    std::vector<double> want(x.size()), scale(x.size(), 0);
    for (size_t i = 0; i < want.size(); ++i) want[i] = 2.0 * x[i] + y[i];
    expect_close(z, want, scale, 1e-15, "axpy");
  }
  for (int64_t m : {1, 16, 45}) {  // rowsum in i32, the bits exact
    std::vector<int32_t> x(size_t(m * 4)), s(size_t(m), INT32_MIN);
    for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(i * 2654435761u);  // wraps: the same as the device's
    ASSERT_TRUE(lib::rowsum(kiln::TensorView(x.data(), {m, 4}), kiln::TensorView(s.data(), {m}), gpu()).ok());
    for (int64_t i = 0; i < m; ++i) {
      uint32_t want = 0;
      for (int64_t j = 0; j < 4; ++j) want += uint32_t(x[size_t(i * 4 + j)]);
      ASSERT_EQ(uint32_t(s[size_t(i)]), want) << i;
    }
  }
  for (int64_t m : {1, 16, 33}) {  // mlp: two kernels and an intermediate buffer
    std::vector<float> x = inputs<float>(size_t(m * 8), 5), w = inputs<float>(8 * 16, 6), v = inputs<float>(16 * 4, 7);
    std::vector<float> y(size_t(m * 4), kNaN);
    ASSERT_TRUE(lib::mlp(kiln::TensorView(x.data(), {m, 8}), kiln::TensorView(w.data(), {8, 16}),
                         kiln::TensorView(v.data(), {16, 4}), kiln::TensorView(y.data(), {m, 4}), gpu())
                    .ok());
    std::vector<double> h, hs, want(size_t(m * 4), 0), scale(size_t(m * 4), 0);
    matmul(x, w, m, 8, 16, h, hs);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t p = 0; p < 16; ++p) {
          double r = h[size_t(i * 16 + p)] > 0 ? h[size_t(i * 16 + p)] : 0;
          want[size_t(i * 4 + j)] += r * v[size_t(p * 4 + j)];
          scale[size_t(i * 4 + j)] += (hs[size_t(i * 16 + p)] + 1) * std::fabs(v[size_t(p * 4 + j)]);
        }
    expect_close(y, want, scale, 1e-6, "mlp");
  }
  {  // tiny: literal shapes, no dims
    std::vector<float> x = {0.5f, -0.5f, -0.0f, kNaN}, y(4, 7.0f);
    ASSERT_TRUE(lib::tiny(kiln::TensorView(x.data(), {4}), kiln::TensorView(y.data(), {4}), gpu()).ok());
    EXPECT_EQ(y[0], 1.5f);
    EXPECT_EQ(y[1], 0.5f);
    EXPECT_EQ(y[2], 1.0f);
    EXPECT_TRUE(std::isnan(y[3]));
  }
  for (int64_t n : {1, 64, 130}) {  // pair: two outputs
    std::vector<float> x = inputs<float>(size_t(n), 8), p(size_t(n), kNaN), q(size_t(n), kNaN);
    ASSERT_TRUE(lib::pair(kiln::TensorView(x.data(), {n}), kiln::TensorView(p.data(), {n}),
                          kiln::TensorView(q.data(), {n}), gpu())
                    .ok());
    for (size_t i = 0; i < size_t(n); ++i) {
      ASSERT_EQ(p[i], x[i] + 1.0f);
      ASSERT_EQ(q[i], x[i] * 2.0f);
    }
  }
  for (int64_t r : {1, 3}) {  // wide and huge, at shapes that fit
    std::vector<float> x = inputs<float>(size_t(r), 9), w = inputs<float>(1024, 10), v = inputs<float>(1024, 11);
    std::vector<float> y(size_t(r), kNaN);
    ASSERT_TRUE(lib::wide(kiln::TensorView(x.data(), {r, 1}), kiln::TensorView(w.data(), {1, 1024}),
                          kiln::TensorView(v.data(), {1024, 1}), kiln::TensorView(y.data(), {r, 1}), gpu())
                    .ok());
    for (int64_t i = 0; i < r; ++i) {
      double want = 0, scale = 0;
      for (size_t p = 0; p < 1024; ++p) {
        double h = double(x[size_t(i)]) * w[p];
        want += (h > 0 ? h : 0) * v[p];
        scale += std::fabs(h * v[p]);
      }
      ASSERT_NEAR(y[size_t(i)], want, 1e-6 * (1 + scale));
    }
    std::vector<double> hx = inputs<double>(size_t(r * 1024), 12), hy(size_t(r * 1024), NAN);
    ASSERT_TRUE(lib::huge(kiln::TensorView(hx.data(), {r, 1024}), kiln::TensorView(hy.data(), {r, 1024}), gpu()).ok());
    for (size_t i = 0; i < hx.size(); ++i) ASSERT_EQ(hy[i], hx[i] * 2.0);
  }
  // deep: a long reduction (packed on the CPU); at M = 1 few outputs, each reduction shared by a
  // work group (GROUP: local memory and a barrier; the fake CUDA driver runs the block's threads
  // side by side), P padded to the group's multiple where it is not one
  for (auto [m, p, n] : {std::tuple<int64_t, int64_t, int64_t>{17, 100, 64},
                         {17, 257, 64},
                         {1, 100, 64},
                         {1, 257, 77},
                         {1, 300, 200},
                         {1, 128, 1}}) {
    std::vector<float> a = inputs<float>(size_t(m * p), 13), b = inputs<float>(size_t(p * n), 14);
    std::vector<float> c(size_t(m * n), kNaN);
    ASSERT_TRUE(lib::deep(kiln::TensorView(a.data(), {m, p}), kiln::TensorView(b.data(), {p, n}),
                          kiln::TensorView(c.data(), {m, n}), gpu())
                    .ok());
    std::vector<double> want, scale;
    matmul(a, b, m, p, n, want, scale);
    expect_close(c, want, scale, 1e-6, "deep");
  }
}

TEST_F(Gpu, BadCallsAreRefusedAsOnTheCpuAndWriteNothing) {
  std::vector<float> a(4 * 8, 1.0f), b(8 * 16, 1.0f), c(4 * 16, kNaN);
  kiln::Context cpu(kiln::Device::cpu(), 1);
  auto same = [&](const std::function<kiln::Status(kiln::Context*)>& call) {
    kiln::Status on_gpu = call(gpu()), on_cpu = call(&cpu);
    EXPECT_FALSE(on_gpu.ok());
    EXPECT_EQ(on_gpu.code(), on_cpu.code());
    EXPECT_EQ(on_gpu.message(), on_cpu.message());
    for (float x : c) ASSERT_TRUE(std::isnan(x));
  };
  kiln::TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  same([&](kiln::Context* x) { return lib::gemm(va, kiln::TensorView(b.data(), {7, 16}), vc, x); });
  same([&](kiln::Context* x) { return lib::gemm(kiln::TensorView(a.data(), {4, 8, 1}), vb, vc, x); });
  same([&](kiln::Context* x) { return lib::gemm(va, vb, kiln::TensorView(c.data(), {4, 17}), x); });
  same([&](kiln::Context* x) { return lib::gemm(va, vb, kiln::TensorView(std::as_const(c).data(), {4, 16}), x); });
  same([&](kiln::Context* x) {
    return lib::gemm(kiln::TensorView(a.data(), {65, 8}), vb, kiln::TensorView(c.data(), {65, 16}), x);
  });
  same([&](kiln::Context* x) {  // the output overlaps an input
    return lib::gemm(kiln::TensorView(c.data(), {4, 8}), vb, vc, x);
  });
  EXPECT_EQ(lib::gemm_explain(va, kiln::TensorView(b.data(), {7, 16}), vc, gpu()),
            lib::gemm_explain(va, kiln::TensorView(b.data(), {7, 16}), vc));
  // wide's intermediate at R = 2^51 + 1 is more than 2^63 bytes: refused with the CPU's status
  // before anything is read (x and y: far apart addresses no allocation could have)
  std::vector<float> w(1024, 1.0f), v(1024, 1.0f);
  const int64_t r = (int64_t(1) << 51) + 1;
  kiln::TensorView vx(reinterpret_cast<float*>(uintptr_t(1) << 58), {r, 1}),
      vy(reinterpret_cast<float*>(uintptr_t(1) << 59), {r, 1});
  same([&](kiln::Context* x) {
    return lib::wide(vx, kiln::TensorView(w.data(), {1, 1024}), kiln::TensorView(v.data(), {1024, 1}), vy, x);
  });
  kiln::Status st =
      lib::wide(vx, kiln::TensorView(w.data(), {1, 1024}), kiln::TensorView(v.data(), {1024, 1}), vy, gpu());
  EXPECT_EQ(st.code(), kiln::StatusCode::ResourceExhausted) << st.message();
}

TEST_F(Gpu, TwoThreadsThroughOneContextAndTheCpuCallsOfTheSameLibrary) {
  const int64_t m = 16, k = 64, n = 200;
  std::vector<float> a = inputs<float>(size_t(m * k), 15), b = inputs<float>(size_t(k * n), 16);
  std::vector<double> want, scale;
  matmul(a, b, m, k, n, want, scale);
  std::vector<std::vector<float>> cs(4, std::vector<float>(size_t(m * n), kNaN));
  kiln::Context cpu(kiln::Device::cpu(), 2);
  auto run = [&](size_t i, kiln::Context* ctx) {
    for (int rep = 0; rep < 3; ++rep) {
      std::fill(cs[i].begin(), cs[i].end(), kNaN);
      kiln::Status st = lib::gemm(kiln::TensorView(a.data(), {m, k}), kiln::TensorView(b.data(), {k, n}),
                                  kiln::TensorView(cs[i].data(), {m, n}), ctx);
      EXPECT_TRUE(st.ok()) << st.message();
    }
  };
  std::thread t0(run, 0, gpu()), t1(run, 1, gpu()), t2(run, 2, &cpu);
  run(3, nullptr);
  t0.join(), t1.join(), t2.join();
  for (size_t i = 0; i < cs.size(); ++i) expect_close(cs[i], want, scale, 1e-6, "call " + std::to_string(i));
  EXPECT_NE(taken(lib::gemm_explain(kiln::TensorView(a.data(), {m, k}), kiln::TensorView(b.data(), {k, n}),
                                    kiln::TensorView(cs[0].data(), {m, n}), &cpu))
                .find(" on cpu"),
            std::string::npos);
}

// Device buffers: a chain of calls reads and writes them in place (a gemm's output is the next
// one's input, mixed with host views), and the buffer is read back when the app says; a view of
// one in a CPU call, another context's buffer, a view larger than its buffer, an output that is an
// input's buffer and an unknown memory kind are refused, writing nothing.
TEST_F(Gpu, DeviceBuffersChainCallsWithoutCopiesAndBadUsesAreRefused) {
  const int64_t m = 16, k = 24, n = 64, p = 5;
  std::vector<float> a = inputs<float>(size_t(m * k), 17), b = inputs<float>(size_t(k * n), 18),
                     w = inputs<float>(size_t(n * p), 19);
  kiln::DeviceBuffer da(*gpu(), a.size() * 4), db(*gpu(), b.size() * 4), dc(*gpu(), size_t(m * n) * 4);
  for (kiln::DeviceBuffer* d : {&da, &db, &dc}) ASSERT_TRUE(d->status().ok()) << d->status().message();
  EXPECT_EQ(dc.size(), size_t(m * n) * 4);
  ASSERT_TRUE(da.upload(a.data(), a.size() * 4).ok());
  ASSERT_TRUE(db.upload(b.data(), b.size() * 4).ok());
  const kiln::TensorView va = da.view<float>({m, k}), vb = db.view<float>({k, n}), vc = dc.view<float>({m, n});
  EXPECT_TRUE(va.on_device());
  kiln::Status st = lib::gemm(va, vb, vc, gpu());
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<float> e(size_t(m * p), kNaN), c(size_t(m * n), kNaN);
  st = lib::gemm(vc, kiln::TensorView(w.data(), {n, p}), kiln::TensorView(e.data(), {m, p}), gpu());
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(dc.download(c.data(), c.size() * 4).ok());
  std::vector<double> want_c, scale_c;
  matmul(a, b, m, k, n, want_c, scale_c);
  expect_close(c, want_c, scale_c, 1e-6, "a @ b, in a device buffer");
  std::vector<double> want_e(size_t(m * p), 0), scale_e(size_t(m * p), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < p; ++j)
      for (int64_t q = 0; q < n; ++q) {
        want_e[size_t(i * p + j)] += double(c[size_t(i * n + q)]) * w[size_t(q * p + j)];
        scale_e[size_t(i * p + j)] += (scale_c[size_t(i * n + q)] + 1) * std::fabs(w[size_t(q * p + j)]);
      }
  expect_close(e, want_e, scale_e, 1e-6, "(a @ b) @ w, a @ b read from its device buffer");
  // a host input and a device one, the output on the host
  std::vector<float> c2(size_t(m * n), kNaN);
  ASSERT_TRUE(lib::gemm(kiln::TensorView(a.data(), {m, k}), vb, kiln::TensorView(c2.data(), {m, n}), gpu()).ok());
  expect_close(c2, want_c, scale_c, 1e-6, "a host input with a device one");

  auto refused = [&](const kiln::Status& s, kiln::StatusCode code, const std::string& message) {
    EXPECT_EQ(s.code(), code) << s.message();
    EXPECT_EQ(s.message(), message);
  };
  std::vector<float> host_c(size_t(m * n), kNaN);
  const kiln::TensorView hc(host_c.data(), {m, n});
  kiln::Context cpu(kiln::Device::cpu(), 1);
  for (kiln::Context* x : {&cpu, static_cast<kiln::Context*>(nullptr)})
    refused(lib::gemm(va, kiln::TensorView(b.data(), {k, n}), hc, x), kiln::StatusCode::InvalidArgument,
            "gemm: argument a: a view of device memory, in a call that runs on the CPU (call through a context on its "
            "device)");
  kiln::Context other(kDevice);
  kiln::DeviceBuffer foreign(other, a.size() * 4);
  ASSERT_TRUE(foreign.status().ok()) << foreign.status().message();
  refused(lib::gemm(foreign.view<float>({m, k}), vb, hc, gpu()), kiln::StatusCode::InvalidArgument,
          "gemm: argument a: a device buffer of another context: a call reads only its own context's");
  kiln::DeviceBuffer small(*gpu(), 16);
  refused(lib::gemm(small.view<float>({m, k}), vb, hc, gpu()), kiln::StatusCode::InvalidArgument,
          "gemm: argument a: the view is " + std::to_string(m * k * 4) + " bytes, its device buffer 16");
  kiln::TensorView same = da.view<float>({m, n});  // the output in a's buffer
  st = lib::gemm(da.view<float>({m, k}), vb, same, gpu());
  EXPECT_EQ(st.code(), kiln::StatusCode::InvalidArgument);
  EXPECT_EQ(std::string(st.message()).rfind("gemm: argument c: output overlaps input a in memory", 0), 0u)
      << st.message();
  kiln::TensorView odd(a.data(), {m, k});
  odd.t.memory = 7;
  refused(lib::gemm(odd, vb, hc, gpu()), kiln::StatusCode::InvalidArgument,
          "gemm: argument a: memory kind 7 is neither the host's (0) nor a device's (1)");
  for (float x : host_c) ASSERT_TRUE(std::isnan(x));
  std::vector<float> back(size_t(m * k));
  ASSERT_TRUE(da.download(back.data(), back.size() * 4).ok());
  EXPECT_EQ(back, a);  // the refused calls wrote nothing into a's buffer

  // the buffer's own refusals, and moves
  EXPECT_EQ(da.upload(a.data(), 8, a.size() * 4 - 4).code(), kiln::StatusCode::OutOfRange);
  EXPECT_EQ(da.download(back.data(), a.size() * 4 + 1).code(), kiln::StatusCode::OutOfRange);
  EXPECT_EQ(kiln::DeviceBuffer(cpu, 64).status().code(), kiln::StatusCode::Unsupported);
  EXPECT_FALSE(kiln::DeviceBuffer().status().ok());
  kiln::DeviceBuffer moved(std::move(da));
  EXPECT_FALSE(da.status().ok());  // NOLINT(bugprone-use-after-move): a moved-from buffer says it has none
  EXPECT_EQ(da.handle(), nullptr);
  ASSERT_TRUE(moved.download(back.data(), back.size() * 4).ok());
  EXPECT_EQ(back, a);
  da = std::move(moved);
  EXPECT_TRUE(da.status().ok());
  EXPECT_FALSE(moved.status().ok());  // NOLINT(bugprone-use-after-move)
}

#if !KILN_TEST_CUDA
// Without a driver, or on a device of a kind the library has no variant for, a call says so.
TEST(OpenClDevices, NoDriverAndNoVariantForTheDevice) {
  std::vector<float> a(4 * 8, 1.0f), b(8 * 16, 1.0f), c(4 * 16, kNaN);
  kiln::TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  {
    ScopedEnv env("KILN_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1");
    kiln::Context none(kiln::Device::opencl());
    kiln::Status st = lib::gemm(va, vb, vc, &none);
    EXPECT_EQ(st.code(), kiln::StatusCode::Unsupported);
    EXPECT_EQ(st.message().rfind("gemm: no OpenCL platform: /nonexistent/libOpenCL.so.1 cannot be loaded (", 0), 0u)
        << st.message();
  }
  ScopedEnv env("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  kiln::Context cuda(kiln::Device::cuda(0));
  kiln::Status st = lib::gemm(va, vb, vc, &cuda);
  EXPECT_EQ(st.message().rfind("gemm: no CUDA driver: /nonexistent/libcuda.so.1 cannot be loaded", 0), 0u)
      << st.message();
  EXPECT_EQ(lib::gemm_explain(va, vb, vc, &cuda), "error: " + std::string(st.message()));
  EXPECT_EQ(kiln::DeviceBuffer(cuda, 64).status().message(), cuda.status().message());
  for (float x : c) ASSERT_TRUE(std::isnan(x));
}
#endif

#if KILN_TEST_CUDA
bool on_fake_driver() { return std::string(std::getenv("KILN_CUDA_LIBRARY")) == KILN_FAKE_CUDA; }

// A device of compute capability 8.0 takes the sm_80 variants (explain says why the sm_90 ones
// are skipped); one of 7.5 has none, and the call says what the library was built for.
TEST(CudaDevices, EachDeviceTakesTheVariantsOfItsComputeCapability) {
  if (!on_fake_driver()) GTEST_SKIP() << "the fake driver's device has the compute capability it is told";
  const int64_t m = 16, k = 5, n = 128;
  std::vector<float> a = inputs<float>(size_t(m * k), 20), b = inputs<float>(size_t(k * n), 21);
  std::vector<float> c(size_t(m * n), kNaN);
  kiln::TensorView va(a.data(), {m, k}), vb(b.data(), {k, n}), vc(c.data(), {m, n});
  {
    ScopedEnv arch("KILN_FAKE_CUDA_ARCH", "80");
    kiln::Context ctx(kDevice, 1);
    ASSERT_TRUE(ctx.status().ok()) << ctx.status().message();
    const std::string explained = lib::gemm_explain(va, vb, vc, &ctx);
    EXPECT_NE(explained.find("  gemm[M % 16 == 0 && N % 64 == 0] on cuda-sm90: skipped, it needs compute capability "
                             "9.0 (this device has 8.0)\n"),
              std::string::npos)
        << explained;
    EXPECT_EQ(taken(explained), "gemm[M % 16 == 0 && N % 64 == 0] on cuda-sm80") << explained;
    kiln::Status st = lib::gemm(va, vb, vc, &ctx);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<double> want, scale;
    matmul(a, b, m, k, n, want, scale);
    expect_close(c, want, scale, 1e-6, "gemm on sm_80");
  }
  std::fill(c.begin(), c.end(), kNaN);
  ScopedEnv arch("KILN_FAKE_CUDA_ARCH", "75");
  kiln::Context old(kDevice, 1);
  kiln::Status st = lib::gemm(va, vb, vc, &old);
  EXPECT_EQ(st.code(), kiln::StatusCode::Unsupported);
  EXPECT_EQ(st.message(),
            "gemm: the library has no variant for CUDA device 0 (kiln fake CUDA device): its GPU "
            "variants are for cuda-sm90, cuda-sm80 only");
  EXPECT_EQ(lib::gemm_explain(va, vb, vc, &old), "error: " + st.message());
  for (float x : c) ASSERT_TRUE(std::isnan(x));
}

// Every call lets go of what it made; a context, of its stream and modules; the last, of the
// device's primary context.
TEST(CudaDevices, CallsAndContextsLeaveNothingBehind) {
  if (!on_fake_driver()) GTEST_SKIP() << "counts the fake driver's allocations";
  void* fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  if (fake == nullptr) fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto counts = reinterpret_cast<void (*)(long*, long*, long*, long*, long*)>(dlsym(fake, "kiln_fake_cuda_counts"));
  ASSERT_NE(counts, nullptr);
  long allocations = 0, modules = 0, streams = 0, retained = 0, launches = 0, before = 0;
  counts(&allocations, &modules, &streams, &retained, &before);
  EXPECT_EQ(allocations, 0);
  {
    kiln::Context ctx(kDevice, 1);
    std::vector<float> x = inputs<float>(33 * 8, 22), w = inputs<float>(8 * 16, 23), v = inputs<float>(16 * 4, 24);
    std::vector<float> y(33 * 4, kNaN);
    kiln::DeviceBuffer dw(ctx, w.size() * 4);
    ASSERT_TRUE(dw.upload(w.data(), w.size() * 4).ok());
    ASSERT_TRUE(lib::mlp(kiln::TensorView(x.data(), {33, 8}), dw.view<float>({8, 16}),
                         kiln::TensorView(v.data(), {16, 4}), kiln::TensorView(y.data(), {33, 4}), &ctx)
                    .ok());
    counts(&allocations, &modules, &streams, &retained, &launches);
    EXPECT_EQ(allocations, 1);  // the device buffer's
    EXPECT_EQ(modules, 1);
    EXPECT_EQ(streams, 1);
    EXPECT_EQ(retained, 1);
    EXPECT_EQ(launches - before, 2);  // mlp's two kernels
    for (float f : y) ASSERT_FALSE(std::isnan(f));
  }
  counts(&allocations, &modules, &streams, &retained, &launches);
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(modules, 0);
  EXPECT_EQ(streams, 0);
  EXPECT_EQ(retained, 0);
}

// A grouped reduction (deep at M = 1: few outputs, each a reduction of P shared by a block) runs
// on the fake driver with its block's threads side by side, meeting at the barrier, and matches.
TEST(CudaDevices, AGroupedReductionRunsItsBlocksThreadsSideBySide) {
  if (!on_fake_driver()) GTEST_SKIP() << "counts the fake driver's launches";
  void* fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  if (fake == nullptr) fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto synced = reinterpret_cast<long (*)()>(dlsym(fake, "kiln_fake_cuda_synced_launches"));
  ASSERT_NE(synced, nullptr);
  kiln::Context ctx(kDevice, 1);
  ASSERT_TRUE(ctx.status().ok()) << ctx.status().message();
  const int64_t p = 299, n = 5;
  std::vector<float> a = inputs<float>(size_t(p), 27), b = inputs<float>(size_t(p * n), 28), c(size_t(n), kNaN);
  const long before = synced();
  ASSERT_TRUE(lib::deep(kiln::TensorView(a.data(), {1, p}), kiln::TensorView(b.data(), {p, n}),
                        kiln::TensorView(c.data(), {1, n}), &ctx)
                  .ok());
  EXPECT_EQ(synced() - before, 1);
  std::vector<double> want, scale;
  matmul(a, b, 1, p, n, want, scale);
  expect_close(c, want, scale, 1e-6, "deep at M = 1");
}

// Without the driver a CUDA context says so, and the same library's CPU calls still work.
TEST(CudaDevices, NoDriverAndTheCpuCallsStillWork) {
  std::vector<float> a = inputs<float>(4 * 8, 25), b = inputs<float>(8 * 16, 26), c(4 * 16, kNaN);
  kiln::TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  ScopedEnv env("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  kiln::Context none(kDevice);
  EXPECT_EQ(none.status().code(), kiln::StatusCode::Unsupported);
  kiln::Status st = lib::gemm(va, vb, vc, &none);
  EXPECT_EQ(st.message().rfind("gemm: no CUDA driver: /nonexistent/libcuda.so.1 cannot be loaded", 0), 0u)
      << st.message();
  for (float x : c) ASSERT_TRUE(std::isnan(x));
  ASSERT_TRUE(lib::gemm(va, vb, vc).ok());
  std::vector<double> want, scale;
  matmul(a, b, 4, 8, 16, want, scale);
  expect_close(c, want, scale, 1e-6, "gemm on the CPU");
}
#endif

}  // namespace

// The generated entry points of tests/gen/dispatch.kiln (a library kiln_add_library() builds in
// this tree, for cpu, x86_64-avx2 and x86_64-avx512): every class of bad call returns its status
// and message and writes nothing; each call takes the specialized variant exactly when its guard
// holds (across the bucket boundaries) and computes the right values; threads, a parallel-for
// of the app's own and a workspace the caller gives; outputs that overlap another argument, and
// workspaces too large to count, are refused. Built three times: with the runtime
// (kiln_dispatch_tests), with it and the generated files compiled without the heap
// (kiln_noheap_dispatch_tests), and on the library built with kiln tune's database
// tests/gen/dispatch.tunedb (kiln_dispatch_tuned_tests: the tuned kernels). The C entry points
// (kiln_gen_test_<kernel>) too, in the first two: the same classes of bad call and their messages
// as statuses, the ones only C has (a NULL descriptor or context), and a context's allocator.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/gen/library.h"  // kiln_gen_test, or the tuned one
#include "tests/gen/sanitized.h"
#include "tests/unit/guard_pages.h"

namespace {

using kiln::guard::Array;
using kiln::guard::Side;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// the variant the generated explain says a call takes: "gemm[M == 1 && N % 64 == 0] on cpu"
std::string taken(const std::string& explanation) {
  size_t end = explanation.find(": taken");
  if (end == std::string::npos) return "none in: " + explanation;
  size_t start = explanation.rfind('\n', end);
  return explanation.substr(start + 3, end - start - 3);
}

std::string best_target() {
  uint32_t f = kiln::cpu_features();
  if (f & KILN_CPU_X86_AVX512) return "x86_64-avx512";
  if (f & KILN_CPU_X86_AVX2) return "x86_64-avx2";
  return "cpu";
}

void expect_status(const kiln::Status& s, kiln::StatusCode code, const std::string& message) {
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.message();
  EXPECT_EQ(s.message(), message);
}

TEST(Dispatch, EveryClassOfBadCallReturnsItsStatus) {
  std::vector<float> a(64 * 64, 1.0f), b(64 * 200, 1.0f), c(64 * 200, kNaN);
  std::vector<double> d(64);
  const std::vector<float> cc(64 * 200);
  using kiln::StatusCode;
  using kiln::TensorView;
  TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  expect_status(kiln_gen_test::gemm(TensorView(static_cast<float*>(nullptr), {4, 8}), vb, vc),
                StatusCode::InvalidArgument, "gemm: argument a: null data pointer");
  expect_status(kiln_gen_test::gemm(TensorView(a.data(), {32}), vb, vc), StatusCode::InvalidArgument,
                "gemm: argument a: expected rank 2, got rank 1");
  expect_status(kiln_gen_test::gemm(va, TensorView(d.data(), {8, 8}), vc), StatusCode::InvalidArgument,
                "gemm: argument b: expected dtype f32, got f64");
  expect_status(kiln_gen_test::gemm(va, TensorView(b.data(), {7, 16}), vc), StatusCode::InvalidArgument,
                "gemm: argument b: dim 0 (K) is 7, but argument a dim 1 set K = 8");
  expect_status(kiln_gen_test::gemm(va, vb, TensorView(c.data(), {5, 16})), StatusCode::InvalidArgument,
                "gemm: argument c: dim 0 (M) is 5, but argument a dim 0 set M = 4");
  expect_status(kiln_gen_test::gemm(TensorView(a.data(), {65, 8}), vb, vc), StatusCode::OutOfRange,
                "gemm: argument a: dim 0 (M) is 65, outside the declared range 1..64");
  expect_status(kiln_gen_test::gemm(va, TensorView(b.data(), {8, 0}), vc), StatusCode::OutOfRange,
                "gemm: argument b: dim 1 (N) is 0, outside the declared range 1..200");
  expect_status(kiln_gen_test::gemm(va, vb, TensorView(cc.data(), {4, 16})), StatusCode::InvalidArgument,
                "gemm: argument c: output is a view of const data");
  expect_status(kiln_gen_test::tiny(TensorView(a.data(), {5}), TensorView(c.data(), {4})), StatusCode::InvalidArgument,
                "tiny: argument x: dim 0 is 5, expected 4");
  expect_status(kiln_gen_test::gemm(TensorView(a.data(), {1, 1, 1, 1, 1, 1, 1, 1, 1}), vb, vc),
                StatusCode::InvalidArgument, "gemm: argument a: more than 8 dims");
  for (float x : c) ASSERT_TRUE(std::isnan(x));  // nothing ran
  // explain reports the same errors
  EXPECT_EQ(kiln_gen_test::gemm_explain(TensorView(a.data(), {32}), vb, vc),
            "error: gemm: argument a: expected rank 2, got rank 1");
}

// gemm at M x 3 x N: the variant explain says the call takes (the first whose guard holds) and the
// values, into an output of NaNs (a variant that skips a part of it leaves NaNs there); every
// buffer against a guard page on `side` (as in every call below that runs kernels: an access
// outside a buffer faults)
void expect_gemm_takes_its_variant(int64_t m, int64_t n, Side side) {
  const int64_t k = 3;
  Array<float> a(random_floats(size_t(m * k), uint32_t(m * 1000 + n)), side),
      b(random_floats(size_t(k * n), uint32_t(n * 7 + m)), side), c(size_t(m * n), side, kNaN);
  kiln::TensorView va(a.data(), {m, k}), vb(b.data(), {k, n}), vc(c.data(), {m, n});
  std::string guard = m == 1 && n % 64 == 0        ? "M == 1 && N % 64 == 0"
                      : m == 1                     ? "M == 1"
                      : m % 16 == 0 && n % 64 == 0 ? "M % 16 == 0 && N % 64 == 0"
                      : m % 16 == 0                ? "M % 16 == 0"
                      : n % 64 == 0                ? "N % 64 == 0"
                                                   : "any shape in range";
  EXPECT_EQ(taken(kiln_gen_test::gemm_explain(va, vb, vc)), "gemm[" + guard + "] on " + best_target())
      << "M=" << m << " N=" << n;
  kiln::Status s = kiln_gen_test::gemm(va, vb, vc);
  ASSERT_TRUE(s.ok()) << s.message();
  kiln::guard::count_run(side);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
      ASSERT_NEAR(c[size_t(i * n + j)], want, 1e-5) << "M=" << m << " N=" << n << " at " << i << "," << j;
    }
}

TEST(Dispatch, TheSpecializedVariantRunsExactlyWhenItsGuardHolds) {
  for (Side side : kiln::guard::kSides)
    for (int64_t m : {1, 2, 15, 16, 17, 32, 48, 64})
      for (int64_t n : {1, 63, 64, 65, 128, 192, 200}) expect_gemm_takes_its_variant(m, n, side);
}

// Multiples of half a bucket (M = 8 mod 16, N = 32 mod 64) are in no bucket: a guard table that
// checked %8 for %16 (or %32 for %64) would send them to a variant that leaves part of c unwritten
// (M = 1, N = 32 to the one for N % 64 == 0)
TEST(Dispatch, MultiplesOfHalfABucketAreNotInTheBucket) {
  for (Side side : kiln::guard::kSides)
    for (int64_t m : {1, 8, 16, 24, 40, 56})
      for (int64_t n : {1, 32, 64, 96, 160}) expect_gemm_takes_its_variant(m, n, side);
}

TEST(Dispatch, OtherDtypesAndThreads) {
  kiln::Context ctx(3);
  for (Side side : kiln::guard::kSides) {
    Array<double> x(200, side), y(200, side), z(200, side, std::nan(""));
    for (size_t i = 0; i < x.size(); ++i) x[i] = double(i) * 0.25, y[i] = 1.0 - double(i);
    ASSERT_TRUE(kiln_gen_test::axpy(kiln::TensorView(x.data(), {200}), kiln::TensorView(y.data(), {200}),
                                    kiln::TensorView(z.data(), {200}), &ctx)
                    .ok());
    kiln::guard::count_run(side);
    for (size_t i = 0; i < z.size(); ++i) EXPECT_EQ(z[i], 2.0 * x[i] + y[i]);
    Array<int32_t> m(37 * 4, side), s(37, side, -7);
    for (size_t i = 0; i < m.size(); ++i) m[i] = int32_t(i % 11) - 5;
    const int32_t* cm = m.data();
    ASSERT_TRUE(kiln_gen_test::rowsum(kiln::TensorView(cm, {37, 4}), kiln::TensorView(s.data(), {37}), &ctx).ok());
    kiln::guard::count_run(side);
    for (size_t r = 0; r < 37; ++r) EXPECT_EQ(s[r], m[4 * r] + m[4 * r + 1] + m[4 * r + 2] + m[4 * r + 3]);
  }
}

TEST(Dispatch, AnAppsOwnParallelForAndWorkspace) {
  const int64_t rows = 48;
  for (Side side : kiln::guard::kSides) {
    Array<float> x(random_floats(rows * 8, 1), side), w(random_floats(8 * 16, 2), side),
        v(random_floats(16 * 4, 3), side), y(rows * 4, side, kNaN);
    std::vector<float> want(rows * 4);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double s = 0;
        for (int64_t h = 0; h < 16; ++h) {
          double t = 0;
          for (int64_t p = 0; p < 8; ++p) t += double(x[size_t(i * 8 + p)]) * w[size_t(p * 16 + h)];
          s += std::max(0.0, t) * v[size_t(h * 4 + j)];
        }
        want[size_t(i * 4 + j)] = float(s);
      }
    kiln::TensorView vx(x.data(), {rows, 8}), vw(w.data(), {8, 16}), vv(v.data(), {16, 4}), vy(y.data(), {rows, 4});
    auto check = [&] {
      for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], 1e-4) << i;
      std::fill(y.begin(), y.end(), kNaN);
    };
    // the hidden layer lives in the workspace: 48 x 16 floats at least
    size_t bytes = kiln_gen_test::mlp_workspace_size(rows);
    EXPECT_GE(bytes, size_t(rows * 16 * 4));
    EXPECT_EQ(kiln_gen_test::mlp_workspace_size(65), 0u);  // outside the declared range
    ASSERT_TRUE(kiln_gen_test::mlp(vx, vw, vv, vy).ok());  // no context: the calling thread, its own workspace
    check();
    kiln::Context ctx(4);
    static std::atomic<int> calls{0};
    ctx.set_parallel_for(
        [](void*, int32_t n, void (*task)(void*, int32_t), void* arg) {
          ++calls;
          for (int32_t i = n - 1; i >= 0; --i) task(arg, i);  // any order, any thread
        },
        nullptr);
    // the caller's workspace under a guard page too: the bytes the call needs, 64-byte aligned
    kiln::guard::Pages small(bytes - 1, side, 64), enough(bytes, side, 64);
    ctx.set_workspace(small.data(), small.size());
    expect_status(kiln_gen_test::mlp(vx, vw, vv, vy, &ctx), kiln::StatusCode::ResourceExhausted,
                  "workspace: the call needs " + std::to_string(bytes) + " bytes, the context's workspace has " +
                      std::to_string(small.size()));
    ctx.set_workspace(enough.data(), enough.size());
    ASSERT_TRUE(kiln_gen_test::mlp(vx, vw, vv, vy, &ctx).ok());
    kiln::guard::count_run(side);
    check();
#if KILN_HEAP
    EXPECT_GT(calls.load(), 0);
#else  // kiln_noheap_dispatch_tests: no threads without the heap, so a context of 4 has 1 and runs no parallel-for
    EXPECT_EQ(ctx.threads(), 1);
    EXPECT_EQ(calls.load(), 0);
#endif
  }
}

// The kernels read and write their arguments as if they were apart: an output that shares a byte
// with another argument is refused (naming both) and nothing is written; inputs may share memory.
void expect_overlaps_refused(Side side) {
  using kiln::StatusCode;
  using kiln::TensorView;
  const std::string why = " in memory (a kernel reads and writes its arguments as if they were apart)";
  Array<float> a(random_floats(8 * 8, 11), side), b(random_floats(8 * 8, 12), side);
  const std::vector<float> a0 = a.vector(), b0 = b.vector();
  TensorView va(a.data(), {8, 8}), vb(b.data(), {8, 8});
  expect_status(kiln_gen_test::gemm(va, vb, va), StatusCode::InvalidArgument,
                "gemm: argument c: output overlaps input a" + why);
  expect_status(kiln_gen_test::gemm(va, vb, vb), StatusCode::InvalidArgument,
                "gemm: argument c: output overlaps input b" + why);
  EXPECT_EQ(kiln_gen_test::gemm_explain(va, vb, vb), "error: gemm: argument c: output overlaps input b" + why);
  EXPECT_EQ(a.vector(), a0);
  EXPECT_EQ(b.vector(), b0);

  // a [4, 8] and c [4, 16] in one buffer: c's first element is a's last, then c just after a
  Array<float> buf(32 + 64, side, kNaN);
  for (size_t i = 0; i < 32; ++i) buf[i] = a[i];
  Array<float> wide_b(random_floats(8 * 16, 13), side);
  TensorView a_in(buf.data(), {4, 8}), b_in(wide_b.data(), {8, 16});
  const std::vector<float> before = buf.vector();
  expect_status(kiln_gen_test::gemm(a_in, b_in, TensorView(buf.data() + 31, {4, 16})), StatusCode::InvalidArgument,
                "gemm: argument c: output overlaps input a" + why);
  for (size_t i = 0; i < buf.size(); ++i)
    ASSERT_TRUE(buf[i] == before[i] || (std::isnan(buf[i]) && std::isnan(before[i])));
  ASSERT_TRUE(kiln_gen_test::gemm(a_in, b_in, TensorView(buf.data() + 32, {4, 16})).ok());  // adjacent is apart
  kiln::guard::count_run(side);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      double want = 0;
      for (int64_t p = 0; p < 8; ++p) want += double(a[size_t(i * 8 + p)]) * wide_b[size_t(p * 16 + j)];
      ASSERT_NEAR(buf[size_t(32 + i * 16 + j)], want, 1e-5) << i << "," << j;
    }

  // two outputs in one buffer, or one inside the other
  Array<float> x(random_floats(100, 14), side), pq(200, side, kNaN);
  TensorView vx(x.data(), {100});
  expect_status(kiln_gen_test::pair(vx, TensorView(pq.data(), {100}), TensorView(pq.data(), {100})),
                StatusCode::InvalidArgument, "pair: argument q: output overlaps output p" + why);
  expect_status(kiln_gen_test::pair(vx, TensorView(pq.data(), {100}), TensorView(pq.data() + 99, {100})),
                StatusCode::InvalidArgument, "pair: argument q: output overlaps output p" + why);
  expect_status(kiln_gen_test::pair(vx, TensorView(x.data() + 50, {100}), TensorView(pq.data(), {100})),
                StatusCode::InvalidArgument, "pair: argument p: output overlaps input x" + why);
  for (float f : pq) ASSERT_TRUE(std::isnan(f));
  ASSERT_TRUE(kiln_gen_test::pair(vx, TensorView(pq.data(), {100}), TensorView(pq.data() + 100, {100})).ok());
  kiln::guard::count_run(side);
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(pq[i], x[i] + 1.0f);
    EXPECT_EQ(pq[100 + i], x[i] * 2.0f);
  }

  // huge's x and y may be 2^66 bytes: counted saturating, the same answers
  Array<double> h(3 * 1024 * 2, side, 1.0);
  expect_status(
      kiln_gen_test::huge(kiln::TensorView(h.data(), {3, 1024}), kiln::TensorView(h.data() + 3071, {3, 1024})),
      StatusCode::InvalidArgument, "huge: argument y: output overlaps input x" + why);
  EXPECT_EQ(h.vector(), std::vector<double>(3 * 1024 * 2, 1.0));
  ASSERT_TRUE(
      kiln_gen_test::huge(kiln::TensorView(h.data(), {3, 1024}), kiln::TensorView(h.data() + 3072, {3, 1024})).ok());
  kiln::guard::count_run(side);
  EXPECT_EQ(h[3072], 2.0);
  EXPECT_EQ(h[6143], 2.0);

  // one input twice is fine: a @ a
  Array<float> c(64, side, kNaN);
  ASSERT_TRUE(kiln_gen_test::gemm(va, va, TensorView(c.data(), {8, 8})).ok());
  kiln::guard::count_run(side);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      double want = 0;
      for (int64_t p = 0; p < 8; ++p) want += double(a[size_t(i * 8 + p)]) * a[size_t(p * 8 + j)];
      ASSERT_NEAR(c[size_t(i * 8 + j)], want, 1e-5);
    }
}

TEST(Dispatch, OutputsThatOverlapAnotherArgumentAreRefused) {
  for (Side side : kiln::guard::kSides) expect_overlaps_refused(side);
}

// A GPU context whose driver cannot be loaded (KILN_CUDA_LIBRARY names a file that is not there,
// as on a machine with no NVIDIA driver): the context says why, a call through it returns that
// status with the kernel's name in front and runs nothing, a bad call is refused as on the CPU, and
// the CPU calls of the same program still run.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

TEST(Dispatch, AGpuContextWithoutItsDriverSaysSoAndTheCpuCallsStillRun) {
  ScopedEnv env("KILN_CUDA_LIBRARY", "/nonexistent/libcuda.so.1");
  kiln::Context gpu(kiln::Device::cuda(0));
  EXPECT_EQ(gpu.device(), kiln::Device::cuda(0));
  EXPECT_EQ(gpu.device().name(), "CUDA device 0");
  EXPECT_EQ(gpu.device_name(), "CUDA device 0");  // the driver never named it
  kiln::Status st = gpu.status();
  EXPECT_EQ(st.code(), kiln::StatusCode::Unsupported);
#if KILN_HEAP
  const std::string why = "no CUDA driver: /nonexistent/libcuda.so.1 cannot be loaded (";
#else
  const std::string why = "CUDA device 0: this runtime reaches no GPU";
#endif
  EXPECT_TRUE(starts_with(st.message(), why)) << st.message();
  std::vector<float> a = random_floats(4 * 8, 1), b = random_floats(8 * 16, 2), c(4 * 16, kNaN);
  kiln::TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  kiln::Status call = kiln_gen_test::gemm(va, vb, vc, &gpu);
  EXPECT_EQ(call.code(), kiln::StatusCode::Unsupported);
  EXPECT_TRUE(starts_with(call.message(), "gemm: " + why)) << call.message();
  for (float x : c) ASSERT_TRUE(std::isnan(x));  // nothing ran
  EXPECT_TRUE(starts_with(kiln_gen_test::gemm_explain(va, vb, vc, &gpu), "error: gemm: " + why));
  // a bad call says what is wrong with it, as it does on the CPU
  expect_status(kiln_gen_test::gemm(va, kiln::TensorView(b.data(), {7, 16}), vc, &gpu),
                kiln::StatusCode::InvalidArgument, "gemm: argument b: dim 0 (K) is 7, but argument a dim 1 set K = 8");
  // the CPU context of the same program runs the call
  kiln::Context cpu(kiln::Device::cpu(), 2);
  EXPECT_TRUE(cpu.status().ok());
  EXPECT_EQ(cpu.device_name(), "CPU");
  ASSERT_TRUE(kiln_gen_test::gemm(va, vb, vc, &cpu).ok());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 16; ++j) {
      double want = 0;
      for (int64_t p = 0; p < 8; ++p) want += double(a[size_t(i * 8 + p)]) * b[size_t(p * 16 + j)];
      ASSERT_NEAR(c[size_t(i * 16 + j)], want, 1e-5);
    }
  EXPECT_EQ(taken(kiln_gen_test::gemm_explain(va, vb, vc, &cpu)), taken(kiln_gen_test::gemm_explain(va, vb, vc)));
  // a negative index is no device
  EXPECT_EQ(kiln::Context(kiln::Device::opencl(-1)).status().code(),
            KILN_HEAP ? kiln::StatusCode::InvalidArgument : kiln::StatusCode::Unsupported);
}

#if KILN_HEAP
// The OpenCL device PoCL gives (CI installs it): found and named by the driver; the library has no
// OpenCL variant, so a call says so, naming the kernel and the device; a device index past the
// platforms' devices and an ICD loader that is not there are reported.
TEST(Dispatch, AnOpenClContextFindsItsDeviceAndACallSaysTheLibraryHasNoVariantForIt) {
  {
    ScopedEnv env("KILN_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1");
    kiln::Status st = kiln::Context(kiln::Device::opencl()).status();
    EXPECT_TRUE(starts_with(st.message(), "no OpenCL platform: /nonexistent/libOpenCL.so.1 cannot be loaded ("))
        << st.message();
  }
  if (kSanitized) GTEST_SKIP() << "PoCL's LLVM is not instrumented: the dev build runs this";
  ScopedEnv cache("POCL_CACHE_DIR", ::testing::TempDir().c_str());
  kiln::Context gpu(kiln::Device::opencl());
  kiln::Status st = gpu.status();
  if (!st.ok() && std::getenv("TEST_SRCDIR") != nullptr) GTEST_SKIP() << "under Bazel's sandbox: " << st.message();
  ASSERT_TRUE(st.ok()) << st.message() << " (CI installs PoCL: pocl-opencl-icd)";
  const std::string name = gpu.device_name();
  EXPECT_NE(name, "OpenCL device 0");
  EXPECT_NE(name.find(": "), std::string::npos) << name;  // "<device>: <platform>"
  std::vector<float> a(4 * 8, 1.0f), b(8 * 16, 1.0f), c(4 * 16, kNaN);
  kiln::TensorView va(a.data(), {4, 8}), vb(b.data(), {8, 16}), vc(c.data(), {4, 16});
  expect_status(
      kiln_gen_test::gemm(va, vb, vc, &gpu), kiln::StatusCode::Unsupported,
      "gemm: the library has no variant for OpenCL device 0 (" + name + "): it was built for CPU targets only");
  for (float x : c) ASSERT_TRUE(std::isnan(x));
  EXPECT_EQ(
      kiln_gen_test::gemm_explain(va, vb, vc, &gpu),
      "error: gemm: the library has no variant for OpenCL device 0 (" + name + "): it was built for CPU targets only");
  kiln::Status far = kiln::Context(kiln::Device::opencl(99)).status();
  EXPECT_TRUE(starts_with(far.message(), "OpenCL device 99 not found: the platforms have ")) << far.message();
}
#endif

// wide's workspace is R x 1024 floats with R up to 2^53 - 1 (so every element count fits an
// int64_t, as check demands): from R = 2^51 on, more bytes than an int64_t counts. The size says
// so (SIZE_MAX) and a call is refused before anything runs.
TEST(Dispatch, WorkspacesTooLargeToCountAreRefused) {
  const int64_t big = int64_t(1) << 51, r_max = (int64_t(1) << 53) - 1;
  EXPECT_EQ(kiln_gen_test::wide_workspace_size(3), 3u * 4096u);
  if (sizeof(std::size_t) == 8) {
    EXPECT_EQ(kiln_gen_test::wide_workspace_size(big - 1), std::size_t(big - 1) * 4096u);
  }
  for (int64_t r : {big, big + 1, r_max}) EXPECT_EQ(kiln_gen_test::wide_workspace_size(r), SIZE_MAX) << r;
  EXPECT_EQ(kiln_gen_test::wide_workspace_size(r_max + 1), 0u);  // outside the declared range

  std::vector<float> w = random_floats(1024, 21), v = random_floats(1024, 22);
  kiln::TensorView vw(w.data(), {1, 1024}), vv(v.data(), {1024, 1});
  // x and y are never read or written: far apart addresses no allocation could have
  for (int64_t r : {big + 1, r_max}) {
    kiln::TensorView vx(reinterpret_cast<float*>(uintptr_t(1) << 58), {r, 1}),
        vy(reinterpret_cast<float*>(uintptr_t(1) << 59), {r, 1});
    kiln::Context ctx(2);
    for (kiln::Context* c : {static_cast<kiln::Context*>(nullptr), &ctx})
      expect_status(kiln_gen_test::wide(vx, vw, vv, vy, c), kiln::StatusCode::ResourceExhausted,
                    "wide: workspace: the bytes these dims need are too many to count in an int64_t or a size_t");
  }

  // and small R computes
  const int64_t rows = 5;
  for (Side side : kiln::guard::kSides) {
    Array<float> x(random_floats(rows, 23), side), y(rows, side, kNaN), gw(w, side), gv(v, side);
    ASSERT_TRUE(kiln_gen_test::wide(kiln::TensorView(x.data(), {rows, 1}), kiln::TensorView(gw.data(), {1, 1024}),
                                    kiln::TensorView(gv.data(), {1024, 1}), kiln::TensorView(y.data(), {rows, 1}))
                    .ok());
    kiln::guard::count_run(side);
    for (int64_t i = 0; i < rows; ++i) {
      double want = 0;
      for (size_t h = 0; h < 1024; ++h) want += std::max(0.0, double(x[size_t(i)]) * w[h]) * v[h];
      EXPECT_NEAR(y[size_t(i)], want, 1e-3) << i;
    }
  }
}

// ---------------------------------------------------------------- the C entry points

#if !defined(KILN_GEN_TUNED)  // they call the same entry points: not again on the tuned library

// An allocator that counts what it gives and takes back, each block against a guard page on `side`.
struct CountingAllocator {
  explicit CountingAllocator(Side side = Side::After) : side(side) {}
  Side side;
  int allocs = 0, frees = 0;
  std::map<void*, kiln::guard::Pages> blocks;
  kiln_allocator_t c{this, &CountingAllocator::alloc, &CountingAllocator::release};
  static void* alloc(void* self, size_t bytes, size_t alignment) {
    auto* a = static_cast<CountingAllocator*>(self);
    ++a->allocs;
    kiln::guard::Pages p(bytes, a->side, alignment);
    void* data = p.data();
    a->blocks.emplace(data, std::move(p));
    return data;
  }
  static void release(void* self, void* p) {
    auto* a = static_cast<CountingAllocator*>(self);
    ++a->frees;
    a->blocks.erase(p);
  }
};

// the status's code and message, then frees it
void expect_c_status(kiln_status_t s, int32_t code, const std::string& message) {
  ASSERT_NE(s, nullptr) << "expected " << message;
  EXPECT_EQ(kiln_status_code(s), code) << kiln_status_message(s);
  EXPECT_EQ(std::string(kiln_status_message(s)), message);
  kiln_status_free(s);
}

TEST(DispatchC, EveryClassOfBadCallReturnsItsStatusAndMessage) {
  std::vector<float> a(64 * 64, 1.0f), b(64 * 200, 1.0f), c(64 * 200, kNaN);
  std::vector<double> d(64);
  const std::vector<float> cc(64 * 200);
  using kiln::TensorView;
  CountingAllocator counting;
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(1, &counting.c, &ctx), nullptr);
  const int made = counting.allocs;  // the context and its state
  EXPECT_EQ(made, KILN_HEAP ? 2 : 1);
  const kiln_tensor ta = TensorView(a.data(), {4, 8}).t, tb = TensorView(b.data(), {8, 16}).t,
                    tc = TensorView(c.data(), {4, 16}).t;
  const kiln_tensor null_a = TensorView(static_cast<float*>(nullptr), {4, 8}).t;
  const kiln_tensor rank1 = TensorView(a.data(), {32}).t, f64 = TensorView(d.data(), {8, 8}).t;
  const kiln_tensor k7 = TensorView(b.data(), {7, 16}).t, m5 = TensorView(c.data(), {5, 16}).t;
  const kiln_tensor m65 = TensorView(a.data(), {65, 8}).t, n0 = TensorView(b.data(), {8, 0}).t;
  const kiln_tensor const_c = TensorView(cc.data(), {4, 16}).t, over_a = TensorView(a.data(), {4, 16}).t;
  const kiln_tensor rank9 = TensorView(a.data(), {1, 1, 1, 1, 1, 1, 1, 1, 1}).t;
  const int32_t bad = KILN_INVALID_ARGUMENT;
  expect_c_status(kiln_gen_test_gemm(&ta, &tb, &tc, nullptr), bad,
                  "gemm: no context (a C call needs one: kiln_context_create)");
  expect_c_status(kiln_gen_test_gemm(&ta, nullptr, &tc, ctx), bad, "gemm: argument b: null kiln_tensor");
  expect_c_status(kiln_gen_test_gemm(&null_a, &tb, &tc, ctx), bad, "gemm: argument a: null data pointer");
  expect_c_status(kiln_gen_test_gemm(&rank1, &tb, &tc, ctx), bad, "gemm: argument a: expected rank 2, got rank 1");
  expect_c_status(kiln_gen_test_gemm(&ta, &f64, &tc, ctx), bad, "gemm: argument b: expected dtype f32, got f64");
  expect_c_status(kiln_gen_test_gemm(&ta, &k7, &tc, ctx), bad,
                  "gemm: argument b: dim 0 (K) is 7, but argument a dim 1 set K = 8");
  expect_c_status(kiln_gen_test_gemm(&ta, &tb, &m5, ctx), bad,
                  "gemm: argument c: dim 0 (M) is 5, but argument a dim 0 set M = 4");
  expect_c_status(kiln_gen_test_gemm(&m65, &tb, &tc, ctx), KILN_OUT_OF_RANGE,
                  "gemm: argument a: dim 0 (M) is 65, outside the declared range 1..64");
  expect_c_status(kiln_gen_test_gemm(&ta, &n0, &tc, ctx), KILN_OUT_OF_RANGE,
                  "gemm: argument b: dim 1 (N) is 0, outside the declared range 1..200");
  expect_c_status(kiln_gen_test_gemm(&ta, &tb, &const_c, ctx), bad, "gemm: argument c: output is a view of const data");
  expect_c_status(kiln_gen_test_gemm(&rank9, &tb, &tc, ctx), bad, "gemm: argument a: more than 8 dims");
  expect_c_status(kiln_gen_test_gemm(&ta, &tb, &over_a, ctx), bad,
                  "gemm: argument c: output overlaps input a in memory (a kernel reads and writes its arguments as if "
                  "they were apart)");
  const kiln_tensor t5 = TensorView(a.data(), {5}).t, t4 = TensorView(c.data(), {4}).t;
  expect_c_status(kiln_gen_test_tiny(&t5, &t4, ctx), bad, "tiny: argument x: dim 0 is 5, expected 4");
  for (float x : c) ASSERT_TRUE(std::isnan(x));  // nothing ran
  // every status but the no-context one (no allocator to take it from) came from the context's
  // allocator, and went back to it
  EXPECT_EQ(counting.allocs, made + 12);
  EXPECT_EQ(counting.frees, 12);
  kiln_context_destroy(ctx);
  EXPECT_EQ(counting.frees, counting.allocs);
}

void expect_c_call_computes(Side side) {
  const int64_t rows = 48;
  Array<float> x(random_floats(rows * 8, 4), side), w(random_floats(8 * 16, 5), side),
      v(random_floats(16 * 4, 6), side);
  Array<float> want(rows * 4, side, kNaN), y(rows * 4, side, kNaN);
  kiln::TensorView vx(x.data(), {rows, 8}), vw(w.data(), {8, 16}), vv(v.data(), {16, 4});
  ASSERT_TRUE(kiln_gen_test::mlp(vx, vw, vv, kiln::TensorView(want.data(), {rows, 4})).ok());
  CountingAllocator counting(side);  // the context, its state and the workspace under guard pages too
  kiln_context* ctx = nullptr;
  ASSERT_EQ(kiln_context_create(1, &counting.c, &ctx), nullptr);
  const int made = counting.allocs;
  const kiln_tensor tx = vx.t, tw = vw.t, tv = vv.t, ty = kiln::TensorView(y.data(), {rows, 4}).t;
  ASSERT_EQ(kiln_gen_test_mlp(&tx, &tw, &tv, &ty, ctx), nullptr);
  kiln::guard::count_run(side);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << i;
  EXPECT_EQ(counting.allocs, made + 1);  // the hidden layer's workspace
  EXPECT_EQ(kiln_gen_test_mlp_workspace_size(rows), kiln_gen_test::mlp_workspace_size(rows));
  EXPECT_EQ(kiln_gen_test_tiny_workspace_size(), kiln_gen_test::tiny_workspace_size());
  // a workspace of the caller's: the allocator gives nothing more
  std::vector<char> small(kiln_gen_test_mlp_workspace_size(rows) - 1);
  ASSERT_EQ(kiln_context_set_workspace(ctx, small.data(), small.size()), nullptr);
  expect_c_status(kiln_gen_test_mlp(&tx, &tw, &tv, &ty, ctx), KILN_RESOURCE_EXHAUSTED,
                  "workspace: the call needs " + std::to_string(small.size() + 1) +
                      " bytes, the context's workspace has " + std::to_string(small.size()));
  kiln_context_destroy(ctx);
  EXPECT_EQ(counting.frees, counting.allocs);
}

TEST(DispatchC, ACallComputesWhatTheCxxOneDoesWithTheWorkspaceFromTheAllocator) {
  for (Side side : kiln::guard::kSides) expect_c_call_computes(side);
}

#endif  // !KILN_GEN_TUNED

}  // namespace

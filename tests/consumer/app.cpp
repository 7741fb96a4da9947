// A consumer of kiln, built exactly as a user builds one (CMakeLists.txt next to this file):
// it calls the generated kernels of nn.kiln at shapes that land in different variants, checks
// every result against a plain C++ reference (double accumulation, random inputs, outputs
// poisoned with NaN first), prints which variant each call took and how fast it ran, and checks
// that bad calls come back as statuses. Exit status 0 only when everything matched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nn.h"

namespace {

int failures = 0;

std::vector<float> random_vector(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<float> poisoned(size_t n) { return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()); }

// the line of an explanation that says which variant ran
std::string taken(const std::string& explanation) {
  size_t end = explanation.find(": taken");
  if (end == std::string::npos) return "?? " + explanation;
  size_t start = explanation.rfind('\n', end);
  return explanation.substr(start + 3, end - start - 3);
}

void check(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0;
  size_t bad = got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i]));
    if (!(err <= 1e-4)) {  // NaN (a value never written) fails too
      bad = i;
      worst = err;
      break;
    }
    worst = std::max(worst, err);
  }
  if (bad != got.size()) {
    std::printf("  MISMATCH in %s at %zu: got %g, want %g\n", what, bad, double(got[bad]), want[bad]);
    ++failures;
  }
}

// runs a call a few times and reports the best time in microseconds
double time_us(const std::function<kiln::Status()>& call) {
  double best = 1e300;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    kiln::Status s = call();
    auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      std::printf("  FAILED: %s\n", s.message().c_str());
      ++failures;
      return 0;
    }
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return best;
}

std::vector<double> ref_gemm(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t k,
                             int64_t n) {
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
  return c;
}

void gemm(int64_t m, int64_t k, int64_t n, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> a = random_vector(size_t(m * k), rng), b = random_vector(size_t(k * n), rng);
  std::vector<float> c = poisoned(size_t(m * n));
  kiln::TensorView va(a.data(), {m, k}), vb(b.data(), {k, n}), vc(c.data(), {m, n});
  double us = time_us([&] { return nn::gemm(va, vb, vc, ctx); });
  check("gemm", c, ref_gemm(a, b, m, k, n));
  std::printf("gemm %lldx%lldx%lld: %s, %.1f us (%.2f GFLOP/s)\n", (long long)m, (long long)k, (long long)n,
              taken(nn::gemm_explain(va, vb, vc, ctx)).c_str(), us, 2.0 * double(m * n * k) / us / 1e3);
}

void mlp(int64_t m, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(m * 64), rng), w1 = random_vector(64 * 128, rng),
                     b1 = random_vector(128, rng), w2 = random_vector(128 * 10, rng), b2 = random_vector(10, rng);
  std::vector<float> y = poisoned(size_t(m * 10));
  kiln::TensorView vx(x.data(), {m, 64}), vw1(w1.data(), {64, 128}), vb1(b1.data(), {128}), vw2(w2.data(), {128, 10}),
      vb2(b2.data(), {10}), vy(y.data(), {m, 10});
  double us = time_us([&] { return nn::mlp(vx, vw1, vb1, vw2, vb2, vy, ctx); });
  std::vector<double> h = ref_gemm(x, w1, m, 64, 128), want(size_t(m * 10));
  std::vector<float> hf(h.size());
  for (size_t i = 0; i < h.size(); ++i) h[i] = std::max(0.0, h[i] + b1[i % 128]);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < 10; ++j) {
      double s = b2[size_t(j)];
      for (int64_t p = 0; p < 128; ++p) s += h[size_t(i * 128 + p)] * w2[size_t(p * 10 + j)];
      want[size_t(i * 10 + j)] = s;
    }
  check("mlp", y, want);
  std::printf("mlp %lldx64 -> 128 -> 10: %s, %.1f us\n", (long long)m,
              taken(nn::mlp_explain(vx, vw1, vb1, vw2, vb2, vy, ctx)).c_str(), us);
}

void rows(bool softmax, int64_t m, int64_t d, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(m * d), rng), y = poisoned(size_t(m * d));
  kiln::TensorView vx(x.data(), {m, d}), vy(y.data(), {m, d});
  double us = time_us([&] { return softmax ? nn::softmax_rows(vx, vy, ctx) : nn::layernorm_rows(vx, vy, ctx); });
  std::vector<double> want(size_t(m * d));
  for (int64_t i = 0; i < m; ++i) {
    const float* r = x.data() + i * d;
    double* w = want.data() + i * d;
    if (softmax) {
      double mx = *std::max_element(r, r + d), sum = 0;
      for (int64_t j = 0; j < d; ++j) sum += w[j] = std::exp(double(r[j]) - mx);
      for (int64_t j = 0; j < d; ++j) w[j] /= sum;
    } else {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < d; ++j) mean += r[j];
      mean /= double(d);
      for (int64_t j = 0; j < d; ++j) var += (r[j] - mean) * (r[j] - mean);
      var /= double(d);
      for (int64_t j = 0; j < d; ++j) w[j] = (r[j] - mean) / std::sqrt(var + 1e-5);
    }
  }
  const char* name = softmax ? "softmax_rows" : "layernorm_rows";
  check(name, y, want);
  std::string variant =
      taken(softmax ? nn::softmax_rows_explain(vx, vy, ctx) : nn::layernorm_rows_explain(vx, vy, ctx));
  std::printf("%s %lldx%lld: %s, %.1f us\n", name, (long long)m, (long long)d, variant.c_str(), us);
}

void conv(int64_t batch, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(batch * 8 * 16 * 16), rng), w = random_vector(16 * 8 * 9, rng),
                     bias = random_vector(16, rng), y = poisoned(size_t(batch * 16 * 16 * 16));
  kiln::TensorView vx(x.data(), {batch, 8, 16, 16}), vw(w.data(), {16, 8, 3, 3}), vb(bias.data(), {16}),
      vy(y.data(), {batch, 16, 16, 16});
  double us = time_us([&] { return nn::conv(vx, vw, vb, vy, ctx); });
  std::vector<double> want(y.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 16; ++j) {
          double s = bias[size_t(o)];
          for (int64_t c = 0; c < 8; ++c)
            for (int64_t di = 0; di < 3; ++di)
              for (int64_t dj = 0; dj < 3; ++dj) {
                int64_t ii = i + di - 1, jj = j + dj - 1;
                if (ii < 0 || ii >= 16 || jj < 0 || jj >= 16) continue;
                s += double(x[size_t(((n * 8 + c) * 16 + ii) * 16 + jj)]) * w[size_t(((o * 8 + c) * 3 + di) * 3 + dj)];
              }
          want[size_t(((n * 16 + o) * 16 + i) * 16 + j)] = std::max(0.0, s);
        }
  check("conv", y, want);
  std::printf("conv %lldx8x16x16 * 16x8x3x3: %s, %.1f us\n", (long long)batch,
              taken(nn::conv_explain(vx, vw, vb, vy, ctx)).c_str(), us);
}

std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> u(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = u(rng);
  return v;
}

void check_ints(const char* what, const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      std::printf("  MISMATCH in %s at %zu: got %d, want %d\n", what, i, got[i], want[i]);
      ++failures;
      return;
    }
}

// conv2d(x, w, stride=2) + b.reshape(1, 16, 1, 1)
void conv_bias(int64_t batch, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(batch * 8 * 16 * 16), rng), w = random_vector(16 * 8 * 9, rng),
                     b = random_vector(16, rng), y = poisoned(size_t(batch * 16 * 7 * 7));
  kiln::TensorView vx(x.data(), {batch, 8, 16, 16}), vw(w.data(), {16, 8, 3, 3}), vb(b.data(), {16}),
      vy(y.data(), {batch, 16, 7, 7});
  double us = time_us([&] { return nn::conv_bias(vx, vw, vb, vy, ctx); });
  std::vector<double> want(y.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t o = 0; o < 16; ++o)
      for (int64_t i = 0; i < 7; ++i)
        for (int64_t j = 0; j < 7; ++j) {
          double s = b[size_t(o)];
          for (int64_t c = 0; c < 8; ++c)
            for (int64_t di = 0; di < 3; ++di)
              for (int64_t dj = 0; dj < 3; ++dj)
                s += double(x[size_t(((n * 8 + c) * 16 + 2 * i + di) * 16 + 2 * j + dj)]) *
                     w[size_t(((o * 8 + c) * 3 + di) * 3 + dj)];
          want[size_t(((n * 16 + o) * 7 + i) * 7 + j)] = s;
        }
  check("conv_bias", y, want);
  std::printf("conv_bias %lldx8x16x16 stride 2: %s, %.1f us\n", (long long)batch,
              taken(nn::conv_bias_explain(vx, vw, vb, vy, ctx)).c_str(), us);
}

// x.flip(1).permute(1, 0) * x[-1].reshape(-1, 1) + x.max(1).reshape(1, -1).expand(16, -1); x[:, 2:12:2] - x[:, 30:0:-6]
void movement_and_slices(int64_t m, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(m * 16), rng), y = poisoned(size_t(16 * m));
  kiln::TensorView vx(x.data(), {m, 16}), vy(y.data(), {16, m});
  double us = time_us([&] { return nn::movement(vx, vy, ctx); });
  std::vector<double> want(y.size());
  for (int64_t i = 0; i < m; ++i) {
    double mx = *std::max_element(x.begin() + i * 16, x.begin() + i * 16 + 16);
    for (int64_t j = 0; j < 16; ++j)
      want[size_t(j * m + i)] = double(x[size_t(i * 16 + 15 - j)]) * x[size_t((m - 1) * 16 + j)] + mx;
  }
  check("movement", y, want);
  std::vector<float> s = random_vector(size_t(m * 32), rng), z = poisoned(size_t(m * 5));
  kiln::TensorView vs(s.data(), {m, 32}), vz(z.data(), {m, 5});
  double us2 = time_us([&] { return nn::slices(vs, vz, ctx); });
  std::vector<double> want2(z.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < 5; ++j)
      want2[size_t(i * 5 + j)] = double(s[size_t(i * 32 + 2 + 2 * j)]) - s[size_t(i * 32 + 30 - 6 * j)];
  check("slices", z, want2);
  std::printf("movement %lldx16: %s, %.1f us; slices %lldx32: %.1f us\n", (long long)m,
              taken(nn::movement_explain(vx, vy, ctx)).c_str(), us, (long long)m, us2);
}

// a & b | a >> 3 ^ b << 2 and x.argmin(1)
void bits(int64_t m, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<int32_t> a = random_ints(size_t(m * 64), -2000000000, 2000000000, rng),
                       b = random_ints(size_t(m * 64), -100000, 100000, rng), y(size_t(m * 64), -1), idx(size_t(m), -1);
  std::vector<float> x = random_vector(size_t(m * 40), rng);
  kiln::TensorView va(a.data(), {m, 64}), vb(b.data(), {m, 64}), vx(x.data(), {m, 40}), vy(y.data(), {m, 64}),
      vi(idx.data(), {m});
  double us = time_us([&] { return nn::bits(va, vb, vx, vy, vi, ctx); });
  std::vector<int32_t> want(y.size()), want_idx(static_cast<size_t>(m));
  for (size_t i = 0; i < a.size(); ++i) want[i] = (a[i] & b[i]) | ((a[i] >> 3) ^ int32_t(uint32_t(b[i]) << 2));
  for (int64_t i = 0; i < m; ++i)
    want_idx[size_t(i)] = int32_t(std::min_element(x.begin() + i * 40, x.begin() + i * 40 + 40) - (x.begin() + i * 40));
  check_ints("bits", y, want);
  check_ints("argmin", idx, want_idx);
  std::printf("bits %lldx64: %s, %.1f us\n", (long long)m, taken(nn::bits_explain(va, vb, vx, vy, vi, ctx)).c_str(),
              us);
}

void gelu_exact(int64_t m, int64_t d, kiln::Context* ctx, std::mt19937& rng) {
  std::vector<float> x = random_vector(size_t(m * d), rng), y = poisoned(size_t(m * d));
  for (float& v : x) v *= 4;
  kiln::TensorView vx(x.data(), {m, d}), vy(y.data(), {m, d});
  double us = time_us([&] { return nn::gelu_exact(vx, vy, ctx); });
  std::vector<double> want(y.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = 0.5 * x[i] * (1 + std::erf(double(x[i]) / std::sqrt(2.0)));
  check("gelu_exact", y, want);
  std::printf("gelu_exact %lldx%lld: %s, %.1f us\n", (long long)m, (long long)d,
              taken(nn::gelu_exact_explain(vx, vy, ctx)).c_str(), us);
}

// max_pool2d(3, stride=2, dilation=2, padding=2, ceil_mode=true) and
// avg_pool2d(3, 2, 1, (1, 1), true, false), that is count_include_pad=false, of 15x15 planes
void pools(int64_t batch, kiln::Context* ctx, std::mt19937& rng) {
  const int64_t planes = batch * 4;
  std::vector<float> x = random_vector(size_t(planes * 225), rng), mx = poisoned(size_t(planes * 64)),
                     av = poisoned(size_t(planes * 64));
  kiln::TensorView vx(x.data(), {batch, 4, 15, 15}), vm(mx.data(), {batch, 4, 8, 8}), va(av.data(), {batch, 4, 8, 8});
  double us = time_us([&] { return nn::pools(vx, vm, va, ctx); });
  std::vector<double> want_max(mx.size()), want_avg(av.size());
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < 8; ++oy)
      for (int64_t ox = 0; ox < 8; ++ox) {
        double best = -INFINITY, sum = 0;
        int count = 0;
        for (int64_t k = 0; k < 9; ++k) {
          int64_t iy = oy * 2 + (k / 3) * 2 - 2, ix = ox * 2 + (k % 3) * 2 - 2;  // dilation 2, padding 2
          if (iy >= 0 && iy < 15 && ix >= 0 && ix < 15)
            best = std::max(best, double(x[size_t(p * 225 + iy * 15 + ix)]));
          iy = oy * 2 + k / 3 - 1, ix = ox * 2 + k % 3 - 1;  // dilation 1, padding 1
          if (iy >= 0 && iy < 15 && ix >= 0 && ix < 15) sum += x[size_t(p * 225 + iy * 15 + ix)], ++count;
        }
        want_max[size_t(p * 64 + oy * 8 + ox)] = best;
        want_avg[size_t(p * 64 + oy * 8 + ox)] = sum / count;
      }
  check("max_pool2d", mx, want_max);
  check("avg_pool2d", av, want_avg);
  std::printf("pools %lldx4x15x15: %s, %.1f us\n", (long long)batch, taken(nn::pools_explain(vx, vm, va, ctx)).c_str(),
              us);
}

// a bad call returns a status that says what is wrong; nothing runs
void bad_calls(kiln::Context* ctx) {
  std::vector<float> a(64), b(64), c(64);
  auto expect = [](const char* what, const kiln::Status& s, const std::string& message) {
    if (s.ok() || s.message() != message) {
      std::printf("  WRONG STATUS for %s: %s\n", what, s.ok() ? "ok" : s.message().c_str());
      ++failures;
    }
  };
  expect("a wrong rank",
         nn::gemm(kiln::TensorView(a.data(), {64}), kiln::TensorView(b.data(), {8, 8}),
                  kiln::TensorView(c.data(), {8, 8}), ctx),
         "gemm: argument a: expected rank 2, got rank 1");
  expect("inconsistent dims",
         nn::gemm(kiln::TensorView(a.data(), {8, 8}), kiln::TensorView(b.data(), {4, 16}),
                  kiln::TensorView(c.data(), {8, 16}), ctx),
         "gemm: argument b: dim 0 (K) is 4, but argument a dim 1 set K = 8");
  std::printf("bad calls: statuses as expected\n");
}

void suite(kiln::Context* ctx, kiln::Context* solo, std::mt19937& rng);

// A CUDA context. With its driver, and the library built with CUDA targets (KILN_CONSUMER_CUDA:
// TARGETS ... cuda-sm80 cuda-sm90), the suite runs on it. Otherwise (no driver, as on CI's
// machines, or no CUDA variants) it says why, a call through it is refused naming the kernel and
// runs nothing, and the CPU calls after it run as before.
void gpu_context(std::mt19937& rng) {
  kiln::Context gpu(kiln::Device::cuda(0));
  std::printf("CUDA context: %s\n",
              gpu.status().ok() ? ("found " + gpu.device_name()).c_str() : std::string(gpu.status().message()).c_str());
#if KILN_CONSUMER_CUDA
  if (gpu.status().ok()) {
    suite(&gpu, &gpu, rng);
    return;
  }
#endif
  std::vector<float> a = random_vector(8 * 8, rng), b = random_vector(8 * 8, rng), c = poisoned(8 * 8);
  kiln::Status st = nn::gemm(kiln::TensorView(a.data(), {8, 8}), kiln::TensorView(b.data(), {8, 8}),
                             kiln::TensorView(c.data(), {8, 8}), &gpu);
  const std::string message(st.message());
  if (st.ok() || message.rfind("gemm: ", 0) != 0) {
    std::printf("FAIL: a call through the CUDA context: %s\n", st.ok() ? "ok" : message.c_str());
    ++failures;
  }
  for (float x : c)
    if (x == x) {
      std::printf("FAIL: a call through the CUDA context wrote its output\n");
      ++failures;
      break;
    }
  std::printf("gemm through it: %s\n", message.c_str());
}

// every kernel at shapes in its buckets and in the generic variant: through ctx (two threads, or a
// GPU), and through `solo` (nullptr: the calling thread; the GPU again)
void suite(kiln::Context* ctx, kiln::Context* solo, std::mt19937& rng) {
  gemm(1, 256, 256, solo, rng);  // a vector-matrix product: the M == 1 variant
  gemm(32, 64, 128, ctx, rng);   // M % 16 == 0 and N % 64 == 0
  gemm(37, 50, 70, ctx, rng);    // no bucket: the generic variant
  gemm(256, 256, 256, ctx, rng);
  mlp(1, solo, rng);
  mlp(48, ctx, rng);
  mlp(5, ctx, rng);
  rows(true, 4, 1024, ctx, rng);  // D % 64 == 0
  rows(true, 3, 1000, ctx, rng);
  rows(false, 16, 512, ctx, rng);
  rows(false, 7, 77, solo, rng);
  conv(1, solo, rng);  // B == 1
  conv(3, ctx, rng);
  conv_bias(1, solo, rng);
  conv_bias(2, ctx, rng);
  movement_and_slices(1, solo, rng);
  movement_and_slices(37, ctx, rng);
  bits(1, solo, rng);
  bits(21, ctx, rng);
  gelu_exact(3, 128, ctx, rng);
  gelu_exact(5, 77, solo, rng);
  pools(1, solo, rng);
  pools(3, ctx, rng);
  bad_calls(ctx);
}

}  // namespace

// The suite on the CPU, then on the first OpenCL device where there is one (the library has
// OpenCL variants: TARGETS ... opencl); `app --opencl` fails where there is none.
int main(int argc, char** argv) {
  const bool need_opencl = argc > 1 && std::string(argv[1]) == "--opencl";
  std::mt19937 rng(42);
  kiln::Context ctx(2);  // two threads; a call without a context runs on the calling thread
  std::printf("kiln consumer app: kernels of nn.kiln on a CPU with %s\n", kiln::cpu_features_string().c_str());
  gpu_context(rng);
  suite(&ctx, nullptr, rng);
  kiln::Context ocl(kiln::Device::opencl());
  if (ocl.status().ok()) {
    std::printf("OpenCL context: found %s\n", ocl.device_name().c_str());
    suite(&ocl, &ocl, rng);
  } else {
    std::printf("OpenCL context: %s\n", std::string(ocl.status().message()).c_str());
    if (need_opencl) ++failures;
  }
  if (failures) {
    std::printf("%d FAILURES\n", failures);
    return 1;
  }
  std::printf("all results match the reference\n");
  return 0;
}

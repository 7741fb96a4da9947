// Firmware that runs kiln's kernels on a Cortex-M4 (qemu-system-arm -M mps2-an386, semihosting):
// the generated entry points of em.kiln at shapes that land in different variants, every result
// checked against a double-precision reference on random inputs with the output poisoned (NaN)
// first. Buffers are static and the workspace is the caller's: the calls allocate nothing, which
// the firmware checks by counting every malloc (the link wraps it). Bad calls must come back as
// statuses. Exit status 0 only when everything matched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "em.h"

extern "C" {
void* __real_malloc(size_t n);
size_t kiln_mallocs = 0;
void* __wrap_malloc(size_t n) {
  ++kiln_mallocs;
  return __real_malloc(n);
}
}

namespace {

constexpr int kMax = 32 * 256;
float a[kMax], b[kMax], bias[256], out[kMax];
double want[kMax];
alignas(64) unsigned char workspace[64 << 10];
int failures = 0;
uint32_t seed = 12345;

float uniform() {  // xorshift32 in [-1, 1)
  seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
  return float(int32_t(seed)) / 2147483648.0f;
}
void fill(float* x, int n, float scale = 1.0f) {
  for (int i = 0; i < n; ++i) x[i] = scale * uniform();
}
void poison(int n) {
  for (int i = 0; i < n; ++i) out[i] = NAN;
}

void check(const char* what, int m, int n, const kiln::Status& s, const std::string& variant) {
  if (!s.ok()) {
    std::printf("  %s: status %s: %s\n", what, kiln::status_code_name(s.code()), s.message().c_str());
    ++failures;
    return;
  }
  for (int i = 0; i < m * n; ++i) {
    double err = std::fabs(double(out[i]) - want[i]) / std::fmax(1.0, std::fabs(want[i]));
    if (!(err <= 1e-4)) {  // NaN (a value never written) fails too
      std::printf("  MISMATCH in %s at %d: got %g, want %g\n", what, i, double(out[i]), want[i]);
      ++failures;
      return;
    }
  }
  std::printf("%s %dx%d: %s\n", what, m, n, variant.c_str());
}

// the line of an explanation that says which variant ran
std::string taken(const std::string& explanation) {
  size_t end = explanation.find(": taken");
  if (end == std::string::npos) return "?? " + explanation;
  size_t start = explanation.rfind('\n', end);
  return explanation.substr(start + 3, end - start - 3);
}

void gemm(int m, int k, int n, kiln::Context* ctx, bool relu) {
  fill(a, m * k), fill(b, k * n), fill(bias, n), poison(m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = relu ? bias[j] : 0.0;
      for (int p = 0; p < k; ++p) acc += double(a[i * k + p]) * b[p * n + j];
      want[i * n + j] = relu ? std::fmax(acc, 0.0) : acc;
    }
  kiln::TensorView x(a, {m, k}), w(b, {k, n}), bv(bias, {n}), y(out, {m, n});
  size_t before = kiln_mallocs;
  kiln::Status s = relu ? em::dense_relu(x, w, bv, y, ctx) : em::gemm(x, w, y, ctx);
  if (kiln_mallocs != before) {
    std::printf("  %s allocated %u times\n", relu ? "dense_relu" : "gemm", unsigned(kiln_mallocs - before));
    ++failures;
  }
  check(relu ? "dense_relu" : "gemm", m, n, s,
        taken(relu ? em::dense_relu_explain(x, w, bv, y) : em::gemm_explain(x, w, y)));
}

enum class Rows { Softmax, Layernorm, Softplus };

void rows(Rows kind, int m, int d, kiln::Context* ctx) {
  fill(a, m * d, 4.0f), poison(m * d);
  for (int i = 0; i < m; ++i) {
    const float* x = a + i * d;
    double* y = want + i * d;
    if (kind == Rows::Softplus) {
      for (int j = 0; j < d; ++j) y[j] = std::log(std::exp(double(x[j])) + 1.0);
      continue;
    }
    double mean = 0, mx = -INFINITY;
    for (int j = 0; j < d; ++j) mean += x[j] / double(d), mx = std::fmax(mx, x[j]);
    if (kind == Rows::Softmax) {
      double sum = 0;
      for (int j = 0; j < d; ++j) sum += std::exp(double(x[j]) - mx);
      for (int j = 0; j < d; ++j) y[j] = std::exp(double(x[j]) - mx) / sum;
    } else {
      double var = 0;
      for (int j = 0; j < d; ++j) var += (x[j] - mean) * (x[j] - mean) / double(d);
      for (int j = 0; j < d; ++j) y[j] = (x[j] - mean) / std::sqrt(var + 1e-5);
    }
  }
  kiln::TensorView x(a, {m, d}), y(out, {m, d});
  size_t before = kiln_mallocs;
  kiln::Status s = kind == Rows::Softmax     ? em::softmax_rows(x, y, ctx)
                   : kind == Rows::Layernorm ? em::layernorm_rows(x, y, ctx)
                                             : em::softplus(x, y, ctx);
  if (kiln_mallocs != before) {
    std::printf("  a call allocated %u times\n", unsigned(kiln_mallocs - before));
    ++failures;
  }
  const char* name = kind == Rows::Softmax ? "softmax_rows" : kind == Rows::Layernorm ? "layernorm_rows" : "softplus";
  check(name, m, d, s,
        taken(kind == Rows::Softmax     ? em::softmax_rows_explain(x, y)
              : kind == Rows::Layernorm ? em::layernorm_rows_explain(x, y)
                                        : em::softplus_explain(x, y)));
}

void expect_status(const char* what, const kiln::Status& s, kiln::StatusCode code) {
  if (s.code() != code) {
    std::printf("  %s: got %s, want %s\n", what, kiln::status_code_name(s.code()), kiln::status_code_name(code));
    ++failures;
  }
}

}  // namespace

int main() {
  std::printf("kiln embedded firmware: kernels of em.kiln on a Cortex-M4\n");
  kiln::Context ctx(1);
  ctx.set_workspace(workspace, sizeof workspace);
  gemm(1, 64, 64, &ctx, false);  // the M == 1 && N % 16 variant
  gemm(8, 33, 48, &ctx, false);  // M % 4, N % 16
  gemm(7, 20, 13, &ctx, false);  // no bucket: the generic variant
  gemm(4, 64, 32, &ctx, true);
  gemm(3, 17, 5, &ctx, true);
  for (Rows k : {Rows::Softmax, Rows::Layernorm, Rows::Softplus}) {
    rows(k, 4, 64, &ctx);
    rows(k, 3, 77, &ctx);
  }
  // bad calls come back as statuses (their messages are the only allocations: counted, so the
  // count above is known to see them)
  size_t before_bad = kiln_mallocs;
  kiln::TensorView x(a, {4, 8}), w(b, {9, 16}), y(out, {4, 16});
  expect_status("mismatched K", em::gemm(x, w, y, &ctx), kiln::StatusCode::InvalidArgument);
  kiln::TensorView big(a, {33, 8}), w8(b, {8, 16}), ybig(out, {33, 16});
  expect_status("M out of range", em::gemm(big, w8, ybig, &ctx), kiln::StatusCode::OutOfRange);
  const float* ro = a;
  kiln::TensorView ro_out(ro, {4, 16});
  expect_status("read-only output", em::gemm(x, kiln::TensorView(b, {8, 16}), ro_out, &ctx),
                kiln::StatusCode::InvalidArgument);
  kiln::Context small(1);
  static unsigned char tiny[16];
  small.set_workspace(tiny, sizeof tiny);
  kiln::TensorView sx(a, {4, 64}), sy(out, {4, 64});
  kiln::Status st = em::softmax_rows(sx, sy, &small);
  if (em::softmax_rows_workspace_size(4, 64) > sizeof tiny)
    expect_status("a workspace too small", st, kiln::StatusCode::ResourceExhausted);
  if (kiln_mallocs == before_bad) {
    std::printf("  the bad calls' messages were not counted: the malloc count sees nothing\n");
    ++failures;
  }
  if (failures == 0)
    std::printf(
        "bad calls: statuses as expected (%u allocations for their messages)\nall results match the reference\n",
        unsigned(kiln_mallocs - before_bad));
  else
    std::printf("%d FAILURES\n", failures);
  return failures == 0 ? 0 : 1;
}

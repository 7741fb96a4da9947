// Firmware that runs kiln's kernels on a Cortex-M4 (qemu-system-arm -M mps2-an386, semihosting):
// the generated entry points of em.kiln at shapes that land in different variants, every result
// checked against a double-precision reference on random inputs with the output poisoned (NaN)
// first. Buffers are static and the workspace is the caller's. The runtime uses no heap here
// (KILN_HEAP is 0 on M profile), which the firmware checks by counting every malloc (the link
// wraps it): none while a Context is made, none in an ok call, none in a bad call, whose status
// must still carry its code and its message. The count is first shown to see the firmware's own
// malloc and operator new, so that its zeros mean something. Exit status 0 only when everything
// matched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "em.h"

static_assert(!KILN_HEAP, "the runtime of a Cortex-M build uses no heap");

extern "C" {
void* __real_malloc(size_t n);
// volatile: GCC takes malloc and operator new to leave every other variable alone, so it would
// read a plain count once around them
volatile size_t kiln_mallocs = 0;
void* __wrap_malloc(size_t n) {
  kiln_mallocs = kiln_mallocs + 1;
  return __real_malloc(n);
}
}

namespace {

constexpr int kMax = 32 * 256;
float a[kMax], b[kMax], bias[256], out[kMax];
double want[kMax];
alignas(64) unsigned char workspace[64 << 10];
int failures = 0;
int windows = 0;  // the stretches checked to allocate nothing
uint32_t seed = 12345;

// what the stretch since `before` (a Context made, a call) allocated must be nothing
void expect_no_malloc(const char* what, size_t before) {
  ++windows;
  if (kiln_mallocs == before) return;
  std::printf("  %s allocated %u times\n", what, unsigned(kiln_mallocs - before));
  ++failures;
}

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
  expect_no_malloc(relu ? "dense_relu" : "gemm", before);
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
  const char* name = kind == Rows::Softmax ? "softmax_rows" : kind == Rows::Layernorm ? "layernorm_rows" : "softplus";
  expect_no_malloc(name, before);
  check(name, m, d, s,
        taken(kind == Rows::Softmax     ? em::softmax_rows_explain(x, y)
              : kind == Rows::Layernorm ? em::layernorm_rows_explain(x, y)
                                        : em::softplus_explain(x, y)));
}

// A bad call's status: its code, and its message, exact where `message` is given, else non-empty.
void expect_status(const char* what, const kiln::Status& s, kiln::StatusCode code, const char* message = nullptr) {
  std::printf("  %s: %s: %s\n", what, kiln::status_code_name(s.code()), s.message().c_str());
  if (s.code() != code) {
    std::printf("  %s: got %s, want %s\n", what, kiln::status_code_name(s.code()), kiln::status_code_name(code));
    ++failures;
  }
  if (s.message().empty() || std::strlen(s.message().c_str()) != s.message().size() ||
      (message != nullptr && s.message() != message)) {
    std::printf("  %s: wrong message, want \"%s\"\n", what, message ? message : "(any)");
    ++failures;
  }
}

// The count sees an allocation through malloc and through operator new (std::string's and
// std::make_unique's way to the heap); the volatile stores keep the compiler from eliding them.
bool malloc_count_works() {
  size_t before = kiln_mallocs;
  void* volatile p = std::malloc(24);
  std::free(p);
  const bool seen_malloc = kiln_mallocs == before + 1;
  before = kiln_mallocs;
  void* volatile q = ::operator new(24);
  ::operator delete(q);
  const bool seen_new = kiln_mallocs == before + 1;
  std::printf("malloc count: sees malloc %s, operator new %s\n", seen_malloc ? "yes" : "NO", seen_new ? "yes" : "NO");
  return seen_malloc && seen_new;
}

void bad_calls(kiln::Context* ctx) {
  kiln::TensorView x(a, {4, 8}), w(b, {9, 16}), y(out, {4, 16});
  kiln::TensorView big(a, {33, 8}), w8(b, {8, 16}), ybig(out, {33, 16});
  const float* ro = a;
  kiln::TensorView ro_out(ro, {4, 16});
  kiln::TensorView sx(a, {4, 64}), sy(out, {4, 64});
  const char* long_name = "a_kernel_whose_name_is_long_enough_to_push_its_message_past_the_status_buffer";
  static unsigned char tiny[16];
  // no printing in the stretch counted: newlib's stdio may allocate its buffers
  size_t before = kiln_mallocs;
  kiln::Context small(1);
  small.set_workspace(tiny, sizeof tiny);
  kiln::Status mismatched = em::gemm(x, w, y, ctx);
  kiln::Status range = em::gemm(big, w8, ybig, ctx);
  kiln::Status read_only = em::gemm(x, w8, ro_out, ctx);
  kiln::Status too_small = em::softmax_rows(sx, sy, &small);
  kiln::Status short_workspace;
  void* none = kiln::detail::workspace(&small, 64, &short_workspace);
  kiln::Status cut = kiln::detail::overlap_error(long_name, "out", "in", false);
  kiln::Status copy = mismatched;
  kiln::Status moved = std::move(range);
  expect_no_malloc("the bad calls", before);

  expect_status("mismatched K", mismatched, kiln::StatusCode::InvalidArgument,
                "gemm: argument b: dim 0 (K) is 9, but argument a dim 1 set K = 8");
  expect_status("a copy of it", copy, kiln::StatusCode::InvalidArgument,
                "gemm: argument b: dim 0 (K) is 9, but argument a dim 1 set K = 8");
  expect_status("M out of range", moved, kiln::StatusCode::OutOfRange,
                "gemm: argument a: dim 0 (M) is 33, outside the declared range 1..32");
  if (!range.ok()) {  // NOLINT(bugprone-use-after-move): moved-from is ok
    std::printf("  a moved-from status is not ok\n");
    ++failures;
  }
  expect_status("read-only output", read_only, kiln::StatusCode::InvalidArgument,
                "gemm: argument c: output is a view of const data");
  if (none != nullptr) {
    std::printf("  a workspace too small was handed out\n");
    ++failures;
  }
  expect_status("a workspace too small", short_workspace, kiln::StatusCode::ResourceExhausted,
                "workspace: the call needs 64 bytes, the context's workspace has 16");
  const size_t need = em::softmax_rows_workspace_size(4, 64);
  if (need > sizeof tiny) {
    const std::string want =
        "workspace: the call needs " + std::to_string(need) + " bytes, the context's workspace has 16";
    expect_status("softmax_rows, its workspace too small", too_small, kiln::StatusCode::ResourceExhausted,
                  want.c_str());
  }
  // a message past the Status's buffer is cut to fit, visibly
  const std::string full = std::string(long_name) +
                           ": argument out: output overlaps input in in memory (a kernel reads and writes its "
                           "arguments as if they were apart)";
  const std::string want_cut = full.substr(0, kiln::Status::kMessageBytes - 4) + "...";
  expect_status("a message cut to fit", cut, kiln::StatusCode::InvalidArgument, want_cut.c_str());
}

}  // namespace

int main() {
  std::printf("kiln embedded firmware: kernels of em.kiln on a Cortex-M4\n");
  if (!malloc_count_works()) {
    std::printf("the malloc count sees nothing: its zeros would prove nothing\n");
    return 1;
  }
  size_t before = kiln_mallocs;
  kiln::Context ctx(1);
  ctx.set_workspace(workspace, sizeof workspace);
  expect_no_malloc("constructing a Context", before);
  gemm(1, 64, 64, &ctx, false);  // the M == 1 && N % 16 variant
  gemm(8, 33, 48, &ctx, false);  // M % 4, N % 16
  gemm(7, 20, 13, &ctx, false);  // no bucket: the generic variant
  gemm(4, 64, 32, &ctx, true);
  gemm(3, 17, 5, &ctx, true);
  for (Rows k : {Rows::Softmax, Rows::Layernorm, Rows::Softplus}) {
    rows(k, 4, 64, &ctx);
    rows(k, 3, 77, &ctx);
  }
  std::printf("bad calls come back as statuses:\n");
  bad_calls(&ctx);
  if (failures == 0)
    std::printf(
        "no allocation in %d stretches: a Context made, every call, the bad calls\n"
        "all results match the reference\n",
        windows);
  else
    std::printf("%d FAILURES\n", failures);
  return failures == 0 ? 0 : 1;
}

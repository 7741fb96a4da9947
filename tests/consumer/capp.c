/* A C99 consumer of kiln (gcc -std=c99 -Wall -Werror): it calls the generated C entry points of
 * nn.kiln (nn_<kernel>, declared in nn.h for C) with a context whose memory comes from its own
 * allocator, checks the results against a plain double-precision reference (outputs poisoned with
 * NaN first), and checks that every class of bad call comes back as a status with its code and
 * message. Exit status 0 only when everything matched and every allocation was given back. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

static int failures = 0;

/* ---------------------------------------------------------------- an allocator that counts */

typedef struct {
  int allocs, frees;
} counts;

/* malloc's block, aligned up, with the block's address kept just below what is returned */
static void* counting_alloc(void* self, size_t bytes, size_t alignment) {
  unsigned char* raw = (unsigned char*)malloc(bytes + alignment + sizeof(void*));
  uintptr_t at;
  if (raw == NULL) return NULL;
  at = ((uintptr_t)(raw + sizeof(void*)) + alignment - 1) & ~(uintptr_t)(alignment - 1);
  memcpy((unsigned char*)at - sizeof(void*), &raw, sizeof raw);
  ((counts*)self)->allocs++;
  return (void*)at;
}

static void counting_free(void* self, void* p) {
  void* raw;
  memcpy(&raw, (unsigned char*)p - sizeof(void*), sizeof raw);
  free(raw);
  ((counts*)self)->frees++;
}

/* ---------------------------------------------------------------- tensors and values */

static kiln_tensor tensor2(float* data, int64_t rows, int64_t cols) {
  kiln_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = KILN_FLOAT32;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.writable = 1;
  return t;
}

static kiln_tensor tensor1(float* data, int64_t n) {
  kiln_tensor t = tensor2(data, n, 0);
  t.rank = 1;
  t.shape[1] = 0;
  return t;
}

static uint32_t rng_state = 12345u;
static float* random_floats(size_t n) {
  float* v = (float*)malloc(n * sizeof(float));
  size_t i;
  for (i = 0; i < n; ++i) {
    rng_state = rng_state * 1664525u + 1013904223u;
    v[i] = (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

static float* poisoned(size_t n) {
  float* v = (float*)malloc(n * sizeof(float));
  size_t i;
  for (i = 0; i < n; ++i) v[i] = (float)NAN;
  return v;
}

static void check(const char* what, const float* got, const double* want, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    double err = fabs((double)got[i] - want[i]) / (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);
    if (!(err <= 1e-4)) { /* NaN (a value never written) fails too */
      printf("  MISMATCH in %s at %lu: got %g, want %g\n", what, (unsigned long)i, (double)got[i], want[i]);
      ++failures;
      return;
    }
  }
  printf("  %s: ok\n", what);
}

/* the status must be ok (NULL); a failed one is reported and freed */
static void expect_ok(const char* what, kiln_status_t s) {
  if (s == NULL) return;
  printf("  FAILED %s: %s %s\n", what, kiln_status_name(kiln_status_code(s)), kiln_status_message(s));
  kiln_status_free(s);
  ++failures;
}

/* the status must carry this code and this message; it is freed */
static void expect_status(const char* what, kiln_status_t s, int32_t code, const char* message) {
  if (s == NULL) {
    printf("  WRONG STATUS for %s: ok\n", what);
    ++failures;
    return;
  }
  if (kiln_status_code(s) != code || strcmp(kiln_status_message(s), message) != 0) {
    printf("  WRONG STATUS for %s: %s %s\n    expected: %s %s\n", what, kiln_status_name(kiln_status_code(s)),
           kiln_status_message(s), kiln_status_name(code), message);
    ++failures;
  }
  kiln_status_free(s);
}

/* ---------------------------------------------------------------- calls */

static void gemm(kiln_context* ctx, int64_t m, int64_t k, int64_t n) {
  float *a = random_floats((size_t)(m * k)), *b = random_floats((size_t)(k * n)), *c = poisoned((size_t)(m * n));
  double* want = (double*)malloc((size_t)(m * n) * sizeof(double));
  kiln_tensor ta = tensor2(a, m, k), tb = tensor2(b, k, n), tc = tensor2(c, m, n);
  int64_t i, j, p;
  char what[64];
  ta.writable = tb.writable = 0; /* inputs may be views of const data */
  for (i = 0; i < m; ++i)
    for (j = 0; j < n; ++j) {
      double s = 0;
      for (p = 0; p < k; ++p) s += (double)a[i * k + p] * b[p * n + j];
      want[i * n + j] = s;
    }
  sprintf(what, "nn_gemm %ldx%ldx%ld", (long)m, (long)k, (long)n);
  expect_ok(what, nn_gemm(&ta, &tb, &tc, ctx));
  check(what, c, want, (size_t)(m * n));
  free(a), free(b), free(c), free(want);
}

/* y = relu(x @ w1 + b1) @ w2 + b2: the hidden layer is in the workspace */
static void mlp(kiln_context* ctx, int64_t m) {
  float *x = random_floats((size_t)(m * 64)), *w1 = random_floats(64 * 128), *b1 = random_floats(128);
  float *w2 = random_floats(128 * 10), *b2 = random_floats(10), *y = poisoned((size_t)(m * 10));
  double* want = (double*)malloc((size_t)(m * 10) * sizeof(double));
  kiln_tensor tx = tensor2(x, m, 64), tw1 = tensor2(w1, 64, 128), tb1 = tensor1(b1, 128);
  kiln_tensor tw2 = tensor2(w2, 128, 10), tb2 = tensor1(b2, 10), ty = tensor2(y, m, 10);
  int64_t i, j, h, p;
  for (i = 0; i < m; ++i)
    for (j = 0; j < 10; ++j) {
      double s = b2[j];
      for (h = 0; h < 128; ++h) {
        double t = b1[h];
        for (p = 0; p < 64; ++p) t += (double)x[i * 64 + p] * w1[p * 128 + h];
        s += (t > 0 ? t : 0) * w2[h * 10 + j];
      }
      want[i * 10 + j] = s;
    }
  expect_ok("nn_mlp", nn_mlp(&tx, &tw1, &tb1, &tw2, &tb2, &ty, ctx));
  check("nn_mlp", y, want, (size_t)(m * 10));
  free(x), free(w1), free(b1), free(w2), free(b2), free(y), free(want);
}

/* every class of bad call: its code and its message; nothing runs */
static void bad_calls(kiln_context* ctx) {
  static float a[64 * 64], b[64 * 64], c[64 * 64];
  static const float cc[64 * 64];
  static double d[64];
  const int32_t bad = KILN_INVALID_ARGUMENT;
  kiln_tensor ta = tensor2(a, 4, 8), tb = tensor2(b, 8, 16), tc = tensor2(c, 4, 16), t;
  kiln_tensor tw1, tb1, tw2, tb2, ty;
  kiln_context* none = NULL;
  kiln_allocator_t half = {NULL, counting_alloc, NULL};
  size_t i;
  for (i = 0; i < sizeof c / sizeof c[0]; ++i) c[i] = (float)NAN;

  expect_status("no context", nn_gemm(&ta, &tb, &tc, NULL), bad,
                "gemm: no context (a C call needs one: kiln_context_create)");
  expect_status("null descriptor", nn_gemm(&ta, NULL, &tc, ctx), bad, "gemm: argument b: null kiln_tensor");
  t = tensor2(NULL, 4, 8);
  expect_status("null data", nn_gemm(&t, &tb, &tc, ctx), bad, "gemm: argument a: null data pointer");
  t = tensor1(a, 32);
  expect_status("wrong rank", nn_gemm(&t, &tb, &tc, ctx), bad, "gemm: argument a: expected rank 2, got rank 1");
  t = tensor2((float*)d, 8, 8);
  t.dtype = KILN_FLOAT64;
  expect_status("wrong dtype", nn_gemm(&ta, &t, &tc, ctx), bad, "gemm: argument b: expected dtype f32, got f64");
  t = tensor2(b, 7, 16);
  expect_status("dims that disagree", nn_gemm(&ta, &t, &tc, ctx), bad,
                "gemm: argument b: dim 0 (K) is 7, but argument a dim 1 set K = 8");
  t = tensor2(a, 1025, 8);
  expect_status("a dim out of range", nn_gemm(&t, &tb, &tc, ctx), KILN_OUT_OF_RANGE,
                "gemm: argument a: dim 0 (M) is 1025, outside the declared range 1..1024");
  t = tensor2(a, 4, -1);
  expect_status("a negative dim", nn_gemm(&t, &tb, &tc, ctx), bad, "gemm: argument a: dim 1 is negative (-1)");
  t = tensor2(a, 4, 63);
  tw1 = tensor2(b, 64, 128), tb1 = tensor1(b, 128), tw2 = tensor2(b, 128, 10), tb2 = tensor1(b, 10);
  ty = tensor2(c, 4, 10);
  expect_status("a literal dim", nn_mlp(&t, &tw1, &tb1, &tw2, &tb2, &ty, ctx), bad,
                "mlp: argument x: dim 1 is 63, expected 64");
  t = tensor2((float*)cc, 4, 16);
  t.writable = 0;
  expect_status("a const output", nn_gemm(&ta, &tb, &t, ctx), bad, "gemm: argument c: output is a view of const data");
  t = ta;
  t.rank = -1; /* what a shape of more than KILN_MAX_RANK dims becomes */
  expect_status("too many dims", nn_gemm(&t, &tb, &tc, ctx), bad, "gemm: argument a: more than 8 dims");
  t = tensor2(a, 4, 16);
  expect_status("an output over an input", nn_gemm(&ta, &tb, &t, ctx), bad,
                "gemm: argument c: output overlaps input a in memory (a kernel reads and writes its arguments as "
                "if they were apart)");
  for (i = 0; i < sizeof c / sizeof c[0]; ++i)
    if (!isnan(c[i])) {
      printf("  a refused call wrote its output\n");
      ++failures;
      break;
    }

  /* the runtime's own calls */
  expect_status("another ABI", kiln_abi_check(KILN_ABI_VERSION + 1, "nn"), KILN_UNSUPPORTED,
                "nn: generated for kiln ABI 2, but this runtime speaks ABI 1 (generate it again with the kiln of "
                "this runtime)");
  expect_ok("this ABI", kiln_abi_check(kiln_abi_version(), "nn"));
  expect_status("negative threads", kiln_context_create(-4, NULL, &none), bad,
                "kiln_context_create: threads is -4 (0 for the hardware's concurrency, or 1..256)");
  expect_status("an allocator without free", kiln_context_create(1, &half, &none), bad,
                "kiln_context_create: the allocator lacks its free function");
  expect_status("no out-parameter", kiln_context_create(1, NULL, NULL), bad,
                "kiln_context_create: no out-parameter for the context (NULL)");
  if (none != NULL) {
    printf("  a failed kiln_context_create made a context\n");
    ++failures;
  }
  expect_status("threads of no context", kiln_context_set_threads(NULL, 2), bad,
                "kiln_context_set_threads: no context (NULL)");
  expect_status("a NULL workspace", kiln_context_set_workspace(ctx, NULL, 16), bad,
                "kiln_context_set_workspace: a NULL workspace of 16 bytes (NULL, 0 lets the context allocate)");
  printf("  bad calls: statuses as expected\n");
}

/* a workspace of the caller's that is too small: refused with both sizes */
static void small_workspace(kiln_context* ctx) {
  static float x[3 * 64], w1[64 * 128], b1[128], w2[128 * 10], b2[10], y[3 * 10];
  kiln_tensor tx = tensor2(x, 3, 64), tw1 = tensor2(w1, 64, 128), tb1 = tensor1(b1, 128);
  kiln_tensor tw2 = tensor2(w2, 128, 10), tb2 = tensor1(b2, 10), ty = tensor2(y, 3, 10);
  const size_t need = nn_mlp_workspace_size(3);
  char* small = (char*)malloc(need);
  char message[256];
  if (need == 0) {
    printf("  nn_mlp_workspace_size(3): 0\n");
    ++failures;
  }
  /* through a context at least as much (each of its threads may pack an operand), through none the same */
  if (nn_mlp_workspace_size_for(3, ctx) < need || nn_mlp_workspace_size_for(3, NULL) != need) {
    printf("  nn_mlp_workspace_size_for(3, ctx): %lu, not %lu\n", (unsigned long)nn_mlp_workspace_size_for(3, ctx),
           (unsigned long)need);
    ++failures;
  }
  sprintf(message, "workspace: the call needs %lu bytes, the context's workspace has %lu", (unsigned long)need,
          (unsigned long)(need - 1));
  expect_ok("a workspace of the caller's", kiln_context_set_workspace(ctx, small, need - 1));
  expect_status("a workspace too small", nn_mlp(&tx, &tw1, &tb1, &tw2, &tb2, &ty, ctx), KILN_RESOURCE_EXHAUSTED,
                message);
  expect_ok("a workspace big enough", kiln_context_set_workspace(ctx, small, need));
  expect_ok("nn_mlp in the caller's workspace", nn_mlp(&tx, &tw1, &tb1, &tw2, &tb2, &ty, ctx));
  expect_ok("back to the allocator", kiln_context_set_workspace(ctx, NULL, 0));
  free(small);
}

int main(void) {
  counts n = {0, 0};
  kiln_allocator_t allocator;
  kiln_context* ctx = NULL;
  allocator.self = &n;
  allocator.alloc = counting_alloc;
  allocator.free = counting_free;
  printf("kiln C consumer: the C entry points of nn.kiln, kiln ABI %d\n", (int)kiln_abi_version());
  expect_ok("kiln_context_create", kiln_context_create(2, &allocator, &ctx));
  if (ctx == NULL) return 1;
  gemm(ctx, 1, 256, 256);
  gemm(ctx, 37, 70, 50);
  gemm(ctx, 32, 128, 64);
  mlp(ctx, 48);
  mlp(ctx, 5);
  bad_calls(ctx);
  small_workspace(ctx);
  kiln_context_destroy(ctx);
  if (n.allocs == 0 || n.frees != n.allocs) {
    printf("  the allocator gave %d blocks and got %d back\n", n.allocs, n.frees);
    ++failures;
  }
  if (failures) {
    printf("%d FAILURES\n", failures);
    return 1;
  }
  printf("C entry points: all results match the reference; %d blocks from the context's allocator, all given back\n",
         n.allocs);
  return 0;
}

#include "generator/emit/tune_harness.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "generator/ir/text.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::emit::detail {

std::optional<int64_t> value_in_bucket(const frontend::Dim& d, const frontend::Specialization* b, int64_t want) {
  auto fits = [&](int64_t x) {
    if (b) return b->multiple ? x % b->value == 0 : x == b->value;
    for (const frontend::Specialization& s : d.specializations)
      if (s.multiple ? x % s.value == 0 : x == s.value) return false;
    return true;
  };
  want = std::clamp(want, d.min, d.max);
  for (int64_t x = want; x >= d.min; --x)
    if (fits(x)) return x;
  for (int64_t x = want + 1; x <= d.max; ++x)
    if (fits(x)) return x;
  return std::nullopt;
}

namespace {

// an expression of the dims at these values
int64_t evaluate(const UOp* e, const std::vector<const UOp*>& dims, const std::vector<int64_t>& values) {
  std::unordered_map<const UOp*, const UOp*> at;
  for (const UOp* u : toposort(e))
    if (u->op == Op::DEFINE_VAR)
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i]->arg<VarArg>().name == u->arg<VarArg>().name) at[u] = e->ctx().cint(values[i], u->dtype);
  const UOp* v = simplify(substitute(e, at));
  if (v->op != Op::CONST) throw InternalError("kiln tune: a buffer's size does not fold at the shape: " + print(v));
  return v->ival();
}

}  // namespace

std::vector<BufferInfo> buffers_of(const UOp* ast, const std::vector<const UOp*>& dims,
                                   const std::vector<int64_t>& values) {
  std::vector<BufferInfo> bufs;
  for (const UOp* u : toposort(ast)) {
    if (u->op != Op::PARAM) continue;
    size_t slot = size_t(u->arg<ParamArg>().slot);
    if (bufs.size() <= slot) bufs.resize(slot + 1, {0, 5, 1});
    DType d = u->dtype.elem();
    int kind = d.scalar == Scalar::Bool       ? 0
               : d.scalar == Scalar::Float32  ? 1
               : d.scalar == Scalar::Float64  ? 2
               : d.scalar == Scalar::Float16  ? 3
               : d.scalar == Scalar::BFloat16 ? 4
                                              : 5;
    bufs[slot] = {evaluate(u->src(0), dims, values) * itemsize(d), kind, itemsize(d.base())};
  }
  return bufs;
}

int64_t scratch_bytes(const std::vector<codegen::CKernel>& ks, size_t nbufs, const std::vector<const UOp*>& dims,
                      const std::vector<int64_t>& values) {
  int64_t most = 0;
  for (const codegen::CKernel& k : ks) {
    if (k.scratch_slot < 0) continue;
    if (size_t(k.scratch_slot) != std::max<size_t>(nbufs, 1))
      throw InternalError("kiln tune: kernel " + k.name + ": its scratch is not in the slot after its buffers");
    most = std::max(most, evaluate(k.scratch_bytes, dims, values));
  }
  return most;
}

// The harness: candidate 0 (the heuristics') gives the reference outputs from random non-zero
// inputs; each candidate from `first` on is run from the same inputs, checked, then timed:
// "c <i> ok <ns>" or "c <i> mismatch <why>", one line each, until the budget (ms) is spent.
std::string harness_c(size_t count, const std::vector<BufferInfo>& bufs, const std::vector<int64_t>& values,
                      int64_t scratch) {
  std::ostringstream s;
  s << "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
       "#include <time.h>\n"
       "typedef void kiln_fn(void* const*, const int64_t*, int32_t, int32_t);\n";
  for (size_t i = 0; i < count; ++i) s << "kiln_fn kiln_tune_" << i << ";\n";
  s << "static kiln_fn* const fns[] = {";
  for (size_t i = 0; i < count; ++i) s << (i ? ", " : "") << "kiln_tune_" << i;
  s << "};\nenum { NC = " << count << ", NB = " << std::max<size_t>(bufs.size(), 1) << " };\n";
  s << "static const int64_t scratch_bytes = " << scratch << ";\n";
  s << "static const int64_t vars[] = {0";
  for (int64_t v : values) s << ", " << v;
  std::vector<BufferInfo> bs = bufs;
  if (bs.empty()) bs.push_back({0, 5, 1});
  auto list = [&](const char* decl, auto field) {
    s << decl << " = {";
    for (size_t i = 0; i < bs.size(); ++i) s << (i ? ", " : "") << field(bs[i]);
    s << "};\n";
  };
  s << "};\n";
  list("static const int64_t bytes[NB]", [](const BufferInfo& b) { return b.bytes; });
  list("static const int kind[NB]", [](const BufferInfo& b) { return b.kind; });
  list("static const int elem[NB]", [](const BufferInfo& b) { return b.elem; });
  s << R"(static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
static double as_double(const unsigned char* p, int k) {
  float f; double d; uint32_t u; uint16_t h;
  switch (k) {
    case 1: memcpy(&f, p, 4); return f;
    case 2: memcpy(&d, p, 8); return d;
    case 4: memcpy(&h, p, 2); u = (uint32_t)h << 16; memcpy(&f, &u, 4); return f;
    case 3: {
      memcpy(&h, p, 2);
      int e = (h >> 10) & 31, m = h & 1023;
      double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
      return (h & 0x8000) ? -v : v;
    }
  }
  return 0;
}
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void fill(unsigned char* p, int64_t n, int k, int e) {
  for (int64_t i = 0; i + e <= n; i += e) {
    double v = (0.25 + 0.75 * (double)(next() % 1000) / 1000.0) * ((next() & 1) ? 1 : -1);
    float f = (float)v; uint32_t u; uint16_t h; int64_t x = (int64_t)(next() % 4) + 1;
    switch (k) {
      case 0: p[i] = 1; break;
      case 1: memcpy(p + i, &f, 4); break;
      case 2: memcpy(p + i, &v, 8); break;
      case 3: h = (uint16_t)(0x3800 + (next() % 1024)) | (uint16_t)((next() & 1) << 15); memcpy(p + i, &h, 2); break;
      case 4: memcpy(&u, &f, 4); h = (uint16_t)(u >> 16); memcpy(p + i, &h, 2); break;
      default: memcpy(p + i, &x, (size_t)e); break;
    }
  }
}
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int first = atoi(argv[1]);
  double budget = atof(argv[2]) * 1e6, start = now_ns();
  void* bufs[NB];
  unsigned char *init[NB], *ref[NB];
  for (int b = 0; b < NB; ++b) {
    size_t n = (size_t)((bytes[b] + 63) / 64 * 64 + 64);
    bufs[b] = aligned_alloc(64, n); init[b] = malloc(n); ref[b] = malloc(n);
    if (!bufs[b] || !init[b] || !ref[b]) { printf("error out of memory\n"); return 2; }
    fill(init[b], bytes[b], kind[b], elem[b]);
  }
  /* the kernels' arguments: the buffers, then the scratch (never compared) */
  void* args[NB + 1];
  for (int b = 0; b < NB; ++b) args[b] = bufs[b];
  args[NB] = scratch_bytes > 0 ? aligned_alloc(64, (size_t)((scratch_bytes + 63) / 64 * 64)) : NULL;
  if (scratch_bytes > 0 && !args[NB]) { printf("error out of memory\n"); return 2; }
  for (int b = 0; b < NB; ++b) memcpy(bufs[b], init[b], (size_t)bytes[b]);
  /* the heuristics' kernel: the outputs to match, and (one cold call) the time to beat */
  double best = now_ns();
  fns[0](args, vars + 1, 0, 1);
  best = now_ns() - best;
  for (int b = 0; b < NB; ++b) memcpy(ref[b], bufs[b], (size_t)bytes[b]);
  for (int c = first; c < NC; ++c) {
    if (c > first && now_ns() - start > budget) { printf("stop\n"); break; }
    for (int b = 0; b < NB; ++b) memcpy(bufs[b], init[b], (size_t)bytes[b]);
    double t0 = now_ns();
    fns[c](args, vars + 1, 0, 1);
    double once = now_ns() - t0;
    int bad = 0;
    for (int b = 0; b < NB && !bad; ++b) {
      const unsigned char* got = bufs[b];
      if (kind[b] == 0 || kind[b] == 5) {
        if (memcmp(got, ref[b], (size_t)bytes[b]) != 0) { printf("c %d mismatch in buffer %d\n", c, b); bad = 1; }
        continue;
      }
      double scale = 0;
      for (int64_t i = 0; i < bytes[b]; i += elem[b]) scale = fmax(scale, fabs(as_double(ref[b] + i, kind[b])));
      double tol = (kind[b] == 2 ? 1e-9 : kind[b] == 1 ? 1e-3 : 2e-2) * (scale > 1 ? scale : 1);
      for (int64_t i = 0; i < bytes[b] && !bad; i += elem[b]) {
        double x = as_double(got + i, kind[b]), y = as_double(ref[b] + i, kind[b]);
        if ((isnan(x) && isnan(y)) || fabs(x - y) <= tol) continue;
        printf("c %d mismatch in buffer %d at element %lld: %g, expected %g\n", c, b, (long long)(i / elem[b]), x, y);
        bad = 1;
      }
    }
    fflush(stdout);
    if (bad) continue;
    /* far slower than the heuristics' kernel on its first call: no more of its time is spent */
    if (once > 3 * best && once > 1e6) {
      printf("c %d ok %.1f %.1f\n", c, once, best);
      fflush(stdout);
      continue;
    }
    /* samples of the candidate and of the heuristics' kernel in turn, so a change in the machine's
       load moves both; a sample is n calls, n making it 20 us at least (not the clock's time) */
    double t_best = INFINITY, t_base = INFINITY, total = 0;
    int n = once >= 2e4 ? 1 : once < 2 ? 10000 : (int)(2e4 / once) + 1;
    for (int r = 0; r < 20; ++r) {
      for (int k = 0; k < 2; ++k) {
        kiln_fn* f = fns[k ? c : 0];
        t0 = now_ns();
        for (int i = 0; i < n; ++i) f(args, vars + 1, 0, 1);
        double dt = (now_ns() - t0) / n;
        total += dt * n;
        if (k && dt < t_best) t_best = dt;
        if (!k && dt < t_base) t_base = dt;
      }
      if ((r >= 2 && total > 2e8) || t_best > 3 * t_base) break;
    }
    if (t_base < best) best = t_base;
    printf("c %d ok %.1f %.1f\n", c, t_best, t_base);
    fflush(stdout);
  }
  return 0;
}
)";
  return s.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run_command(const std::string& cmd, const std::function<void(const std::string&)>& line) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string l(buf);
    if (!l.empty() && l.back() == '\n') l.pop_back();
    line(l);
  }
  return pclose(p);
}

}  // namespace kiln::emit::detail

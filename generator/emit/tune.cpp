// kiln tune (tune.h): the beam search, the timing harness and the database's updates.
#include "generator/emit/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "generator/codegen/pipeline.h"
#include "generator/emit/generator.h"
#include "generator/emit/tune_db.h"
#include "generator/emit/tune_harness.h"
#include "generator/ir/text.h"
#include "generator/render/c.h"
#include "generator/render/llvm.h"
#include "generator/rewrite/rewrite.h"
#include "generator/symbolic/symbolic.h"
#include "generator/target/host.h"
#include "generator/target/llvm_compile.h"

namespace kiln::emit::detail {

namespace {

using Clock = std::chrono::steady_clock;
using codegen::Opt;
using codegen::TunedOpts;

#if defined(__x86_64__)
constexpr const char* kHostArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* kHostArch = "aarch64";
#else
constexpr const char* kHostArch = "";
#endif

// One scheduled kernel of one variant: what is searched.
struct Job {
  const SpecFile* file;
  const KernelInfo* kernel;
  const Variant* variant;
  const UOp* ast;
  std::string label, hash;
  std::vector<int64_t> values;  // vars[]: the shape it is timed at
};

// A candidate: the opts the search chose (no THREAD: that is added last, as the heuristics do)
struct Candidate {
  TunedOpts search;  // what the beam expands
  TunedOpts full;    // what is compiled: search, then THREAD where the target has threads
  const UOp* sink;   // the kernel after them (candidates that make one kernel are one)
  double ns = -1;    // best time; -1: not timed
  double base = -1;  // the heuristics' kernel's best in the same samples
  bool bad = false;  // its outputs disagree with the heuristics', or it crashed
};

// a candidate's time against the heuristics' kernel's: "0.83x"
std::string ratio_text(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", r);
  return buf;
}

std::string us_text(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f us", ns / 1000);
  return buf;
}

}  // namespace

class Tuner {
 public:
  Tuner(const TuneOptions& t, Generator& g) : t_(t), g_(g) {}

  TuneResult run();

 private:
  bool interrupted() const { return t_.stop && t_.stop->load(); }
  bool stopped() const { return interrupted() || (t_.budget_s > 0 && Clock::now() >= deadline_); }
  double seconds_left() const {
    return t_.budget_s > 0 ? std::chrono::duration<double>(deadline_ - Clock::now()).count() : 1e9;
  }
  bool write_db(std::string& err);
  // searches one job; false with err for a failure of the tools (the compiler, the harness)
  bool search(const Job& job, size_t index, size_t count, std::optional<TuneEntry>& found, std::string& err);
  std::optional<Candidate> make(const UOp* sink0, const TunedOpts& search) const;
  std::vector<TunedOpts> actions(const UOp* pre, const TunedOpts& c) const;
  // compiles the candidates (index 0: the heuristics', opts null) into one harness; its path
  // `unproven` (where given): the indices of `opts` whose kernels have an access the bounds prover
  // cannot prove (kiln gen would not emit them): the harness times the heuristics' kernel in their
  // place, and the caller drops them
  bool build(const Job& job, const std::vector<const TunedOpts*>& opts, std::string& exe, std::string& err,
             std::vector<size_t>* unproven = nullptr);

  const TuneOptions& t_;
  Generator& g_;
  const Target* target_ = nullptr;
  Clock::time_point deadline_;
  std::vector<TuneEntry> db_;
  int builds_ = 0;
  bool timed_ = false;  // a harness of this tune has timed the heuristics' kernel (see search())
};

std::optional<Candidate> Tuner::make(const UOp* sink0, const TunedOpts& search) const {
  Candidate c{search, search, nullptr};
  // as build() compiles it: with the scratch (its blocks packed, over chunks of the columns)
  const bool pack = !target_->gpu;
  const UOp* s = codegen::apply_tuned_opts(sink0, search, nullptr, pack, target_->l2_bytes);
  if (!s) return std::nullopt;
  if (target_->threads) {
    // THREAD on the outermost loop after the others, as the heuristics place it
    TunedOpts probe = search;
    const UOp* pre = sink0;
    bool reduces = false;
    for (const UOp* u : toposort(sink0)) reduces |= u->op == Op::REDUCE;
    if (reduces)
      if (const UOp* st = codegen::store_shared_term(pre)) pre = st;
    for (const Opt& o : search.opts) pre = codegen::apply_opt(pre, o);
    if (pre && pre->nsrc() == 1 && pre->src(0)->op == Op::END && codegen::mark_thread_axis(pre)) {
      probe.opts.push_back({Opt::Kind::Thread, pre->src(0)->src(1)->arg<RangeArg>().axis, 0});
      if (const UOp* with = codegen::apply_tuned_opts(sink0, probe, nullptr, pack, target_->l2_bytes)) {
        c.full = probe;
        s = with;
      }
    }
  }
  c.sink = s;
  return c;
}

std::vector<TunedOpts> Tuner::actions(const UOp* pre, const TunedOpts& c) const {
  std::vector<TunedOpts> out;
  if (c.opts.size() >= 6) return out;
  for (const Opt& o : c.opts) pre = codegen::apply_opt(pre, o);
  if (!pre) return out;
  auto add = [&](Opt o) {
    TunedOpts n = c;
    n.opts.push_back(o);
    out.push_back(std::move(n));
  };
  std::vector<int32_t> loops;
  std::set<int32_t> seen;
  for (const UOp* u : toposort(pre)) {
    if (u->op != Op::RANGE) continue;
    const RangeArg& ra = u->arg<RangeArg>();
    if (!seen.insert(ra.axis).second) continue;
    if (ra.type == AxisType::Loop) {
      loops.push_back(ra.axis);
      for (int64_t a : {2, 3, 4, 8, 16}) add({Opt::Kind::Upcast, ra.axis, a});
      for (int64_t a : {8, 16, 32, 64}) add({Opt::Kind::Lane, ra.axis, a});
      add({Opt::Kind::Padto, ra.axis, 16});
    } else if (ra.type == AxisType::Reduce) {
      for (int64_t a : {2, 4, 8}) add({Opt::Kind::Unroll, ra.axis, a});
    }
  }
  for (size_t i = 0; i < loops.size(); ++i)
    for (size_t j = i + 1; j < loops.size(); ++j) add({Opt::Kind::Swap, loops[i], loops[j]});
  for (int64_t b : {0, 64, 128, 256, 512})
    if (b != c.reduce_block) {
      TunedOpts n = c;
      n.reduce_block = b;
      out.push_back(std::move(n));
    }
  return out;
}

bool Tuner::build(const Job& job, const std::vector<const TunedOpts*>& opts, std::string& exe, std::string& err,
                  std::vector<size_t>* unproven) {
  std::vector<codegen::CKernel> ks;
  codegen::PipelineOptions heuristics;  // the kernel kiln gen emits without an entry
  heuristics.target = target_;
  heuristics.require_proven_bounds = false;
  heuristics.scratch = true;  // as kiln gen compiles them: the harness passes the scratch
  for (size_t i = 0; i < opts.size(); ++i) {
    std::string symbol = "kiln_tune_" + std::to_string(i);
    if (opts[i]) {
      codegen::PipelineOptions po = heuristics;
      po.tuned = *opts[i];
      ks.push_back(codegen::compile_to_c(job.ast, job.file->dims, po, symbol));
      if (!codegen::first_unproven(ks.back().bounds)) continue;
      if (unproven) unproven->push_back(i);
      ks.pop_back();
    }
    ks.push_back(codegen::compile_proven(job.ast, job.file->dims, heuristics, symbol));
  }
  std::string dir = t_.work_dir + "/" + std::to_string(builds_++);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto write = [&](const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    return bool(f.flush());
  };
  std::string kernels;
  std::string cc = t_.cc;
  if (target_->arch != "any" && target_->arch != kHostArch && cc.find("clang") != std::string::npos)
    cc += " --target=" + target_->triple;
  if (target_->output == target::Output::Object) {
    std::vector<render::LlvmKernel> lk;
    for (size_t i = 0; i < ks.size(); ++i)
      lk.push_back({ks[i].linear, "kiln_tune_" + std::to_string(i), job.file->dims});
    std::string module = render::render_llvm_module(*target_, "kiln_tune", lk);
    kernels = dir + "/kernels.o";
    if (!write(kernels, target::compile_module(*target_, module, target::Artifact::Object))) {
      err = "kiln: error: cannot write " + kernels + "\n";
      return false;
    }
  } else {
    std::string src = render::c_preamble();
    for (const codegen::CKernel& k : ks) src += k.source;
    kernels = dir + "/kernels.c";
    if (!write(kernels, src)) {
      err = "kiln: error: cannot write " + kernels + "\n";
      return false;
    }
    for (const std::string& f : target_->c_flags) cc += " " + f;
    cc += " -O2";
  }
  std::string harness = dir + "/harness.c";
  exe = dir + "/harness";
  const std::vector<BufferInfo> bufs = buffers_of(job.ast, job.file->dims, job.values);
  const int64_t scratch = scratch_bytes(ks, bufs.size(), job.file->dims, job.values);
  if (!write(harness, harness_c(ks.size(), bufs, job.values, scratch))) {
    err = "kiln: error: cannot write " + harness + "\n";
    return false;
  }
  std::string out;
  std::string cmd =
      cc + " -O2 -o " + shell_quote(exe) + " " + shell_quote(harness) + " " + shell_quote(kernels) + " -lm";
  int rc = run_command(cmd, [&](const std::string& l) { out += l + "\n"; });
  if (rc != 0) {
    err = "kiln: error: the timing harness did not build (" + cmd + "):\n" + out;
    return false;
  }
  return true;
}

bool Tuner::search(const Job& job, size_t index, size_t count, std::optional<TuneEntry>& found, std::string& err) {
  // the heuristics' kernel: what the opts see (after "simplify ranges") and what they make
  const UOp *sink0 = nullptr, *heuristic = nullptr;
  std::vector<std::string> heuristic_opts;
  codegen::PipelineOptions po;
  po.target = target_;
  po.scratch = true;  // (as build() compiles them)
  po.applied_opts = &heuristic_opts;
  po.after_stage = [&](std::string_view stage, const UOp* s) {
    if (stage == "simplify ranges") sink0 = s;
    if (stage == "apply opts") heuristic = s;
  };
  codegen::full_rewrite_to_sink(job.ast, po);
  const UOp* pre = sink0;
  for (const UOp* u : toposort(sink0))
    if (u->op == Op::REDUCE) {
      if (const UOp* st = codegen::store_shared_term(sink0)) pre = st;
      break;
    }

  std::vector<Candidate> cands;
  std::set<const UOp*> seen{heuristic};
  std::optional<TunedOpts> base_search;  // the heuristics' choice as search opts, where found
  TunedOpts h;
  for (const std::string& s : heuristic_opts)
    if (std::optional<Opt> o = codegen::parse_opt(s); o && o->kind != Opt::Kind::Thread) h.opts.push_back(*o);
  for (int64_t b : {0, 64, 256, 128, 512}) {
    h.reduce_block = b;
    if (std::optional<Candidate> c = make(sink0, h); c && c->sink == heuristic) base_search = h;
    if (base_search) break;
  }
  auto offer = [&](const TunedOpts& s) {
    std::optional<Candidate> c = make(sink0, s);
    if (!c || !seen.insert(c->sink).second) return;
    cands.push_back(std::move(*c));
  };
  if (!base_search) offer(h);
  offer(TunedOpts{});
  for (const TuneEntry& e : db_)  // what an earlier run chose, measured again
    if (e.hash == job.hash && e.target == target_->name && e.variant == job.variant->tag) {
      TunedOpts s = e.opts;
      s.opts.erase(
          std::remove_if(s.opts.begin(), s.opts.end(), [](const Opt& o) { return o.kind == Opt::Kind::Thread; }),
          s.opts.end());
      offer(s);
    }

  // the first step: the seeds and one opt more than the heuristics' (or than none)
  for (TunedOpts& n : actions(pre, base_search.value_or(TunedOpts{}))) offer(n);
  std::string what = job.label + "[" + job.variant->tag + "]";
  double share = t_.budget_s > 0 ? seconds_left() / double(count - index) : 1e9;
  Clock::time_point job_end =
      t_.budget_s > 0 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(share))
                      : Clock::time_point::max();
  double base_ns = -1, best_ratio = -1, beam_ratio = -1;
  int dead_runs = 0;  // harness runs that failed before their first line (a runner that cannot run it)
  std::vector<size_t> todo(cands.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  std::string runner = t_.runner.empty() ? "" : t_.runner + " ";
  // Runs harness `exe` on its candidates 1..n until `until`, each reported to `on` (its number, ok,
  // its time and the heuristics' in the same samples, the line); a candidate the harness died on
  // is reported not ok. A run takes 2 s at most, so a stop (SIGINT to kiln alone, the budget)
  // waits for no more.
  auto run_harness = [&](const std::string& exe, size_t n, Clock::time_point until,
                         const std::function<void(size_t, bool, double, double, const std::string&)>& on) {
    for (size_t first = 0; first < n && !interrupted() && Clock::now() < until;) {
      double ms = std::chrono::duration<double, std::milli>(until - Clock::now()).count();
      std::string cmd = runner + shell_quote(exe) + " " + std::to_string(first + 1) + " " +
                        std::to_string(int64_t(std::max(1.0, std::min(ms, 2000.0))));
      size_t next = first;
      bool any = false;
      int rc = run_command(cmd, [&](const std::string& l) {
        int c = -1;
        char status[16] = {0};
        double ns = 0, base = 0;
        int got = std::sscanf(l.c_str(), "c %d %15s %lf %lf", &c, status, &ns, &base);
        if (got < 2 || c < 1 || size_t(c) > n) return;
        any = true;
        next = size_t(c);
        bool ok = std::string(status) == "ok" && got == 4 && ns > 0 && base > 0;
        if (ok) base_ns = base_ns < 0 ? base : std::min(base_ns, base);
        on(size_t(c), ok, ns, base, l);
      });
      if (interrupted()) return;
      // a run that ended without a line for the next candidate, and not at its budget, died on it
      if (next < n && rc != 0) {
        dead_runs += !any;
        on(next + 1, false, 0, 0, "");
        next += 1;
      } else if (next < n && !any) {
        return;  // the budget ran out before the first
      }
      first = next;
    }
  };
  auto drop = [&](const Candidate& cd, const std::string& line) {
    if (!t_.log) return;
    if (line.find("mismatch") != std::string::npos)
      t_.log(what + ": candidate " + tune_opts_text(cd.full) + " dropped, its outputs disagree with the heuristics' (" +
             line.substr(line.find("mismatch")) + ")");
    else
      t_.log(what + ": candidate " + tune_opts_text(cd.full) + " dropped, the harness did not finish it" +
             (line.empty() ? "" : " (" + line + ")"));
  };
  // candidates per harness: one build's time stays a small part of a budget's share
  constexpr size_t kChunk = 16;
  std::chrono::duration<double> build_time{0};  // the last build's: none starts that would end past the budget
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t); };
  // until a harness of the tune has timed something, its first runs whatever the budget left (a
  // slow machine or an ASan kiln may spend a small one before it): so a runner that cannot run it
  // is always an error, and a tune always times at least the heuristics' kernel of its first variant
  auto going = [&] { return !interrupted() && ((!timed_ && base_ns < 0) || (!stopped() && Clock::now() < job_end)); };
  for (int step = 1; !todo.empty() && going(); ++step) {
    for (size_t c0 = 0; c0 < todo.size() && going(); c0 += kChunk) {
      if (base_ns >= 0 && Clock::now() + std::chrono::duration_cast<Clock::duration>(build_time) >= job_end) break;
      std::vector<size_t> chunk(todo.begin() + std::ptrdiff_t(c0),
                                todo.begin() + std::ptrdiff_t(std::min(todo.size(), c0 + kChunk)));
      // one harness: the heuristics' kernel first, then these candidates
      std::vector<const TunedOpts*> opts{nullptr};
      for (size_t i : chunk) opts.push_back(&cands[i].full);
      std::string exe;
      Clock::time_point built = Clock::now();
      std::vector<size_t> unproven;
      if (!build(job, opts, exe, err, &unproven)) return false;
      build_time = since(built);
      for (size_t i : unproven) {
        Candidate& cd = cands[chunk[i - 1]];
        cd.bad = true;
        if (t_.log)
          t_.log(what + ": candidate " + tune_opts_text(cd.full) +
                 " dropped, the bounds prover cannot prove its kernel's accesses");
      }
      // a variant's first harness runs even past its share: a second at least, for a time to compare
      Clock::time_point until = base_ns < 0 ? std::max(job_end, Clock::now() + std::chrono::seconds(1)) : job_end;
      run_harness(exe, chunk.size(), until, [&](size_t c, bool ok, double ns, double base, const std::string& l) {
        Candidate& cd = cands[chunk[c - 1]];
        if (cd.bad) return;  // unproven: the heuristics' kernel ran in its place
        if (ok) {
          cd.ns = ns;
          cd.base = base;
          if (best_ratio < 0 || ns / base < best_ratio) best_ratio = ns / base;
        } else {
          cd.bad = true;
          drop(cd, l);
        }
        if (!t_.progress || base_ns < 0) return;
        size_t done = c0 + c;
        int width = 20, fill = int(double(done) / double(todo.size()) * width);
        t_.progress("[" + std::string(size_t(fill), '#') + std::string(size_t(width - fill), '.') + "] " + what + " (" +
                    std::to_string(index + 1) + "/" + std::to_string(count) + ") step " + std::to_string(step) + ": " +
                    std::to_string(done) + "/" + std::to_string(todo.size()) + ", heuristics " + us_text(base_ns) +
                    ", best " + (best_ratio < 0 ? std::string("-") : ratio_text(best_ratio)));
      });
    }
    timed_ |= base_ns >= 0;
    if (base_ns < 0) {
      // (a later variant's budget may end while its build runs: no error)
      if (interrupted() || (timed_ && stopped() && dead_runs == 0)) break;
      err = "kiln: error: the timing harness of " + what + " timed nothing (in " + t_.work_dir + "; the runner '" +
            t_.runner + "')\n";
      return false;
    }
    // the beam: the candidates timed so far that were fastest against the heuristics' kernel in
    // the same samples, the heuristics' own choice among them
    std::vector<std::pair<double, const TunedOpts*>> ranked;
    if (base_search) ranked.push_back({1.0, &*base_search});
    for (const Candidate& c : cands)
      if (c.ns >= 0 && !c.bad) ranked.push_back({c.ns / c.base, &c.search});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (ranked.size() > size_t(t_.beam)) ranked.resize(size_t(t_.beam));
    todo.clear();
    // as the seeds' beam search, a step that found nothing faster ends it; with a budget, the
    // search goes on from the beam's new members while it lasts
    if (ranked.empty() || (t_.budget_s <= 0 && beam_ratio >= 0 && ranked.front().first >= beam_ratio)) break;
    beam_ratio = ranked.front().first;
    std::vector<TunedOpts> next_opts;
    for (const auto& [ratio, s] : ranked)
      for (TunedOpts& n : actions(pre, *s)) next_opts.push_back(std::move(n));
    for (const TunedOpts& n : next_opts) {
      size_t before = cands.size();
      offer(n);
      if (cands.size() > before) todo.push_back(before);
    }
  }
  const Candidate* best = nullptr;
  for (const Candidate& c : cands)
    if (c.ns >= 0 && !c.bad && (!best || c.ns / c.base < best->ns / best->base)) best = &c;
  size_t timed = size_t(std::count_if(cands.begin(), cands.end(), [](const Candidate& c) { return c.ns >= 0; }));
  std::string report = what + ": heuristics " + (base_ns < 0 ? std::string("-") : us_text(base_ns)) + ", " +
                       std::to_string(timed) + " candidates timed, the best " +
                       (best ? tune_opts_text(best->full) + " at " + ratio_text(best->ns / best->base) : "-");
  // faster by more than 1% in the search: timed again against the heuristics' kernel in a harness of
  // its own (a search compares many candidates, and one of them is fastest by chance too), and
  // written only if it is faster there too (after the budget too: a few samples of two kernels)
  if (!best || best->ns >= 0.99 * best->base || interrupted()) {
    if (t_.log) t_.log(report + ": the heuristics' opts stay");
    return true;
  }
  std::string exe;
  if (!build(job, {nullptr, &best->full}, exe, err)) return false;
  double ns = -1, base = -1;
  for (int run = 0; run < 2 && !interrupted(); ++run)
    run_harness(exe, 1, Clock::now() + std::chrono::seconds(30),
                [&](size_t, bool ok, double n, double b, const std::string&) {
                  if (ok && (ns < 0 || n / b > ns / base)) ns = n, base = b;  // the worse of the two
                });
  bool faster = ns > 0 && ns < 0.99 * base;
  if (t_.log)
    t_.log(report +
           (ns > 0 ? ", again " + us_text(ns) + " against " + us_text(base) : std::string(", not timed again")) +
           (faster ? "" : ": the heuristics' opts stay"));
  if (!faster) return true;
  TuneEntry e;
  e.hash = job.hash;
  e.target = target_->name;
  e.variant = job.variant->tag;
  e.kernel = job.label;
  e.opts = best->full;
  e.us = ns / 1000;
  e.heuristic_us = base / 1000;
  found = e;
  return true;
}

bool Tuner::write_db(std::string& err) {
  std::string tmp = t_.db + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << print_tune_db(db_);
    if (!f.flush()) {
      err = "kiln: error: cannot write " + tmp + "\n";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), t_.db.c_str()) != 0) {
    err = "kiln: error: cannot write " + t_.db + "\n";
    return false;
  }
  return true;
}

TuneResult Tuner::run() {
  TuneResult r;
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t_.budget_s));
  if (t_.gen.targets.size() != 1) {
    r.errors = "kiln: error: kiln tune times one target (got " + std::to_string(t_.gen.targets.size()) + ")\n";
    return r;
  }
  if (std::filesystem::exists(t_.db)) {
    frontend::InputFile in = frontend::read_input_file(t_.db);
    if (!in.ok()) {
      r.errors = in.error;
      return r;
    }
    if (!parse_tune_db(in.text, t_.db, db_, r.errors)) return r;
  }
  if (!g_.prepare(r.errors)) return r;
  target_ = g_.targets().front();
  if (std::string why = t_.runner.empty() ? target::cannot_run_here(*target_) : ""; !why.empty()) {
    r.errors = "kiln: error: this machine cannot run " + target_->name + " kernels (" + why +
               "): tune on a machine that can, or name a --runner that runs them (an emulator, ssh)\n";
    return r;
  }
  for (const std::string& k : t_.kernels)
    if (std::none_of(g_.kernels().begin(), g_.kernels().end(), [&](const KernelInfo& ki) { return ki.name == k; })) {
      r.errors = "kiln: error: no kernel named '" + k + "'\n";
      return r;
    }
  std::vector<Job> jobs;
  for (const KernelInfo& k : g_.kernels()) {
    if (!t_.kernels.empty() && std::find(t_.kernels.begin(), t_.kernels.end(), k.name) == t_.kernels.end()) continue;
    const SpecFile& f = g_.files()[k.file];
    for (const Variant& v : k.variants) {
      if (!t_.variants.empty() && std::find(t_.variants.begin(), t_.variants.end(), v.tag) == t_.variants.end())
        continue;
      std::vector<int64_t> values(f.dims.size());
      bool inside = true;
      for (size_t d = 0; d < f.dims.size(); ++d) {
        const frontend::Dim& dim = f.spec.dims[d];
        values[d] = dim.min;
        if (std::find(k.dims.begin(), k.dims.end(), int32_t(d)) == k.dims.end()) continue;
        const Specialization* b = nullptr;
        for (const auto& [gd, s] : v.guard)
          if (gd == int32_t(d)) b = &s;
        auto want = t_.dims.find(dim.name);
        std::optional<int64_t> x = value_in_bucket(dim, b, want == t_.dims.end() ? 1024 : want->second);
        if (!x) inside = false;
        values[d] = x.value_or(dim.min);
      }
      if (!inside) continue;  // a bucket no value of the range is in
      for (size_t si = 0; si < v.sched.kernels.size(); ++si) {
        const UOp* ast = v.sched.kernels[si].ast;
        jobs.push_back({&f, &k, &v, ast, tune_label(k.name, si, v.sched.kernels.size()), kernel_hash(ast), values});
      }
    }
  }
  for (size_t i = 0; i < jobs.size() && (i == 0 || !stopped()); ++i) {
    std::optional<TuneEntry> found;
    if (t_.log) {
      std::string shape;
      for (int32_t d : jobs[i].kernel->dims)
        shape += " " + g_.files()[jobs[i].kernel->file].spec.dims[size_t(d)].name + "=" +
                 std::to_string(jobs[i].values[size_t(d)]);
      t_.log(jobs[i].label + "[" + jobs[i].variant->tag + "] on " + target_->name + " at" + shape + ":");
    }
    if (!search(jobs[i], i, jobs.size(), found, r.errors)) return r;
    ++r.variants;
    auto same = [&](const TuneEntry& e) {
      return e.hash == jobs[i].hash && e.target == target_->name && e.variant == jobs[i].variant->tag;
    };
    if (found) {
      merge_tune_entry(db_, *found);
      ++r.improved;
    } else if (!stopped()) {
      db_.erase(std::remove_if(db_.begin(), db_.end(), same), db_.end());  // the heuristics won: no entry
    }
    if (!write_db(r.errors)) return r;
  }
  if (t_.progress) t_.progress("");
  r.ok = true;
  return r;
}

}  // namespace kiln::emit::detail

namespace kiln::emit {

bool tune_keys(const GenOptions& options, std::vector<TuneEntry>& keys, std::string& err) {
  detail::Generator g(options);
  if (!g.prepare(err)) return false;
  for (const detail::KernelInfo& k : g.kernels())
    for (const detail::Variant& v : k.variants)
      for (size_t si = 0; si < v.sched.kernels.size(); ++si)
        for (const Target* t : g.targets()) {
          TuneEntry e;
          e.hash = kernel_hash(v.sched.kernels[si].ast);
          e.target = t->name;
          e.variant = v.tag;
          e.kernel = tune_label(k.name, si, v.sched.kernels.size());
          keys.push_back(std::move(e));
        }
  return true;
}

TuneResult tune(const TuneOptions& options) {
  detail::Generator g(options.gen);
  return detail::Tuner(options, g).run();
}

}  // namespace kiln::emit

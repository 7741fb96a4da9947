#include "generator/codegen/pipeline.h"

#include <algorithm>

#include "generator/codegen/opt/opts.h"
#include "generator/codegen/passes.h"
#include "generator/ir/verify.h"
#include "generator/render/c.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::codegen {

namespace {

class Stages {
 public:
  explicit Stages(const PipelineOptions& o) : o_(o) {}

  const UOp* done(const UOp* s, const char* name) {
    if (o_.verify)
      if (auto e = verify(s)) throw InternalError(std::string("after stage '") + name + "': " + *e);
    if (o_.after_stage) o_.after_stage(name, s);
    return s;
  }
  const UOp* rewrite(const UOp* s, const PatternMatcher& pm, const char* name, void* ctx = nullptr) {
    return done(rewrite_only(s, pm, name, ctx), name);
  }
  static const UOp* rewrite_only(const UOp* s, const PatternMatcher& pm, const char* name, void* ctx = nullptr) {
    RewriteOptions ro;
    ro.name = name;
    return graph_rewrite(s, pm, ctx, ro);
  }

 private:
  const PipelineOptions& o_;
};

// kiln tune's opts in the heuristics' place; OptError where one does not apply
const UOp* apply_tuned(const UOp* s, const TunedOpts& t, std::vector<std::string>* applied, bool scratch,
                       int64_t l2_bytes) {
  std::string why;
  const UOp* r = apply_tuned_opts(s, t, &why, scratch, l2_bytes);
  if (!r) throw OptError(why);
  if (applied)
    for (const Opt& o : t.opts) applied->push_back(o.str());
  if (applied && t.reduce_block > 0) applied->push_back("BLOCK(" + std::to_string(t.reduce_block) + ")");
  return r;
}

// a database's opts for a GPU target: the output loops on the grid, then the opts, with the
// target's local memory (GROUP); a reduction block is the CPU's
const UOp* apply_tuned_gpu(const UOp* s, const TunedOpts& t, const target::Target& target,
                           std::vector<std::string>* applied) {
  if (t.reduce_block > 0) throw OptError("a reduction block is for CPU targets, not " + target.name);
  s = mark_global_axes(s);
  for (const Opt& o : t.opts) {
    if (o.kind == Opt::Kind::Tc) {  // the tensor cores take the kernel's matmul (its one reduction) whole
      const UOp* red = nullptr;
      for (const UOp* u : toposort(s))
        if (u->op == Op::REDUCE) red = u;
      if (o.amount != 0 || !red || red->nsrc() != 2 || red->src(1)->op != Op::RANGE ||
          red->src(1)->arg<RangeArg>().axis != o.axis)
        throw OptError(o.str() + ": TC(<axis>, 0) names the axis of the kernel's one reduction");
      std::string why;
      s = apply_tensor_cores(s, target, &why);
      if (!s) throw OptError(o.str() + ": " + why);
      if (applied) applied->push_back(o.str());
      continue;
    }
    const bool group = o.kind == Opt::Kind::Group || o.kind == Opt::Kind::GroupTop;
    // a group's items and partials (8 bytes each at most) within the target's work group
    if (group && (target.local_max.empty() || o.amount > target.local_max[0] || o.amount > target.local_max_total ||
                  o.amount > target.local_bytes / 8))
      throw OptError(o.str() + ": a work group of " + std::to_string(o.amount) + " items does not fit " + target.name +
                     "'s");
    std::string why;
    s = apply_opt(s, o, &why, target.local_bytes > 0);
    if (!s) throw OptError(why);
    if (applied) applied->push_back(o.str());
  }
  // LOCAL's work groups within the target's, as "gpu dims" lays them out
  if (std::string why = local_dims_misfit(s, target); !why.empty()) throw OptError("LOCAL: " + why);
  return s;
}

}  // namespace

const UOp* full_rewrite_to_sink(const UOp* ast, const PipelineOptions& opts) {
  Stages st(opts);
  if (!opts.target) throw InternalError("the pipeline needs a target (PipelineOptions::target)");
  const target::Target& target = *opts.target;
  ReduceContext reduces;
  const UOp* s = st.done(ast, "kernel ast");
  s = st.done(check_no_movement_ops(s), "early movement ops");  // the scheduler made them index math
  // the loop structure is the opts' to change: a kernel compiled as given keeps its own
  if (opts.optimize) s = st.done(split_ranges(s), "split ranges");  // r % c, r // c as two loops
  s = st.rewrite(s, sym(), "initial symbolic");  // index math in canonical form before anything reads it
  // after symbolic (the seeds run it before, with symbolic inside): it then matches one canonical form
  if (opts.optimize) s = st.rewrite(s, pm_load_collapse(), "load collapse");      // a one-hot sum: one load
  if (opts.optimize) s = st.rewrite(s, pm_simplify_ranges(), "simplify ranges");  // contiguous loops as one
  if (opts.optimize && target.gpu && opts.tuned) s = apply_tuned_gpu(s, *opts.tuned, target, opts.applied_opts);
  if (opts.optimize && target.gpu && !opts.tuned)  // one work item per output element, or a group per long reduction
    for (const Opt& o : gpu_optimizations(s, target))
      if (opts.applied_opts) opts.applied_opts->push_back(o.str());
  if (opts.optimize && !target.gpu && opts.tuned)
    s = apply_tuned(s, *opts.tuned, opts.applied_opts, opts.scratch, target.l2_bytes);
  if (opts.optimize && !target.gpu && !opts.tuned)
    for (const Opt& o : hand_coded_optimizations(s, target.vector_registers, target.vector_bytes, target.threads,
                                                 opts.scratch, target.l2_bytes))
      if (opts.applied_opts) opts.applied_opts->push_back(o.str());
  s = st.done(s, "apply opts");                    // register tiles, lanes, the thread axis, K blocks
  s = st.rewrite(s, pm_expander(), "expander");    // unroll the tile: one copy per output of the tile
  s = st.rewrite(s, sym(), "post-opt symbolic");   // folds the index math of the copies
  s = st.rewrite(s, pm_add_loads(), "add loads");  // reads become explicit before reduces make registers
  reduces.next_axis = first_free_axis(s);
  // REDUCE -> accumulator registers; the copies of one tile share one loop over the reduction
  s = st.done(merge_reduce_ends(st.rewrite_only(s, pm_remove_reduces(), "remove reduces", &reduces)), "remove reduces");
  s = st.done(check_local_buffers(s, target), "local buffers");  // a GPU's fit its local memory; none on the CPU
  s = st.done(add_gpudims(s, target), "gpu dims");         // Thread loops: the core's share; Global ones: work-item ids
  s = st.rewrite(s, pm_split_ends(), "split ends");        // one loop per END, for the linearizer
  s = st.done(lower_index_dtype(s), "lower index dtype");  // int32 where every index value fits
  s = st.rewrite(s, sym(), "final symbolic");              // folds what the index retyping exposed
  // math as arithmetic: what vectorizes better so, and what the target has no library for
  s = st.rewrite(s, pm_decompositions(), "decompositions", const_cast<target::Target*>(&target));
  s = st.done(check_gates(s), "move gates");  // gates stay on the INDEX, where the renderer guards the access
  s = st.rewrite(s, pm_renderer_rules(target), "renderer rules");  // the renderer's division, where it agrees
  s = st.rewrite(s, pm_commit_weak(), "commit weak");              // literals take the dtype of their op
  s = st.done(add_barriers(s, target), "implicit barriers");       // local stores before the reads; none on the CPU
  // on the final graph (after decompositions and commit weak): what it qualifies is what renderers get
  s = st.done(vectorize_lanes(s, target.vector_bytes), "vectorize");        // Lane loops as the target's vectors
  s = st.done(check_vector_widths(s, target.vector_bytes), "devectorize");  // none wider than its registers
  // control flow: the linearizer nests each node in the loops it depends on (linearize.cpp)
  return s;
}

const std::vector<std::string_view>& stage_names() {
  static const std::vector<std::string_view> names = {
      "kernel ast",        "early movement ops", "split ranges", "initial symbolic",  "load collapse",
      "simplify ranges",   "apply opts",         "expander",     "post-opt symbolic", "add loads",
      "remove reduces",    "local buffers",      "gpu dims",     "split ends",        "lower index dtype",
      "final symbolic",    "decompositions",     "move gates",   "renderer rules",    "commit weak",
      "implicit barriers", "vectorize",          "devectorize",  "linearize"};
  return names;
}

CKernel compile_to_c(const UOp* ast, std::span<const UOp* const> vars, const PipelineOptions& opts,
                     std::string_view symbol) {
  CKernel k;
  k.name = std::string(ast->arg<Name>().s);
  k.sink = full_rewrite_to_sink(ast, opts);
  k.linear = linearize(k.sink);
  k.bounds = prove_bounds(k.sink);  // nothing is rendered that may address outside its buffer
  if (opts.require_proven_bounds) check_bounds(k.name, k.bounds, k.sink);
  k.parallel = std::any_of(k.linear.begin(), k.linear.end(),
                           [](const UOp* u) { return u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == kCoreVar; });
  for (const UOp* u : k.linear)
    if (u->op == Op::PARAM) k.buffer_args = std::max(k.buffer_args, u->arg<ParamArg>().slot + 1);
  for (const UOp* u : k.linear)  // the scratch: its size is (.cores - 1) * stride + one region's
    if (u->op == Op::PARAM && u->arg<ParamArg>().name == kPackBuffer) {
      Context& ctx = u->ctx();
      const UOp* n = u->src(0);
      auto with_cores = [&](int64_t c) {  // (.cores in the dtype the index dtype stage gave it)
        std::unordered_map<const UOp*, const UOp*> map;
        for (const UOp* v : toposort(n))
          if (v->op == Op::DEFINE_VAR && v->arg<VarArg>().name == kCoresVar) map[v] = ctx.cint(c, v->dtype);
        return Expr(simplify(substitute(n, map)));
      };
      Expr one = with_cores(1), two = with_cores(2);
      const UOp* stride = simplify(two - one);
      if (stride->op != Op::CONST)
        throw InternalError("kernel " + k.name + ": its scratch's regions are not a constant apart");
      const int64_t item = itemsize(u->dtype.elem());
      k.scratch_slot = u->arg<ParamArg>().slot;
      k.scratch_stride = stride->ival() * item;
      k.scratch_bytes = simplify(one * item);
    }
  for (const UOp* u : k.linear)  // the launch: what the work-item ids run over
    if (u->op == Op::SPECIAL) {
      std::string_view n = u->arg<Name>().s;
      (n.starts_with("lidx") ? k.local_size : k.global_size)[size_t(n.back() - '0')] = u->src(0);
    }
  const target::Output out = opts.target->output;
  render::Dialect d = out == target::Output::OpenCL ? render::Dialect::OpenCL
                      : out == target::Output::Cuda ? render::Dialect::Cuda
                                                    : render::Dialect::C;
  k.source = render::render_c(k.linear, symbol.empty() ? std::string_view(k.name) : symbol, vars, d);
  return k;
}

CKernel compile_proven(const UOp* ast, std::span<const UOp* const> vars, PipelineOptions opts, std::string_view symbol,
                       std::string* fallback) {
  opts.require_proven_bounds = false;
  CKernel k = compile_to_c(ast, vars, opts, symbol);
  const AccessProof* a = first_unproven(k.bounds);
  if (!a) return k;
  std::string what = describe(*a);
  opts.optimize = false;
  opts.tuned.reset();
  if (opts.applied_opts) opts.applied_opts->clear();
  k = compile_to_c(ast, vars, opts, symbol);
  if (const AccessProof* b = first_unproven(k.bounds))
    throw InternalError("kernel " + k.name + ": " + what + ", and without opts " + describe(*b) +
                        ": nothing is emitted that may address outside its buffer");
  if (fallback) *fallback = what;
  return k;
}

}  // namespace kiln::codegen

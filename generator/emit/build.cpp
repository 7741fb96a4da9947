#include <algorithm>

#include "generator/codegen/pipeline.h"
#include "generator/emit/generator.h"
#include "generator/emit/names.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"

namespace kiln::emit::detail {

bool Generator::check_options(std::string& err) {
  auto ident = [](const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  std::string why = ident(o_.name) ? reserved_in_cxx(o_.name) : "";
  if (!ident(o_.name) || why == "it is a keyword") {
    err = "kiln: error: --name '" + o_.name + "' is not a C identifier\n";
    return false;
  }
  if (!why.empty()) {
    err = "kiln: error: --name '" + o_.name + "' cannot be the library's namespace (" + why + ")\n";
    return false;
  }
  if (o_.targets.empty()) {
    err = "kiln: error: no --target given (known: " + target::known_names() + ")\n";
    return false;
  }
  for (const std::string& t : o_.targets) {
    if (!target::find(t)) {
      err = "kiln: error: unknown target '" + t + "' (known: " + target::known_names() + ")\n";
      return false;
    }
    if (std::count(o_.targets.begin(), o_.targets.end(), t) > 1) {
      err = "kiln: error: target '" + t + "' given twice\n";
      return false;
    }
  }
  for (const Target& t : target::targets())  // best first
    if (std::find(o_.targets.begin(), o_.targets.end(), t.name) != o_.targets.end()) targets_.push_back(&t);
  if (o_.specs.empty()) {
    err = "kiln: error: no spec files given\n";
    return false;
  }
  for (size_t i = 0; i < o_.specs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (part_name(o_.specs[i]) == part_name(o_.specs[j])) {
        err = "kiln: error: " + o_.specs[j] + " and " + o_.specs[i] + " would both write files named " + o_.name + "_" +
              part_name(o_.specs[i]) + "*: the specs of one library need different file names\n";
        return false;
      }
  return true;
}

// kiln tune: the specs read and every variant compiled with the heuristics' opts
bool Generator::prepare(std::string& err) {
  if (!check_options(err)) return false;
  for (const Target* t : targets_)  // (one target: kiln tune's check)
    if (t->gpu) {
      err = "kiln: error: kiln tune times CPU targets; tuning " + t->name + " is not built yet\n";
      return false;
    }
  for (const std::string& path : o_.specs)
    if (!load(path, err)) return false;
  for (size_t f = 0; f < files_.size(); ++f)
    if (!build_kernels(f, err)) return false;
  return true;
}

bool Generator::load_tune_db(std::string& err) {
  if (o_.tune_db.empty()) return true;
  frontend::InputFile in = frontend::read_input_file(o_.tune_db);
  if (!in.ok()) {
    err += in.error;
    return false;
  }
  return parse_tune_db(in.text, o_.tune_db, tune_db_, err);
}

std::optional<codegen::TunedOpts> Generator::tuned_opts(const std::string& kernel, const std::string& hash,
                                                        const Target& t, const std::string& variant) {
  if (const TuneEntry* e = find_tune_entry(tune_db_, hash, t.name, variant)) return e->opts;
  for (const TuneEntry& e : tune_db_)
    if (e.kernel == kernel && e.target == t.name && e.variant == variant)
      warnings_ += o_.tune_db + ":" + std::to_string(e.line) + ": warning: the entry for kernel '" + kernel + "' (" +
                   variant + ", " + t.name + ") is for another version of it (hash " + e.hash + ", now " + hash +
                   "): ignored, the heuristics' opts are used (run kiln tune again)\n";
  return std::nullopt;
}

bool Generator::load(const std::string& path, std::string& err) {
  frontend::InputFile in = frontend::read_input_file(path);
  if (!in.ok()) {
    err += in.error;
    return false;
  }
  SpecFile f;
  f.path = path;
  f.base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  f.part = part_name(path);
  f.source = std::make_unique<frontend::SourceFile>(path, std::move(in.text));
  frontend::ParseResult parsed = frontend::parse_spec(*f.source);
  std::vector<frontend::Diagnostic> errors = std::move(parsed.diagnostics);
  if (errors.empty()) errors = frontend::check_spec(parsed.spec);
  if (!errors.empty()) {
    err += frontend::render(errors);
    return false;
  }
  f.spec = std::move(parsed.spec);
  f.ctx = std::make_unique<Context>();
  files_.push_back(std::move(f));
  return true;
}

// the kernels of one file, each with its variants (only `only` when given)
bool Generator::build_kernels(size_t fi, std::string& err, const std::string* only) {
  SpecFile& f = files_[fi];
  frontend::LowerResult generic = frontend::lower_spec(*f.ctx, f.spec, *f.source);
  if (!generic.ok()) {
    err += frontend::render(generic.diagnostics);
    return false;
  }
  f.dims = generic.dims;
  for (const frontend::Kernel& k : f.spec.kernels) {
    if (only && k.name != *only) continue;
    for (const KernelInfo& other : kernels_)
      if (other.name == k.name) {
        err += frontend::render(frontend::diagnostic(
            k.loc, k.name.size(),
            "kernel '" + k.name + "' is also defined in " + files_[other.file].path + " (one library, one namespace)"));
        return false;
      }
    // the kernel's name is a C++ function of the library, next to <name>_explain and
    // <name>_workspace_size: a keyword or a clash would only show up compiling the generated code
    auto clash = [&](const std::string& why) {
      err += frontend::render(frontend::diagnostic(k.loc, k.name.size(), "kernel '" + k.name + "' " + why));
      return false;
    };
    if (std::string why = reserved_in_cxx(k.name); !why.empty())
      return clash("cannot be a C++ function name (" + why + ")");
    for (const SpecFile& g : files_)  // every spec of the library: one namespace
      for (const frontend::Kernel& other : g.spec.kernels)
        for (const char* suffix : {"_explain", "_workspace_size", "_workspace_size_for"})
          if (k.name == other.name + suffix)
            return clash("clashes with the generated function " + other.name + suffix + " of kernel '" + other.name +
                         "'" + (&g == &f ? "" : " in " + g.path));
    KernelInfo ki;
    ki.name = k.name;
    ki.file = fi;
    ki.line = k.loc.line;
    ki.column = k.loc.col;
    auto add_args = [&](const std::vector<frontend::Param>& ps, bool output) {
      for (const frontend::Param& p : ps) {
        Arg a;
        a.name = p.name;
        a.dtype = *parse_dtype(p.dtype);
        a.output = output;
        for (const frontend::ShapeItem& it : p.shape) {
          ShapeAxis ax;
          ax.literal = it.is_literal;
          ax.size = it.size;
          for (size_t i = 0; i < f.spec.dims.size(); ++i)
            if (!it.is_literal && f.spec.dims[i].name == it.dim) ax.dim = int32_t(i);
          if (ax.dim >= 0 && std::find(ki.dims.begin(), ki.dims.end(), ax.dim) == ki.dims.end())
            ki.dims.push_back(ax.dim);
          a.shape.push_back(ax);
        }
        ki.args.push_back(std::move(a));
      }
    };
    add_args(k.params, false);
    add_args(k.outputs, true);
    std::vector<std::string> names;
    for (const Arg& a : ki.args) names.push_back(a.name);
    // the header's parameters; ctx is the last one's, kiln and std are namespaces it names
    std::vector<std::string> cxx = cxx_parameter_names(names, {"ctx", "kiln", "std", "restrict"});  // restrict: C's
    for (size_t i = 0; i < ki.args.size(); ++i) ki.args[i].cxx = cxx[i];
    std::sort(ki.dims.begin(), ki.dims.end());
    if (!build_variants(f, k, ki, err)) return false;
    kernels_.push_back(std::move(ki));
  }
  return true;
}

bool Generator::build_variants(SpecFile& f, const frontend::Kernel& k, KernelInfo& ki, std::string& err) {
  // every combination of the bound dims' buckets, generic (no entry) last for each dim
  std::vector<std::vector<std::pair<int32_t, Specialization>>> combos{{}};
  for (int32_t d : ki.dims) {
    std::vector<std::vector<std::pair<int32_t, Specialization>>> next;
    for (const auto& c : combos) {
      for (const Specialization& s : f.spec.dims[size_t(d)].specializations) {
        auto with = c;
        with.push_back({d, s});
        next.push_back(std::move(with));
      }
      next.push_back(c);
    }
    combos = std::move(next);
  }
  for (const auto& guard : combos) {
    Variant v;
    v.guard = guard;
    std::map<std::string, Specialization> bucket;
    for (const auto& [d, s] : guard) {
      const frontend::Dim& dim = f.spec.dims[size_t(d)];
      bucket[dim.name] = s;
      v.tag += (v.tag.empty() ? "" : "_") + dim.name + (s.multiple ? "x" : "") + std::to_string(s.value);
    }
    if (v.tag.empty()) v.tag = "any";
    frontend::LowerResult lowered = frontend::lower_spec(*f.ctx, f.spec, *f.source, bucket, k.name);
    const frontend::LoweredKernel* lk = nullptr;
    for (const auto& l : lowered.kernels)
      if (l.name == k.name) lk = &l;
    if (!lk) {
      err += frontend::render(lowered.diagnostics);
      if (lowered.diagnostics.empty()) err += "kiln: error: kernel '" + k.name + "' did not lower for " + v.tag + "\n";
      return false;
    }
    std::string prog = o_.name + "_" + k.name + "_" + v.tag;
    try {
      v.sched = schedule::schedule(lk->inputs, lk->outputs, prog, lk->output_names);
    } catch (const ShapeError& e) {
      err += frontend::render(frontend::diagnostic(
          k.loc, k.name.size(), "cannot schedule kernel '" + k.name + "' (" + v.tag + "): " + e.what()));
      return false;
    }
    for (const UOp* var : v.sched.vars) {  // every dim a kernel reads must come from an argument's shape
      std::string_view n = var->arg<VarArg>().name;
      bool bound = false;
      for (int32_t d : ki.dims) bound |= f.spec.dims[size_t(d)].name == n;
      if (!bound) {
        err += frontend::render(
            frontend::diagnostic(k.loc, k.name.size(),
                                 "kernel '" + k.name + "' uses dim '" + std::string(n) +
                                     "', which no argument's shape gives (declare an argument with it)"));
        return false;
      }
    }
    // every kernel for every target, as the target's own program (its vector width, its opts),
    // each function under its final name
    for (size_t si = 0; compile_ && si < v.sched.kernels.size(); ++si) {
      const schedule::Kernel& sk = v.sched.kernels[si];
      Compiled c;
      c.symbol = std::string(sk.ast->arg<Name>().s);
      std::string label = tune_label(k.name, si, v.sched.kernels.size());
      std::string hash = tune_db_.empty() ? "" : kernel_hash(sk.ast);
      for (const Target* t : targets_) {
        Compiled::ForTarget code;
        codegen::PipelineOptions po;
        po.target = t;
        po.applied_opts = &code.opts;
        po.scratch = true;  // the dispatch lays it out in the workspace
        if (!tune_db_.empty()) po.tuned = tuned_opts(label, hash, *t, v.tag);
        codegen::CKernel ck;
        std::string fallback;  // the access its opts left unproven, where it is compiled without them
        try {
          try {
            ck = codegen::compile_proven(sk.ast, f.dims, po, fn_name(c, *t), &fallback);
          } catch (const codegen::OptError& e) {
            // an entry kiln tune measured on this kernel that this kiln's opts refuse: reported, not fatal
            warnings_ += o_.tune_db + ": warning: the entry for kernel '" + label + "' (" + v.tag + ", " + t->name +
                         ") does not apply (" + e.what() + "): the heuristics' opts are used\n";
            code.opts.clear();
            po.tuned.reset();
            ck = codegen::compile_proven(sk.ast, f.dims, po, fn_name(c, *t), &fallback);
          }
        } catch (const codegen::MathError& e) {
          err += frontend::render(
              frontend::diagnostic(k.loc, k.name.size(), "kernel '" + k.name + "' (" + v.tag + "): " + e.what()));
          return false;
        } catch (const InternalError& e) {
          throw InternalError("kiln gen: " + f.path + ": kernel '" + label + "' (" + v.tag + ", " + t->name +
                              "): " + e.what());
        }
        if (!fallback.empty())
          warnings_ += f.path + ": warning: kernel '" + label + "' (" + v.tag + ", " + t->name + "): " + fallback +
                       " after its opts: it is emitted without opts, where every access is proven (slower; please "
                       "report the spec)\n";
        code.source = std::move(ck.source);
        code.parallel = ck.parallel;
        code.scratch_slot = ck.scratch_slot;
        code.scratch_stride = ck.scratch_stride;
        code.scratch_bytes = ck.scratch_bytes;
        code.linear = std::move(ck.linear);
        code.global_size = ck.global_size;
        code.local_size = ck.local_size;
        code.buffer_args = ck.buffer_args;
        c.code.push_back(std::move(code));
      }
      v.kernels.push_back(std::move(c));
    }
    ki.variants.push_back(std::move(v));
  }
  return true;
}

}  // namespace kiln::emit::detail

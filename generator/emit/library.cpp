#include "generator/emit/library.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "generator/codegen/pipeline.h"
#include "generator/emit/names.h"
#include "generator/frontend/parser.h"
#include "generator/frontend/source.h"
#include "generator/frontend/spec_check.h"
#include "generator/frontend/spec_lower.h"
#include "generator/render/c.h"
#include "generator/schedule/schedule.h"
#include "generator/symbolic/symbolic.h"
#include "kiln/kernel_abi.h"

namespace kiln::emit {

namespace {

using frontend::Specialization;
using json = nlohmann::ordered_json;

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct SpecFile {
  std::string path, base;  // as given; the file name alone (the only part generated files show)
  std::string part;        // part_name(path): in the names of its files
  std::unique_ptr<frontend::SourceFile> source;
  frontend::Spec spec;
  std::unique_ptr<Context> ctx;  // owns every node of this file's schedules
  std::vector<const UOp*> dims;  // the generic DEFINE_VARs, declaration order: vars[] of its kernels
};

struct ShapeAxis {
  bool literal = false;
  int64_t size = 0;  // literal
  int32_t dim = -1;  // else: the file dim
};

struct Arg {
  std::string name, cxx;  // as declared; as a C++ parameter name
  DType dtype;
  std::vector<ShapeAxis> shape;
  bool output = false;
};

struct Compiled {
  std::string symbol;  // without the target suffix
  std::string source;  // the C function, named `symbol`
  bool parallel = false;
  std::vector<std::string> opts;
};

struct Variant {
  std::string tag;                                        // "M1_Sx64", "any"
  std::vector<std::pair<int32_t, Specialization>> guard;  // file dim -> bucket
  schedule::Schedule sched;
  std::vector<Compiled> kernels;
};

struct KernelInfo {
  std::string name;
  size_t file = 0;
  int line = 0, column = 0;   // of its name in the spec
  std::vector<Arg> args;      // inputs then outputs
  std::vector<int32_t> dims;  // the file dims its arguments bind, declaration order
  std::vector<Variant> variants;
};

// The runtime's dtypes in kiln_dtype's order (kernel_abi.h): the C++ enumerator, the spelling
// specs and the runtime use
struct RuntimeDType {
  Scalar scalar;
  const char* enumerator;
  const char* name;
};
constexpr RuntimeDType kRuntimeDTypes[] = {
    {Scalar::Bool, "Bool", "bool"},      {Scalar::Int8, "Int8", "i8"},           {Scalar::Uint8, "Uint8", "u8"},
    {Scalar::Int16, "Int16", "i16"},     {Scalar::Uint16, "Uint16", "u16"},      {Scalar::Int32, "Int32", "i32"},
    {Scalar::Uint32, "Uint32", "u32"},   {Scalar::Int64, "Int64", "i64"},        {Scalar::Uint64, "Uint64", "u64"},
    {Scalar::Float16, "Float16", "f16"}, {Scalar::BFloat16, "BFloat16", "bf16"}, {Scalar::Float32, "Float32", "f32"},
    {Scalar::Float64, "Float64", "f64"}};

// kiln_dtype's value of a spec dtype
int runtime_dtype(DType d) {
  for (int i = 0; i < int(std::size(kRuntimeDTypes)); ++i)
    if (kRuntimeDTypes[i].scalar == d.scalar) return i;
  throw InternalError("kiln gen: no runtime dtype for " + to_string(d));
}
std::string dtype_enum(DType d) { return kRuntimeDTypes[runtime_dtype(d)].enumerator; }
std::string dtype_short(DType d) { return kRuntimeDTypes[runtime_dtype(d)].name; }

// How index math over the dims is written: for people (the dim names), as C++ over d[i], or as C++
// that counts the overflows in a kiln::detail::CheckedSize named c (sizes at dims their ranges
// allow may not fit in 64 bits)
enum class Style { Text, Cxx, Checked };

std::string expr_text(const UOp* u, const std::vector<const UOp*>& dims, Style style) {
  auto s = [&](size_t i) { return expr_text(u->src(i), dims, style); };
  auto op = [&](const char* infix, const char* checked) {
    return style == Style::Checked ? std::string("c.") + checked + "(" + s(0) + ", " + s(1) + ")"
                                   : "(" + s(0) + " " + infix + " " + s(1) + ")";
  };
  switch (u->op) {
    case Op::CONST:
      return std::to_string(u->ival()) + (style == Style::Text ? "" : "LL");
    case Op::DEFINE_VAR: {
      std::string_view n = u->arg<VarArg>().name;
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i]->arg<VarArg>().name == n)
          return style == Style::Text ? std::string(n) : "d[" + std::to_string(i) + "]";
      throw InternalError("kiln gen: " + std::string(n) + " is not a dim of the spec");
    }
    case Op::ADD:
      return op("+", "add");
    case Op::SUB:
      return op("-", "sub");
    case Op::MUL:
      return op("*", "mul");
    case Op::NEG:
      return style == Style::Checked ? "c.neg(" + s(0) + ")" : "(-" + s(0) + ")";
    case Op::CDIV:
    case Op::FLOORDIV:  // index math of sizes: non-negative, where floor and C's division agree
      if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0)
        throw InternalError("kiln gen: a size divides a value that may be negative");
      return op("/", "div");
    case Op::CMOD:
    case Op::FLOORMOD:
      if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0)
        throw InternalError("kiln gen: a size takes a remainder of a value that may be negative");
      return op("%", "mod");
    case Op::MAX:
      return std::string(style == Style::Text  ? "max("
                         : style == Style::Cxx ? "kiln_max("
                                               : "c.max(") +
             s(0) + ", " + s(1) + ")";
    default:
      throw InternalError("kiln gen: cannot write " + std::string(op_name(u->op)) + " in a size");
  }
}

std::string guard_text(const Variant& v, const std::vector<const UOp*>& dims) {
  if (v.guard.empty()) return "any shape in range";
  std::string s;
  for (const auto& [dim, b] : v.guard) {
    std::string n(dims[size_t(dim)]->arg<VarArg>().name);
    s += (s.empty() ? "" : " && ") +
         (b.multiple ? n + " % " + std::to_string(b.value) + " == 0" : n + " == " + std::to_string(b.value));
  }
  return s;
}

// What a kernel costs: ALU ops and reduction steps executed (each counted once per iteration of
// the loops it sits in), and bytes of its buffers.
struct Estimate {
  const UOp* flops;
  const UOp* bytes;
};
Estimate estimate(const UOp* ast) {
  Context& ctx = ast->ctx();
  std::unordered_map<const UOp*, std::vector<const UOp*>> in;  // the ranges a value varies with
  Expr flops = ctx.cint(0), bytes = ctx.cint(0);
  for (const UOp* u : toposort(ast)) {
    std::set<const UOp*, bool (*)(const UOp*, const UOp*)> rs([](const UOp* a, const UOp* b) { return a->id < b->id; });
    if (u->op == Op::RANGE) rs.insert(u);
    for (const UOp* s : u->src())
      if (auto it = in.find(s); it != in.end()) rs.insert(it->second.begin(), it->second.end());
    auto count = [&](const std::set<const UOp*, bool (*)(const UOp*, const UOp*)>& ranges) {
      Expr n = ctx.cint(1);
      for (const UOp* r : ranges) n = n * Expr(r->src(0));
      return n;
    };
    if (u->op == Op::REDUCE) {
      flops = flops + count(rs);
      for (const UOp* r : u->src().subspan(1)) rs.erase(r);
    } else if (is_alu(u->op) && u->dtype != dtypes::weakint && !is_bool(u->dtype)) {
      flops = flops + count(rs);
    }
    if (u->op == Op::PARAM) bytes = bytes + Expr(u->src(0)) * int64_t(itemsize(u->dtype.base()));
    in[u].assign(rs.begin(), rs.end());
  }
  return {simplify(flops), simplify(bytes)};
}

class Generator {
 public:
  explicit Generator(const GenOptions& o) : o_(o) {}

  GenResult run() {
    GenResult r;
    if (!check_options(r.errors)) return r;
    if (o_.emit == Emit::Library) return link(r);
    if (o_.emit != Emit::All && o_.specs.size() != 1) {
      r.errors = "kiln: error: --emit " + std::string(o_.emit == Emit::Spec ? "spec" : "kernels") +
                 " writes the files of one spec (got " + std::to_string(o_.specs.size()) + ")\n";
      return r;
    }
    for (const std::string& path : o_.specs)
      if (!load(path, r.errors)) return r;
    for (size_t f = 0; f < files_.size(); ++f)
      if (!build_kernels(f, r.errors)) return r;
    if (o_.emit == Emit::All) r.files.push_back({o_.name + ".h", umbrella()});
    std::vector<std::string> parts;
    for (size_t f = 0; f < files_.size(); ++f) {
      const std::string prefix = o_.name + "_" + files_[f].part;
      if (o_.emit != Emit::Kernels) {
        r.files.push_back({prefix + ".h", header(f)});
        r.files.push_back({prefix + "_dispatch.cpp", dispatch(f)});
      }
      if (o_.emit != Emit::Spec)
        for (const Target* t : targets_) r.files.push_back({prefix + "_" + t->symbol + ".c", kernels_c(f, *t)});
      if (o_.emit != Emit::Kernels) {
        parts.push_back(manifest_part(f));
        r.files.push_back({prefix + ".manifest.json", parts.back()});
      }
    }
    if (o_.emit == Emit::All) {
      // merged from the parts' text, as a build that writes each spec's files separately merges them
      std::string merged;
      if (!merge_manifests(parts, merged, r.errors)) return r;
      r.files.push_back({o_.name + ".manifest.json", merged});
    }
    r.ok = true;
    return r;
  }

  std::string explain_call(const std::string& kernel, const std::map<std::string, int64_t>& given, uint32_t features,
                           bool* ok) {
    *ok = false;
    std::string err;
    if (!check_options(err)) return err;
    for (const std::string& path : o_.specs)
      if (!load(path, err)) return err;
    for (size_t f = 0; f < files_.size(); ++f)
      if (!build_kernels(f, err, &kernel)) return err;
    const KernelInfo* k = nullptr;
    for (const KernelInfo& ki : kernels_)
      if (ki.name == kernel) k = &ki;
    if (!k) return "kiln: error: no kernel named '" + kernel + "'\n";
    const SpecFile& sf = files_[k->file];
    std::vector<int64_t> d(sf.dims.size(), -1);
    for (int32_t i : k->dims) {
      const VarArg& va = sf.dims[size_t(i)]->arg<VarArg>();
      auto it = given.find(std::string(va.name));
      if (it == given.end()) return "kiln: error: " + kernel + " needs a value for dim " + std::string(va.name) + "\n";
      if (it->second < va.min || it->second > va.max)
        return "kiln: error: " + std::string(va.name) + " = " + std::to_string(it->second) +
               " is outside the declared range " + std::to_string(va.min) + ".." + std::to_string(va.max) + "\n";
      d[size_t(i)] = it->second;
    }
    for (const auto& [name, value] : given) {
      bool known = false;
      for (int32_t i : k->dims) known |= sf.dims[size_t(i)]->arg<VarArg>().name == name;
      if (!known) return "kiln: error: " + kernel + " has no dim " + name + "\n";
    }
    std::string out = kernel + " with";
    for (int32_t i : k->dims)
      out += " " + std::string(sf.dims[size_t(i)]->arg<VarArg>().name) + "=" + std::to_string(d[size_t(i)]);
    out += k->dims.empty() ? " no dims:\n" : ":\n";
    for (const Target* t : targets_) {
      for (const Variant& v : k->variants) {
        std::string label = "  " + kernel + "[" + v.tag + "] on " + t->name + " (" + guard_text(v, sf.dims) + "): ";
        if ((t->runtime_mask & features) != t->runtime_mask) {
          out += label + "skipped, this CPU lacks " + t->name.substr(7) + "\n";
          break;  // every variant of the target needs it
        }
        std::string why;
        for (const auto& [dim, b] : v.guard) {
          int64_t x = d[size_t(dim)];
          std::string n(sf.dims[size_t(dim)]->arg<VarArg>().name);
          if (b.multiple && x % b.value != 0)
            why = n + " = " + std::to_string(x) + " is not a multiple of " + std::to_string(b.value);
          if (!b.multiple && x != b.value) why = n + " = " + std::to_string(x) + " is not " + std::to_string(b.value);
          if (!why.empty()) break;
        }
        if (!why.empty()) {
          out += label + "skipped, " + why + "\n";
          continue;
        }
        out += label + "taken\n";
        *ok = true;
        return out;
      }
    }
    return out + "  no variant: this CPU has none of the library's targets\n";
  }

 private:
  bool check_options(std::string& err) {
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
          err = "kiln: error: " + o_.specs[j] + " and " + o_.specs[i] + " would both write files named " + o_.name +
                "_" + part_name(o_.specs[i]) + "*: the specs of one library need different file names\n";
          return false;
        }
    return true;
  }

  bool load(const std::string& path, std::string& err) {
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
  bool build_kernels(size_t fi, std::string& err, const std::string* only = nullptr) {
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
          err += frontend::render(frontend::diagnostic(k.loc, k.name.size(),
                                                       "kernel '" + k.name + "' is also defined in " +
                                                           files_[other.file].path + " (one library, one namespace)"));
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
          for (const char* suffix : {"_explain", "_workspace_size"})
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
      std::vector<std::string> cxx = cxx_parameter_names(names, {"ctx", "kiln", "std"});
      for (size_t i = 0; i < ki.args.size(); ++i) ki.args[i].cxx = cxx[i];
      std::sort(ki.dims.begin(), ki.dims.end());
      if (!build_variants(f, k, ki, err)) return false;
      kernels_.push_back(std::move(ki));
    }
    return true;
  }

  bool build_variants(SpecFile& f, const frontend::Kernel& k, KernelInfo& ki, std::string& err) {
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
        if (lowered.diagnostics.empty())
          err += "kiln: error: kernel '" + k.name + "' did not lower for " + v.tag + "\n";
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
      for (const auto& sk : v.sched.kernels) {
        Compiled c;
        codegen::PipelineOptions po;
        po.applied_opts = &c.opts;
        codegen::CKernel ck = codegen::compile_to_c(sk.ast, f.dims, po);
        c.symbol = ck.name;
        c.source = std::move(ck.source);
        c.parallel = ck.parallel;
        v.kernels.push_back(std::move(c));
      }
      ki.variants.push_back(std::move(v));
    }
    return true;
  }

  // the header names the parameters as the spec does; the definitions call them a0, a1, ... (no
  // clash with their locals, whatever the spec's names)
  static std::string param(const KernelInfo& k, size_t i, bool header) {
    return header ? k.args[i].cxx : "a" + std::to_string(i);
  }

  std::string signature(const KernelInfo& k, bool defaults, bool header = true) const {
    std::string s;
    for (size_t i = 0; i < k.args.size(); ++i)
      s += (s.empty() ? "" : ", ") + std::string("kiln::TensorView ") + param(k, i, header);
    if (defaults) return s + (s.empty() ? "" : ", ") + "kiln::Context* ctx = nullptr";
    return s;
  }

  std::string arg_text(const Arg& a, const SpecFile& f) const {
    std::string s = a.name + ": " + dtype_short(a.dtype) + "[";
    for (size_t i = 0; i < a.shape.size(); ++i)
      s += (i ? ", " : "") +
           (a.shape[i].literal ? std::to_string(a.shape[i].size) : f.spec.dims[size_t(a.shape[i].dim)].name);
    return s + "]";
  }

  std::string dims_params(const KernelInfo& k, bool header = true) const {
    std::vector<std::string> names;
    for (int32_t d : k.dims) names.push_back(files_[k.file].spec.dims[size_t(d)].name);
    std::vector<std::string> cxx = cxx_parameter_names(names, {"kiln", "std"});
    std::string s;
    for (size_t i = 0; i < k.dims.size(); ++i)
      s += (s.empty() ? "" : ", ") + std::string("int64_t ") + (header ? cxx[i] : "dim" + std::to_string(k.dims[i]));
    return s;
  }

  // L.h: the part headers (only the specs' names, so a build can write it without reading them)
  std::string umbrella() const {
    std::string s = "// " + o_.name + ".h: generated by kiln gen from";
    for (const std::string& p : o_.specs) s += " " + base_name(p);
    s += ". Do not edit.\n//\n// Each kernel takes its inputs, then its outputs, as kiln::TensorView (a pointer to "
         "contiguous\n"
         "// row-major data and its shape), and an optional kiln::Context (threads, workspace; without one the\n"
         "// call runs on the calling thread). A bad call returns a Status that names the kernel and the\n"
         "// argument; nothing is thrown. The kernels of each spec are declared in its part header.\n"
         "#pragma once\n\n";
    for (const std::string& p : o_.specs) s += "#include \"" + o_.name + "_" + part_name(p) + ".h\"\n";
    return s;
  }

  // L_<part>.h: the entry points of one spec's kernels
  std::string header(size_t fi) const {
    const SpecFile& f = files_[fi];
    std::string s = "// " + o_.name + "_" + f.part + ".h: generated by kiln gen from " + f.base + " (through " +
                    o_.name +
                    ".h). Do not edit.\n#pragma once\n\n#include <cstddef>\n#include <cstdint>\n#include "
                    "<string>\n\n#include <kiln/kiln.h>\n\nnamespace " +
                    o_.name + " {\n";
    for (const KernelInfo& k : kernels_) {
      if (k.file != fi) continue;
      std::string ins, outs;
      for (const Arg& a : k.args)
        (a.output ? outs : ins) += ((a.output ? outs : ins).empty() ? "" : ", ") + arg_text(a, f);
      s += "\n// " + k.name + "(" + ins + ") -> (" + outs + "), from " + f.base + "\n";
      for (int32_t d : k.dims) {
        const frontend::Dim& dim = f.spec.dims[size_t(d)];
        s += "//   " + dim.name + " in " + std::to_string(dim.min) + ".." + std::to_string(dim.max);
        std::string sp;
        for (const Specialization& b : dim.specializations)
          sp += std::string(sp.empty() ? "" : ", ") + (b.multiple ? "%" : "") + std::to_string(b.value);
        s += (sp.empty() ? "" : ", specialized for " + sp) + "\n";
      }
      s += "kiln::Status " + k.name + "(" + signature(k, true) + ");\n";
      s += "// bytes of workspace a call with these dims uses (0 when they are outside their ranges, SIZE_MAX\n"
           "// when the bytes are too many to count: a call with them is refused)\n";
      s += "std::size_t " + k.name + "_workspace_size(" + dims_params(k) + ");\n";
      s += "// which variant a call with these arguments takes, and why (or what is wrong with the call)\n";
      s += "std::string " + k.name + "_explain(" + signature(k, false) + ");\n";
    }
    return s + "\n}  // namespace " + o_.name + "\n";
  }

  std::string fn_name(const Compiled& c, const Target& t) const { return c.symbol + "_" + t.symbol; }

  std::string dispatch(size_t fi) const {
    const std::string part = o_.name + "_" + files_[fi].part;
    std::string s = "// " + part + "_dispatch.cpp: generated by kiln gen from " + files_[fi].base +
                    ". Do not edit.\n#include \"" + part + ".h\"\n\n#include <kiln/kernel_abi.h>\n\n";
    std::vector<const KernelInfo*> ks;
    for (const KernelInfo& k : kernels_)
      if (k.file == fi) ks.push_back(&k);
    // kernel declarations
    for (const Target* t : targets_) {
      if (!t->arch_guard.empty()) s += "#if " + t->arch_guard + "\n";
      s += "extern \"C\" {\n";
      for (const KernelInfo* k : ks)
        for (const Variant& v : k->variants)
          for (const Compiled& c : v.kernels)
            s += "void " + fn_name(c, *t) + "(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores);\n";
      s += "}\n";
      if (!t->arch_guard.empty()) s += "#endif\n";
    }
    s += R"(
namespace {

// a variant: the CPU features its target needs, the buckets its dims must be in, how it runs
struct Guard {
  int32_t dim;    // index into the call's dims
  bool multiple;  // dim % value == 0; else dim == value
  int64_t value;
};
struct Variant {
  const char* name;
  uint32_t features;
  const Guard* guards;
  int32_t guard_count;
  kiln::Status (*run)(void* const* args, const int64_t* d, kiln::Context* ctx);
  std::size_t (*workspace)(const int64_t* d);
};

[[maybe_unused]] inline bool holds(const Variant& v, const int64_t* d, uint32_t features) {
  if ((v.features & features) != v.features) return false;
  for (int32_t i = 0; i < v.guard_count; ++i) {
    const Guard& g = v.guards[i];
    if (g.multiple ? d[g.dim] % g.value != 0 : d[g.dim] != g.value) return false;
  }
  return true;
}

[[maybe_unused]] inline int64_t kiln_max(int64_t a, int64_t b) { return a > b ? a : b; }

// this CPU's features, read once before main (a call made earlier still gets a right answer: the
// portable variants)
[[maybe_unused]] const uint32_t kCpuFeatures = kiln::cpu_features();

// the first variant whose guard holds: the generic one holds for every shape in range
[[maybe_unused]] inline const Variant* pick(const Variant* vs, int32_t n, const int64_t* d) {
  for (int32_t i = 0; i < n; ++i)
    if (holds(vs[i], d, kCpuFeatures)) return &vs[i];
  return nullptr;
}

[[maybe_unused]] std::string explain(const char* kernel, const Variant* vs, int32_t n, const int64_t* d, const char* const* dim_names) {
  const uint32_t features = kiln::cpu_features();
  std::string s = std::string(kernel) + " on a CPU with " + kiln::cpu_features_string() + ":\n";
  for (int32_t i = 0; i < n; ++i) {
    const Variant& v = vs[i];
    s += "  " + std::string(v.name) + ": ";
    if ((v.features & features) != v.features) {
      s += "skipped, this CPU lacks its instructions\n";
      continue;
    }
    std::string why;
    for (int32_t j = 0; j < v.guard_count && why.empty(); ++j) {
      const Guard& g = v.guards[j];
      std::string x = std::string(dim_names[g.dim]) + " = " + std::to_string(d[g.dim]);
      if (g.multiple && d[g.dim] % g.value != 0) why = x + " is not a multiple of " + std::to_string(g.value);
      if (!g.multiple && d[g.dim] != g.value) why = x + " is not " + std::to_string(g.value);
    }
    if (!why.empty()) {
      s += "skipped, " + why + "\n";
      continue;
    }
    return s + "taken\n";
  }
  return s + "no variant holds (a kiln bug: the generic variant covers every shape in range)\n";
}

)";
    for (const KernelInfo* k : ks) s += dispatch_kernel(*k);
    s += "}  // namespace\n\nnamespace " + o_.name + " {\n";
    for (const KernelInfo* k : ks) s += entry_points(*k);
    return s + "\n}  // namespace " + o_.name + "\n";
  }

  // the checks and dim binding of one kernel's arguments, its variants' run functions, its table
  std::string dispatch_kernel(const KernelInfo& k) const {
    const SpecFile& f = files_[k.file];
    std::string s = "// ---- " + k.name + "\n\n";
    // the checks inline, each falling back to the runtime's check only to write the message (the
    // first sight of a dim checks its range, later ones that they agree)
    s += "kiln::Status bind_" + k.name + "(";
    for (size_t i = 0; i < k.args.size(); ++i) s += "const kiln::TensorView& " + param(k, i, false) + ", ";
    s += "int64_t* d) {\n  (void)d;\n";
    std::string kq = "\"" + k.name + "\"";
    std::map<int32_t, std::pair<std::string, size_t>> bound;  // dim -> the argument and axis that bound it
    auto fail = [](const std::string& call) {
      return "{\n    kiln::Status st = " + call + ";\n    if (!st.ok()) return st;\n  }\n";
    };
    for (size_t ai = 0; ai < k.args.size(); ++ai) {
      const Arg& a = k.args[ai];
      std::string p = param(k, ai, false), aq = "\"" + a.name + "\"";
      std::string cond = p + ".t.data == nullptr || " + p + ".t.rank != " + std::to_string(a.shape.size()) + " || " +
                         p + ".t.dtype != " + std::to_string(int(runtime_dtype(a.dtype)));
      if (a.output) cond += " || !" + p + ".t.writable";
      for (size_t ax = 0; ax < a.shape.size(); ++ax) cond += " || " + p + ".t.shape[" + std::to_string(ax) + "] < 0";
      s += "  if (" + cond + ")\n  " +
           fail("kiln::detail::check_tensor(" + kq + ", " + aq + ", " + p + ", kiln::DType::" + dtype_enum(a.dtype) +
                ", " + std::to_string(a.shape.size()) + ", " + (a.output ? "true" : "false") + ")");
      for (size_t ax = 0; ax < a.shape.size(); ++ax) {
        const ShapeAxis& x = a.shape[ax];
        std::string dim = p + ".t.shape[" + std::to_string(ax) + "]", axs = std::to_string(ax);
        if (x.literal) {
          s += "  if (" + dim + " != " + std::to_string(x.size) + ")\n  " +
               fail("kiln::detail::check_extent(" + kq + ", " + aq + ", " + axs + ", " + dim + ", " +
                    std::to_string(x.size) + ")");
          continue;
        }
        const frontend::Dim& fd = f.spec.dims[size_t(x.dim)];
        std::string di = "d[" + std::to_string(x.dim) + "]", lo = std::to_string(fd.min), hi = std::to_string(fd.max);
        auto by = bound.find(x.dim);
        if (by == bound.end()) {
          bound[x.dim] = {a.name, ax};
          s += "  " + di + " = " + dim + ";\n  if (" + di + " < " + lo + " || " + di + " > " + hi + ") {\n" +
               "    int64_t unbound = -1;\n    const char* by = nullptr;\n    int32_t by_axis = 0;\n" +
               "    return kiln::detail::bind_dim(" + kq + ", " + aq + ", " + axs + ", \"" + fd.name + "\", " + dim +
               ", " + lo + ", " + hi + ", &unbound, &by, &by_axis);\n  }\n";
        } else {
          s += "  if (" + dim + " != " + di + ") {\n    int64_t value = " + di + ";\n    const char* by = \"" +
               by->second.first + "\";\n    int32_t by_axis = " + std::to_string(by->second.second) + ";\n" +
               "    return kiln::detail::bind_dim(" + kq + ", " + aq + ", " + axs + ", \"" + fd.name + "\", " + dim +
               ", " + lo + ", " + hi + ", &value, &by, &by_axis);\n  }\n";
        }
      }
    }
    // every output apart from every other argument: the kernels read and write them as if they were
    // (no kernel is declared in place), and a refused call writes nothing
    const size_t inputs = count_inputs(k);
    if (inputs < k.args.size() && k.args.size() > 1) {
      s += "  {\n";
      for (size_t i = 0; i < k.args.size(); ++i)
        s += "    const kiln::detail::Extent e" + std::to_string(i) + " = " + extent_text(k, i) + ";\n";
      for (size_t o = inputs; o < k.args.size(); ++o)
        for (size_t x = 0; x < o; ++x)
          s += "    if (kiln::detail::overlap(e" + std::to_string(o) + ", e" + std::to_string(x) +
               ")) return kiln::detail::overlap_error(" + kq + ", \"" + k.args[o].name + "\", \"" + k.args[x].name +
               "\", " + (x >= inputs ? "true" : "false") + ");\n";
      s += "  }\n";
    }
    s += "  return kiln::Status();\n}\n\n";
    std::string table;
    for (const Target* t : targets_) {
      std::string guard_open = t->arch_guard.empty() ? "" : "#if " + t->arch_guard + "\n";
      std::string guard_close = t->arch_guard.empty() ? "" : "#endif\n";
      s += guard_open;
      table += guard_open;
      for (const Variant& v : k.variants) {
        std::string id = k.name + "_" + v.tag + "_" + t->symbol;
        // SIZE_MAX when the bytes cannot be counted: the call is refused, <kernel>_workspace_size says it
        s += "std::size_t workspace_" + id + "(const int64_t* d) {\n  (void)d;\n  kiln::detail::CheckedSize c;\n" +
             "  const int64_t bytes = " + expr_text(v.sched.workspace_bytes, f.dims, Style::Checked) +
             ";\n  return c.bytes(bytes);\n}\n";
        s += "kiln::Status run_" + id + "(void* const* args, const int64_t* d, kiln::Context* ctx) {\n";
        s += "  kiln::Status st;\n  (void)ctx;\n";
        bool ws = !(v.sched.workspace_bytes->op == Op::CONST && v.sched.workspace_bytes->ival() == 0);
        if (ws)
          s += "  const std::size_t ws_bytes = workspace_" + id + "(d);\n  if (ws_bytes == SIZE_MAX) return " +
               "kiln::detail::workspace_overflow(\"" + k.name + "\");\n" +
               "  char* ws = static_cast<char*>(kiln::detail::workspace(ctx, ws_bytes, &st));\n" +
               "  if (!st.ok()) return st;\n";
        for (size_t i = 0; i < v.kernels.size(); ++i) {
          const auto& sk = v.sched.kernels[i];
          std::string bufs;
          for (int32_t b : sk.buffers) {
            const schedule::Buffer& buf = v.sched.buffers[size_t(b)];
            std::string p;
            if (buf.kind == schedule::Buffer::Kind::Input) p = "args[" + std::to_string(buf.position) + "]";
            if (buf.kind == schedule::Buffer::Kind::Output)
              p = "args[" + std::to_string(size_t(buf.position) + count_inputs(k)) + "]";
            if (buf.kind == schedule::Buffer::Kind::Intermediate)
              p = "ws + " + expr_text(buf.offset, f.dims, Style::Cxx);
            bufs += (bufs.empty() ? "" : ", ") + p;
          }
          std::string fn = fn_name(v.kernels[i], *t);
          s += "  {\n    void* const bufs[] = {" + bufs + "};\n";
          if (v.kernels[i].parallel)  // the cores share it: through the context's threads, if it has several
            s += "    if (ctx != nullptr && ctx->threads() > 1) {\n      if (!(st = kiln::detail::run(ctx, " + fn +
                 ", bufs, d, true)).ok()) return st;\n    } else {\n      " + fn + "(bufs, d, 0, 1);\n    }\n";
          else
            s += "    " + fn + "(bufs, d, 0, 1);\n";
          s += "  }\n";
        }
        s += "  return st;\n}\n";
        std::string guards = "nullptr";
        if (!v.guard.empty()) {
          guards = "kGuards_" + id;
          s += "const Guard " + guards + "[] = {";
          for (size_t i = 0; i < v.guard.size(); ++i)
            s += std::string(i ? ", " : "") + "{" + std::to_string(v.guard[i].first) + ", " +
                 (v.guard[i].second.multiple ? "true" : "false") + ", " + std::to_string(v.guard[i].second.value) + "}";
          s += "};\n";
        }
        table += "    {\"" + k.name + "[" + guard_text(v, f.dims) + "] on " + t->name + "\", " + t->runtime_bits + ", " +
                 guards + ", " + std::to_string(v.guard.size()) + ", run_" + id + ", workspace_" + id + "},\n";
      }
      s += guard_close;
      table += guard_close;
    }
    s += "const Variant kVariants_" + k.name + "[] = {\n" + table + "};\n";
    s += "const int32_t kVariantCount_" + k.name + " = int32_t(sizeof kVariants_" + k.name + " / sizeof(Variant));\n";
    s += "const char* const kDimNames_" + k.name + "[] = {";
    for (size_t i = 0; i < f.dims.size(); ++i) s += std::string(i ? ", " : "") + "\"" + f.spec.dims[i].name + "\"";
    if (f.dims.empty()) s += "\"\"";
    s += "};\n\n";
    return s;
  }

  // The bytes argument i occupies, once its dims are bound: the product of the bound dims, with no
  // overflow check where none can overflow at their maximums (the common case: a few instructions
  // per call), else the runtime's saturating count
  std::string extent_text(const KernelInfo& k, size_t i) const {
    const Arg& a = k.args[i];
    uint64_t bound = itemsize(a.dtype), literal = bound;
    bool fast = true;
    std::string dims;
    for (const ShapeAxis& x : a.shape) {
      const int64_t most = x.literal ? x.size : files_[k.file].spec.dims[size_t(x.dim)].max;
      fast &= x.literal || files_[k.file].spec.dims[size_t(x.dim)].min >= 1;  // no elements: no extent
      fast &= most >= 0 && !__builtin_mul_overflow(bound, uint64_t(most), &bound);
      if (x.literal)
        literal *= uint64_t(x.size);
      else
        dims += " * uint64_t(d[" + std::to_string(x.dim) + "])";
    }
    if (!fast) return "kiln::detail::extent(" + param(k, i, false) + ".t, " + std::to_string(itemsize(a.dtype)) + ")";
    return "kiln::detail::extent_of(" + param(k, i, false) + ".t.data, " + std::to_string(literal) + "ULL" + dims + ")";
  }

  size_t count_inputs(const KernelInfo& k) const {
    return size_t(std::count_if(k.args.begin(), k.args.end(), [](const Arg& a) { return !a.output; }));
  }

  std::string entry_points(const KernelInfo& k) const {
    const SpecFile& f = files_[k.file];
    std::string nd = std::to_string(std::max<size_t>(f.dims.size(), 1));
    // in the library's namespace, where a kernel's name hides a name of the dispatch's own: those are
    // spelled from the global namespace
    std::string init = "  int64_t d[" + nd + "];\n  for (int64_t& x : d) x = -1;\n";
    std::string names;
    for (size_t i = 0; i < k.args.size(); ++i) names += param(k, i, false) + ", ";
    std::string s = "\nkiln::Status " + k.name + "(" + signature(k, false, false) + ", kiln::Context* ctx) {\n" + init;
    s += "  kiln::Status st = ::bind_" + k.name + "(" + names + "d);\n  if (!st.ok()) return st;\n";
    s += "  void* const args[] = {";
    for (size_t i = 0; i < k.args.size(); ++i) s += std::string(i ? ", " : "") + param(k, i, false) + ".t.data";
    s += "};\n";
    s += "  const ::Variant* v = ::pick(::kVariants_" + k.name + ", ::kVariantCount_" + k.name + ", d);\n";
    s += "  if (!v) return kiln::Status(kiln::StatusCode::Unsupported, \"" + k.name +
         ": no variant runs on this CPU (the library was built for none of its targets)\");\n";
    s += "  return v->run(args, d, ctx);\n}\n";
    // workspace size
    s += "\nstd::size_t " + k.name + "_workspace_size(" + dims_params(k, false) + ") {\n" + init;
    for (int32_t i : k.dims) {
      const frontend::Dim& fd = f.spec.dims[size_t(i)];
      std::string n = "dim" + std::to_string(i);
      s += "  if (" + n + " < " + std::to_string(fd.min) + " || " + n + " > " + std::to_string(fd.max) +
           ") return 0;\n  d[" + std::to_string(i) + "] = " + n + ";\n";
    }
    s += "  const ::Variant* v = ::pick(::kVariants_" + k.name + ", ::kVariantCount_" + k.name + ", d);\n";
    s += "  return v ? v->workspace(d) : 0;\n}\n";
    // explain
    s += "\nstd::string " + k.name + "_explain(" + signature(k, false, false) + ") {\n" + init;
    s += "  kiln::Status st = ::bind_" + k.name + "(" + names +
         "d);\n  if (!st.ok()) return \"error: \" + st.message();\n";
    s += "  return ::explain(\"" + k.name + "\", ::kVariants_" + k.name + ", ::kVariantCount_" + k.name +
         ", d, ::kDimNames_" + k.name + ");\n}\n";
    return s;
  }

  std::string kernels_c(size_t fi, const Target& t) const {
    const std::string file = o_.name + "_" + files_[fi].part + "_" + t.symbol;
    std::string s = "/* " + file + ".c: generated by kiln gen from " + files_[fi].base + " for target " + t.name +
                    ". Do not edit. */\n";
    if (!t.c_flags.empty()) {
      s += "/* compile with:";
      for (const std::string& fl : t.c_flags) s += " " + fl;
      s += " */\n";
    }
    s += "#include <kiln/kernel_abi.h>\n#if KILN_ABI_VERSION != 1\n#error \"these kernels are for kiln ABI "
         "1\"\n#endif\n";
    if (!t.arch_guard.empty()) s += "#if " + t.arch_guard + "\n";
    s += render::c_preamble();
    for (const KernelInfo& k : kernels_)
      for (const Variant& v : k.variants)
        for (const Compiled& c : v.kernels) {
          if (k.file != fi) continue;
          std::string src = c.source;
          std::string from = "void " + c.symbol + "(", to = "void " + fn_name(c, t) + "(";
          size_t at = src.find(from);
          if (at == std::string::npos) throw InternalError("kiln gen: kernel " + c.symbol + " not found in its C");
          src.replace(at, from.size(), to);
          s += src;
        }
    if (!t.arch_guard.empty()) s += "#endif\n";
    return s + "typedef int " + file + "_unit; /* a translation unit is never empty */\n";
  }

  // L_<part>.manifest.json: one spec's files and kernels
  std::string manifest_part(size_t fi) const {
    const SpecFile& sf = files_[fi];
    const std::string prefix = o_.name + "_" + sf.part;
    json m;
    m["library"] = o_.name;
    m["kiln_abi"] = 1;
    m["spec"] = sf.base;
    json ts = json::array();
    for (const Target* t : targets_) {
      json tj;
      tj["name"] = t->name;
      tj["file"] = prefix + "_" + t->symbol + ".c";
      tj["flags"] = t->c_flags;
      tj["features"] = t->runtime_bits;
      ts.push_back(tj);
    }
    m["targets"] = ts;
    json files = json::array({prefix + ".h", prefix + "_dispatch.cpp"});
    for (const Target* t : targets_) files.push_back(prefix + "_" + t->symbol + ".c");
    files.push_back(prefix + ".manifest.json");
    m["files"] = files;
    json ks = json::array();
    for (const KernelInfo& k : kernels_) {
      if (k.file != fi) continue;
      const SpecFile& f = files_[k.file];
      json kj;
      kj["name"] = k.name;
      kj["spec"] = f.base;
      kj["line"] = k.line;
      kj["column"] = k.column;
      json ins = json::array(), outs = json::array();
      for (const Arg& a : k.args) {
        json aj;
        aj["name"] = a.name;
        aj["dtype"] = dtype_short(a.dtype);
        json shape = json::array();
        for (const ShapeAxis& x : a.shape) {
          if (x.literal)
            shape.push_back(x.size);
          else
            shape.push_back(f.spec.dims[size_t(x.dim)].name);
        }
        aj["shape"] = shape;
        (a.output ? outs : ins).push_back(aj);
      }
      kj["inputs"] = ins;
      kj["outputs"] = outs;
      json dims = json::array();
      for (int32_t d : k.dims) {
        const frontend::Dim& fd = f.spec.dims[size_t(d)];
        json dj;
        dj["name"] = fd.name;
        dj["min"] = fd.min;
        dj["max"] = fd.max;
        json sp = json::array();
        for (const Specialization& b : fd.specializations)
          sp.push_back(b.multiple ? "%" + std::to_string(b.value) : std::to_string(b.value));
        dj["specialize"] = sp;
        dims.push_back(dj);
      }
      kj["dims"] = dims;
      json vs = json::array();
      for (const Target* t : targets_)
        for (const Variant& v : k.variants) {
          json vj;
          vj["name"] = k.name + "[" + v.tag + "]";
          vj["target"] = t->name;
          vj["guard"] = guard_text(v, f.dims);
          vj["workspace_bytes"] = expr_text(v.sched.workspace_bytes, f.dims, Style::Text);
          json kernels = json::array();
          for (size_t i = 0; i < v.kernels.size(); ++i) {
            const Compiled& c = v.kernels[i];
            Estimate e = estimate(v.sched.kernels[i].ast);
            json cj;
            cj["symbol"] = fn_name(c, *t);
            cj["opts"] = c.opts;
            cj["parallel"] = c.parallel;
            cj["flops"] = expr_text(e.flops, f.dims, Style::Text);
            cj["bytes"] = expr_text(e.bytes, f.dims, Style::Text);
            kernels.push_back(cj);
          }
          vj["kernels"] = kernels;
          vs.push_back(vj);
        }
      kj["variants"] = vs;
      ks.push_back(kj);
    }
    m["kernels"] = ks;
    return m.dump(2) + "\n";
  }

  // L.manifest.json from the parts' manifests (in spec order): every file, the kernel files per
  // target, the kernels; a kernel two specs define, or one named like another's generated function,
  // is an error here too (a build that writes each spec's files separately finds it only here)
  bool merge_manifests(const std::vector<std::string>& parts, std::string& out, std::string& err) const {
    json m;
    m["library"] = o_.name;
    m["kiln_abi"] = 1;
    json specs = json::array(), ts = json::array(), files = json::array({o_.name + ".h"}), ks = json::array();
    for (const Target* t : targets_) {
      json tj;
      tj["name"] = t->name;
      tj["files"] = json::array();
      tj["flags"] = t->c_flags;
      tj["features"] = t->runtime_bits;
      ts.push_back(tj);
    }
    std::map<std::string, std::string> where;  // kernel -> spec:line:col
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string what = o_.name + "_" + part_name(o_.specs[i]) + ".manifest.json";
      try {
        json p = json::parse(parts[i]);
        std::string why;
        if (p.at("library") != o_.name) why = "library " + p.at("library").dump() + ", not " + o_.name;
        if (why.empty() && p.at("kiln_abi") != 1) why = "kiln ABI " + p.at("kiln_abi").dump();
        if (why.empty() && p.at("spec") != base_name(o_.specs[i])) why = "spec " + p.at("spec").dump();
        const json& pts = p.at("targets");
        bool same = pts.size() == targets_.size();
        for (size_t t = 0; same && t < targets_.size(); ++t) same = pts[t].at("name") == targets_[t]->name;
        if (why.empty() && !same) why = "other targets";
        if (!why.empty()) {
          err = "kiln: error: " + what + " was written for " + why + ": write it again with these options\n";
          return false;
        }
        specs.push_back(p.at("spec"));
        for (size_t t = 0; t < targets_.size(); ++t) ts[t]["files"].push_back(pts[t].at("file"));
        for (const json& f : p.at("files")) files.push_back(f);
        for (const json& k : p.at("kernels")) {
          std::string name = k.at("name"), at = k.at("spec").get<std::string>() + ":" +
                                                std::to_string(k.at("line").get<int>()) + ":" +
                                                std::to_string(k.at("column").get<int>());
          if (auto it = where.find(name); it != where.end()) {
            err = "kiln: error: kernel '" + name + "' is defined at " + it->second + " and at " + at +
                  " (one library, one namespace)\n";
            return false;
          }
          where[name] = at;
          ks.push_back(k);
        }
      } catch (const json::exception& e) {
        err = "kiln: error: " + what + " is not a kiln part manifest (" + e.what() + ")\n";
        return false;
      }
    }
    for (const auto& [name, at] : where)
      for (const char* suffix : {"_explain", "_workspace_size"})
        if (auto it = where.find(name + suffix); it != where.end()) {
          err = "kiln: error: kernel '" + it->first + "' (" + it->second + ") clashes with the generated function " +
                it->first + " of kernel '" + name + "' (" + at + ")\n";
          return false;
        }
    files.push_back(o_.name + ".manifest.json");
    m["specs"] = specs;
    m["targets"] = ts;
    m["files"] = files;
    m["kernels"] = ks;
    out = m.dump(2) + "\n";
    return true;
  }

  // Emit::Library: L.h and L.manifest.json from the part manifests another run wrote
  GenResult link(GenResult r) const {
    std::vector<std::string> parts;
    for (const std::string& spec : o_.specs) {
      std::string path = (o_.parts_dir.empty() ? std::string(".") : o_.parts_dir) + "/" + o_.name + "_" +
                         part_name(spec) + ".manifest.json";
      frontend::InputFile in = frontend::read_input_file(path);
      if (!in.ok()) {
        in.error.pop_back();
        r.errors = in.error + " (kiln gen --emit spec " + spec + " writes it)\n";
        return r;
      }
      parts.push_back(std::move(in.text));
    }
    r.files.push_back({o_.name + ".h", umbrella()});
    std::string merged;
    if (!merge_manifests(parts, merged, r.errors)) return r;
    r.files.push_back({o_.name + ".manifest.json", merged});
    r.ok = true;
    return r;
  }

  const GenOptions& o_;
  std::vector<const Target*> targets_;  // best first
  std::vector<SpecFile> files_;
  std::vector<KernelInfo> kernels_;  // in spec order
};

std::string make_escape(const std::string& p) {
  std::string s;
  for (char c : p) {
    if (c == ' ' || c == '#' || c == ':') s += '\\';
    if (c == '$') s += '$';
    s += c;
  }
  return s;
}

}  // namespace

std::string part_name(const std::string& spec_path) {
  std::string p = base_name(spec_path);
  if (p.size() > 5 && p.ends_with(".kiln")) p.resize(p.size() - 5);
  for (char& c : p)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return p;
}

GenResult generate(const GenOptions& options) { return Generator(options).run(); }

std::vector<std::string> stale_files(const std::string& old_manifest, const GenResult& now) {
  json m = json::parse(old_manifest, nullptr, false);
  std::vector<std::string> stale;
  if (m.is_discarded() || !m.is_object() || !m.contains("files") || !m["files"].is_array()) return stale;
  std::set<std::string> written;
  for (const auto& [name, text] : now.files) written.insert(name);
  for (const json& f : m["files"]) {
    if (!f.is_string()) continue;
    std::string name = f.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") continue;
    if (!written.contains(name) && std::find(stale.begin(), stale.end(), name) == stale.end()) stale.push_back(name);
  }
  return stale;
}

std::string depfile(const std::string& first_output, const std::vector<std::string>& specs, const std::string& tool) {
  std::string s = make_escape(first_output) + ":";
  for (const std::string& p : specs) s += " \\\n  " + make_escape(p);
  if (!tool.empty()) s += " \\\n  " + make_escape(tool);
  return s + "\n";
}

std::string explain(const GenOptions& options, const std::string& kernel, const std::map<std::string, int64_t>& dims,
                    uint32_t features, bool* ok) {
  return Generator(options).explain_call(kernel, dims, features, ok);
}

}  // namespace kiln::emit

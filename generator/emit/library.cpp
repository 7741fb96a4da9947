#include "generator/emit/library.h"

#include <algorithm>
#include <cstdint>

#include "generator/emit/generator.h"
#include "generator/target/object_size.h"

namespace kiln::emit::detail {

GenResult Generator::run() {
  GenResult r;
  if (!check_options(r.errors)) return r;
  if (o_.emit == Emit::Library) return link(r);
  if (o_.emit != Emit::All && o_.specs.size() != 1) {
    r.errors = "kiln: error: --emit " + std::string(o_.emit == Emit::Spec ? "spec" : "kernels") +
               " writes the files of one spec (got " + std::to_string(o_.specs.size()) + ")\n";
    return r;
  }
  if (!load_tune_db(r.errors)) return r;
  for (const std::string& path : o_.specs)
    if (!load(path, r.errors)) return r;
  for (size_t f = 0; f < files_.size(); ++f)
    if (!build_kernels(f, r.errors)) return r;
  // a dispatch source embeds its CUDA fatbins
  if (o_.emit != Emit::Kernels && !make_fatbins(r.errors)) return r;
  r.warnings = warnings_;
  if (o_.emit == Emit::All) r.files.push_back({o_.name + ".h", umbrella()});
  std::vector<ObjectJob> jobs;
  std::vector<std::pair<size_t, size_t>> job_kernels;  // each job's spec and target
  std::vector<size_t> objects;                         // where each job's object goes in r.files
  std::vector<size_t> manifests;                       // where each spec's part manifest goes
  for (size_t f = 0; f < files_.size(); ++f) {
    const std::string prefix = o_.name + "_" + files_[f].part;
    if (o_.emit != Emit::Kernels) {
      r.files.push_back({prefix + ".h", header(f)});
      r.files.push_back({prefix + "_dispatch.cpp", dispatch(f)});
    }
    // the part manifest has no sizes, so --emit spec compiles nothing
    for (size_t t = 0; t < targets_.size() && o_.emit != Emit::Spec; ++t) {
      if (output(*targets_[t]) == target::Output::CSource) {
        r.files.push_back({kernel_file(f, t), kernels_c(f, t)});
        continue;
      }
      if (targets_[t]->gpu) {
        r.files.push_back({kernel_file(f, t), kernels_gpu(f, t)});
        continue;
      }
      std::string module = kernels_module(f, t);
      jobs.push_back({targets_[t], module, nullptr, nullptr});
      job_kernels.push_back({f, t});
      r.files.push_back({kernel_file(f, t), ""});
      objects.push_back(r.files.size() - 1);
      if (o_.keep_ir) r.files.push_back({prefix + "_" + targets_[t]->symbol + ".ll", std::move(module)});
    }
    if (o_.emit != Emit::Kernels) {
      r.files.push_back({prefix + ".manifest.json", ""});
      manifests.push_back(r.files.size() - 1);
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) jobs[j].object = &r.files[objects[j]].second;
  compile_objects(jobs);
  if (o_.emit == Emit::Kernels) {
    r.ok = true;
    return r;
  }
  for (size_t j = 0; j < jobs.size(); ++j) {  // Emit::All: the library manifest's sizes
    auto [f, t] = job_kernels[j];
    try {
      sizes_[{f, t}] = target::measure_functions(*jobs[j].object, kernel_file(f, t));
    } catch (const target::ObjectError& e) {
      throw InternalError(std::string("kiln gen: the object kiln made cannot be measured: ") + e.what());
    }
  }
  std::vector<std::string> parts;
  for (size_t f = 0; f < files_.size(); ++f) parts.push_back(r.files[manifests[f]].second = manifest_part(f));
  if (o_.emit == Emit::All) {
    // merged from the parts' text, as a build that writes each spec's files separately merges them
    std::string merged;
    if (!merge_manifests(parts, merged, r.errors)) return r;
    r.files.push_back({o_.name + ".manifest.json", merged});
  }
  r.ok = true;
  return r;
}

std::string Generator::explain_call(const std::string& kernel, const std::map<std::string, int64_t>& given,
                                    uint32_t features, bool* ok) {
  *ok = false;
  compile_ = false;
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
    if (t->gpu) continue;  // a call on the CPU: its GPU variants are for a GPU Context
    for (const Variant& v : k->variants) {
      std::string label = "  " + kernel + "[" + v.tag + "] on " + t->name + " (" + guard_text(v, sf.dims) + "): ";
      if ((t->runtime_mask & features) != t->runtime_mask) {
        // the target's name after its architecture's: "avx2" of x86_64-avx2
        out += label + "skipped, this CPU lacks " + t->name.substr(t->arch.size() + 1) + "\n";
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

// Emit::Library: L.h and L.manifest.json from the part manifests and objects other runs wrote
GenResult Generator::link(GenResult r) {
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

}  // namespace kiln::emit::detail

namespace kiln::emit {

using detail::base_name;
using detail::Generator;

namespace {

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

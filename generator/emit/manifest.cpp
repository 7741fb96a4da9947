#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "generator/emit/generator.h"

namespace kiln::emit::detail {

using json = nlohmann::ordered_json;

// what a target's code_bytes and data_bytes are, in the library's manifest
static const char* const kSizesKnown = "measured in kiln's object";
static const char* const kSizesUnknown =
    "unknown until compiled: kiln size <manifest> <the compiled objects or archive>";

using Sizes = std::map<std::string, target::FunctionSize>;

// code_bytes and data_bytes of these functions of a kernel file (every function of it when `symbols`
// is null), a constant two of them read counted once; null for a C target (`measured` null), whose
// sizes are known only once the build's compiler compiled it (`kiln size` measures them then). The
// first function the file lacks, or empty.
static std::string add_sizes(json& j, const Sizes* measured, const std::vector<std::string>* symbols) {
  j["code_bytes"] = nullptr;
  j["data_bytes"] = nullptr;
  if (!measured) return "";
  uint64_t code = 0;
  std::map<std::string, uint64_t> data;
  auto add = [&](const target::FunctionSize& s) {
    code += s.code;
    data.insert(s.data.begin(), s.data.end());
  };
  if (!symbols)
    for (const auto& [name, s] : *measured) add(s);
  for (size_t i = 0; symbols && i < symbols->size(); ++i) {
    auto f = measured->find((*symbols)[i]);
    if (f == measured->end()) return (*symbols)[i];
    add(f->second);
  }
  j["code_bytes"] = code;
  j["data_bytes"] = target::data_bytes(data);
  return "";
}

// A kernel's line or column as a part manifest holds it: an int of 0 or more (nlohmann's get<int>()
// of 1e300 is undefined behaviour, of 2^40 another number)
static int position(const json& j) {
  if (!j.is_number_unsigned() || j.get<uint64_t>() > uint64_t(std::numeric_limits<int>::max()))
    throw std::runtime_error("expected a line or column, got " + j.dump());
  return int(j.get<uint64_t>());
}

// Emit::Library: where spec fi's object for target ti is, and the run that writes it
std::string Generator::object_path(size_t fi, size_t ti) const {
  const std::string dir = !o_.kernels_dir.empty() ? o_.kernels_dir : !o_.parts_dir.empty() ? o_.parts_dir : ".";
  return dir + "/" + o_.name + "_" + part_name(o_.specs[fi]) + "_" + targets_[ti]->symbol + ".o";
}

std::string Generator::object_writer(size_t fi, size_t ti) const {
  return "kiln gen --emit kernels --target " + targets_[ti]->name + " " + o_.specs[fi] + " writes it";
}

const Sizes* Generator::object_sizes(size_t fi, size_t ti, std::string& err) {
  if (auto it = sizes_.find({fi, ti}); it != sizes_.end()) return &it->second;
  if (o_.emit != Emit::Library) throw InternalError("kiln gen: " + kernel_file(fi, ti) + " was not measured");
  const std::string path = object_path(fi, ti);
  frontend::InputFile in = frontend::read_input_file(path, target::kMaxObjectBytes);
  if (!in.ok()) {
    in.error.pop_back();
    err = in.error + " (" + object_writer(fi, ti) + ")\n";
    return nullptr;
  }
  try {
    return &(sizes_[{fi, ti}] = target::measure_functions(in.text, path));
  } catch (const target::ObjectError& e) {
    err = std::string("kiln: error: ") + e.what() + " (" + object_writer(fi, ti) + ")\n";
    return nullptr;
  }
}

// L_<part>.manifest.json: one spec's files and kernels
std::string Generator::manifest_part(size_t fi) const {
  const SpecFile& sf = files_[fi];
  const std::string prefix = o_.name + "_" + sf.part;
  json m;
  m["library"] = o_.name;
  m["kiln_abi"] = kAbiVersion;
  m["spec"] = sf.base;
  json ts = json::array();
  for (size_t ti = 0; ti < targets_.size(); ++ti) {
    const Target* t = targets_[ti];
    json tj;
    tj["name"] = t->name;
    tj["output"] = output_name(*t);
    tj["file"] = kernel_file(fi, ti);
    tj["flags"] = output(*t) == target::Output::CSource ? t->c_flags : std::vector<std::string>{};
    tj["features"] = t->runtime_bits;
    ts.push_back(tj);
  }
  m["targets"] = ts;
  json files = json::array({prefix + ".h", prefix + "_dispatch.cpp"});
  for (size_t ti = 0; ti < targets_.size(); ++ti) {
    files.push_back(kernel_file(fi, ti));
    if (o_.keep_ir && output(*targets_[ti]) == target::Output::Object)
      files.push_back(prefix + "_" + targets_[ti]->symbol + ".ll");
  }
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
    for (size_t ti = 0; ti < targets_.size(); ++ti)
      for (const Variant& v : k.variants) {
        const Target* t = targets_[ti];
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
          cj["opts"] = c.code[ti].opts;
          cj["parallel"] = c.code[ti].parallel;
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
// target, the kernels, with each object target's sizes; a kernel two specs define, or one named like
// another's generated function, is an error here too (a build that writes each spec's files
// separately finds it only here)
bool Generator::merge_manifests(const std::vector<std::string>& parts, std::string& out, std::string& err) {
  json m;
  m["library"] = o_.name;
  m["kiln_abi"] = kAbiVersion;
  json specs = json::array(), ts = json::array(), files = json::array({o_.name + ".h"}), ks = json::array();
  std::map<std::string, size_t> target_index;
  for (const Target* t : targets_) {
    json tj;
    tj["name"] = t->name;
    tj["output"] = output_name(*t);
    tj["files"] = json::array();
    tj["flags"] = output(*t) == target::Output::CSource ? t->c_flags : std::vector<std::string>{};
    tj["features"] = t->runtime_bits;
    bool known = output(*t) == target::Output::Object;
    tj["sizes"] = known ? kSizesKnown : kSizesUnknown;
    tj["code_bytes"] = known ? json(0) : json(nullptr);
    tj["data_bytes"] = known ? json(0) : json(nullptr);
    target_index[t->name] = ts.size();
    ts.push_back(tj);
  }
  std::vector<json> ps;                      // the parts, checked
  std::map<std::string, std::string> where;  // kernel -> spec:line:col
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string what = o_.name + "_" + part_name(o_.specs[i]) + ".manifest.json";
    try {
      json p = json::parse(parts[i]);
      std::string why;
      if (p.at("library") != o_.name) why = "for library " + p.at("library").dump() + ", not " + o_.name;
      if (why.empty() && p.at("kiln_abi") != kAbiVersion) why = "for kiln ABI " + p.at("kiln_abi").dump();
      if (why.empty() && p.at("spec") != base_name(o_.specs[i])) why = "for spec " + p.at("spec").dump();
      const json& pts = p.at("targets");
      bool same = pts.size() == targets_.size(), same_output = true;
      for (size_t t = 0; same && t < targets_.size(); ++t) {
        same = pts[t].at("name") == targets_[t]->name;
        same_output &= pts[t].at("output") == ts[t]["output"];
      }
      if (why.empty() && !same) why = "for other targets";
      if (why.empty() && !same_output) why = o_.c_sources ? "without --c-sources" : "with --c-sources";
      if (!why.empty()) {
        err = "kiln: error: " + what + " was written " + why + ": write it again with these options\n";
        return false;
      }
      specs.push_back(p.at("spec"));
      for (size_t t = 0; t < targets_.size(); ++t) ts[t]["files"].push_back(pts[t].at("file"));
      for (const json& f : p.at("files")) files.push_back(f);
      for (const json& k : p.at("kernels")) {
        std::string name = k.at("name"), at = k.at("spec").get<std::string>() + ":" +
                                              std::to_string(position(k.at("line"))) + ":" +
                                              std::to_string(position(k.at("column")));
        if (auto it = where.find(name); it != where.end()) {
          err = "kiln: error: kernel '" + name + "' is defined at " + it->second + " and at " + at +
                " (one library, one namespace)\n";
          return false;
        }
        where[name] = at;
      }
      ps.push_back(std::move(p));
    } catch (const std::exception& e) {  // json's, and position()'s
      err = "kiln: error: " + what + " is not a kiln part manifest (" + e.what() + ")\n";
      return false;
    }
  }
  for (const auto& [name, at] : where)
    for (const char* suffix : {"_explain", "_workspace_size", "_workspace_size_for"})
      if (auto it = where.find(name + suffix); it != where.end()) {
        err = "kiln: error: kernel '" + it->first + "' (" + it->second + ") clashes with the generated function " +
              it->first + " of kernel '" + name + "' (" + at + ")\n";
        return false;
      }
  // the sizes, once the parts agree: each object target's per kernel function, variant and target
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string what = o_.name + "_" + part_name(o_.specs[i]) + ".manifest.json";
    std::vector<const Sizes*> measured(targets_.size(), nullptr);
    for (size_t t = 0; t < targets_.size(); ++t) {
      if (output(*targets_[t]) != target::Output::Object) continue;
      if (!(measured[t] = object_sizes(i, t, err))) return false;
      json total;
      add_sizes(total, measured[t], nullptr);
      for (const char* field : {"code_bytes", "data_bytes"})  // the library's: its parts' summed
        ts[t][field] = ts[t][field].get<uint64_t>() + total[field].get<uint64_t>();
    }
    std::string missing;  // a function the part lists that its object lacks
    size_t missing_in = 0;
    auto sized = [&](json& j, size_t t, const std::vector<std::string>& symbols) {
      std::string lacks = add_sizes(j, measured[t], &symbols);
      if (!lacks.empty() && missing.empty()) missing = lacks, missing_in = t;
    };
    try {
      for (const json& k : ps[i].at("kernels")) {
        json kj = k, vs = json::array();
        for (const json& v : k.at("variants")) {
          auto ti = target_index.find(v.at("target").get<std::string>());
          if (ti == target_index.end())
            throw std::runtime_error("variant of an unlisted target " + v.at("target").dump());
          json vj, fns = json::array();  // the variant's fields, its sizes, then its functions with theirs
          std::vector<std::string> symbols;
          for (const auto& [key, value] : v.items())
            if (key != "kernels") vj[key] = value;
          for (const json& fn : v.at("kernels")) {
            json fj = fn;
            symbols.push_back(fn.at("symbol").get<std::string>());
            sized(fj, ti->second, {symbols.back()});
            fns.push_back(fj);
          }
          sized(vj, ti->second, symbols);
          vj["kernels"] = fns;
          vs.push_back(vj);
        }
        kj["variants"] = vs;
        ks.push_back(kj);
      }
    } catch (const std::exception& e) {
      err = "kiln: error: " + what + " is not a kiln part manifest (" + e.what() + ")\n";
      return false;
    }
    if (missing.empty()) continue;
    if (o_.emit != Emit::Library)
      throw InternalError("kiln gen: " + kernel_file(i, missing_in) + " has no function " + missing);
    err = "kiln: error: " + object_path(i, missing_in) + " has no function " + missing + ", which " + what +
          " lists: not this spec's object, or an older one (" + object_writer(i, missing_in) + ")\n";
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

}  // namespace kiln::emit::detail

namespace kiln::emit {

std::vector<std::string> stale_files(const std::string& old_manifest, const GenResult& now) {
  using json = nlohmann::ordered_json;
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

}  // namespace kiln::emit

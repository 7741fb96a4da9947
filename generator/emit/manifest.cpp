#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "generator/emit/generator.h"

namespace kiln::emit::detail {

using json = nlohmann::ordered_json;

// what a target's code_bytes and data_bytes are, in the manifests
static const char* const kSizesKnown = "measured in kiln's object";
static const char* const kSizesUnknown =
    "unknown until compiled: kiln size <manifest> <the compiled objects or archive>";

// code_bytes and data_bytes of these functions of a kernel file (every function of it when `symbols`
// is null), a constant two of them read counted once; null for a C target, whose sizes are known only
// once the build's compiler compiled it (`kiln size` measures them then)
static void add_sizes(json& j, const std::map<std::string, target::FunctionSize>* measured,
                      const std::vector<std::string>* symbols, const std::string& file) {
  if (!measured) {
    j["code_bytes"] = nullptr;
    j["data_bytes"] = nullptr;
    return;
  }
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
    if (f == measured->end()) throw InternalError("kiln gen: " + file + " has no function " + (*symbols)[i]);
    add(f->second);
  }
  j["code_bytes"] = code;
  j["data_bytes"] = target::data_bytes(data);
}

const std::map<std::string, target::FunctionSize>* Generator::sizes(size_t fi, size_t ti) const {
  auto it = sizes_.find({fi, ti});
  return it == sizes_.end() ? nullptr : &it->second;
}

// L_<part>.manifest.json: one spec's files and kernels
std::string Generator::manifest_part(size_t fi) const {
  const SpecFile& sf = files_[fi];
  const std::string prefix = o_.name + "_" + sf.part;
  json m;
  m["library"] = o_.name;
  m["kiln_abi"] = 1;
  m["spec"] = sf.base;
  json ts = json::array();
  for (size_t ti = 0; ti < targets_.size(); ++ti) {
    const Target* t = targets_[ti];
    json tj;
    tj["name"] = t->name;
    tj["output"] = output(*t) == target::Output::Object ? "object" : "c";
    tj["file"] = kernel_file(fi, ti);
    tj["flags"] = output(*t) == target::Output::CSource ? t->c_flags : std::vector<std::string>{};
    tj["features"] = t->runtime_bits;
    tj["sizes"] = sizes(fi, ti) ? kSizesKnown : kSizesUnknown;
    add_sizes(tj, sizes(fi, ti), nullptr, kernel_file(fi, ti));
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
        std::vector<std::string> symbols;
        for (const Compiled& c : v.kernels) symbols.push_back(fn_name(c, *t));
        add_sizes(vj, sizes(fi, ti), &symbols, kernel_file(fi, ti));
        for (size_t i = 0; i < v.kernels.size(); ++i) {
          const Compiled& c = v.kernels[i];
          Estimate e = estimate(v.sched.kernels[i].ast);
          json cj;
          cj["symbol"] = fn_name(c, *t);
          cj["opts"] = c.code[ti].opts;
          cj["parallel"] = c.code[ti].parallel;
          cj["flops"] = expr_text(e.flops, f.dims, Style::Text);
          cj["bytes"] = expr_text(e.bytes, f.dims, Style::Text);
          std::vector<std::string> one{symbols[i]};
          add_sizes(cj, sizes(fi, ti), &one, kernel_file(fi, ti));
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
bool Generator::merge_manifests(const std::vector<std::string>& parts, std::string& out, std::string& err) const {
  json m;
  m["library"] = o_.name;
  m["kiln_abi"] = 1;
  json specs = json::array(), ts = json::array(), files = json::array({o_.name + ".h"}), ks = json::array();
  for (const Target* t : targets_) {
    json tj;
    tj["name"] = t->name;
    tj["output"] = output(*t) == target::Output::Object ? "object" : "c";
    tj["files"] = json::array();
    tj["flags"] = output(*t) == target::Output::CSource ? t->c_flags : std::vector<std::string>{};
    tj["features"] = t->runtime_bits;
    bool known = output(*t) == target::Output::Object;
    tj["sizes"] = known ? kSizesKnown : kSizesUnknown;
    tj["code_bytes"] = known ? json(0) : json(nullptr);
    tj["data_bytes"] = known ? json(0) : json(nullptr);
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
      for (size_t t = 0; t < targets_.size(); ++t) {
        ts[t]["files"].push_back(pts[t].at("file"));
        for (const char* field : {"code_bytes", "data_bytes"})  // the library's: its parts' summed
          if (!ts[t][field].is_null()) ts[t][field] = ts[t][field].get<uint64_t>() + pts[t].at(field).get<uint64_t>();
      }
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

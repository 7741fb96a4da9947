#include "generator/emit/size_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace kiln::emit {

using json = nlohmann::ordered_json;
using State = VariantSize::State;

namespace {

std::string num(uint64_t n) { return std::to_string(n); }

// n bytes with the code and data it is made of
std::string bytes_text(uint64_t code, uint64_t data) {
  return num(code + data) + " bytes (code " + num(code) + ", data " + num(data) + ")";
}

// A byte count as a manifest holds it: an integer in 0..2^48, which no kernel comes near and whose
// sums cannot wrap (nlohmann's get<uint64_t>() of -5 wraps, of 1e300 is undefined behaviour)
uint64_t byte_count(const json& j) {
  if (!j.is_number_unsigned() || j.get<uint64_t>() > (uint64_t(1) << 48))
    throw std::runtime_error("expected a byte count, got " + j.dump());
  return j.get<uint64_t>();
}

}  // namespace

bool size_report(const std::string& manifest, const std::string& name,
                 const std::map<std::string, target::FunctionSize>* files, SizeReport& out, std::string& err) {
  out = SizeReport{};
  out.measured = files != nullptr;
  json m = json::parse(manifest, nullptr, false);
  try {
    if (m.is_discarded()) throw std::runtime_error("not JSON");
    out.library = m.at("library").get<std::string>();
    std::map<std::string, size_t> target_index;
    for (const json& t : m.at("targets")) {
      TargetSize ts;
      ts.name = t.at("name").get<std::string>();
      target_index[ts.name] = out.targets.size();
      // a spec's manifest has no sizes: unknown
      if (!files && !t.value("code_bytes", json()).is_null()) {  // the manifest's totals count a shared constant once
        ts.state = State::Known;
        ts.code = byte_count(t.at("code_bytes"));
        ts.data = byte_count(t.at("data_bytes"));
      }
      out.targets.push_back(ts);
    }
    for (const json& k : m.at("kernels"))
      for (const json& v : k.at("variants")) {
        VariantSize vs;
        vs.kernel = k.at("name").get<std::string>();
        vs.variant = v.at("name").get<std::string>();
        vs.target = v.at("target").get<std::string>();
        auto ti = target_index.find(vs.target);
        if (ti == target_index.end()) throw std::runtime_error("variant " + vs.variant + " of an unlisted target");
        if (files) {
          vs.state = State::NotLinked;
          for (const json& fn : v.at("kernels")) {
            auto f = files->find(fn.at("symbol").get<std::string>());
            if (f == files->end()) continue;
            vs.state = State::Known;
            vs.code += f->second.code;
            vs.constants.insert(f->second.data.begin(), f->second.data.end());
          }
          vs.data = target::data_bytes(vs.constants);
        } else if (!v.value("code_bytes", json()).is_null()) {
          vs.state = State::Known;
          vs.code = byte_count(v.at("code_bytes"));
          vs.data = byte_count(v.at("data_bytes"));
        }
        TargetSize& ts = out.targets[ti->second];
        if (vs.state != State::NotLinked) ++ts.variants;
        out.variants.push_back(std::move(vs));
      }
  } catch (const std::exception& e) {
    err = "kiln: error: " + name + " is not a kiln manifest with sizes (" + e.what() +
          "; kiln gen writes <name>.manifest.json)\n";
    return false;
  }
  if (files)  // a target's totals: its linked variants, each constant once
    for (TargetSize& ts : out.targets) {
      std::map<std::string, uint64_t> constants;
      ts.state = State::NotLinked;
      for (const VariantSize& vs : out.variants) {
        if (vs.target != ts.name || vs.state != State::Known) continue;
        ts.state = State::Known;
        ts.code += vs.code;
        constants.insert(vs.constants.begin(), vs.constants.end());
      }
      ts.data = target::data_bytes(constants);
    }
  return true;
}

std::string size_table(const SizeReport& r) {
  std::vector<std::vector<std::string>> rows{{"kernel", "variant", "target", "code", "data", "bytes"}};
  auto cells = [](State s, uint64_t code, uint64_t data) -> std::vector<std::string> {
    if (s == State::Known) return {num(code), num(data), num(code + data)};
    const char* mark = s == State::Unknown ? "?" : "-";
    return {mark, mark, mark};
  };
  bool unknown = false, unlinked = false;
  for (const VariantSize& v : r.variants) {
    std::vector<std::string> row{v.kernel, v.variant, v.target};
    for (std::string& c : cells(v.state, v.code, v.data)) row.push_back(std::move(c));
    rows.push_back(std::move(row));
  }
  uint64_t code = 0, data = 0;
  std::string missing;
  for (const TargetSize& t : r.targets) {
    std::vector<std::string> row{"total", "", t.name};
    for (std::string& c : cells(t.state, t.code, t.data)) row.push_back(std::move(c));
    rows.push_back(std::move(row));
    unknown |= t.state == State::Unknown;
    unlinked |= t.state == State::NotLinked;
    code += t.code, data += t.data;
    if (t.state == State::Unknown) missing += (missing.empty() ? "" : ", ") + t.name;
  }
  rows.push_back({"total", "", "all", num(code), num(data), num(code + data)});
  std::vector<size_t> width(6, 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string s;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string pad(width[i] - row[i].size(), ' ');
      line += i < 3 ? row[i] + pad + "  " : pad + row[i] + (i + 1 < row.size() ? "  " : "");
    }
    s += line + "\n";
  }
  if (unknown)
    s += "?: unknown until compiled (" + missing +
         "): give kiln size the compiled kernel objects or the library archive after the manifest\n";
  if (unlinked) s += "-: in none of the files given (not linked)\n";
  if (unknown) s += "all: the targets whose sizes are known\n";
  return s;
}

std::string size_json(const SizeReport& r) {
  auto state = [](State s) { return s == State::Known ? "known" : s == State::Unknown ? "unknown" : "not linked"; };
  auto sizes = [&](json& j, State s, uint64_t code, uint64_t data) {
    j["sizes"] = state(s);
    j["code_bytes"] = s == State::Known ? json(code) : json(nullptr);
    j["data_bytes"] = s == State::Known ? json(data) : json(nullptr);
  };
  json m;
  m["library"] = r.library;
  m["measured"] = r.measured ? "in the files given" : "in the manifest";
  json vs = json::array(), ts = json::array();
  for (const VariantSize& v : r.variants) {
    json j;
    j["kernel"] = v.kernel;
    j["variant"] = v.variant;
    j["target"] = v.target;
    sizes(j, v.state, v.code, v.data);
    vs.push_back(j);
  }
  uint64_t code = 0, data = 0;
  bool complete = true;
  for (const TargetSize& t : r.targets) {
    json j;
    j["name"] = t.name;
    j["variants"] = t.variants;
    sizes(j, t.state, t.code, t.data);
    ts.push_back(j);
    code += t.code, data += t.data;
    complete &= t.state != State::Unknown;
  }
  m["variants"] = vs;
  m["targets"] = ts;
  json total;
  total["code_bytes"] = code;
  total["data_bytes"] = data;
  total["complete"] = complete;  // false: a target's sizes are unknown (not counted)
  m["total"] = total;
  return m.dump(2) + "\n";
}

std::string check_budget(const SizeReport& r, uint64_t budget) {
  std::string err;
  for (const TargetSize& t : r.targets) {
    if (t.state == State::NotLinked) continue;
    if (t.state == State::Unknown) {
      err += "kiln: error: " + r.library + ": the sizes of target " + t.name +
             "'s kernels are unknown until compiled: give kiln size its compiled objects or the library archive\n";
      continue;
    }
    if (t.code + t.data <= budget) continue;
    err += "kiln: error: " + r.library + ": the kernels of target " + t.name + " take " + bytes_text(t.code, t.data) +
           ", over the size budget of " + num(budget) + " bytes\n";
    std::vector<const VariantSize*> vs;
    std::map<std::string, std::pair<uint64_t, size_t>> per_kernel;  // bytes, variants
    std::vector<std::string> kernel_order;
    for (const VariantSize& v : r.variants) {
      if (v.target != t.name || v.state != State::Known) continue;
      vs.push_back(&v);
      auto [it, fresh] = per_kernel.try_emplace(v.kernel, 0, 0);
      if (fresh) kernel_order.push_back(v.kernel);
      it->second.first += v.code + v.data;
      ++it->second.second;
    }
    // largest first; ties in the manifest's order
    std::stable_sort(vs.begin(), vs.end(),
                     [](const VariantSize* a, const VariantSize* b) { return a->code + a->data > b->code + b->data; });
    std::stable_sort(kernel_order.begin(), kernel_order.end(), [&](const std::string& a, const std::string& b) {
      return per_kernel[a].first > per_kernel[b].first;
    });
    err += "  its largest kernels (all their variants: each bucket list multiplies them):\n";
    for (size_t i = 0; i < kernel_order.size() && i < 3; ++i) {
      const auto& [bytes, n] = per_kernel[kernel_order[i]];
      err += "    " + kernel_order[i] + ": " + num(bytes) + " bytes in " + num(n) + " variant" + (n == 1 ? "" : "s") +
             "\n";
    }
    err += "  its largest variants:\n";
    for (size_t i = 0; i < vs.size() && i < 5; ++i)
      err += "    " + vs[i]->variant + ": " + bytes_text(vs[i]->code, vs[i]->data) + "\n";
  }
  return err;
}

}  // namespace kiln::emit

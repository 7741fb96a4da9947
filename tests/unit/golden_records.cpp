#include "tests/unit/golden_records.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace kiln::golden {

static std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

const std::string* Record::get(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

std::string Record::value(std::string_view key) const {
  const std::string* v = get(key);
  return v ? *v : std::string();
}

std::vector<Record> read_records(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    if (error) *error = "cannot open " + path;
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_records(ss.str(), path, error);
}

std::vector<Record> parse_records(std::string_view text, const std::string& where, std::string* error) {
  std::vector<Record> out;
  bool open = false;  // inside a record
  for (int n = 1; !text.empty(); ++n) {
    size_t nl = text.find('\n');
    std::string_view l = trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (l.empty()) {
      open = false;
      continue;
    }
    if (l.starts_with("# ")) {
      out.push_back(Record{std::string(trim(l.substr(2))), n, {}});
      open = true;
      continue;
    }
    size_t colon = l.find(':');
    if (!open || colon == std::string_view::npos) {
      if (error && error->empty())
        *error = where + ":" + std::to_string(n) + ": expected '# <id>' or 'key: value', got '" +
                 std::string(l.substr(0, 60)) + "'";
      continue;
    }
    out.back().fields.emplace_back(std::string(l.substr(0, colon)), std::string(trim(l.substr(colon + 1))));
  }
  return out;
}

std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == '\t') {
      ++i;
      continue;
    }
    size_t b = i;
    if (s[i] == '(') {
      int depth = 0;
      for (; i < s.size(); ++i) {
        if (s[i] == '(') ++depth;
        if (s[i] == ')' && --depth == 0) {
          ++i;
          break;
        }
      }
    } else {
      while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    }
    out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

std::vector<std::string> split_trimmed(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (true) {
    size_t at = s.find(sep);
    std::string_view part = trim(s.substr(0, at));
    if (!part.empty()) out.emplace_back(part);
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

const KnownFailure* KnownFailures::find(const std::string& section, const std::string& id) const {
  auto it = sections.find(section);
  if (it == sections.end()) return nullptr;
  for (const KnownFailure& k : it->second)
    if (k.id == id) return &k;
  return nullptr;
}

KnownFailures read_known_failures(const std::string& path, std::string* error) {
  KnownFailures kf;
  std::ifstream in(path);
  if (!in) return kf;
  std::string line, section;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string_view l = trim(line);
    if (l.starts_with("## ")) {
      section = std::string(trim(l.substr(3)));
      kf.sections[section];
      continue;
    }
    if (l.empty() || l.starts_with("#")) {
      if (section.empty() && l.starts_with("#")) kf.header.emplace_back(l);
      continue;
    }
    // the reason may itself contain '|': split on the first two separators only
    size_t a = l.find(" | "), b = a == std::string_view::npos ? a : l.find(" | ", a + 3);
    if (section.empty() || b == std::string_view::npos) {
      if (error && error->empty())
        *error = path + ":" + std::to_string(n) + ": expected '<id> | <CLASS> | <reason>' under a '## <file>' line";
      continue;
    }
    kf.sections[section].push_back(KnownFailure{std::string(trim(l.substr(0, a))),
                                                std::string(trim(l.substr(a + 3, b - a - 3))),
                                                std::string(trim(l.substr(b + 3)))});
  }
  return kf;
}

bool write_known_failures(const std::string& path, const KnownFailures& kf,
                          const std::vector<std::string>& section_order) {
  std::vector<std::string> order = section_order;
  for (const auto& [name, _] : kf.sections)
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  std::ostringstream os;
  for (const std::string& h : kf.header) os << h << "\n";
  for (const std::string& name : order) {
    auto it = kf.sections.find(name);
    if (it == kf.sections.end()) continue;
    os << "\n## " << name << "\n";
    for (const KnownFailure& k : it->second) {
      std::string reason = k.reason;
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      os << k.id << " | " << k.cls << " | " << reason << "\n";
    }
  }
  std::ofstream out(path, std::ios::trunc);
  out << os.str();
  return bool(out);
}

}  // namespace kiln::golden

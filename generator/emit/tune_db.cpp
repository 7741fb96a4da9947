#include "generator/emit/tune_db.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <tuple>

#include "generator/ir/text.h"

namespace kiln::emit {

namespace {

auto key(const TuneEntry& e) { return std::tie(e.hash, e.target, e.variant); }

bool is_hash(const std::string& s) {
  return s.size() == 16 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string time_text(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return buf;
}

}  // namespace

std::string tune_opts_text(const codegen::TunedOpts& t) {
  if (t.opts.empty()) return "-";
  std::string s;
  for (const codegen::Opt& o : t.opts) {
    if (!s.empty()) s += ';';
    for (char c : o.str())
      if (c != ' ') s += c;
  }
  return s;
}

std::string tune_label(const std::string& kernel, size_t index, size_t count) {
  return count > 1 ? kernel + ":" + std::to_string(index) : kernel;
}

std::string kernel_hash(const UOp* ast) {
  const UOp* unnamed = ast->op == Op::SINK ? ast->with_arg(Name{""}) : ast;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : print_graph(unnamed)) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool parse_tune_db(const std::string& text, const std::string& path, std::vector<TuneEntry>& out, std::string& err) {
  std::vector<TuneEntry> entries;
  int line = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    std::string l = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    auto fail = [&](size_t col, const std::string& what) {
      err = path + ":" + std::to_string(line) + ":" + std::to_string(col + 1) + ": error: " + what + "\n";
      return false;
    };
    size_t first = l.find_first_not_of(" \t");
    if (first == std::string::npos || l[first] == '#') continue;
    // the fields, each with its column
    std::vector<std::pair<size_t, std::string>> fields;
    for (size_t i = 0; i < l.size();) {
      if (l[i] == ' ' || l[i] == '\t') {
        ++i;
        continue;
      }
      size_t j = l.find_first_of(" \t", i);
      if (j == std::string::npos) j = l.size();
      fields.push_back({i, l.substr(i, j - i)});
      i = j;
    }
    if (fields.size() < 3)
      return fail(l.size(), "a tune entry needs a hash, a target and a variant before its fields (got " +
                                std::to_string(fields.size()) + " words)");
    TuneEntry e;
    e.line = line;
    e.hash = fields[0].second;
    if (!is_hash(e.hash)) return fail(fields[0].first, "expected a kernel hash (16 hex digits), got '" + e.hash + "'");
    e.target = fields[1].second;
    e.variant = fields[2].second;
    bool seen_kernel = false, seen_opts = false, seen_block = false, seen_us = false, seen_h = false;
    for (size_t f = 3; f < fields.size(); ++f) {
      const auto& [col, word] = fields[f];
      size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) return fail(col, "expected key=value, got '" + word + "'");
      std::string k = word.substr(0, eq), v = word.substr(eq + 1);
      size_t vcol = col + eq + 1;
      auto number = [&](double& d) {
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
        return ec == std::errc() && p == v.data() + v.size() && !v.empty() && d >= 0;
      };
      auto once = [&](bool& seen) {
        if (seen) return false;
        return seen = true;
      };
      if (k == "kernel") {
        if (!once(seen_kernel)) return fail(col, "kernel given twice");
        if (v.empty()) return fail(vcol, "expected a kernel name");
        e.kernel = v;
      } else if (k == "opts") {
        if (!once(seen_opts)) return fail(col, "opts given twice");
        if (v == "-") continue;
        for (size_t i = 0; i <= v.size();) {
          size_t semi = v.find(';', i);
          if (semi == std::string::npos) semi = v.size();
          std::optional<codegen::Opt> o = codegen::parse_opt(std::string_view(v).substr(i, semi - i));
          if (!o) return fail(vcol + i, "expected an opt such as UPCAST(0,8), got '" + v.substr(i, semi - i) + "'");
          e.opts.opts.push_back(*o);
          i = semi + 1;
        }
      } else if (k == "block") {
        if (!once(seen_block)) return fail(col, "block given twice");
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), e.opts.reduce_block);
        if (ec != std::errc() || p != v.data() + v.size() || v.empty() || e.opts.reduce_block < 0)
          return fail(vcol, "expected a block size (0 or more), got '" + v + "'");
      } else if (k == "us") {
        if (!once(seen_us) || !number(e.us)) return fail(vcol, "expected a time in microseconds, got '" + v + "'");
      } else if (k == "heuristic_us") {
        if (!once(seen_h) || !number(e.heuristic_us))
          return fail(vcol, "expected a time in microseconds, got '" + v + "'");
      } else {
        return fail(col, "unknown field '" + k + "' (expected kernel, opts, block, us or heuristic_us)");
      }
    }
    if (!seen_kernel || !seen_opts)
      return fail(l.size(), std::string("the entry has no ") + (seen_kernel ? "opts" : "kernel"));
    for (const TuneEntry& o : entries)
      if (key(o) == key(e))
        return fail(fields[0].first, "a second entry for " + e.hash + " " + e.target + " " + e.variant +
                                         " (the first is on line " + std::to_string(o.line) + ")");
    entries.push_back(std::move(e));
  }
  out = std::move(entries);
  return true;
}

std::string print_tune_db(std::vector<TuneEntry> entries) {
  std::sort(entries.begin(), entries.end(), [](const TuneEntry& a, const TuneEntry& b) { return key(a) < key(b); });
  std::string s =
      "# kiln tune database 1: <hash> <target> <variant> kernel=<name> opts=<opts> block=<n> us=<t> heuristic_us=<t>\n"
      "# written by kiln tune, read by kiln gen --tune-db; sorted, one entry per kernel, target and variant\n";
  for (const TuneEntry& e : entries)
    s += e.hash + " " + e.target + " " + e.variant + " kernel=" + e.kernel + " opts=" + tune_opts_text(e.opts) +
         " block=" + std::to_string(e.opts.reduce_block) + " us=" + time_text(e.us) +
         " heuristic_us=" + time_text(e.heuristic_us) + "\n";
  return s;
}

void merge_tune_entry(std::vector<TuneEntry>& db, const TuneEntry& e) {
  for (TuneEntry& o : db)
    if (key(o) == key(e)) {
      o = e;
      return;
    }
  db.push_back(e);
}

const TuneEntry* find_tune_entry(const std::vector<TuneEntry>& db, const std::string& hash, const std::string& target,
                                 const std::string& variant) {
  for (const TuneEntry& e : db)
    if (e.hash == hash && e.target == target && e.variant == variant) return &e;
  return nullptr;
}

}  // namespace kiln::emit

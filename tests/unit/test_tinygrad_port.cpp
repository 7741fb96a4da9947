// Runs every record of tinygrad's symbolic tests (tests/golden/tinygrad/*.txt, format in its
// README.md) through kiln and classifies it:
//   PASS         kiln gives what tinygrad's test asserts (node identity, bounds, value, ...)
//   EQUIVALENT   a different node that is equal to the expected one on every point we evaluate
//                (exhaustive on small domains), with the expected bounds
//   MISMATCH     a different answer
//   UNSUPPORTED  the check needs something kiln does not have (the reason names it)
//   PARSE_ERROR  kiln's parser rejects an expression of the record
// tests/golden/tinygrad/known_failures.txt lists every record that does not PASS, with its class.
// A test fails when a record's class differs from the list (a regression, or a record that now
// passes and should leave the list). KILN_UPDATE_KNOWN_FAILURES=1 rewrites the list instead;
// KILN_PORT_VERBOSE=1 prints input, expected and ours for every record that does not pass.
#include <gtest/gtest.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "generator/ir/text.h"
#include "generator/symbolic/symbolic.h"
#include "tests/unit/exact_eval.h"
#include "tests/unit/golden_records.h"

namespace kiln {
namespace {

using golden::Record;

const std::string kDir = std::string(KILN_SOURCE_DIR) + "/tests/golden/tinygrad/";
const std::string kKnownFailures = kDir + "known_failures.txt";
const std::vector<std::string> kFiles = {"symbolic.txt", "vmin_vmax.txt", "valid_idx.txt"};

enum class Verdict { Pass, Equivalent, Mismatch, Unsupported, ParseError };
constexpr std::array<const char*, 5> kVerdictNames = {"PASS", "EQUIVALENT", "MISMATCH", "UNSUPPORTED", "PARSE_ERROR"};
const char* name(Verdict v) { return kVerdictNames[size_t(v)]; }

struct Outcome {
  Verdict verdict = Verdict::Pass;
  std::string reason;  // one line, goes into known_failures.txt
  std::string detail;  // input, expected and ours, printed on a regression
};

// Thrown by the checks to end a record early with a verdict.
struct Stop {
  Verdict verdict;
  std::string reason;
};

std::string clip(const std::string& s, size_t n = 600) { return s.size() <= n ? s : s.substr(0, n) + " ..."; }
std::string indent(std::string_view s, const std::string& by) {
  while (s.starts_with('\n')) s.remove_prefix(1);
  std::string out = by;
  for (char c : s) out += c == '\n' ? "\n" + by : std::string(1, c);
  return out;
}
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

// ---------------------------------------------------------------- one record

class Checker {
 public:
  explicit Checker(const Record& r) : r_(r), note_(r.value("note")) {}

  Outcome run() {
    try {
      parse_all();
      return check();
    } catch (const Stop& s) {
      return {s.verdict, s.reason, detail_};
    } catch (const std::exception& e) {
      std::string what = e.what();  // the first line: the rest lists rules and changes from run to run
      return {Verdict::Mismatch, "kiln threw: " + what.substr(0, what.find('\n')), detail_ + "\nthrew:    " + what};
    }
  }

 private:
  // ---- parsing: every expression of the record first, so parser gaps show as PARSE_ERROR
  const UOp* parse_field(const std::string& field, const std::string& text) {
    ParseError err;
    const UOp* u = parse(ctx_, text, &err);
    if (u) return u;
    size_t b = err.offset < 40 ? 0 : err.offset - 40;
    detail_ = field + " at byte " + std::to_string(err.offset) + ": ..." + text.substr(b, 80) + "...";
    throw Stop{Verdict::ParseError, field + ": " + err.message};
  }
  void parse_all() {
    for (const char* f : {"in", "out", "valid", "idx", "idx0", "idx1"}) {
      const std::string* t = r_.get(f);
      if (t && t->starts_with("(")) nodes_[f] = parse_field(f, *t);
    }
    if (const std::string* a = r_.get("args"))
      for (const std::string& op : golden::split_operands(*a))
        args_.push_back(op.starts_with("(") ? parse_field("args", op) : nullptr), arg_text_.push_back(op);
    if (nodes_.count("in")) detail_ = "in:       " + clip(r_.value("in"));
  }
  const UOp* node(const std::string& f) {
    auto it = nodes_.find(f);
    if (it == nodes_.end()) throw Stop{Verdict::Unsupported, "record has no expression `" + f + "`"};
    return it->second;
  }
  const UOp* tinygrad_out() { return parse_field("tinygrad_out", r_.value("tinygrad_out")); }
  bool noted(std::string_view s) const { return note_.find(s) != std::string::npos; }

  // ---- bounds: tokens are ints, or floats as Python's repr writes them (inf, -inf, nan)
  struct Number {
    std::optional<int64_t> i;  // when the token is an integer
    double d = 0;
  };
  static std::optional<Number> number(std::string_view t) {
    Number n;
    std::string s(t);
    char* end = nullptr;
    n.d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) n.i = v;
    return n;
  }
  static bool same(const ConstValue& v, const Number& n) {
    if (v.is_invalid()) return false;
    if (v.is_float()) return v.f == n.d || (std::isnan(v.f) && std::isnan(n.d));
    return n.i ? v.i == *n.i : double(v.i) == n.d;
  }
  static long double as_ld(const ConstValue& v) { return v.is_float() ? (long double)v.f : (long double)v.i; }
  static long double as_ld(const Number& n) { return n.i ? (long double)*n.i : (long double)n.d; }
  std::pair<Number, Number> expected_pair(const char* field) {
    auto parts = golden::split_trimmed(r_.value(field), ' ');
    std::optional<Number> lo, hi;
    if (parts.size() == 2) lo = number(parts[0]), hi = number(parts[1]);
    if (!lo || !hi) throw Stop{Verdict::Unsupported, std::string("cannot read `") + field + "`"};
    return {*lo, *hi};
  }
  static std::string bounds_text(const UOp* u) {
    auto s = [&](const ConstValue& v) {
      return v.is_invalid() ? std::string("invalid") : to_string(v, v.is_float() ? dtypes::float64 : dtypes::int64);
    };
    return "[" + s(u->vmin()) + ", " + s(u->vmax()) + "]";
  }
  // nullopt when the bounds are right, else why not
  std::optional<std::string> bounds_differ(const UOp* u) {
    auto [lo, hi] = expected_pair("range");
    if (same(u->vmin(), lo) && same(u->vmax(), hi)) return std::nullopt;
    return "bounds " + bounds_text(u) + ", expected [" + golden::split_trimmed(r_.value("range"), ' ')[0] + ", " +
           golden::split_trimmed(r_.value("range"), ' ')[1] + "]";
  }

  // ---- judging a node result against an expected node
  Outcome judge(const UOp* ours, const UOp* expected, bool with_bounds) {
    detail_ += "\nexpected: " + clip(print(expected)) + "\nours:     " + clip(print(ours));
    if (with_bounds) detail_ += "\nrange:    " + r_.value("range") + "   ours: " + bounds_text(ours);
    std::optional<std::string> bad_bounds = with_bounds ? bounds_differ(ours) : std::nullopt;
    if (ours == expected) {
      if (!bad_bounds) return {Verdict::Pass, "", detail_};
      return {Verdict::Mismatch, "identical node but " + *bad_bounds, detail_};
    }
    if (ours->dtype != expected->dtype)
      return {Verdict::Mismatch, "dtype " + to_string(ours->dtype) + ", expected " + to_string(expected->dtype),
              detail_};
    exact::Comparison c = exact::compare(ours, expected, std::hash<std::string>()(r_.id));
    switch (c.result) {
      case exact::Comparison::Result::Equal: {
        std::string how = std::to_string(c.points) + (c.exhaustive ? " point(s) (all)" : " sampled points");
        if (bad_bounds) return {Verdict::Mismatch, "equal on " + how + " but " + *bad_bounds, detail_};
        return {Verdict::Equivalent, "other node, equal on " + how, detail_};
      }
      case exact::Comparison::Result::Differ:
        return {Verdict::Mismatch, "differs " + c.why, detail_};
      case exact::Comparison::Result::NotEvaluable:
        return {Verdict::Mismatch, "other node (cannot evaluate: " + c.why + ")", detail_};
    }
    return {};
  }

  // the rewrite a record's note names
  const UOp* rewrite_by_note(const UOp* u) {
    if (noted("rewrite: UOp.simplify() (symbolic)")) return simplify(u);
    if (noted("rewrite: graph_rewrite with sym")) return graph_rewrite(u, sym());
    if (noted("rewrite: graph_rewrite with pm_simplify_valid")) return graph_rewrite(u, pm_simplify_valid());
    throw Stop{Verdict::Unsupported, "note names no rewrite kiln knows"};
  }

  static const UOp* get_valid(const UOp* idx) {
    if (idx->op == Op::WHERE && idx->src(2)->is_invalid()) return idx->src(0);
    return idx->ctx().cbool(true);
  }

  Outcome check() {
    const std::string kind = r_.value("kind");
    if (kind == "simplify") return check_simplify();
    if (kind == "bounds" || kind == "bounds_contain" || kind == "bounds_ne") return check_bounds(kind);
    if (kind == "equal") return check_equal();
    if (kind == "rewrite_op" || kind == "rewrite_dtype") {
      const UOp* ours = rewrite_by_note(node("in"));
      bool ok =
          kind == "rewrite_op" ? op_name(ours->op) == r_.value("op") : parse_dtype(r_.value("dtype")) == ours->dtype;
      detail_ += "\nours:     " + clip(print(ours));
      if (ok) return {};
      return {Verdict::Mismatch,
              kind == "rewrite_op" ? "op " + std::string(op_name(ours->op)) + ", expected " + r_.value("op")
                                   : "dtype " + to_string(ours->dtype) + ", expected " + r_.value("dtype"),
              detail_};
    }
    if (kind == "gcd") return judge(simplify(gcd(operands(0))), node("out"), false);
    if (kind == "divide_exact") return check_divide_exact();
    if (kind == "divides") return check_divides();
    if (kind == "const_factor") {
      int64_t got = node("in")->const_factor();
      if (std::to_string(got) == r_.value("value")) return {};
      return {Verdict::Mismatch, "const_factor " + std::to_string(got) + ", expected " + r_.value("value"), detail_};
    }
    if (kind == "sym_infer") return check_sym_infer();
    if (kind == "raises") {
      const UOp* in = node("in");
      const UOp* ours = nullptr;
      try {
        ours = simplify(in);
      } catch (const std::exception&) {
        return {};  // tinygrad raises too; kiln has no error kinds to compare
      }
      return {Verdict::Unsupported,
              "kiln signals no " + r_.value("error") + " (simplify gives " + clip(print(ours), 80) + ")", detail_};
    }
    if (kind == "render") {
      if (!noted("first graph_rewrite with sym") || !r_.has("tinygrad_out"))
        throw Stop{Verdict::Unsupported, "kiln has no renderer of tinygrad's text (`" + r_.value("text") + "`)"};
      // the text is tinygrad's render of tinygrad_out, so the same node renders the same text
      return judge(graph_rewrite(node("in"), sym()), tinygrad_out(), false);
    }
    if (kind == "simplify_valid") return check_simplify_valid();
    if (kind == "index_valid") {
      const UOp* ours = graph_rewrite(node("in"), sym());
      for (const UOp* u : toposort(ours))
        if (u->op == Op::INDEX) return judge(get_valid(u->src(1)), node("valid"), false);
      return {Verdict::Mismatch, "no INDEX left after sym", detail_};
    }
    if (kind == "valid_idx") return check_valid_idx();
    if (kind == "valid_idx_image")
      throw Stop{Verdict::Unsupported, "kiln has no pm_move_where_on_load or indexing_simplify"};
    throw Stop{Verdict::Unsupported, "unknown kind `" + kind + "`"};
  }

  std::vector<const UOp*> operands(size_t first) {
    std::vector<const UOp*> out;
    for (size_t i = first; i < args_.size(); ++i) {
      if (!args_[i]) throw Stop{Verdict::Unsupported, "operand `" + arg_text_[i] + "` is not an expression"};
      out.push_back(args_[i]);
    }
    return out;
  }

  Outcome check_simplify() {
    const UOp* in = node("in");
    static const PatternMatcher kSymCastWeak = sym() + pm_cast_weak();
    const PatternMatcher* pm = noted("matcher: sym+pm_cast_weak") ? &kSymCastWeak
                               : noted("matcher: sym ")           ? &sym()
                                                                  : nullptr;
    if (!pm) throw Stop{Verdict::Unsupported, "note names no matcher kiln knows"};
    const UOp* ours = graph_rewrite(in, *pm);
    const UOp* expected = graph_rewrite(node("out"), commutative());
    if (noted("only checks vmin == vmax == value")) {
      // TestSymbolicNumeric: tinygrad checks the bounds collapse to the value, not the node
      auto [lo, hi] = expected_pair("range");
      if (same(ours->vmin(), lo) && same(ours->vmax(), hi) && as_ld(lo) == as_ld(hi)) return {};
    }
    return judge(ours, expected, true);
  }

  Outcome check_bounds(const std::string& kind) {
    const UOp* in = node("in");
    detail_ += "\nours:     " + bounds_text(in);
    if (kind == "bounds") {
      detail_ += "   expected: [" + r_.value("range") + "]";
      if (auto bad = bounds_differ(in)) return {Verdict::Mismatch, *bad, detail_};
      return {};
    }
    if (kind == "bounds_ne") {
      if (!(in->vmin() == in->vmax())) return {};
      return {Verdict::Mismatch, "vmin == vmax " + bounds_text(in), detail_};
    }
    auto [lo, hi] = expected_pair("contains");
    detail_ += "   must contain: [" + r_.value("contains") + "]";
    if (as_ld(in->vmin()) <= as_ld(lo) && as_ld(in->vmax()) >= as_ld(hi)) return {};
    return {Verdict::Mismatch, "bounds " + bounds_text(in) + " do not contain [" + r_.value("contains") + "]", detail_};
  }

  Outcome check_equal() {
    const UOp* ours = rewrite_by_note(node("in"));
    const UOp* expected = node("out");
    if (noted("test checks only .arg of the CONST result")) {
      detail_ += "\nexpected: " + print(expected) + "\nours:     " + clip(print(ours));
      if (ours->is_const() && ours->cval() == expected->cval()) return {};
      return {Verdict::Mismatch, "not the CONST " + to_string(expected->cval(), expected->dtype), detail_};
    }
    return judge(ours, expected, false);
  }

  Outcome check_divide_exact() {
    auto ops = operands(0);
    if (ops.size() != 2) throw Stop{Verdict::Unsupported, "divide_exact takes two operands"};
    const UOp* d = ops[0]->divide_exact(ops[1]);
    return none_or_node(d ? simplify(d) : nullptr);
  }

  Outcome check_divides() {
    if (args_.size() != 2 || !args_[0] || args_[1]) throw Stop{Verdict::Unsupported, "divides takes (expr, int)"};
    return none_or_node(args_[0]->divides(std::stoll(arg_text_[1])));
  }

  // `out` is none, not_none or an expression
  Outcome none_or_node(const UOp* ours) {
    const std::string out = r_.value("out");
    if (!ours || out == "none" || out == "not_none")
      detail_ += "\nours:     " + (ours ? clip(print(ours)) : std::string("none"));
    if (out == "none") return ours ? Outcome{Verdict::Mismatch, "expected none", detail_} : Outcome{};
    if (!ours) return {Verdict::Mismatch, "none, expected " + (out == "not_none" ? out : clip(out, 80)), detail_};
    if (out == "not_none") return {};
    return judge(ours, node("out"), false);
  }

  Outcome check_sym_infer() {
    const UOp* ours = simplify(node("in"));
    exact::Env env;
    std::map<std::string, int64_t, std::less<>> vars;
    for (const std::string& kv : golden::split_trimmed(r_.value("vars"), ' ')) {
      size_t eq = kv.find('=');
      vars[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    }
    for (const UOp* l : exact::leaves(ours)) {
      auto it = l->op == Op::DEFINE_VAR ? vars.find(l->arg<VarArg>().name) : vars.end();
      if (it == vars.end()) throw Stop{Verdict::Unsupported, "no value for " + clip(print(l), 80)};
      env[l] = ConstValue::of_int(it->second);
    }
    detail_ += "\nours:     " + clip(print(ours));
    exact::Value v = exact::evaluate(ours, env);
    std::optional<Number> want = number(r_.value("value"));
    detail_ += "\nvalue:    " + exact::to_string(v) + "   expected: " + r_.value("value");
    if (v.size() == 1 && v[0] && want && same(*v[0], *want)) return {};
    // uint64 values past INT64_MAX are carried as negative int64
    if (v.size() == 1 && v[0] && v[0]->is_int() && r_.value("value") == std::to_string(uint64_t(v[0]->i))) return {};
    return {Verdict::Mismatch, "value " + exact::to_string(v) + ", expected " + r_.value("value"), detail_};
  }

  // SINK(LOAD(INDEX(buf, offset)), ...) after the rewrite: the offset's idx and valid
  Outcome check_valid_idx() {
    static const PatternMatcher kSymMoveWhere = sym() + pm_move_where_on_load();
    if (!noted("matcher: sym+pm_move_where_on_load "))
      throw Stop{Verdict::Unsupported, "note names no matcher kiln knows"};
    const UOp* ours = graph_rewrite(node("in"), kSymMoveWhere);
    detail_ += "\nresult:   " + clip(print(ours));
    if (ours->op != Op::SINK || ours->nsrc() == 0 || ours->src(0)->op != Op::LOAD ||
        ours->src(0)->src(0)->op != Op::INDEX || ours->src(0)->src(0)->nsrc() < 2)
      return {Verdict::Mismatch, "result is not SINK(LOAD(INDEX(buf, offset)), ...)", detail_};
    const UOp* offset = ours->src(0)->src(0)->src(1);
    const UOp* idx = offset->op == Op::WHERE && offset->src(2)->is_invalid() ? offset->src(1) : offset;
    // when tinygrad fails the check too (expected_failure), say whether we fail it the same way
    auto as_tinygrad = [&](const char* field, const UOp* got) -> std::string {
      if (!r_.has(field)) return std::string();
      return parse_field(field, r_.value(field)) == got ? " (same as tinygrad's own result)"
                                                        : " (not tinygrad's own result either)";
    };
    Outcome o = judge(idx, graph_rewrite(node("idx"), commutative()), false);
    if (o.verdict != Verdict::Pass) return {o.verdict, "idx: " + o.reason + as_tinygrad("tinygrad_idx", idx), o.detail};
    o = judge(get_valid(offset), graph_rewrite(node("valid"), commutative()), false);
    if (o.verdict != Verdict::Pass)
      return {o.verdict, "valid: " + o.reason + as_tinygrad("tinygrad_valid", get_valid(offset)), o.detail};
    return {};
  }

  Outcome check_simplify_valid() {
    const UOp* in = node("in");
    // simplify_valid is the AND rule of pm_simplify_valid; nullptr means tinygrad's None
    const UOp* ours = in->op == Op::AND ? pm_simplify_valid().rewrite(in) : nullptr;
    const std::string out = r_.value("out");
    if (out == "none" || out == "not_none") return none_or_node(ours);
    if (r_.value("rendered") != r_.value("text"))
      throw Stop{Verdict::Unsupported,
                 "expected only as text (`" + r_.value("text") + "`) that tinygrad does not render"};
    if (!ours) return {Verdict::Mismatch, "none, expected `" + r_.value("text") + "`", detail_};
    // render() simplifies first; tinygrad_out renders as `text`, so the same simplified node does too
    return judge(simplify(ours), simplify(tinygrad_out()), false);
  }

  const Record& r_;
  const std::string note_;
  Context ctx_;
  std::map<std::string, const UOp*> nodes_;
  std::vector<const UOp*> args_;
  std::vector<std::string> arg_text_;
  std::string detail_;
};

// ---------------------------------------------------------------- one file

void print_summary(const std::string& file, const std::vector<Record>& records, const std::vector<Outcome>& outcomes) {
  std::map<std::string, std::array<int, 5>> by_kind;
  std::array<int, 5> total{};
  for (size_t i = 0; i < records.size(); ++i) {
    by_kind[records[i].value("kind")][size_t(outcomes[i].verdict)]++;
    total[size_t(outcomes[i].verdict)]++;
  }
  std::ostringstream os;
  os << std::left << std::setw(18) << file;
  for (const char* n : kVerdictNames) os << std::right << std::setw(12) << n;
  os << std::setw(8) << "total"
     << "\n";
  auto row = [&](const std::string& name, const std::array<int, 5>& c) {
    os << "  " << std::left << std::setw(16) << name;
    int sum = 0;
    for (int n : c) os << std::right << std::setw(12) << n, sum += n;
    os << std::setw(8) << sum << "\n";
  };
  for (const auto& [kind, c] : by_kind) row(kind, c);
  row("all", total);
  std::cout << os.str();
  for (size_t v = 0; v < total.size(); ++v) {
    std::string key = kVerdictNames[v];
    for (char& ch : key) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    ::testing::Test::RecordProperty(key, total[v]);
  }
  ::testing::Test::RecordProperty("records", int(records.size()));
}

void run_file(const std::string& file) {
  std::string error;
  std::vector<Record> records = golden::read_records(kDir + file, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_FALSE(records.empty()) << "no records in " << kDir + file;

  std::vector<Outcome> outcomes;
  for (const Record& r : records) outcomes.push_back(Checker(r).run());
  print_summary(file, records, outcomes);

  bool verbose = env_flag("KILN_PORT_VERBOSE");
  if (verbose)
    for (size_t i = 0; i < records.size(); ++i)
      if (outcomes[i].verdict != Verdict::Pass)
        std::cout << "[" << name(outcomes[i].verdict) << "] " << records[i].id << " (" << records[i].value("kind")
                  << ", tinygrad: " << records[i].value("status") << ")\n  reason:   " << outcomes[i].reason << "\n"
                  << (outcomes[i].detail.empty() ? "" : indent(outcomes[i].detail, "  ") + "\n");

  golden::KnownFailures known = golden::read_known_failures(kKnownFailures, &error);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<golden::KnownFailure> now;
  for (size_t i = 0; i < records.size(); ++i)
    if (outcomes[i].verdict != Verdict::Pass)
      now.push_back({records[i].id, name(outcomes[i].verdict), outcomes[i].reason});

  if (env_flag("KILN_UPDATE_KNOWN_FAILURES")) {
    if (known.header.empty())
      known.header = {
          "# Records of tests/golden/tinygrad/*.txt that kiln does not PASS yet, with their class and why.",
          "# Checked by tests/unit/test_tinygrad_port.cpp: a failing record missing here, or a listed record",
          "# that passes or changed class, fails the test. Regenerate (then review the diff) with",
          "#   KILN_UPDATE_KNOWN_FAILURES=1 kiln_unit_tests --gtest_filter='TinygradPort.*'",
          "# Format: <record id> | <class> | <reason>; the reason is informational."};
    known.sections[file] = now;
    ASSERT_TRUE(golden::write_known_failures(kKnownFailures, known, kFiles)) << "cannot write " << kKnownFailures;
    std::cout << "wrote " << now.size() << " known failures of " << file << " to " << kKnownFailures << "\n";
    return;
  }

  std::ostringstream diff;
  int changes = 0;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < records.size(); ++i) index[records[i].id] = i;
  for (size_t i = 0; i < records.size(); ++i) {
    const Outcome& o = outcomes[i];
    const golden::KnownFailure* k = known.find(file, records[i].id);
    if (o.verdict == Verdict::Pass && !k) continue;
    if (k && k->cls == name(o.verdict)) continue;
    ++changes;
    if (o.verdict == Verdict::Pass) {
      diff << "- " << k->id << " | " << k->cls << "   (now PASSES: remove it from the list)\n";
    } else if (!k) {
      diff << "+ " << records[i].id << " | " << name(o.verdict) << " | " << o.reason << "   (REGRESSION)\n"
           << (o.detail.empty() ? "" : indent(o.detail, "    ") + "\n");
    } else {
      diff << "~ " << k->id << " | " << k->cls << " -> " << name(o.verdict) << " | " << o.reason << "\n"
           << (o.detail.empty() ? "" : indent(o.detail, "    ") + "\n");
    }
  }
  if (auto it = known.sections.find(file); it != known.sections.end())
    for (const golden::KnownFailure& k : it->second)
      if (!index.count(k.id)) ++changes, diff << "- " << k.id << " | " << k.cls << "   (no such record)\n";
  EXPECT_EQ(changes, 0) << file << ": " << changes << " record(s) differ from " << kKnownFailures
                        << " (rerun with KILN_UPDATE_KNOWN_FAILURES=1 to accept, then review the diff):\n"
                        << diff.str();
}

// The checker itself: each class is reachable, and a wrong expectation never passes.
TEST(TinygradPort, CheckerClassifies) {
  const char* kRecords = R"(# self::pass
kind: simplify
in: (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 0))
out: (VAR:weakint a 0 8)
range: 0 8
note: matcher: sym+pm_cast_weak

# self::equivalent
kind: simplify
in: (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 0))
out: (FLOORDIV:weakint (MUL:weakint (VAR:weakint a 0 8) (CONST:weakint 2)) (CONST:weakint 2))
range: 0 8
note: matcher: sym+pm_cast_weak

# self::mismatch_value
kind: simplify
in: (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 0))
out: (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 1))
range: 1 9
note: matcher: sym+pm_cast_weak

# self::mismatch_bounds
kind: simplify
in: (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 0))
out: (VAR:weakint a 0 8)
range: 0 9
note: matcher: sym+pm_cast_weak

# self::parse_error
kind: bounds
in: (NOT_AN_OP:weakint)
range: 0 0

# self::unsupported
kind: valid_idx
in: (CONST:weakint 0)
)";
  std::string error;
  std::vector<Record> records = golden::parse_records(kRecords, "self", &error);
  ASSERT_TRUE(error.empty()) << error;
  const std::vector<Verdict> want = {Verdict::Pass,     Verdict::Equivalent, Verdict::Mismatch,
                                     Verdict::Mismatch, Verdict::ParseError, Verdict::Unsupported};
  ASSERT_EQ(records.size(), want.size());
  for (size_t i = 0; i < records.size(); ++i) {
    Outcome o = Checker(records[i]).run();
    EXPECT_EQ(name(o.verdict), std::string(name(want[i]))) << records[i].id << ": " << o.reason << "\n" << o.detail;
  }
}

TEST(TinygradPort, Symbolic) { run_file("symbolic.txt"); }
TEST(TinygradPort, VminVmax) { run_file("vmin_vmax.txt"); }
TEST(TinygradPort, ValidIdx) { run_file("valid_idx.txt"); }

}  // namespace
}  // namespace kiln

#include "generator/emit/names.h"

#include <algorithm>
#include <cctype>

namespace kiln::emit {

namespace {

// C++20's keywords and alternative tokens (C++17's are a subset)
const std::set<std::string_view, std::less<>> kKeywords = {
    "alignas",     "alignof",   "and",        "and_eq",    "asm",      "auto",         "bitand",
    "bitor",       "bool",      "break",      "case",      "catch",    "char",         "char8_t",
    "char16_t",    "char32_t",  "class",      "compl",     "concept",  "const",        "consteval",
    "constexpr",   "constinit", "const_cast", "continue",  "co_await", "co_return",    "co_yield",
    "decltype",    "default",   "delete",     "do",        "double",   "dynamic_cast", "else",
    "enum",        "explicit",  "export",     "extern",    "false",    "float",        "for",
    "friend",      "goto",      "if",         "inline",    "int",      "long",         "mutable",
    "namespace",   "new",       "noexcept",   "not",       "not_eq",   "nullptr",      "operator",
    "or",          "or_eq",     "private",    "protected", "public",   "register",     "reinterpret_cast",
    "requires",    "return",    "short",      "signed",    "sizeof",   "static",       "static_assert",
    "static_cast", "struct",    "switch",     "template",  "this",     "thread_local", "throw",
    "true",        "try",       "typedef",    "typeid",    "typename", "union",        "unsigned",
    "using",       "virtual",   "void",       "volatile",  "wchar_t",  "while",        "xor",
    "xor_eq"};

// the macros of the C and C++ standard libraries that the reserved prefixes below do not cover
const std::set<std::string_view, std::less<>> kMacros = {
    "assert",      "errno",          "NULL",        "offsetof",      "setjmp",     "va_arg",         "va_copy",
    "va_end",      "va_start",       "stdin",       "stdout",        "stderr",     "BUFSIZ",         "FILENAME_MAX",
    "FOPEN_MAX",   "L_tmpnam",       "SEEK_CUR",    "SEEK_END",      "SEEK_SET",   "TMP_MAX",        "MB_CUR_MAX",
    "RAND_MAX",    "CLOCKS_PER_SEC", "WEOF",        "WCHAR_MIN",     "WCHAR_MAX",  "WCHAR_WIDTH",    "WINT_MIN",
    "WINT_MAX",    "WINT_WIDTH",     "CHAR_BIT",    "CHAR_MIN",      "CHAR_MAX",   "CHAR_WIDTH",     "SCHAR_MIN",
    "SCHAR_MAX",   "SCHAR_WIDTH",    "UCHAR_MAX",   "UCHAR_WIDTH",   "MB_LEN_MAX", "SHRT_MIN",       "SHRT_MAX",
    "SHRT_WIDTH",  "USHRT_MAX",      "USHRT_WIDTH", "LONG_MIN",      "LONG_MAX",   "LONG_WIDTH",     "ULONG_MAX",
    "ULONG_WIDTH", "LLONG_MIN",      "LLONG_MAX",   "LLONG_WIDTH",   "ULLONG_MAX", "ULLONG_WIDTH",   "BOOL_MAX",
    "BOOL_WIDTH",  "PTRDIFF_MIN",    "PTRDIFF_MAX", "PTRDIFF_WIDTH", "SIZE_MAX",   "SIZE_WIDTH",     "HUGE_VAL",
    "HUGE_VALF",   "HUGE_VALL",      "INFINITY",    "NAN",           "MATH_ERRNO", "MATH_ERREXCEPT", "math_errhandling",
    "DECIMAL_DIG", "NDEBUG",         "BIG_ENDIAN",  "LITTLE_ENDIAN", "PDP_ENDIAN", "BYTE_ORDER"};

// predefined by GCC and Clang in the GNU dialects (-std=gnu++17, their default)
const std::set<std::string_view, std::less<>> kGnuMacros = {"linux", "unix", "i386"};

bool upper_or_digit(char c) {
  return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}

// C17 7.31 (future library directions) and POSIX: the names its headers may define as macros
bool reserved_for_macros(std::string_view n) {
  auto after = [&](std::string_view prefix, auto pred) {
    return n.size() > prefix.size() && n.starts_with(prefix) && pred(n[prefix.size()]);
  };
  auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  auto lower_or_x = [](char c) { return std::islower(static_cast<unsigned char>(c)) || c == 'X'; };
  if (after("E", upper_or_digit)) return true;  // <errno.h>
  if (after("SIG", [&](char c) { return upper(c) || c == '_'; })) return true;
  if (after("LC_", upper) || after("FE_", upper) || after("FP_", upper) || after("TIME_", upper)) return true;
  if (after("ATOMIC_", upper) || after("FLT_", upper) || after("DBL_", upper) || after("LDBL_", upper)) return true;
  if (after("PRI", lower_or_x) || after("SCN", lower_or_x)) return true;  // <inttypes.h>
  // <stdint.h>: INT or UINT ... _MAX, _MIN, _WIDTH or _C
  bool intlike = n.starts_with("INT") || n.starts_with("UINT");
  if (intlike && (n.ends_with("_MAX") || n.ends_with("_MIN") || n.ends_with("_WIDTH") || n.ends_with("_C")))
    return std::all_of(n.begin(), n.end(), [](char c) { return upper_or_digit(c) || c == '_'; });
  return false;
}

bool reserved_spelling(std::string_view n) {
  return (n.size() >= 2 && n[0] == '_' && std::isupper(static_cast<unsigned char>(n[1]))) ||
         n.find("__") != std::string_view::npos;
}

}  // namespace

std::string reserved_in_cxx(std::string_view n) {
  if (kKeywords.contains(n)) return "it is a keyword";
  if (reserved_spelling(n))
    return "names with '__', or a leading '_' and a capital, are reserved to the compiler and its library";
  if (kMacros.contains(n)) return "it is a macro of the C or C++ standard library";
  if (kGnuMacros.contains(n)) return "GCC and Clang predefine it as a macro in the GNU dialects";
  if (reserved_for_macros(n)) return "the C standard and POSIX reserve names like it for the macros of their headers";
  if (n.size() > 2 && n.ends_with("_t")) return "POSIX reserves names ending in '_t' for the types of its headers";
  return "";
}

std::vector<std::string> cxx_parameter_names(const std::vector<std::string>& names, std::set<std::string> taken) {
  std::vector<std::string> out(names.size());
  // the names that can stay take precedence over any respelling
  for (size_t i = 0; i < names.size(); ++i)
    if (reserved_in_cxx(names[i]).empty() && !taken.contains(names[i])) taken.insert(out[i] = names[i]);
  for (size_t i = 0; i < names.size(); ++i) {
    if (!out[i].empty()) continue;
    std::string base;
    for (char c : names[i])  // "__x" -> "_x": no "__"
      if (c != '_' || base.empty() || base.back() != '_') base += c;
    if (base.starts_with('_')) base = "p" + base;
    while (base.size() > 1 && base.back() == '_') base.pop_back();
    if (!reserved_in_cxx(base + "_").empty()) base = "p_" + base;  // a reserved prefix: no suffix helps
    // the respelled spelling as it is, else with a suffix: "new" -> "new_", "__x" -> "p_x"
    std::string s = base != names[i] ? base : base + "_";
    for (int n = 2; !reserved_in_cxx(s).empty() || taken.contains(s); ++n) s = base + "_" + std::to_string(n);
    taken.insert(out[i] = s);
  }
  return out;
}

}  // namespace kiln::emit

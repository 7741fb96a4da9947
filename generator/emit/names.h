// Spec names in the generated C++. A kernel's name is a function of the library and cannot be
// changed; its arguments and dims are only parameter names in the header, and get another
// spelling where theirs cannot be one.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::emit {

// Why `name` cannot be an identifier of the generated C++, or "" when it can. The code must
// compile under C++17 and C++20 (GNU dialects too) after any standard header: so not a keyword
// of either, nor a macro of the C or C++ standard library or a name the C standard reserves for
// its macros (E<digit or capital>..., SIG..., INT8_MAX, PRIi64, LC_..., FE_..., ...), nor a macro
// GCC and Clang predefine in GNU mode (linux, unix), nor a name reserved to the implementation
// (a leading underscore and a capital, or "__" anywhere).
std::string reserved_in_cxx(std::string_view name);

// The parameter names of the generated header for spec names (in order): each as declared where
// that is allowed, else respelled ("new" -> "new_", "NULL" -> "NULL_", "__x" -> "p_x"), never one
// of `taken` nor another of the list.
std::vector<std::string> cxx_parameter_names(const std::vector<std::string>& names, std::set<std::string> taken);

}  // namespace kiln::emit

// The stable text form of the IR: s-expressions, one node per parenthesis:
//   (CONST:weakint 5)   (VAR:weakint a 0 8)   (ADD:weakint (VAR:weakint a 0 8) (CONST:weakint 1))
//   (RANGE:weakint 0 loop (CONST:weakint 16))   (SPECIAL:weakint gidx0 (CONST:weakint 4))
// General form: (OP:dtype atom* node*). For graphs with sharing, `print_graph` writes one
// binding per line (`%3 = (ADD:weakint %1 %2)`) and the parser reads both forms.
#pragma once

#include <string>
#include <string_view>

#include "generator/ir/uop.h"

namespace kiln {

std::string print(const UOp* u);        // one line, tree form
std::string print_graph(const UOp* u);  // one binding per node, last line is the root

struct ParseError {
  size_t offset = 0;  // byte offset into the input
  std::string message;
};

// Parses one expression (tree form, or bindings form ending with the root). On failure returns
// nullptr and fills `err` (when given).
const UOp* parse(Context& ctx, std::string_view text, ParseError* err = nullptr);
// parse() that also holds every node to the verifier's rules as it is built (ill-typed input such
// as an int ADD of a float fails at the node's head): for input that users write.
const UOp* parse_verified(Context& ctx, std::string_view text, ParseError* err = nullptr);

std::string to_string(const ConstValue& v, DType d);  // as printed in CONST

}  // namespace kiln

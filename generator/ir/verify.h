// The IR verifier: structural and dtype rules every node must satisfy. Tests and CI run it
// after every stage; a failure names the node and the broken rule.
#pragma once

#include <optional>
#include <string>

#include "generator/ir/uop.h"

namespace kiln {

// nullopt when every node under root is well formed, else a message naming the first bad node
// (in toposort order) and the rule it breaks.
std::optional<std::string> verify(const UOp* root);
// The rules for one node given its sources (verify() applies it to every node): nullopt or the broken rule.
std::optional<std::string> verify_node(const UOp* u);

}  // namespace kiln

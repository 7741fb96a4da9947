#include <set>
#include <unordered_map>

#include "generator/emit/generator.h"
#include "generator/symbolic/symbolic.h"

namespace kiln::emit::detail {

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The runtime's dtypes in kiln_dtype's order (kernel_abi.h): the C++ enumerator, the spelling
// specs and the runtime use
struct RuntimeDType {
  Scalar scalar;
  const char* enumerator;
  const char* name;
};
constexpr RuntimeDType kRuntimeDTypes[] = {
    {Scalar::Bool, "Bool", "bool"},      {Scalar::Int8, "Int8", "i8"},           {Scalar::Uint8, "Uint8", "u8"},
    {Scalar::Int16, "Int16", "i16"},     {Scalar::Uint16, "Uint16", "u16"},      {Scalar::Int32, "Int32", "i32"},
    {Scalar::Uint32, "Uint32", "u32"},   {Scalar::Int64, "Int64", "i64"},        {Scalar::Uint64, "Uint64", "u64"},
    {Scalar::Float16, "Float16", "f16"}, {Scalar::BFloat16, "BFloat16", "bf16"}, {Scalar::Float32, "Float32", "f32"},
    {Scalar::Float64, "Float64", "f64"}};

int runtime_dtype(DType d) {
  for (int i = 0; i < int(std::size(kRuntimeDTypes)); ++i)
    if (kRuntimeDTypes[i].scalar == d.scalar) return i;
  throw InternalError("kiln gen: no runtime dtype for " + to_string(d));
}
std::string dtype_enum(DType d) { return kRuntimeDTypes[runtime_dtype(d)].enumerator; }
std::string dtype_short(DType d) { return kRuntimeDTypes[runtime_dtype(d)].name; }

std::string expr_text(const UOp* u, const std::vector<const UOp*>& dims, Style style) {
  auto s = [&](size_t i) { return expr_text(u->src(i), dims, style); };
  auto op = [&](const char* infix, const char* checked) {
    return style == Style::Checked ? std::string("c.") + checked + "(" + s(0) + ", " + s(1) + ")"
                                   : "(" + s(0) + " " + infix + " " + s(1) + ")";
  };
  switch (u->op) {
    case Op::CONST:
      return std::to_string(u->ival()) + (style == Style::Text ? "" : "LL");
    case Op::DEFINE_VAR: {
      std::string_view n = u->arg<VarArg>().name;
      for (size_t i = 0; i < dims.size(); ++i)
        if (dims[i]->arg<VarArg>().name == n)
          return style == Style::Text ? std::string(n) : "d[" + std::to_string(i) + "]";
      throw InternalError("kiln gen: " + std::string(n) + " is not a dim of the spec");
    }
    case Op::ADD:
      return op("+", "add");
    case Op::SUB:
      return op("-", "sub");
    case Op::MUL:
      return op("*", "mul");
    case Op::NEG:
      return style == Style::Checked ? "c.neg(" + s(0) + ")" : "(-" + s(0) + ")";
    case Op::CDIV:
    case Op::FLOORDIV:  // index math of sizes: non-negative, where floor and C's division agree
      if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0)
        throw InternalError("kiln gen: a size divides a value that may be negative");
      return op("/", "div");
    case Op::CMOD:
    case Op::FLOORMOD:
      if (u->src(0)->vmin().i < 0 || u->src(1)->vmin().i <= 0)
        throw InternalError("kiln gen: a size takes a remainder of a value that may be negative");
      return op("%", "mod");
    case Op::MAX:
      return std::string(style == Style::Text  ? "max("
                         : style == Style::Cxx ? "kiln::detail::imax("
                                               : "c.max(") +
             s(0) + ", " + s(1) + ")";
    default:
      throw InternalError("kiln gen: cannot write " + std::string(op_name(u->op)) + " in a size");
  }
}

std::string guard_text(const Variant& v, const std::vector<const UOp*>& dims) {
  if (v.guard.empty()) return "any shape in range";
  std::string s;
  for (const auto& [dim, b] : v.guard) {
    std::string n(dims[size_t(dim)]->arg<VarArg>().name);
    s += (s.empty() ? "" : " && ") +
         (b.multiple ? n + " % " + std::to_string(b.value) + " == 0" : n + " == " + std::to_string(b.value));
  }
  return s;
}

Estimate estimate(const UOp* ast) {
  Context& ctx = ast->ctx();
  std::unordered_map<const UOp*, std::vector<const UOp*>> in;  // the ranges a value varies with
  Expr flops = ctx.cint(0), bytes = ctx.cint(0);
  for (const UOp* u : toposort(ast)) {
    std::set<const UOp*, bool (*)(const UOp*, const UOp*)> rs([](const UOp* a, const UOp* b) { return a->id < b->id; });
    if (u->op == Op::RANGE) rs.insert(u);
    for (const UOp* s : u->src())
      if (auto it = in.find(s); it != in.end()) rs.insert(it->second.begin(), it->second.end());
    auto count = [&](const std::set<const UOp*, bool (*)(const UOp*, const UOp*)>& ranges) {
      Expr n = ctx.cint(1);
      for (const UOp* r : ranges) n = n * Expr(r->src(0));
      return n;
    };
    if (u->op == Op::REDUCE) {
      flops = flops + count(rs);
      for (const UOp* r : u->src().subspan(1)) rs.erase(r);
    } else if (is_alu(u->op) && u->dtype != dtypes::weakint && !is_bool(u->dtype)) {
      flops = flops + count(rs);
    }
    if (u->op == Op::PARAM) bytes = bytes + Expr(u->src(0)) * int64_t(itemsize(u->dtype.base()));
    in[u].assign(rs.begin(), rs.end());
  }
  return {simplify(flops), simplify(bytes)};
}

}  // namespace kiln::emit::detail

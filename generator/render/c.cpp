// The C renderer's program walk: one line of C per node of the linear program, in its order.
#include "generator/render/c.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <vector>

#include "generator/render/c_internal.h"

namespace kiln::render {

namespace {

using namespace c;

class CRenderer {
 public:
  CRenderer(std::span<const UOp* const> lin, std::string_view name, std::span<const UOp* const> vars, Dialect d)
      : lin_(lin), name_(name), vars_(vars), d_(d) {}

  std::string run() {
    uint32_t max_id = 0;
    for (const UOp* u : lin_) max_id = std::max(max_id, u->id);
    pos_.assign(size_t(max_id) + 1, 0);
    for (size_t i = 0; i < lin_.size(); ++i) pos_[lin_[i]->id] = uint32_t(i);
    nodes_.assign(lin_.size(), Node{});
    analyze();
    out_.clear();
    out_.reserve(32 * lin_.size() + 256);
    pool_.reserve(16 * lin_.size());
    if (d_ == Dialect::C && std::any_of(lin_.begin(), lin_.end(), [&](const UOp* u) {
          return at(u).needed && u->dtype.scalar == Scalar::Float16;
        }))
      out_ += f16_typedef();
    if (!shapes_.empty() && d_ == Dialect::OpenCL) {  // OpenCL C's own vectors
      for (auto [bits, lanes] : shapes_) out_ += opencl_vector_helpers(bits, lanes);
    } else if (!shapes_.empty() && d_ == Dialect::Cuda) {  // C++ structs of lanes
      for (auto [bits, lanes] : shapes_) out_ += cuda_vector_helpers(bits, lanes);
    } else if (!shapes_.empty()) {
      out_ +=
          "#ifndef __GNUC__\n#error \"this kernel uses GNU C vector types: compile it with GCC or Clang\"\n#endif\n";
      for (auto [bits, lanes] : shapes_) out_ += vector_helpers(bits, lanes);
    }
    std::set<std::string_view> mma;  // the tensor cores' products the kernel uses
    for (const UOp* u : lin_)
      if (u->op == Op::WMMA && at(u).needed) mma.insert(u->arg<Name>().s);
    if (!mma.empty() && d_ != Dialect::Cuda) throw InternalError("render C: tensor cores (WMMA) need a CUDA target");
    for (std::string_view shape : mma) out_ += cuda_mma_helper(shape);
    if (gpu_dialect(d_)) {
      gpu_signature();
    } else {
      cat(out_, "void ", name_, "(void* const* bufs, const int64_t* vars, int32_t core, int32_t cores) {\n",
          "  (void)bufs;\n  (void)vars;\n  (void)cores;\n");
      if (!uses_core_) out_ += "  if (core != 0) return;  /* not shared among cores: core 0 does it all */\n";
    }
    for (const UOp* u : lin_)
      if (at(u).needed) line(u);
    return std::move(out_);
  }

 private:
  // a GPU kernel's (OpenCL's, CUDA's): the buffers by slot (a slot the kernel does not use is a
  // byte pointer it ignores), then every var as a 64-bit int
  void gpu_signature() {
    const bool cl = d_ == Dialect::OpenCL;
    std::vector<const UOp*> params;
    for (const UOp* u : lin_)
      if (u->op == Op::PARAM) {
        size_t slot = size_t(u->arg<ParamArg>().slot);
        if (params.size() <= slot) params.resize(slot + 1);
        params[slot] = u;
      }
    cat(out_, cl ? "__kernel void " : "extern \"C\" __global__ void ", name_, '(');
    std::string_view global = cl ? "__global " : "", restrict = cl ? "* restrict data" : "* __restrict__ data";
    for (size_t i = 0; i < params.size(); ++i) {
      if (i) out_ += ", ";
      if (!params[i]) {
        cat(out_, global, cl ? "const uchar* unused" : "const uint8_t* unused", i);
        continue;
      }
      std::string_view cq = at(params[i]).written ? "" : "const ";
      cat(out_, global, cq, storage_type(params[i]->dtype.elem(), d_), restrict, i);
    }
    for (size_t j = 0; j < vars_.size(); ++j)
      cat(out_, params.empty() && j == 0 ? "" : ", ", cl ? "long varg" : "int64_t varg", j);
    out_ += ") {\n";
  }

  // uses, the loop depth of every node, which buffers are written, what the stores need, the
  // vector shapes the kernel uses and the loops that compute on vectors
  void analyze() {
    int d = 1;
    std::vector<const UOp*> open;  // the loops around the node
    for (size_t i = 0; i < lin_.size(); ++i) {
      const UOp* u = lin_[i];
      for (const UOp* s : u->src()) {
        // every node of the graph is in the linear program (at() finds it there)
        if (lin_[pos_[s->id]] != s)
          throw InternalError("render C: " + std::string(op_name(s->op)) + " is missing from the linear program");
        Node& n = at(s);
        // (a CUDA id is gated at its extent)
        if (u->op != Op::PARAM && u->op != Op::BUFFER && (u->op != Op::SPECIAL || d_ == Dialect::Cuda)) ++n.uses;
        // an integer max spells each operand twice (a > b ? a : b): one inlined there would be
        // written out twice, and a chain of maxima (an unrolled reduction) grows exponentially
        if (u->op == Op::MAX && u->dtype.count == 1 && !is_float(u->dtype)) ++n.uses;
        n.user = u;  // the last user in program order
      }
      if (u->op == Op::END) --d, open.pop_back();
      nodes_[i].depth = d;
      if (u->op == Op::RANGE) ++d, open.push_back(u);
      if (u->op == Op::STORE && u->src(0)->op == Op::INDEX) at(u->src(0)->src(0)).written = true;
      if (u->dtype.count > 1 && !is_bool(u->dtype) && !vector_bytes_) vector_bytes_ = itemsize(u->dtype.elem());
      // a loop over an accumulator's vectors, unrolled below so that they live in registers; on a
      // GPU only where the loop picks the vector (nvcc unrolls what it is told: a reduction's loop
      // of 784 steps that updates one vector was 784 copies of its body, 38 s of nvcc)
      if (u->op == Op::STORE && u->src(1)->dtype.count > 1 && !open.empty() &&
          (!gpu_dialect(d_) || (u->src(0)->op == Op::INDEX && contains(u->src(0)->src(1), open.back()))))
        at(open.back()).vector_loop = true;
    }
    // what the stores need: one sweep from the end, as sources come before their users; a
    // buffer's size expression is metadata, not code
    nodes_.back().needed = true;
    for (size_t i = lin_.size(); i-- > 0;) {
      const UOp* u = lin_[i];
      if (!nodes_[i].needed) continue;
      uses_core_ |= u->op == Op::DEFINE_VAR && u->arg<VarArg>().name == ".core";
      if (u->dtype.count > 1) {
        DType e = u->dtype.elem();
        shapes_.insert({is_bool(e) ? mask_bits(e) : bitsize(e), int(e.count)});
      }
      if (u->op == Op::PARAM || u->op == Op::BUFFER || (u->op == Op::SPECIAL && d_ != Dialect::Cuda))
        continue;  // sizes: metadata
      for (const UOp* s : u->src()) at(s).needed = true;
    }
  }

  // a bool vector is a mask with lanes as wide as the kernel's vectors' (one width per kernel)
  int mask_bits(DType d) const {
    if (vector_bytes_ == 0) throw InternalError("render C: a vector mask with no vector it could compare");
    return vector_bytes_ * 8 / d.count;
  }
  // the C type of a value (a vector: its typedef)
  std::string_view type_of(DType d) {
    if (d.count == 1) return scalar_type(d, d_);
    return names(d).type;
  }
  // how the operator table spells d (vector names are made once per kernel)
  Spelling names(DType d) {
    if (d.count == 1) return {false, scalar_type(d, d_), unsigned_type(d, d_), {}, d_};
    auto [it, fresh] = vnames_.try_emplace(d.key());
    if (fresh) {
      const int bits = is_bool(d) ? mask_bits(d) : 0;
      std::string sfx = vector_suffix(d, bits);
      if (d_ == Dialect::OpenCL) {  // float4, int4; integer math wraps through uint4
        DType u =
            is_float(d) || is_bool(d) ? d : DType(bitsize(d) == 64 ? Scalar::Uint64 : Scalar::Uint32).vec(d.count);
        it->second = {opencl_vector_type(d, bits), opencl_vector_type(u, bits), sfx};
      } else {
        it->second = {"kiln_" + sfx, "kiln_vu" + sfx.substr(2), sfx};
      }
    }
    return {true, it->second[0], it->second[1], it->second[2], d_};
  }

  // Starts a line of C at u's loop depth; the caller appends the rest, newline included.
  std::string& line_at(const UOp* u) {
    out_.append(size_t(2 * at(u).depth), ' ');
    return out_;
  }

  std::string_view ex(const UOp* u) const {
    const Node& n = at(u);
    if (!n.rendered) throw InternalError("render C: " + std::string(op_name(u->op)) + " used before it is rendered");
    return {pool_.data() + n.expr.at, n.expr.size};
  }
  // How users spell u: the parts, appended to the pool. None may point into the pool itself.
  template <class... T> void set_expr(const UOp* u, const T&... parts) {
    size_t start = pool_.size();
    cat(pool_, parts...);
    Node& n = at(u);
    n.expr = {uint32_t(start), uint32_t(pool_.size() - start)};
    n.rendered = true;
  }

  // a value, the expression in e_: inlined into its single user at the same depth, else a named local
  void value(const UOp* u, std::string_view prefix) {
    if (at(u).uses == 1 && single_user_same_depth(u)) return set_expr(u, '(', e_, ')');
    int n = counter_++;
    cat(line_at(u), "const ", type_of(u->dtype), ' ', prefix, n, " = ", e_, ";\n");
    set_expr(u, prefix, n);
  }

  bool single_user_same_depth(const UOp* u) {
    const UOp* user = at(u).user;
    return user && at(user).depth == at(u).depth && user->op != Op::END;
  }

  // integer ops whose result range analysis cannot bound inside the dtype wrap via unsigned
  static bool may_overflow(const UOp* u) {
    if (!is_int(u->dtype)) return false;
    if (bitsize(u->dtype) < 32) return false;  // computed in int, narrowed on use
    if (is_unsigned(u->dtype)) return false;   // unsigned arithmetic wraps in C
    return u->vmin().i == int_min(u->dtype) || u->vmax().i == int_max(u->dtype);
  }

  // an INDEX's gate (null when always valid) and the index it guards
  static std::pair<const UOp*, const UOp*> gated(const UOp* idx) {
    const UOp* i = idx->src(1);
    if (i->op == Op::WHERE && i->src(2)->is_invalid()) return {i->src(0), i->src(1)};
    return {nullptr, i};
  }

  static const UOp* buffer(const UOp* p) {  // through AFTER to the PARAM or the accumulator
    while (p->op == Op::AFTER) p = p->src(0);
    return p;
  }

  // Appends the place an access of dtype `d` at element i of `buf` reads or writes (the ops.def
  // contract: i counts scalar elements; a vector access covers n of them from i on). An accumulator
  // of vectors is an array of them: vector i / n, or lane i % n of it.
  void place(std::string& o, const UOp* buf, const UOp* i, DType d) {
    const UOp* b = buffer(buf);
    DType e = b->dtype.elem();
    if (d.count > 1 && b->op == Op::PARAM) return cat(o, '&', ex(b), '[', ex(i), ']');
    if (e.count > 1 && i->op == Op::CONST) {  // a constant element: vector i / n, lane i % n
      cat(o, ex(b), '[', i->ival() / int(e.count), ']');
      if (d.count > 1) return;
      if (d_ == Dialect::OpenCL) return cat(o, ".s", "0123456789abcdef"[i->ival() % int(e.count)]);
      return cat(o, '[', i->ival() % int(e.count), ']');
    }
    if (e.count > 1 && d.count == 1 && d_ == Dialect::OpenCL)  // OpenCL C has no [] on a vector
      return cat(o, "((", scalar_type(d, d_), "*)&", ex(b), '[', ex(i), " / ", int(e.count), "])[", ex(i), " % ",
                 int(e.count), ']');
    if (e.count > 1) {
      cat(o, ex(b), '[', ex(i), " / ", int(e.count), ']');
      if (d.count == 1) cat(o, '[', ex(i), " % ", int(e.count), ']');
      return;
    }
    cat(o, ex(b), '[', ex(i), ']');
  }

  void vector_load(const UOp* u) {
    const UOp* idx = u->src(0);
    if (gated(idx).first) throw InternalError("render C: a gated vector load");
    int n = counter_++;
    std::string& o = line_at(u);
    cat(o, "const ", type_of(u->dtype), " val", n, " = ");
    bool memory = buffer(idx->src(0))->op == Op::PARAM;
    if (memory) cat(o, "kiln_load_", names(u->dtype).sfx, '(');
    place(o, idx->src(0), idx->src(1), u->dtype);
    o += memory ? ");\n" : ";\n";
    set_expr(u, "val", n);
  }

  void vector_store(const UOp* u) {
    const UOp* idx = u->src(0);
    if (idx->op != Op::INDEX || gated(idx).first)
      throw InternalError("render C: a vector store needs an ungated INDEX");
    std::string& o = line_at(u);
    if (buffer(idx->src(0))->op != Op::PARAM) {
      place(o, idx->src(0), idx->src(1), u->src(1)->dtype);
      return cat(o, " = ", ex(u->src(1)), ";\n");
    }
    cat(o, "kiln_store_", names(u->src(1)->dtype).sfx, '(');
    place(o, idx->src(0), idx->src(1), u->src(1)->dtype);
    cat(o, ", ", ex(u->src(1)), ");\n");
  }

  // a vector of the scalars given (a broadcast: one value in every lane); a bool is a mask lane
  void stack(const UOp* u) {
    Spelling t = names(u->dtype);
    bool mask = is_bool(u->dtype), constant = true, splat = true;
    for (const UOp* s : u->src()) {
      constant &= s->op == Op::CONST;
      splat &= s == u->src(0);
    }
    auto lane = [&](const UOp* s) {
      if (mask && d_ == Dialect::OpenCL) return cat(e_, mask_bits(u->dtype) == 64 ? "-(long)(" : "-(int)(", ex(s), ')');
      if (mask) return cat(e_, "-(int", mask_bits(u->dtype), "_t)(", ex(s), ')');
      put(e_, ex(s));
    };
    e_.clear();
    if (splat) {
      cat(e_, "kiln_splat_", t.sfx, '(');
      lane(u->src(0));
      e_ += ')';
    } else {  // OpenCL's vector literal is (float4)(a, b, c, d); CUDA's an aggregate, T{{a, b, c, d}}
      const bool cl = d_ == Dialect::OpenCL, cuda = d_ == Dialect::Cuda;
      cat(e_, cuda ? "(" : "((", t.type, cl ? ")(" : cuda ? "{{" : "){");
      for (size_t k = 0; k < u->nsrc(); ++k) {
        if (k) e_ += ", ";
        lane(u->src(k));
      }
      e_ += cl ? "))" : cuda ? "}})" : "})";
    }
    if (constant) return set_expr(u, e_);  // spelled where used, as a literal is
    value(u, "vec");
  }

  void line(const UOp* u) {
    DType d = u->dtype;
    switch (u->op) {
      case Op::SINK:
        out_ += "}\n";
        return;
      case Op::CONST:
        if (u->is_invalid()) return;
        e_.clear();
        if (is_float(d))
          float_literal(e_, u->cval().f, d, d_);
        else
          int_literal(e_, u->cval().i, d, d_);
        return set_expr(u, e_);
      case Op::PARAM: {
        const auto& pa = u->arg<ParamArg>();
        if (gpu_dialect(d_)) return set_expr(u, "data", pa.slot);  // an argument of the kernel
        std::string_view t = storage_type(d.elem()), cq = at(u).written ? "" : "const ";
        cat(line_at(u), cq, t, "* restrict data", pa.slot, " = (", cq, t, "*)bufs[", pa.slot, "];  /* ", pa.name,
            " */\n");
        return set_expr(u, "data", pa.slot);
      }
      case Op::DEFINE_VAR: {
        std::string_view vn = u->arg<VarArg>().name;
        if ((vn == ".core" || vn == ".cores") && gpu_dialect(d_))
          throw InternalError("render GPU C: " + std::string(vn) + " (a kernel shared among CPU cores)");
        if (vn == ".core" || vn == ".cores") {  // the function's own arguments
          std::string_view arg = vn.substr(1), t = scalar_type(d);
          cat(line_at(u), "const ", t, " var_", arg, " = (", t, ')', arg, ";\n");
          return set_expr(u, "var_", arg);
        }
        size_t j = 0;
        while (j < vars_.size() && vars_[j]->arg<VarArg>().name != vn) ++j;
        if (j == vars_.size())
          throw InternalError("render C: variable " + std::string(vn) + " is not a kernel argument");
        e_.clear();
        if (identifier(vn))
          cat(e_, "var_", vn);
        else
          cat(e_, "var", j);
        std::string_view t = scalar_type(d, d_);
        cat(line_at(u), "const ", t, ' ', e_, " = (", t, gpu_dialect(d_) ? ")varg" : ")vars[", j,
            gpu_dialect(d_) ? ";\n" : "];\n");
        return set_expr(u, e_);
      }
      case Op::SPECIAL: {  // a work-item id: get_global_id(d) for "idx<d>", get_local_id / get_group_id
        std::string_view n = u->arg<Name>().s;
        if (!gpu_dialect(d_)) throw InternalError("render C: SPECIAL " + std::string(n) + " needs a GPU target");
        if (d_ == Dialect::Cuda) return cuda_id(u, n);
        std::string_view fn = n.starts_with("lidx")   ? "get_local_id("
                              : n.starts_with("gidx") ? "get_group_id("
                                                      : "get_global_id(";
        std::string_view t = scalar_type(d, d_);
        cat(line_at(u), "const ", t, ' ', n, " = (", t, ')', fn, n.back(), ");\n");
        return set_expr(u, n);
      }
      case Op::BUFFER: {  // an accumulator register (of vectors, where the elements are), or local memory
        const auto& pa = u->arg<ParamArg>();
        if (d.addrspace == AddrSpace::Local) {
          if (!gpu_dialect(d_)) throw InternalError("render C: local memory needs a GPU target");
          cat(line_at(u), d_ == Dialect::Cuda ? "__shared__ " : "__local ", type_of(d.elem()), " temp", pa.slot, '[',
              pa.size, "];\n");
          return set_expr(u, "temp", pa.slot);
        }
        if (pa.size > 1 || d.elem().count > 1)
          cat(line_at(u), type_of(d.elem()), " acc", pa.slot, '[', pa.size, "];\n");
        else
          cat(line_at(u), type_of(d.elem()), " acc", pa.slot, ";\n");
        return set_expr(u, "acc", pa.slot);
      }
      case Op::RANGE: {
        int32_t axis = u->arg<RangeArg>().axis;
        std::string_view t = scalar_type(d, d_), bound = ex(u->src(0));
        // a loop over vectors: unrolled, so that an accumulator of vectors lives in registers
        if (at(u).vector_loop && u->src(0)->op == Op::CONST)
          cat(line_at(u), gpu_dialect(d_) ? "#pragma unroll " : "#pragma GCC unroll ", u->src(0)->ival(), '\n');
        cat(line_at(u), "for (", t, " ridx", axis, " = 0; ridx", axis, " < ", bound, "; ridx", axis, "++) {\n");
        return set_expr(u, "ridx", axis);
      }
      case Op::END:
        return put(line_at(u), "}\n");
      case Op::BARRIER:  // the work group's local stores before its reads
        if (!gpu_dialect(d_)) throw InternalError("render C: a barrier needs a GPU target");
        return put(line_at(u), d_ == Dialect::Cuda ? "__syncthreads();\n" : "barrier(CLK_LOCAL_MEM_FENCE);\n");
      case Op::AFTER:
      case Op::GROUP:
      case Op::INDEX:
      case Op::NOOP:  // a store of what its target holds, folded away
        return;       // ordering only / rendered where loaded or stored
      case Op::STACK:
        return stack(u);
      case Op::WMMA:  // a warp's product on the tensor cores (CUDA's)
        e_.clear();
        cat(e_, cuda_mma_name(u->arg<Name>().s), '(', ex(u->src(0)), ", ", ex(u->src(1)), ", ", ex(u->src(2)), ')');
        return value(u, "mma");
      case Op::GEP:  // a lane of a vector value
        e_.clear();
        if (d_ == Dialect::OpenCL)
          cat(e_, ex(u->src(0)), ".s", "0123456789abcdef"[u->arg<int64_t>() & 15]);
        else
          cat(e_, ex(u->src(0)), '[', u->arg<int64_t>(), ']');
        return value(u, "lane");
      case Op::LOAD: {
        if (d.count > 1) return vector_load(u);
        const UOp* src = u->src(0);
        int n = counter_++;
        std::string& o = line_at(u);
        cat(o, "const ", scalar_type(d, d_), " val", n, " = ");
        if (src->op == Op::INDEX) {
          auto [gate, i] = gated(src);
          if (gate) cat(o, ex(gate), " ? ");
          if (const Narrow* nf = narrow_float(d)) o += nf->to_f32;
          place(o, src->src(0), i, d);
          if (narrow_float(d)) o += ')';
          if (gate) {
            o += " : ";
            zero(o, d);
          }
        } else {
          o += ex(buffer(src));
        }
        o += ";\n";
        return set_expr(u, "val", n);
      }
      case Op::STORE: {
        if (u->src(1)->dtype.count > 1) return vector_store(u);
        const UOp* dst = u->src(0);
        std::string_view v = ex(u->src(1));
        std::string& o = line_at(u);
        if (dst->op != Op::INDEX) return cat(o, ex(buffer(dst)), " = ", v, ";\n");
        auto [gate, i] = gated(dst);
        if (gate) cat(o, "if (", ex(gate), ") ");
        place(o, dst->src(0), i, dst->dtype);
        if (const Narrow* nf = narrow_float(dst->dtype)) return cat(o, " = ", nf->from_f32, v, ");\n");
        return cat(o, " = ", v, ";\n");
      }
      case Op::CAST: {
        std::string_view x = ex(u->src(0));
        e_.clear();
        if (d.count > 1 && d_ == Dialect::OpenCL) {  // C's rounding: toward zero to an integer
          cat(e_, "convert_", type_of(d), '(', x, ')');
          return value(u, "vec");
        }
        if (d.count > 1 && d_ == Dialect::Cuda) {
          cat(e_, "kiln_convert<", type_of(d), ">(", x, ')');
          return value(u, "vec");
        }
        if (d.count > 1) {
          cat(e_, "__builtin_convertvector(", x, ", ", type_of(d), ')');
          return value(u, "vec");
        }
        if (is_bool(d))
          cat(e_, x, " != 0");
        else if (const Narrow* nf = narrow_float(d))
          cat(e_, nf->round, "((", scalar_type(d, d_), ')', x, ')');
        else
          cat(e_, '(', scalar_type(d, d_), ')', x);
        return value(u, "cast");
      }
      case Op::BITCAST: {
        if (d.count > 1) {  // a vector cast between vectors of one size reinterprets the bits
          e_.clear();
          bits_as(e_, d_, type_of(d));
          cat(e_, ex(u->src(0)), ')');
          return value(u, "vec");
        }
        int n = counter_++;
        DType from = u->src(0)->dtype;
        std::string_view x = ex(u->src(0));
        std::string& o = line_at(u);
        if (d_ == Dialect::OpenCL) {  // as_<type> reinterprets the bits of a value of the same size
          std::string_view to = storage_type(d, d_);
          cat(o, "const ", to, " bits", n, " = as_", to, '(');
          if (const Narrow* nf = narrow_float(from))
            cat(o, nf->from_f32, x, ')');
          else
            cat(o, '(', storage_type(from, d_), ")(", x, ')');
          o += ");\n";
          if (const Narrow* nf = narrow_float(d)) return set_expr(u, nf->to_f32, "bits", n, ')');
          return set_expr(u, "bits", n);
        }
        cat(o, storage_type(d, d_), " bits", n, "; { const ", storage_type(from, d_), " from = ");
        if (const Narrow* nf = narrow_float(from))
          cat(o, nf->from_f32, x, ')');
        else
          o += x;
        cat(o, "; memcpy(&bits", n, ", &from, sizeof bits", n, "); }\n");
        if (const Narrow* nf = narrow_float(d)) return set_expr(u, nf->to_f32, "bits", n, ')');
        return set_expr(u, "bits", n);
      }
      default:
        break;
    }
    if (u->op == Op::WHERE && u->src(2)->is_invalid()) return;  // a gated index: rendered by its load or store
    if (!is_alu(u->op)) throw InternalError("render C: " + std::string(op_name(u->op)) + " cannot be rendered");
    std::string_view x[3];
    for (size_t k = 0; k < u->nsrc() && k < 3; ++k) x[k] = ex(u->src(k));
    e_.clear();
    const Narrow* nf = narrow_float(d);  // computed in float, rounded after every op
    if (nf) cat(e_, nf->round, '(');
    alu(e_, u, std::span<const std::string_view>(x, u->nsrc()), names(d), may_overflow(u));
    if (nf) e_ += ')';
    value(u, d.count == 1 ? "alu" : is_bool(d) ? "mask" : "vec");
  }

  // A float type computed in float and rounded after every op, stored as its 16 bits: bfloat16
  // everywhere, and float16 on GPUs (OpenCL's half arithmetic is an extension PoCL and others lack,
  // vload_half and vstore_half are core; CUDA's is cuda_fp16.h's). Null for the others.
  struct Narrow {
    std::string_view to_f32, from_f32, round;  // each spelled up to its '('
  };
  const Narrow* narrow_float(DType d) const {
    static const Narrow bf16{"kiln_bf16_to_f32(", "kiln_f32_to_bf16(", "kiln_bf16_round"};
    static const Narrow f16{"kiln_f16_to_f32(", "kiln_f32_to_f16(", "kiln_f16_round"};
    if (d == dtypes::bfloat16) return &bf16;
    if (d == dtypes::float16 && gpu_dialect(d_)) return &f16;
    return nullptr;
  }

  // CUDA's id on axis x, y or z: the block's offset and the thread's; a thread past the id's extent
  // (the grid is whole blocks) returns before anything else (ids come first: every other node
  // depends on one, or runs the same in every thread)
  void cuda_id(const UOp* u, std::string_view n) {
    const char axis = "xyz"[n.back() - '0'];
    std::string_view t = scalar_type(u->dtype, d_);
    std::string& o = line_at(u);
    if (n.starts_with("lidx"))
      cat(o, "const ", t, ' ', n, " = (", t, ")threadIdx.", axis, ";\n");
    else if (n.starts_with("gidx"))
      cat(o, "const ", t, ' ', n, " = (", t, ")blockIdx.", axis, ";\n");
    else
      cat(o, "const ", t, ' ', n, " = (", t, ")(blockIdx.", axis, " * blockDim.", axis, " + threadIdx.", axis,
          ");\n  if (", n, " >= ", ex(u->src(0)), ") return;\n");
    set_expr(u, n);
  }

  void zero(std::string& o, DType d) const {
    if (is_float(d)) return float_literal(o, 0.0, d, d_);
    int_literal(o, 0, d, d_);
  }

  struct Span {
    uint32_t at = 0, size = 0;
  };
  std::span<const UOp* const> lin_;
  std::string_view name_;
  std::span<const UOp* const> vars_;
  Dialect d_;
  std::string out_;
  std::string pool_;  // every node's expression, one after another (expr_ says where)
  std::string e_;     // the expression being built
  int counter_ = 0;
  bool uses_core_ = false;
  int vector_bytes_ = 0;                                   // the bytes of the kernel's vectors (0: none)
  std::set<std::pair<int, int>> shapes_;                   // (bits, lanes) of the vector types it uses
  std::map<uint32_t, std::array<std::string, 3>> vnames_;  // by dtype key: type, unsigned type, suffix
  // What the renderer knows of a node, by its position in the program (pos_ maps node ids there):
  // tables by node id would be as large as the Context, and clearing them would cost more than
  // most of the rendering.
  struct Node {
    int depth = 0, uses = 0;
    const UOp* user = nullptr;  // the last user in the program
    Span expr;                  // how users spell the value, in pool_
    bool rendered = false, written = false, needed = false;
    bool vector_loop = false;  // a RANGE whose body computes on vectors
  };
  Node& at(const UOp* u) { return nodes_[pos_[u->id]]; }
  const Node& at(const UOp* u) const { return nodes_[pos_[u->id]]; }
  std::vector<uint32_t> pos_;  // by node id: the position in lin_
  std::vector<Node> nodes_;    // by position
};

}  // namespace

std::string render_c(std::span<const UOp* const> linear, std::string_view name, std::span<const UOp* const> vars,
                     Dialect dialect) {
  return CRenderer(linear, name, vars, dialect).run();
}

}  // namespace kiln::render

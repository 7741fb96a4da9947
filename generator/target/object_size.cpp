#include "generator/target/object_size.h"

#include <llvm/Object/Archive.h>
#include <llvm/Object/Binary.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/Wasm.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

namespace kiln::target {

namespace {

template <class T> T take(llvm::Expected<T> e, const std::string& where) {
  if (!e) throw ObjectError(where + ": " + llvm::toString(e.takeError()));
  return std::move(*e);
}

struct Function {
  std::string name;
  uint64_t begin = 0, end = 0;
};

template <class ELFT>
void measure_elf(const llvm::object::ELFFile<ELFT>& ef, const std::string& where,
                 std::map<std::string, FunctionSize>& out) {
  using Shdr = typename ELFT::Shdr;
  using Sym = typename ELFT::Sym;
  auto sections = take(ef.sections(), where);
  size_t symtab = sections.size();
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].sh_type == llvm::ELF::SHT_SYMTAB) symtab = i;
  if (symtab == sections.size()) return;  // no symbols, so no functions to name
  auto syms = take(ef.symbols(&sections[symtab]), where);
  auto strtab = take(ef.getStringTableForSymtab(sections[symtab], sections), where);

  // sections a kernel may read data from: allocated, in the file, not code and not unwind tables
  std::vector<bool> data(sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    const Shdr& s = sections[i];
    std::string sname = take(ef.getSectionName(s), where).str();
    data[i] = (s.sh_flags & llvm::ELF::SHF_ALLOC) && !(s.sh_flags & llvm::ELF::SHF_EXECINSTR) &&
              s.sh_type == llvm::ELF::SHT_PROGBITS && !sname.starts_with(".eh_frame") && !sname.starts_with(".ARM.ex");
  }
  // each section's functions by address, and the boundaries of the data its symbols name
  std::vector<std::vector<Function>> functions(sections.size());
  std::vector<std::set<uint64_t>> bounds(sections.size());
  for (const Sym& s : syms) {
    size_t sec = s.st_shndx;
    if (sec == llvm::ELF::SHN_UNDEF || sec >= sections.size()) continue;
    if (data[sec]) bounds[sec].insert(s.st_value);
    if (s.getType() != llvm::ELF::STT_FUNC || s.st_size == 0) continue;
    std::string name = take(s.getName(strtab), where).str();
    if (!name.empty()) functions[sec].push_back({name, s.st_value, s.st_value + s.st_size});
  }
  for (auto& fs : functions)
    std::sort(fs.begin(), fs.end(), [](const Function& a, const Function& b) { return a.begin < b.begin; });

  struct Ref {
    const Function* fn;
    size_t sec;
    uint64_t at;
    const Sym* sym;
  };
  std::vector<Ref> refs;
  auto add_ref = [&](size_t code, uint64_t offset, uint32_t sym_index, int64_t addend, bool pc_relative) {
    const std::vector<Function>& fs = functions[code];
    auto after = [](uint64_t o, const Function& f) { return o < f.begin; };
    auto it = std::upper_bound(fs.begin(), fs.end(), offset, after);
    if (it == fs.begin() || offset >= (--it)->end) return;  // not in a function's code
    if (sym_index == 0 || sym_index >= syms.size()) return;
    const Sym& s = syms[sym_index];
    size_t sec = s.st_shndx;
    if (sec == llvm::ELF::SHN_UNDEF || sec >= sections.size() || !data[sec]) return;
    uint64_t at = s.st_value;
    if (s.getType() == llvm::ELF::STT_SECTION) {
      // no label: the addend says where; a PC-relative field ends its instruction (x86's loads)
      // (wrapping arithmetic: a corrupt file's values may be anything)
      uint64_t o = uint64_t(s.st_value) + uint64_t(addend) + (pc_relative ? 4 : 0), size = sections[sec].sh_size;
      at = int64_t(o) < 0 ? 0 : size == 0 ? 0 : std::min(o, size - 1);
    }
    bounds[sec].insert(at);
    refs.push_back({&*it, sec, at, &s});
  };
  bool x86_64 = ef.getHeader().e_machine == llvm::ELF::EM_X86_64;
  for (size_t i = 0; i < sections.size(); ++i) {
    const Shdr& r = sections[i];
    if (r.sh_type != llvm::ELF::SHT_RELA && r.sh_type != llvm::ELF::SHT_REL) continue;
    if (r.sh_link != symtab || r.sh_info >= sections.size()) continue;
    size_t code = r.sh_info;
    if (functions[code].empty()) continue;
    auto pc = [&](uint32_t type) {
      return x86_64 && (type == llvm::ELF::R_X86_64_PC32 || type == llvm::ELF::R_X86_64_PC64);
    };
    if (r.sh_type == llvm::ELF::SHT_RELA) {
      for (const auto& rel : take(ef.relas(r), where))
        add_ref(code, rel.r_offset, rel.getSymbol(ef.isMips64EL()), rel.r_addend, pc(rel.getType(ef.isMips64EL())));
    } else {
      for (const auto& rel : take(ef.rels(r), where))
        add_ref(code, rel.r_offset, rel.getSymbol(ef.isMips64EL()), 0, pc(rel.getType(ef.isMips64EL())));
    }
  }

  std::set<const Function*> first;  // the functions whose names no earlier file or symbol took
  for (size_t sec = 0; sec < sections.size(); ++sec)
    for (const Function& f : functions[sec])
      if (out.try_emplace(f.name, FunctionSize{f.end - f.begin, {}}).second) first.insert(&f);
  for (const Ref& r : refs) {
    const Shdr& s = sections[r.sec];
    uint64_t size = s.sh_size, begin = r.at, bytes = 0;
    if ((s.sh_flags & llvm::ELF::SHF_MERGE) && !(s.sh_flags & llvm::ELF::SHF_STRINGS) && s.sh_entsize > 0) {
      begin -= begin % s.sh_entsize;  // the entry it points into
      bytes = s.sh_entsize;
    } else if (r.sym->getType() != llvm::ELF::STT_SECTION && r.sym->st_size > 0) {
      bytes = r.sym->st_size;
    } else {
      auto next = bounds[r.sec].upper_bound(begin);
      bytes = (next == bounds[r.sec].end() ? size : *next) - begin;
    }
    bytes = std::min(bytes, begin < size ? size - begin : 0);
    if (!first.contains(r.fn)) continue;  // a name defined twice: the first one's
    out[r.fn->name].data.try_emplace(where + "#" + std::to_string(r.sec) + "#" + std::to_string(begin), bytes);
  }
}

void measure_binary(llvm::object::Binary& bin, const std::string& where, std::map<std::string, FunctionSize>& out) {
  using namespace llvm::object;
  if (auto* ar = llvm::dyn_cast<Archive>(&bin)) {
    llvm::Error err = llvm::Error::success();
    for (const Archive::Child& c : ar->children(err)) {
      std::string member = where + "(" + std::string(take(c.getName(), where)) + ")";
      std::unique_ptr<Binary> b = take(c.getAsBinary(), member);
      measure_binary(*b, member, out);
    }
    if (err) throw ObjectError(where + ": " + llvm::toString(std::move(err)));
    return;
  }
  if (auto* o = llvm::dyn_cast<ELF64LEObjectFile>(&bin)) return measure_elf(o->getELFFile(), where, out);
  if (auto* o = llvm::dyn_cast<ELF32LEObjectFile>(&bin)) return measure_elf(o->getELFFile(), where, out);
  if (auto* o = llvm::dyn_cast<ELF64BEObjectFile>(&bin)) return measure_elf(o->getELFFile(), where, out);
  if (auto* o = llvm::dyn_cast<ELF32BEObjectFile>(&bin)) return measure_elf(o->getELFFile(), where, out);
  // WebAssembly: a function's code is its body in the code section; its constants are
  // immediates there (v128.const), so it reads no data
  if (auto* o = llvm::dyn_cast<WasmObjectFile>(&bin)) {
    for (const llvm::wasm::WasmFunction& f : o->functions())
      if (!f.SymbolName.empty()) out.emplace(f.SymbolName.str(), FunctionSize{f.Size, {}});
    return;
  }
  throw ObjectError(where + ": not an ELF or WebAssembly object, or an archive of them");
}

}  // namespace

std::map<std::string, FunctionSize> measure_functions(const std::string& bytes, const std::string& name) {
  std::map<std::string, FunctionSize> out;
  llvm::MemoryBufferRef ref(llvm::StringRef(bytes.data(), bytes.size()), name);
  std::unique_ptr<llvm::object::Binary> bin = take(llvm::object::createBinary(ref), name);
  measure_binary(*bin, name, out);
  return out;
}

uint64_t data_bytes(const std::map<std::string, uint64_t>& data) {
  uint64_t n = 0;
  for (const auto& [where, bytes] : data) n += bytes;
  return n;
}

}  // namespace kiln::target

#include "generator/target/llvm_compile.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/OptimizationLevel.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "generator/ir/uop.h"

// each backend's initializers (LLVM's C API, llvm-c/Target.h spells them with macros)
#define KILN_LLVM_BACKEND(A)                       \
  extern "C" void LLVMInitialize##A##TargetInfo(); \
  extern "C" void LLVMInitialize##A##Target();     \
  extern "C" void LLVMInitialize##A##TargetMC();   \
  extern "C" void LLVMInitialize##A##AsmPrinter();
KILN_LLVM_BACKEND(X86)
KILN_LLVM_BACKEND(AArch64)
KILN_LLVM_BACKEND(ARM)
KILN_LLVM_BACKEND(RISCV)
KILN_LLVM_BACKEND(WebAssembly)
#undef KILN_LLVM_BACKEND

namespace kiln::target {

namespace {

// The backends a triple's architecture needs, initialized once each (the first target to use one
// pays for it; the others are never touched).
struct Backend {
  std::initializer_list<llvm::Triple::ArchType> arches;
  void (*info)(), (*target)(), (*mc)(), (*printer)();
  std::once_flag once;
};
#define KILN_LLVM_INIT(A)                                                                   \
  &LLVMInitialize##A##TargetInfo, &LLVMInitialize##A##Target, &LLVMInitialize##A##TargetMC, \
      &LLVMInitialize##A##AsmPrinter
Backend backends[] = {
    {{llvm::Triple::x86_64, llvm::Triple::x86}, KILN_LLVM_INIT(X86), {}},
    {{llvm::Triple::aarch64}, KILN_LLVM_INIT(AArch64), {}},
    {{llvm::Triple::arm, llvm::Triple::thumb}, KILN_LLVM_INIT(ARM), {}},
    {{llvm::Triple::riscv32, llvm::Triple::riscv64}, KILN_LLVM_INIT(RISCV), {}},
    {{llvm::Triple::wasm32, llvm::Triple::wasm64}, KILN_LLVM_INIT(WebAssembly), {}},
};
#undef KILN_LLVM_INIT

const llvm::Target& backend_for(const Target& t, const llvm::Triple& triple) {
  for (Backend& b : backends)
    for (llvm::Triple::ArchType a : b.arches)
      if (a == triple.getArch()) {
        std::call_once(b.once, [&] {
          b.info();
          b.target();
          b.mc();
          b.printer();
        });
        std::string err;
        if (const llvm::Target* lt = llvm::TargetRegistry::lookupTarget(triple.str(), err)) return *lt;
        throw InternalError("LLVM has no backend for target " + t.name + " (" + t.triple + "): " + err);
      }
  throw InternalError("kiln initializes no LLVM backend for target " + t.name + " (" + t.triple + ")");
}

std::unique_ptr<llvm::TargetMachine> target_machine(const Target& t) {
  llvm::Triple triple(t.triple);
  // the table spells triples as LLVM normalizes them: a short form ("thumbv7em-none-eabihf") would
  // read "none" as the vendor and lose the environment, and with it the hard-float ABI
  if (llvm::Triple::normalize(t.triple) != t.triple)
    throw InternalError("target " + t.name + ": triple " + t.triple + " is not in LLVM's normal form (" +
                        llvm::Triple::normalize(t.triple) + ")");
  const llvm::Target& lt = backend_for(t, triple);
  llvm::TargetOptions opts;        // IEEE float math: no fast-math, no unsafe FP; FMA contraction is in the IR
  opts.MCOptions.ABIName = t.abi;  // the calling convention the target's C compiler uses (RISC-V: lp64d)
  // position-independent, as the C compilers' defaults for shared and PIE links; WebAssembly's
  // static link takes objects without the PIC relocations (which need a dynamic-linking setup)
  const llvm::Reloc::Model reloc = triple.isWasm() ? llvm::Reloc::Static : llvm::Reloc::PIC_;
  std::unique_ptr<llvm::TargetMachine> tm(lt.createTargetMachine(triple.str(), t.cpu, t.features, opts, reloc,
                                                                 std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw InternalError("LLVM cannot make a target machine for " + t.name + " (" + t.triple + ")");
  return tm;
}

// the kernel an IR line belongs to: the last `define` at or before it
std::string kernel_at(const std::string& ir, int line) {
  std::string name = "?";
  size_t pos = 0;
  for (int l = 1; l <= line && pos < ir.size(); ++l) {
    size_t end = ir.find('\n', pos);
    if (end == std::string::npos) end = ir.size();
    std::string_view s(ir.data() + pos, end - pos);
    if (s.starts_with("define ")) {
      size_t at = s.find('@'), paren = s.find('(', at);
      if (at != std::string_view::npos && paren != std::string_view::npos) name = s.substr(at + 1, paren - at - 1);
    }
    pos = end + 1;
  }
  return name;
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

}  // namespace

std::string compile_module(const Target& t, const std::string& module_ir, Artifact what) {
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(t);
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(module_ir, diag, ctx);
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("kiln", os, false);
    throw InternalError("LLVM IR of kernel " + kernel_at(module_ir, diag.getLineNo()) + " does not parse: " + msg +
                        "\n" + module_ir);
  }
  for (llvm::Function& f : *m) {
    if (f.isDeclaration()) continue;
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyFunction(f, &os))
      throw InternalError("LLVM IR of kernel " + f.getName().str() + " does not verify: " + msg + "\n" + module_ir);
  }
  {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*m, &os)) throw InternalError("LLVM IR module does not verify: " + msg + "\n" + module_ir);
  }
  m->setTargetTriple(tm->getTargetTriple().str());
  m->setDataLayout(tm->createDataLayout());
  optimize(*m, *tm);
  llvm::SmallVector<char, 0> bytes;
  llvm::raw_svector_ostream os(bytes);
  llvm::legacy::PassManager codegen;
  auto kind = what == Artifact::Object ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
  if (tm->addPassesToEmitFile(codegen, os, nullptr, kind))
    throw InternalError("LLVM cannot emit " + std::string(what == Artifact::Object ? "an object" : "assembly") +
                        " for target " + t.name);
  codegen.run(*m);
  return std::string(bytes.data(), bytes.size());
}

}  // namespace kiln::target

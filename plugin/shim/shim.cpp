// The few LLVM C++ APIs that the LLVM-C interface lacks. Kept tiny and version-neutral
// (LLVM 15-23); everything else the plugin does goes through LLVM-C.
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm-c/Core.h"
#include "llvm/Config/llvm-config.h"

using namespace llvm;

extern "C" {

// Reports an error through the context's diagnostic handler: clang prints "error: <msg>" and the
// compilation fails, instead of the plugin aborting the process.
void sqtt_shim_emit_error(LLVMModuleRef M, const char *Msg) {
  unwrap(M)->getContext().emitError(Twine(Msg));
}

// Adds a global to @llvm.used so that no optimisation or link step drops it.
void sqtt_shim_append_to_used(LLVMModuleRef M, LLVMValueRef GV) {
  appendToUsed(*unwrap(M), {cast<GlobalValue>(unwrap(GV))});
}

// `fence syncscope("<scope>") acq_rel` before the instruction the builder points at.
LLVMValueRef sqtt_shim_build_scoped_fence(LLVMBuilderRef B, const char *Scope) {
  IRBuilder<> *Builder = unwrap(B);
  LLVMContext &Ctx = Builder->getContext();
  SyncScope::ID SSID = Ctx.getOrInsertSyncScopeID(Scope);
  return wrap(Builder->CreateFence(AtomicOrdering::AcquireRelease, SSID));
}

// Tags an instruction `!mmra !{!"<Key>", !"<Value>"}` (memory model relaxation annotation).
// MMRA exists from LLVM 19; on older LLVMs nothing is attached and 0 is returned.
unsigned sqtt_shim_set_mmra(LLVMValueRef Inst, const char *Key, const char *Value) {
#if LLVM_VERSION_MAJOR >= 19
  Instruction *I = cast<Instruction>(unwrap(Inst));
  LLVMContext &Ctx = I->getContext();
  Metadata *Tag[] = {MDString::get(Ctx, Key), MDString::get(Ctx, Value)};
  I->setMetadata(LLVMContext::MD_mmra, MDNode::get(Ctx, Tag));
  return 1;
#else
  (void)Inst;
  (void)Key;
  (void)Value;
  return 0;
#endif
}

// Splits a block before an instruction; the new block (returned) starts at the instruction.
LLVMBasicBlockRef sqtt_shim_split_block(LLVMValueRef Inst, const char *Name) {
  Instruction *I = cast<Instruction>(unwrap(Inst));
  return wrap(I->getParent()->splitBasicBlock(I, Name));
}

// The first instruction of a block where non-PHI, non-alloca code may be inserted.
LLVMValueRef sqtt_shim_first_insertion_point(LLVMBasicBlockRef BB) {
  BasicBlock *Block = unwrap(BB);
  auto It = Block->getFirstInsertionPt();
  while (It != Block->end() && isa<AllocaInst>(*It))
    ++It;
  return It == Block->end() ? nullptr : wrap(&*It);
}

// The sync scope name of a fence (empty for the system scope).
unsigned sqtt_shim_fence_is_workgroup_or_wider(LLVMValueRef Inst) {
  auto *F = dyn_cast<FenceInst>(unwrap(Inst));
  if (!F)
    return 0;
  SmallVector<StringRef, 8> Names;
  F->getContext().getSyncScopeNames(Names);
  StringRef Name = F->getSyncScopeID() < Names.size() ? Names[F->getSyncScopeID()] : "";
  return Name != "singlethread" && Name != "wavefront" && Name != "wavefront-one-as" &&
                 Name != "singlethread-one-as"
             ? 1
             : 0;
}

} // extern "C"

extern "C" const char *sqtt_shim_inline_asm_string(LLVMValueRef Callee, size_t *Len) {
  auto *IA = dyn_cast<InlineAsm>(unwrap(Callee));
  if (!IA) {
    *Len = 0;
    return nullptr;
  }
  // A std::string before LLVM 21, a StringRef from 21: both convert to StringRef.
  StringRef S = IA->getAsmString();
  *Len = S.size();
  return S.data();
}

#include "llvm/Transforms/Utils/Cloning.h"

// Inlines one call site (the named-marker wrappers, forced before the early phase resolves
// their names). Returns 1 on success.
extern "C" unsigned sqtt_shim_inline_call(LLVMValueRef Call) {
  auto *CB = dyn_cast<CallBase>(unwrap(Call));
  if (!CB || !CB->getCalledFunction() || CB->getCalledFunction()->isDeclaration())
    return 0;
  InlineFunctionInfo IFI;
  return InlineFunction(*CB, IFI).isSuccess() ? 1 : 0;
}

extern "C" void sqtt_shim_erase_named_md(LLVMModuleRef M, LLVMNamedMDNodeRef N) {
  unwrap(M)->eraseNamedMetadata(reinterpret_cast<NamedMDNode *>(N));
}

#include "llvm/IR/Metadata.h"

// Marks a loop latch branch `!llvm.loop !{!self, !{!"llvm.loop.unroll.disable"}}`.
extern "C" void sqtt_shim_disable_unroll(LLVMValueRef Branch) {
  auto *I = cast<Instruction>(unwrap(Branch));
  LLVMContext &Ctx = I->getContext();
  MDNode *Disable = MDNode::get(Ctx, {MDString::get(Ctx, "llvm.loop.unroll.disable")});
  MDNode *Loop = MDNode::getDistinct(Ctx, {nullptr, Disable});
  Loop->replaceOperandWith(0, Loop);
  I->setMetadata(LLVMContext::MD_loop, Loop);
}

// ---- Plugin options: -mllvm -sqtt-marker-<setting>=VALUE ---------------------------------------
// One cl::opt per instrumentation setting, named by its row (sqtt_config::SETTINGS). They are
// registered when the library is loaded, so they are known to a -mllvm parse that comes after
// the load: clang 22 loads -fpass-plugin libraries first; older clangs need the library loaded
// as a clang plugin as well (-fplugin=, which cc1 loads before it reads -mllvm).
#include "llvm/Support/CommandLine.h"
#include <memory>
#include <string>
#include <vector>

extern "C" {
size_t sqtt_plugin_option_count(void);
const char *sqtt_plugin_option_name(size_t I, size_t *Len);
const char *sqtt_plugin_option_var(size_t I, size_t *Len);
const char *sqtt_plugin_option_value_desc(size_t I, size_t *Len);
}

namespace {
struct PluginOptions {
  std::vector<std::unique_ptr<cl::opt<std::string>>> Opts;
  std::vector<std::string> Descs;
  PluginOptions() {
    size_t N = sqtt_plugin_option_count();
    Descs.reserve(N); // cl::desc keeps a StringRef into these
    for (size_t I = 0; I < N; ++I) {
      size_t NameLen = 0, VarLen = 0, ValueLen = 0;
      const char *Name = sqtt_plugin_option_name(I, &NameLen);
      const char *Var = sqtt_plugin_option_var(I, &VarLen);
      const char *Value = sqtt_plugin_option_value_desc(I, &ValueLen);
      Descs.push_back("sqtt plugin setting, over " + std::string(Var, VarLen));
      Opts.push_back(std::make_unique<cl::opt<std::string>>(
          StringRef(Name, NameLen), cl::desc(Descs.back()),
          cl::value_desc(StringRef(Value, ValueLen)), cl::init(""), cl::Hidden));
    }
  }
};
PluginOptions &pluginOptions() {
  static PluginOptions Options;
  return Options;
}
// Registers the options at load time.
[[maybe_unused]] const bool OptionsRegistered = (pluginOptions(), true);
} // namespace

extern "C" int sqtt_shim_option_value(size_t I, const char **Value, size_t *Len) {
  PluginOptions &O = pluginOptions();
  if (I >= O.Opts.size() || O.Opts[I]->getNumOccurrences() == 0)
    return 0;
  const std::string &V = O.Opts[I]->getValue();
  *Value = V.data();
  *Len = V.size();
  return 1;
}

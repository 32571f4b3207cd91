// The few LLVM C++ APIs that the LLVM-C interface lacks. Kept tiny and version-neutral
// (LLVM 15-23); everything else the plugin does goes through LLVM-C.
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm-c/Core.h"

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

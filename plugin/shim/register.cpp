// The plugin's own pass registration for LLVM 19 and later (llvm-plugin 0.6 stops at 18).
// Built only for those majors. The policy (which phase at which hook, which pipeline names) and
// the pass itself are Rust (src/registration/own.rs); this file only speaks the C++ API.
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h" // moved there in 22, with plugin API 2
#else
#include "llvm/Passes/PassPlugin.h"
#endif
#include "llvm-c/Core.h"

using namespace llvm;

// The Rust struct in own.rs must have the same layout.
static_assert(sizeof(PassPluginLibraryInfo) == SQTT_PLUGIN_INFO_SIZE,
              "PassPluginLibraryInfo differs from src/registration/own.rs");

extern "C" {
int sqtt_plugin_phase_at(unsigned Point, bool O0);
int sqtt_plugin_phase_named(const char *Name, size_t Len);
bool sqtt_plugin_run_phase(LLVMModuleRef M, unsigned Phase);
bool sqtt_plugin_prune(LLVMValueRef F);
}

namespace {

struct SqttModulePass : PassInfoMixin<SqttModulePass> {
  unsigned Phase;
  explicit SqttModulePass(unsigned P) : Phase(P) {}
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    return sqtt_plugin_run_phase(wrap(&M), Phase) ? PreservedAnalyses::none()
                                                  : PreservedAnalyses::all();
  }
  // Never skipped (optnone at -O0, opt-bisect): markers are part of the program's meaning.
  static bool isRequired() { return true; }
  // -print-pipeline-passes shows the name that parses back to the same phase (phase 0 is the
  // early one, see own.rs).
  void printPipeline(raw_ostream &OS, function_ref<StringRef(StringRef)>) {
    OS << (Phase == 0 ? "sqtt-early" : "sqtt");
  }
};

// Removes early markers whose fate is settled (src/prune.rs), after each instruction combiner.
struct SqttPrunePass : PassInfoMixin<SqttPrunePass> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &) {
    if (!sqtt_plugin_prune(wrap(&F)))
      return PreservedAnalyses::all();
    // Only calls are erased: the control flow stands.
    PreservedAnalyses PA;
    PA.preserveSet<CFGAnalyses>();
    return PA;
  }
  void printPipeline(raw_ostream &OS, function_ref<StringRef(StringRef)>) { OS << "sqtt-prune"; }
};

void addAt(unsigned Point, ModulePassManager &MPM, OptimizationLevel Level) {
  int Phase = sqtt_plugin_phase_at(Point, Level == OptimizationLevel::O0);
  if (Phase >= 0)
    MPM.addPass(SqttModulePass(unsigned(Phase)));
}

} // namespace

extern "C" unsigned sqtt_shim_plugin_api_version() { return LLVM_PLUGIN_API_VERSION; }

extern "C" void sqtt_shim_register_pass_builder_callbacks(void *Opaque) {
  PassBuilder &PB = *static_cast<PassBuilder *>(Opaque);
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        int Phase = sqtt_plugin_phase_named(Name.data(), Name.size());
        if (Phase < 0)
          return false;
        MPM.addPass(SqttModulePass(unsigned(Phase)));
        return true;
      });
  PB.registerPipelineParsingCallback(
      [](StringRef Name, FunctionPassManager &FPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name != "sqtt-prune")
          return false;
        FPM.addPass(SqttPrunePass());
        return true;
      });
  // From LLVM 20 these two callbacks also get a ThinOrFullLTOPhase: the trailing `auto...`
  // takes it, or nothing on 19.
  PB.registerPipelineEarlySimplificationEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel Level, auto...) { addAt(0, MPM, Level); });
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel Level, auto...) { addAt(1, MPM, Level); });
  PB.registerPeepholeEPCallback(
      [](FunctionPassManager &FPM, OptimizationLevel) { FPM.addPass(SqttPrunePass()); });
  PB.registerFullLinkTimeOptimizationLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel Level) { addAt(2, MPM, Level); });
}

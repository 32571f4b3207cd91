//! Registration through the `llvm-plugin` crate (LLVM 15-18).

use llvm_plugin::inkwell::module::Module as InkwellModule;
use llvm_plugin::inkwell::values::{AsValueRef, FunctionValue};
use llvm_plugin::{
    FunctionAnalysisManager, LlvmFunctionPass, LlvmModulePass, ModuleAnalysisManager,
    OptimizationLevel, PassBuilder, PipelineParsing, PreservedAnalyses,
};

use crate::pipeline::{phase_at, phase_named, run_phase, run_prune, ExtensionPoint, Phase};

#[llvm_plugin::plugin(name = "sqtt", version = "0.1")]
fn plugin_registrar(builder: &mut PassBuilder) {
    builder.add_module_pipeline_parsing_callback(|name, manager| match phase_named(name) {
        Some(phase) => {
            manager.add_pass(SqttPass(phase));
            PipelineParsing::Parsed
        }
        None => PipelineParsing::NotParsed,
    });
    builder.add_pipeline_early_simplification_ep_callback(|manager, level| {
        let o0 = matches!(level, OptimizationLevel::O0);
        if let Some(phase) = phase_at(ExtensionPoint::EarlySimplification, o0) {
            manager.add_pass(SqttPass(phase));
        }
    });
    builder.add_optimizer_last_ep_callback(|manager, level| {
        let o0 = matches!(level, OptimizationLevel::O0);
        if let Some(phase) = phase_at(ExtensionPoint::OptimizerLast, o0) {
            manager.add_pass(SqttPass(phase));
        }
    });
    builder.add_peephole_ep_callback(|manager, _level| manager.add_pass(SqttPrunePass));
    builder.add_full_lto_last_ep_callback(|manager, level| {
        let o0 = matches!(level, OptimizationLevel::O0);
        if let Some(phase) = phase_at(ExtensionPoint::FullLtoLast, o0) {
            manager.add_pass(SqttPass(phase));
        }
    });
}

struct SqttPass(Phase);

impl LlvmModulePass for SqttPass {
    fn run_pass(
        &self,
        module: &mut InkwellModule,
        _manager: &ModuleAnalysisManager,
    ) -> PreservedAnalyses {
        // SAFETY: the module outlives this call, and no handle escapes it.
        if unsafe { run_phase(module.as_mut_ptr(), self.0) } {
            PreservedAnalyses::None
        } else {
            PreservedAnalyses::All
        }
    }
}

/// [`crate::prune`] after each instruction combiner.
struct SqttPrunePass;

impl LlvmFunctionPass for SqttPrunePass {
    fn run_pass(
        &self,
        function: &mut FunctionValue,
        _manager: &FunctionAnalysisManager,
    ) -> PreservedAnalyses {
        // SAFETY: the function outlives this call, and no handle escapes it.
        if unsafe { run_prune(function.as_value_ref()) } {
            PreservedAnalyses::None
        } else {
            PreservedAnalyses::All
        }
    }
}

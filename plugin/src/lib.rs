//! sqtt pass plugin: turns SQTT markers into `s_ttracedata` and records `.sqtt_funcmap`.
//!
//! Loaded into clang with `-fpass-plugin=libsqtt_plugin.so` (sqtt-hipcc does that), or into
//! `opt -load-pass-plugin=... -passes=sqtt`. Settings come from the `SQTT_*` variables through
//! `sqtt-config`, the same parser the driver uses. Non-AMDGPU modules are left untouched.

mod compat;
mod emit;
mod funcmap_emit;
mod ledger;
mod llvm;
mod named;
mod numeric;
mod scope;
mod target;

use llvm_plugin::inkwell::module::Module as InkwellModule;
use llvm_plugin::{
    LlvmModulePass, ModuleAnalysisManager, PassBuilder, PipelineParsing, PreservedAnalyses,
};
use sqtt_config::Settings;

use crate::emit::Emitter;
use crate::ledger::Ledger;
use crate::llvm::Module;
use crate::scope::ScopeChecks;

/// Text the driver reads (without loading the plugin) to learn which LLVM it was built for.
const PLUGIN_INFO_TEXT: &str = concat!(
    "sqtt-plugin;version=",
    env!("CARGO_PKG_VERSION"),
    ";llvm_major=",
    env!("SQTT_PLUGIN_LLVM_MAJOR"),
    "\0"
);

const fn info_bytes<const N: usize>(s: &str) -> [u8; N] {
    let b = s.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = b[i];
        i += 1;
    }
    out
}

#[used]
#[link_section = ".sqtt_plugin_info"]
static PLUGIN_INFO: [u8; PLUGIN_INFO_TEXT.len()] = info_bytes(PLUGIN_INFO_TEXT);

#[llvm_plugin::plugin(name = "sqtt", version = "0.1")]
fn plugin_registrar(builder: &mut PassBuilder) {
    builder.add_module_pipeline_parsing_callback(|name, manager| match name {
        "sqtt" => {
            manager.add_pass(SqttPass);
            PipelineParsing::Parsed
        }
        _ => PipelineParsing::NotParsed,
    });
    // OptimizerLast fires at every optimisation level (after the always-inliner at -O0), once
    // per device module, after all IR optimisation: markers placed here move only in codegen.
    builder.add_optimizer_last_ep_callback(|manager, _level| {
        manager.add_pass(SqttPass);
    });
}

/// The module pass (module passes run even for `optnone` functions at -O0).
struct SqttPass;

impl LlvmModulePass for SqttPass {
    fn run_pass(
        &self,
        module: &mut InkwellModule,
        _manager: &ModuleAnalysisManager,
    ) -> PreservedAnalyses {
        // SAFETY: the module outlives this call, and no handle escapes it.
        let m = unsafe { Module::from_raw(module.as_mut_ptr()) };
        if !m.is_amdgpu() || funcmap_emit::already_instrumented(m) {
            return PreservedAnalyses::All;
        }
        let settings = match Settings::from_process_env() {
            Ok(s) => s,
            Err(e) => {
                m.emit_error(&format!("sqtt: {e}"));
                return PreservedAnalyses::All;
            }
        };
        if let Err(msg) = instrument(m, &settings) {
            m.emit_error(&msg);
        }
        PreservedAnalyses::None
    }
}

fn instrument(m: Module, settings: &Settings) -> Result<(), String> {
    let emitter = Emitter::new(m, settings);
    let mut ledger = Ledger::new();
    let mut scopes = ScopeChecks::new(settings.scope);
    numeric::wrap_numeric_markers(m, &emitter, &mut scopes)?;
    named::resolve(m, &emitter, &mut ledger, &mut scopes)?;
    funcmap_emit::emit(m, &ledger);
    Ok(())
}

//! sqtt pass plugin: turns SQTT markers into `s_ttracedata` and records `.sqtt_funcmap`.
//!
//! Loaded into clang with `-fpass-plugin=libsqtt_plugin.so` (sqtt-hipcc does that), or into
//! `opt -load-pass-plugin=... -passes=sqtt`. Settings come from the `SQTT_*` variables through
//! `sqtt-config`, the same parser the driver uses. Non-AMDGPU modules are left untouched.

mod address;
mod barriers;
mod compat;
mod early;
mod emit;
mod funcmap_emit;
mod late;
mod ledger;
mod llvm;
mod memory;
mod named;
mod numeric;
mod scope;
mod size;
mod target;

use llvm_plugin::inkwell::module::Module as InkwellModule;
use llvm_plugin::{
    LlvmModulePass, ModuleAnalysisManager, OptimizationLevel, PassBuilder, PipelineParsing,
    PreservedAnalyses,
};
use sqtt_config::Settings;

use crate::llvm::{Module, Value};

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
            manager.add_pass(SqttPass(Phase::Late));
            PipelineParsing::Parsed
        }
        "sqtt-early" => {
            manager.add_pass(SqttPass(Phase::Early));
            PipelineParsing::Parsed
        }
        _ => PipelineParsing::NotParsed,
    });
    // Early: before the inliner, so functions are measured and marked before they are inlined
    // away. Skipped at -O0, where nothing is inlined but always-inline wrappers.
    builder.add_pipeline_early_simplification_ep_callback(|manager, level| {
        if !matches!(level, OptimizationLevel::O0) {
            manager.add_pass(SqttPass(Phase::Early));
        }
    });
    // Late: OptimizerLast fires at every level (after the always-inliner at -O0), once per
    // device module, after all IR optimisation: markers placed here move only in codegen.
    builder.add_optimizer_last_ep_callback(|manager, _level| {
        manager.add_pass(SqttPass(Phase::Late));
    });
    // -fgpu-rdc: the device link (lld, loaded with `--load-pass-plugin`) merges every
    // translation unit's module; the late phase runs there, once, so IDs cannot collide.
    builder.add_full_lto_last_ep_callback(|manager, _level| {
        manager.add_pass(SqttPass(Phase::LinkLate));
    });
}

/// Whether the driver asked to leave IDs and the funcmap to the device link.
fn deferred_to_link() -> bool {
    std::env::var(sqtt_config::var::DEFER_TO_LINK).is_ok_and(|v| v == "1")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Early,
    /// OptimizerLast of a compile step (or `opt -passes=sqtt`).
    Late,
    /// The full-LTO device link of `-fgpu-rdc`.
    LinkLate,
}

/// The module pass (module passes run even for `optnone` functions at -O0).
struct SqttPass(Phase);

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
        if self.0 == Phase::Early && ledger::has_early_ledger(m) {
            return PreservedAnalyses::All;
        }
        let mut phase = self.0;
        if phase == Phase::Late && deferred_to_link() {
            // Leave the bare markers and the ledger in the bitcode for the device link; at -O0
            // the early step has not run yet.
            if ledger::has_early_ledger(m) {
                return PreservedAnalyses::All;
            }
            phase = Phase::Early;
        }
        let settings = match Settings::from_process_env() {
            Ok(s) => s,
            Err(e) => {
                // Reported once, by the late phase (the early one does not run at -O0).
                if self.0 != Phase::Early {
                    m.emit_error(&format!("sqtt: {e}"));
                }
                return PreservedAnalyses::All;
            }
        };
        named::clear_target_cache();
        match phase {
            Phase::Early => early::run(m, &settings),
            Phase::Late | Phase::LinkLate => {
                if let Err(msg) = late::run(m, &settings) {
                    m.emit_error(&msg);
                }
            }
        }
        PreservedAnalyses::None
    }
}

/// The metadata kinds of the pass's tags in a context, looked up once per context.
pub(crate) fn tag_kinds(m: Module) -> (u32, u32) {
    thread_local! {
        static KINDS: std::cell::Cell<(usize, u32, u32)> = const { std::cell::Cell::new((0, 0, 0)) };
    }
    KINDS.with(|k| {
        let (ctx, tag, marker) = k.get();
        if ctx == m.context_key() {
            return (tag, marker);
        }
        let v = (m.md_kind(ledger::MARKER_TAG_MD), m.md_kind(emit::MARKER_MD));
        k.set((m.context_key(), v.0, v.1));
        v
    })
}

/// Whether an instruction is one the pass made (a marker, its boundary, a bare early marker).
pub(crate) fn is_sqtt_instruction(m: Module, i: Value) -> bool {
    let (tag, marker) = tag_kinds(m);
    i.metadata(tag).is_some() || i.metadata(marker).is_some()
}

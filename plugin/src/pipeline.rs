//! The pipeline policy: which phase runs at which pass-builder hook ([`phase_at`]) or pass name
//! ([`phase_named`]), and running one ([`run_phase`], [`run_prune`]) with the settings read by
//! the wrapper's rules. The registration layer (`registration/`) calls only this.

use sqtt_config::Settings;

use crate::compat::sys::prelude::{LLVMModuleRef, LLVMValueRef};
use crate::llvm::{Module, Value};
use crate::{early, funcmap_emit, late, ledger, options, place, prune};

/// The pass builder hooks the plugin uses. Whichever registration layer is compiled in asks
/// [`phase_at`] what to add at each, so the pipeline policy lives here once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ExtensionPoint {
    /// Before the inliner, so functions are measured and marked before they are inlined away.
    EarlySimplification,
    /// After all IR optimisation, at every level (after the always-inliner at -O0), once per
    /// device module: markers placed here move only in codegen.
    OptimizerLast,
    /// `-fgpu-rdc`: the device link (lld, loaded with `--load-pass-plugin`) merges every
    /// translation unit's module; the late phase runs there, once, so IDs cannot collide.
    FullLtoLast,
}

/// The phase to add at an extension point, if any. The early phase is skipped at -O0, where
/// nothing is inlined but always-inline wrappers.
pub(crate) fn phase_at(point: ExtensionPoint, o0: bool) -> Option<Phase> {
    match point {
        ExtensionPoint::EarlySimplification => (!o0).then_some(Phase::Early),
        ExtensionPoint::OptimizerLast => Some(Phase::Late),
        ExtensionPoint::FullLtoLast => Some(Phase::LinkLate),
    }
}

/// The phase a pass name of a textual pipeline (`opt -passes=...`) stands for.
pub(crate) fn phase_named(name: &str) -> Option<Phase> {
    match name {
        "sqtt" => Some(Phase::Late),
        "sqtt-early" => Some(Phase::Early),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub(crate) enum Phase {
    Early = 0,
    /// OptimizerLast of a compile step (or `opt -passes=sqtt`).
    Late = 1,
    /// The full-LTO device link of `-fgpu-rdc`.
    LinkLate = 2,
}

/// Runs one phase on a module (a module pass: module passes run even for `optnone` functions
/// at -O0). Returns whether the module changed.
///
/// # Safety
/// `raw` must be a live module for the whole call; no handle to it escapes the call.
pub(crate) unsafe fn run_phase(raw: LLVMModuleRef, requested: Phase) -> bool {
    let m = Module::from_raw(raw);
    if !m.is_amdgpu() || funcmap_emit::already_instrumented(m) {
        return false;
    }
    if requested == Phase::Early && ledger::has_early_ledger(m) {
        return false;
    }
    let mut phase = requested;
    if phase == Phase::Late && options::deferred_to_link() {
        // Leave the bare markers and the ledger in the bitcode for the device link; at -O0
        // the early step has not run yet.
        if ledger::has_early_ledger(m) {
            return false;
        }
        phase = Phase::Early;
    }
    let settings = match plugin_settings() {
        Ok(s) => s,
        Err(e) => {
            // Reported once, by the late phase (the early one does not run at -O0).
            if requested != Phase::Early {
                m.emit_error(&format!("sqtt: {e}"));
            }
            return false;
        }
    };
    place::clear_target_cache();
    match phase {
        Phase::Early => early::run(m, &settings),
        Phase::Late | Phase::LinkLate => {
            if let Err(msg) = late::run(m, &settings) {
                m.emit_error(&msg);
            }
        }
    }
    true
}

/// Runs [`prune`] on a function of a module the early phase has instrumented (the ledger is
/// there until the late phase). Returns whether the function changed.
///
/// # Safety
/// `raw` must be a live function (a definition) for the whole call; no handle escapes the call.
pub(crate) unsafe fn run_prune(raw: LLVMValueRef) -> bool {
    let f = Value::from_raw(raw);
    if !f.parent_module().has_named_md(ledger::EARLY_LEDGER_MD) {
        return false;
    }
    prune::run(f)
}

/// The settings, by the wrapper's rules however the plugin was loaded: under sqtt-hipcc
/// (`SQTT_HIPCC_DEPTH` set) the wrapper has exported the merged settings; otherwise (a plain
/// `clang++ -fpass-plugin=`, `opt`) the sqtt.toml named by `SQTT_CONFIG` or found from the
/// working directory upward, then the `SQTT_*` variables over it. Plugin options given on the
/// command line override both.
fn plugin_settings() -> Result<Settings, sqtt_config::ConfigError> {
    let get = |k: &str| std::env::var(k).ok();
    let located = if get(sqtt_config::var::HIPCC_DEPTH).is_some_and(|v| !v.is_empty()) {
        sqtt_config::Located::default()
    } else {
        let cwd = std::env::current_dir().unwrap_or_default();
        sqtt_config::locate_config(None, &cwd, &get)
    };
    // A sqtt.toml found but not used (another user's) is said once per compiler process (the
    // settings are read by each phase).
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        for ignored in &located.ignored {
            eprintln!("sqtt plugin: warning: {ignored}");
        }
    });
    Settings::located(&located, get, options::given)
}

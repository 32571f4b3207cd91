//! sqtt pass plugin: turns SQTT markers into `s_ttracedata` and records `.sqtt_funcmap`.
//!
//! Loaded into clang with `-fpass-plugin=libsqtt_plugin.so` (sqtt-hipcc does that), or into
//! `opt -load-pass-plugin=... -passes=sqtt`. Settings come from the `SQTT_*` variables through
//! `sqtt-config`, the same parser the driver uses, with the plugin options
//! (`-mllvm -sqtt-marker-<setting>=VALUE`, [`options`]) over them. Non-AMDGPU modules are left
//! untouched.

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
mod options;
mod prune;
mod scope;
mod size;
mod target;

mod registration;

use sqtt_config::Settings;

use crate::compat::sys::prelude::{LLVMModuleRef, LLVMValueRef};
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

/// Whether the driver asked to leave IDs and the funcmap to the device link.
pub(crate) fn deferred_to_link() -> bool {
    std::env::var(sqtt_config::var::DEFER_TO_LINK).is_ok_and(|v| v == "1")
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
    if phase == Phase::Late && deferred_to_link() {
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
    named::clear_target_cache();
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

/// Whether an instruction is one the pass made: a marker or its boundary (`!sqtt.marker`), or a
/// bare early marker (known by its asm text, [`ledger::read_tag`]).
pub(crate) fn is_sqtt_instruction(m: Module, i: Value) -> bool {
    i.metadata(tag_kinds(m).1).is_some() || ledger::read_tag(i).is_some()
}

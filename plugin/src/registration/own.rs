//! The plugin's own registration (LLVM 19 and later): `llvmGetPassPluginInfo`, which LLVM's
//! plugin loader looks up, is defined here (a definition inside the C++ static library would not
//! be exported from the cdylib); `shim/register.cpp` wraps [`crate::pipeline::run_phase`] in a
//! C++ module pass and adds it at the pass builder's hooks.

use std::os::raw::{c_char, c_int, c_uint, c_void};

use crate::compat::sys::prelude::{LLVMModuleRef, LLVMValueRef};
use crate::pipeline::{phase_at, phase_named, run_phase, run_prune, ExtensionPoint, Phase};

/// LLVM's `PassPluginLibraryInfo` (llvm/Passes/PassPlugin.h, llvm/Plugins/PassPlugin.h from 22).
/// register.cpp checks at compile time that the C++ struct has this size.
#[repr(C)]
pub struct PassPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    register_pass_builder_callbacks: unsafe extern "C" fn(*mut c_void),
    /// Plugin API 2 (LLVM 22+): a hook that may replace codegen; the plugin has none.
    #[cfg(sqtt_plugin_api_2)]
    pre_codegen_callback: *const c_void,
}

extern "C" {
    /// `LLVM_PLUGIN_API_VERSION` of the headers the shim was built with.
    fn sqtt_shim_plugin_api_version() -> u32;
    /// Adds the pipeline-parsing and extension-point callbacks to a `PassBuilder &`.
    fn sqtt_shim_register_pass_builder_callbacks(pass_builder: *mut c_void);
}

static NAME: &str = "sqtt\0";
static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// # Safety
/// Called by LLVM's plugin loader, once, after `dlopen`.
#[no_mangle]
pub unsafe extern "C" fn llvmGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: sqtt_shim_plugin_api_version(),
        plugin_name: NAME.as_ptr().cast(),
        plugin_version: VERSION.as_ptr().cast(),
        register_pass_builder_callbacks: sqtt_shim_register_pass_builder_callbacks,
        #[cfg(sqtt_plugin_api_2)]
        pre_codegen_callback: std::ptr::null(),
    }
}

/// The phase to add at extension point `point` (0 early simplification, 1 optimizer last,
/// 2 full LTO last), or -1 for none.
#[no_mangle]
extern "C" fn sqtt_plugin_phase_at(point: c_uint, o0: bool) -> c_int {
    let point = match point {
        0 => ExtensionPoint::EarlySimplification,
        1 => ExtensionPoint::OptimizerLast,
        2 => ExtensionPoint::FullLtoLast,
        _ => return -1,
    };
    phase_at(point, o0).map_or(-1, |p| p as c_int)
}

/// The phase a textual pipeline's pass name stands for, or -1.
///
/// # Safety
/// `name` points to `len` readable bytes.
#[no_mangle]
unsafe extern "C" fn sqtt_plugin_phase_named(name: *const c_char, len: usize) -> c_int {
    let bytes = std::slice::from_raw_parts(name.cast::<u8>(), len);
    std::str::from_utf8(bytes)
        .ok()
        .and_then(phase_named)
        .map_or(-1, |p| p as c_int)
}

/// Runs a phase on a module; returns whether it changed.
///
/// # Safety
/// `module` is live for the whole call (the C++ pass's `run`).
#[no_mangle]
unsafe extern "C" fn sqtt_plugin_run_phase(module: LLVMModuleRef, phase: c_uint) -> bool {
    // A panic must not unwind into LLVM's C++ frames.
    let phase = [Phase::Early, Phase::Late, Phase::LinkLate]
        .into_iter()
        .find(|p| *p as c_uint == phase);
    std::panic::catch_unwind(|| phase.is_some_and(|p| run_phase(module, p)))
        .unwrap_or_else(|_| std::process::abort())
}

/// Runs [`crate::prune`] on a function; returns whether it changed.
///
/// # Safety
/// `function` is a live definition for the whole call (the C++ pass's `run`).
#[no_mangle]
unsafe extern "C" fn sqtt_plugin_prune(function: LLVMValueRef) -> bool {
    std::panic::catch_unwind(|| run_prune(function)).unwrap_or_else(|_| std::process::abort())
}

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
mod pipeline;
mod place;
mod plan;
mod prune;
mod scope;
mod size;
mod tags;
mod target;

mod registration;

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

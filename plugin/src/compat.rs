//! Differences between the LLVM versions the plugin builds for, decided here and nowhere else
//! (with build.rs, which picks the major from the cargo feature, and the C++ shim).

/// The LLVM-C bindings of the major being built for.
#[cfg(not(sqtt_own_registration))]
pub use llvm_plugin::inkwell::llvm_sys as sys;
#[cfg(feature = "llvm19-1")]
pub use llvm_sys_191 as sys;
#[cfg(feature = "llvm20-1")]
pub use llvm_sys_201 as sys;
#[cfg(feature = "llvm21-1")]
pub use llvm_sys_211 as sys;
#[cfg(feature = "llvm22-1")]
pub use llvm_sys_221 as sys;
#[cfg(feature = "llvm23-1")]
pub use llvm_sys_231 as sys;

/// The LLVM major the plugin is built for.
pub const LLVM_MAJOR: u32 = parse_major(env!("SQTT_PLUGIN_LLVM_MAJOR"));

const fn parse_major(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut v = 0;
    let mut i = 0;
    while i < b.len() {
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}

/// `llvm.amdgcn.readfirstlane` on i32: not overloaded before LLVM 19.
pub const READFIRSTLANE_I32: &str = if LLVM_MAJOR >= 19 {
    "llvm.amdgcn.readfirstlane.i32"
} else {
    "llvm.amdgcn.readfirstlane"
};

/// `llvm.amdgcn.readlane` on i32: not overloaded before LLVM 19.
pub const READLANE_I32: &str = if LLVM_MAJOR >= 19 {
    "llvm.amdgcn.readlane.i32"
} else {
    "llvm.amdgcn.readlane"
};

/// `llvm.amdgcn.s.getreg`.
pub const S_GETREG: &str = "llvm.amdgcn.s.getreg";

/// Sync scope of the marker fence. With MMRA (LLVM 19+) this would be "workgroup" restricted to
/// LDS; before that, a wavefront fence keeps the IR ordering without machine code.
pub const MARKER_FENCE_SCOPE: &str = "wavefront";

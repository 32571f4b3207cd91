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

/// How the `SQTT_MEM_BARRIER=fence` boundary around a marker is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerFence {
    /// The form of docs/format.md section 1 ("The sequence around a marker"):
    /// `fence syncscope("workgroup") acq_rel` tagged
    /// `!mmra !{!"amdgpu-synchronize-as", !"local"}` ([`MMRA_SYNCHRONIZE_AS`]), so codegen orders
    /// (and waits for) LDS only.
    WorkgroupLocalMmra,
    /// Before MMRA (LLVM < 19) a workgroup fence would also wait for global memory and, on gfx10+
    /// in WGP mode, invalidate the L0 cache at every marker. Instead: a wavefront fence (ordering
    /// in IR, no machine code) plus an explicit LDS wait in an `asm sideeffect`, which the machine
    /// scheduler cannot move across.
    WavefrontAndLdsWait,
}

/// The MMRA key that restricts a fence to some address spaces (`!{!"<key>", !"local"}`). LLVM 19
/// reads it as `amdgpu-as` and ignores the later spelling (measured with llc-19:
/// `amdgpu-synchronize-as` leaves a `buffer_gl0_inv` per marker fence on gfx1030, `amdgpu-as`
/// none); LLVM 22 reads `amdgpu-synchronize-as` (docs/toolchains.md, "MMRA key"). LLVM 21 (sid's libLLVM) still has only `amdgpu-as`, so
/// the rename is in 22; 20, installed nowhere here, is taken to be like 19 and 21.
pub const MMRA_SYNCHRONIZE_AS: &str = if LLVM_MAJOR >= 22 {
    "amdgpu-synchronize-as"
} else {
    "amdgpu-as"
};

/// The marker fence of the LLVM being built for: MMRA metadata exists from LLVM 19.
pub const MARKER_FENCE: MarkerFence = if LLVM_MAJOR >= 19 {
    MarkerFence::WorkgroupLocalMmra
} else {
    MarkerFence::WavefrontAndLdsWait
};

/// `llvm.amdgcn.s.ttracedata.imm(i16)`, where LLVM has it (19+); older LLVMs get the same
/// instruction from inline asm. (The M0 form `llvm.amdgcn.s.ttracedata` exists from 19 too, but is
/// never used: see `emit.rs`, the M0 sequence.)
pub const TTRACEDATA_IMM_INTRINSIC: Option<&str> = if LLVM_MAJOR >= 19 {
    Some("llvm.amdgcn.s.ttracedata.imm")
} else {
    None
};

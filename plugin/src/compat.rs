//! Differences between the LLVM versions the plugin builds for, decided here and nowhere else.

/// `llvm.amdgcn.readfirstlane` on i32: not overloaded before LLVM 19.
pub const READFIRSTLANE_I32: &str = "llvm.amdgcn.readfirstlane";

/// `llvm.amdgcn.readlane` on i32: not overloaded before LLVM 19.
pub const READLANE_I32: &str = "llvm.amdgcn.readlane";

/// `llvm.amdgcn.s.getreg`.
pub const S_GETREG: &str = "llvm.amdgcn.s.getreg";

/// Sync scope of the marker fence. With MMRA (LLVM 19+) this would be "workgroup" restricted to
/// LDS; before that, a wavefront fence keeps the IR ordering without machine code.
pub const MARKER_FENCE_SCOPE: &str = "wavefront";

//! What the pass needs to know about an AMDGPU target, from a function's `target-cpu` and
//! `target-features`: the facts are sqtt-gfx's table; this adds the LLVM the plugin is built for.

pub use sqtt_gfx::{HwIdLayout, HwRegField, ShaderClockRead, HW_REG_SHADER_CYCLES_LO};

/// AMDGPU's LLVM address spaces the pass tells apart (LLVM's `AMDGPUAS`).
pub mod addrspace {
    pub const FLAT: u32 = 0;
    pub const GLOBAL: u32 = 1;
    /// LDS (`__shared__`).
    pub const LOCAL: u32 = 3;
    /// Scratch (private, `alloca`).
    pub const PRIVATE: u32 = 5;
    /// A buffer resource (`ptr addrspace(8)`, V#).
    pub const BUFFER_RESOURCE: u32 = 8;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The table row of the function's processor.
    pub gfx: &'static sqtt_gfx::Target,
    /// Wave size of the function (wave32 on RDNA unless +wavefrontsize64).
    pub wave_size: u32,
}

impl Target {
    /// The target of `cpu` (`gfx90a`, `gfx90a:xnack+`, `gfx1100`, ...) with LLVM features
    /// `features`, if it is a gfx9-or-later processor. A processor newer than the table (an
    /// LLVM that knows more parts than this plugin) is instrumented by its generation, from
    /// LLVM's naming rule: the generation's facts hold for it, and its own columns (clock
    /// packing) stay off.
    pub fn from_cpu(cpu: &str, features: &str) -> Option<Target> {
        let gfx = match sqtt_gfx::Target::parse(cpu) {
            Some((row, _)) => row,
            None => unlisted_row(cpu)?,
        };
        gfx.generation.is_instrumented().then(|| Target {
            gfx,
            wave_size: gfx.wave_size(features),
        })
    }

    pub fn has_ttracedata_imm(&self) -> bool {
        self.gfx.generation.has_ttracedata_imm()
    }

    pub fn m0_trace_nop(&self) -> u32 {
        self.gfx.generation.m0_trace_nop()
    }

    pub fn lds_wait_asm(&self) -> &'static str {
        self.gfx.generation.lds_wait_asm()
    }

    /// The shader-clock read with this plugin's LLVM (`s_get_shader_cycles_u64` needs LLVM 22).
    pub fn shader_clock_read(&self) -> Option<ShaderClockRead> {
        self.gfx.shader_clock_read(crate::compat::LLVM_MAJOR)
    }

    /// Whether marker headers on this target can carry a packed shader clock.
    pub fn supports_clock_packing(&self) -> bool {
        self.shader_clock_read().is_some()
    }

    pub fn hw_id_layout(&self) -> HwIdLayout {
        self.gfx.generation.hw_id_layout()
    }
}

/// A row for a gfx9+ processor the table lacks, made once per name (a compiler process sees a
/// handful of processors at most, so the rows are kept for its lifetime).
fn unlisted_row(cpu: &str) -> Option<&'static sqtt_gfx::Target> {
    use std::sync::{Mutex, OnceLock};
    static ROWS: OnceLock<Mutex<Vec<&'static sqtt_gfx::Target>>> = OnceLock::new();
    let name = cpu.split(':').next()?.trim().to_ascii_lowercase();
    let generation = sqtt_gfx::Generation::of_name(&name)?;
    if !generation.is_instrumented() {
        return None;
    }
    let mut rows = ROWS.get_or_init(Default::default).lock().ok()?;
    if let Some(row) = rows.iter().find(|r| r.name == name) {
        return Some(row);
    }
    let name: &'static str = Box::leak(name.into_boxed_str());
    let row: &'static sqtt_gfx::Target =
        Box::leak(Box::new(sqtt_gfx::Target::new(name, generation)));
    rows.push(row);
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gfx9_and_later_processors_of_the_table() {
        let t = Target::from_cpu("gfx90a:xnack+", "+wavefrontsize64").unwrap();
        assert_eq!((t.gfx.name, t.wave_size), ("gfx90a", 64));
        let t = Target::from_cpu("gfx1100", "+wavefrontsize64").unwrap();
        assert_eq!(t.wave_size, 64);
        assert_eq!(Target::from_cpu("gfx1030", "").unwrap().wave_size, 32);
        for cpu in ["x86-64", "", "gfx803", "gfx1310", "gfx", "gfx12x"] {
            assert!(Target::from_cpu(cpu, "").is_none(), "{cpu}");
        }
        // Newer than the table: its generation's facts, no clock packing, one row per name.
        let t = Target::from_cpu("gfx1199:xnack-", "").unwrap();
        assert_eq!(
            (t.gfx.name, t.gfx.generation),
            ("gfx1199", sqtt_gfx::Generation::Gfx11)
        );
        assert_eq!(t.wave_size, 32);
        let u = Target::from_cpu("gfx12ff", "").unwrap();
        assert!(!u.supports_clock_packing());
        assert!(std::ptr::eq(
            u.gfx,
            Target::from_cpu("gfx12ff", "").unwrap().gfx
        ));
        let packs = Target::from_cpu("gfx1250", "")
            .unwrap()
            .supports_clock_packing();
        assert_eq!(packs, crate::compat::LLVM_MAJOR >= 22);
    }
}

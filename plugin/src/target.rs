//! What the pass needs to know about an AMDGPU target, from a function's `target-cpu`.

/// GPU generation, as far as marker emission cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    Gfx9,
    Gfx10,
    Gfx11,
    Gfx12,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub cpu: String,
    pub generation: Generation,
    /// Wave size by default for the target (wave32 on RDNA unless +wavefrontsize64).
    pub wave_size: u32,
}

/// `HW_REG_SHADER_CYCLES_LO` (gfx1200/gfx1201).
pub const HW_REG_SHADER_CYCLES_LO: u32 = 29;

/// How a gfx12 target reads the shader clock that packed marker headers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderClockRead {
    /// `s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES_LO, shift, bits)`: the window, right-aligned.
    HwReg,
    /// `s_get_shader_cycles_u64`: the whole counter; the window is cut from its low word.
    Cycles64,
}

/// A field of a hardware ID register: `s_getreg_b32` immediate and field width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwRegField {
    pub reg: u32,
    pub offset: u32,
    pub bits: u32,
}

impl HwRegField {
    /// The `s_getreg_b32` / `llvm.amdgcn.s.getreg` immediate: `(size-1)<<11 | offset<<6 | reg`.
    pub fn imm(self) -> u32 {
        ((self.bits - 1) << 11) | (self.offset << 6) | self.reg
    }
}

/// Where the scope-check fields live on a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HwIdLayout {
    pub wave: HwRegField,
    pub simd: HwRegField,
    pub cu: HwRegField,
    pub wg: HwRegField,
}

impl Target {
    /// Parses `gfx90a`, `gfx1030`, `gfx1100`, `gfx1201`, ... (feature suffixes ignored).
    pub fn from_cpu(cpu: &str, features: &str) -> Option<Target> {
        let name = cpu.split(':').next().unwrap_or(cpu);
        let digits = name.strip_prefix("gfx")?;
        let generation = match digits.len() {
            3 if digits.starts_with('9') => Generation::Gfx9,
            4 if digits.starts_with("10") => Generation::Gfx10,
            4 if digits.starts_with("11") => Generation::Gfx11,
            4 if digits.starts_with("12") => Generation::Gfx12,
            _ => return None,
        };
        let wave64 = features.contains("+wavefrontsize64");
        let wave_size = if generation == Generation::Gfx9 || wave64 {
            64
        } else {
            32
        };
        Some(Target {
            cpu: name.to_string(),
            generation,
            wave_size,
        })
    }

    /// `s_ttracedata_imm` exists from gfx10 on.
    pub fn has_ttracedata_imm(&self) -> bool {
        self.generation >= Generation::Gfx10
    }

    /// The `N` of `s_nop N` between `s_mov_b32 m0, <value>` and `s_ttracedata`.
    ///
    /// - gfx9: an SALU write of M0 followed by `s_sendmsg` / `s_ttracedata` needs one wait state
    ///   (LLVM's GCNHazardRecognizer, `hasReadM0SendMsgHazard`, VI to GFX9, `checkReadM0Hazards`
    ///   with one wait state). The compiler cannot see into the marker's asm, so the asm carries
    ///   it: `s_nop 0`.
    /// - gfx10 and gfx11: LLVM models no such hazard (`hasReadM0SendMsgHazard` ends at GFX9); the
    ///   spec's `s_nop 0` is kept so that the sequence has one shape on every target.
    /// - gfx12: AMD's own pass waits `s_nop 3` (four wait states) there; LLVM models no M0 hazard
    ///   for gfx12 either, so nothing on this machine can show the hardware needs fewer, and the
    ///   reference's figure is taken. It costs idle cycles, not instructions.
    pub fn m0_trace_nop(&self) -> u32 {
        match self.generation {
            Generation::Gfx12 => 3,
            _ => 0,
        }
    }

    /// The instruction that waits for outstanding LDS operations.
    pub fn lds_wait_asm(&self) -> &'static str {
        match self.generation {
            Generation::Gfx12 => "s_wait_dscnt 0x0",
            _ => "s_waitcnt lgkmcnt(0)",
        }
    }

    /// The shader-clock read of a target whose marker headers can carry a packed clock: every
    /// gfx12 target, as in AMD's pass. gfx1200 and gfx1201 read `HW_REG_SHADER_CYCLES_LO`; the
    /// targets numbered after them (gfx1202, gfx1250, gfx1251, ...) `s_get_shader_cycles_u64`,
    /// AMD's rule for "gfx1250 and later". That instruction needs an assembler that knows it
    /// (LLVM 22; 21 rejects it): without one those targets' headers stay unpacked (no `M:` row),
    /// where AMD's pass would emit an instruction the assembler refuses.
    pub fn shader_clock_read(&self) -> Option<ShaderClockRead> {
        if self.generation != Generation::Gfx12 {
            return None;
        }
        let number: u32 = self.cpu.strip_prefix("gfx")?.parse().ok()?;
        if number <= 1201 {
            Some(ShaderClockRead::HwReg)
        } else if crate::compat::HAS_S_GET_SHADER_CYCLES_U64 {
            Some(ShaderClockRead::Cycles64)
        } else {
            None
        }
    }

    /// Whether marker headers on this target can carry a packed shader clock.
    pub fn supports_clock_packing(&self) -> bool {
        self.shader_clock_read().is_some()
    }

    /// HW_ID (gfx9) or HW_ID1/HW_ID2 (gfx10+) field encodings (docs/format.md, Scope filtering).
    pub fn hw_id_layout(&self) -> HwIdLayout {
        let f = |reg, offset, bits| HwRegField { reg, offset, bits };
        match self.generation {
            Generation::Gfx9 => HwIdLayout {
                wave: f(4, 0, 4),
                simd: f(4, 4, 2),
                cu: f(4, 8, 4),
                wg: f(4, 16, 4),
            },
            _ => HwIdLayout {
                wave: f(23, 0, 5),
                simd: f(23, 8, 2),
                cu: f(23, 10, 4),
                wg: f(24, 16, 5),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        let t = Target::from_cpu("gfx90a", "").unwrap();
        assert_eq!((t.generation, t.wave_size), (Generation::Gfx9, 64));
        assert!(!t.has_ttracedata_imm());
        let t = Target::from_cpu("gfx1030", "+wavefrontsize32").unwrap();
        assert_eq!((t.generation, t.wave_size), (Generation::Gfx10, 32));
        let t = Target::from_cpu("gfx1100", "+wavefrontsize64").unwrap();
        assert_eq!(t.wave_size, 64);
        assert!(Target::from_cpu("gfx1201", "")
            .unwrap()
            .supports_clock_packing());
        let read = |c: &str| Target::from_cpu(c, "").unwrap().shader_clock_read();
        assert_eq!(read("gfx1100"), None);
        assert_eq!(read("gfx1200"), Some(ShaderClockRead::HwReg));
        let u64_read =
            crate::compat::HAS_S_GET_SHADER_CYCLES_U64.then_some(ShaderClockRead::Cycles64);
        for cpu in ["gfx1202", "gfx1250", "gfx1251"] {
            assert_eq!(read(cpu), u64_read, "{cpu}");
        }
        assert!(Target::from_cpu("x86-64", "").is_none());
        let nops: Vec<u32> = [
            "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201", "gfx1250",
        ]
        .iter()
        .map(|c| Target::from_cpu(c, "").unwrap().m0_trace_nop())
        .collect();
        assert_eq!(nops, [0, 0, 0, 0, 3, 3]);
    }

    #[test]
    fn hwreg_immediates() {
        let gfx9 = Target::from_cpu("gfx90a", "").unwrap().hw_id_layout();
        // hwreg(HW_REG_HW_ID, 8, 4): (4-1)<<11 | 8<<6 | 4
        assert_eq!(gfx9.cu.imm(), (3 << 11) | (8 << 6) | 4);
        let rdna = Target::from_cpu("gfx1100", "").unwrap().hw_id_layout();
        assert_eq!(rdna.wg.imm(), (4 << 11) | (16 << 6) | 24);
    }
}

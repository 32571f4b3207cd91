//! AMDGPU targets, in one table: every gfx name the project knows, and the facts about it that
//! marker emission (plugin), code-object reading (codeobj), trace tools (tools, thread-trace)
//! and the tests need. To add a target, add its row to [`TARGETS`] (docs/architecture.md, "To
//! add a gfx target").
//!
//! Facts that follow from the generation (wave size, `s_ttracedata_imm`, HW_ID layout, the M0
//! hazard nop, the LDS wait, the SGPR limit and the CU's shape) are methods of [`Generation`];
//! facts of one target (its ELF machine number, its GC IP version, how it reads the shader clock,
//! the register file, wave slots and LDS occupancy is computed from) are columns of its row.

use std::fmt;
use std::str::FromStr;

mod resources;
mod table;

pub use resources::{
    AgprFile, Resources, CDNA1, CDNA2, CDNA4, GCN5, MAX_WORKGROUP_SIZE, RDNA1, RDNA2, RDNA3_LARGE,
    UNIFIED_AGPR_ALIGNMENT,
};
pub use table::TARGETS;

/// A GPU generation: the gfx major number. The ISA and the thread-trace stream both change
/// with it, so the one enum serves both views: `Gfx9` is GCN 5 / CDNA (the 16-bit token trace
/// stream), `Gfx10` RDNA 1-2, `Gfx11` RDNA 3 (nibble packets, layout 3), `Gfx12` RDNA 4 and
/// gfx125x (layout 4). Gfx6 to Gfx8 are named only so that code objects for them can be named;
/// nothing instruments or traces them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    Gfx6,
    Gfx7,
    Gfx8,
    /// GCN 5 (Vega) and CDNA 1-4 (gfx908, gfx90a, gfx94x, gfx950).
    Gfx9,
    /// RDNA 1 and 2.
    Gfx10,
    /// RDNA 3 and 3.5.
    Gfx11,
    /// RDNA 4 and gfx125x.
    Gfx12,
}

/// `HW_REG_SHADER_CYCLES_LO` (gfx1200/gfx1201): the low bits of the shader clock.
pub const HW_REG_SHADER_CYCLES_LO: u32 = 29;

/// The first LLVM major whose assembler knows `s_get_shader_cycles_u64` (21 knows gfx1250 but
/// rejects the instruction: "invalid instruction").
pub const S_GET_SHADER_CYCLES_U64_LLVM: u32 = 22;

impl Generation {
    /// The generation of gfx major number `major` (9 for gfx90a, 11 for gfx1100).
    pub fn of_major(major: u32) -> Option<Generation> {
        Some(match major {
            6 => Generation::Gfx6,
            7 => Generation::Gfx7,
            8 => Generation::Gfx8,
            9 => Generation::Gfx9,
            10 => Generation::Gfx10,
            11 => Generation::Gfx11,
            12 => Generation::Gfx12,
            _ => return None,
        })
    }

    /// The generation of a gfx name: its row's; for a name the table lacks, its major by
    /// LLVM's naming (`gfx` major, minor, stepping: one hex digit each for the last two, so
    /// `gfx1170` is gfx11); for a bare major such as rocprofv3's `gfxip` (`gfx11`), that major's.
    /// Feature suffixes (`gfx90a:xnack+`) are ignored. Readers of names newer than the
    /// table use this: the trace tools, and the plugin for a processor its table lacks.
    pub fn of_name(name: &str) -> Option<Generation> {
        if let Some((target, _)) = Target::parse(name) {
            return Some(target.generation);
        }
        let number = arch_of_target_id(name.trim()).strip_prefix("gfx")?;
        if !number.is_ascii() {
            return None;
        }
        let major = match number.len() {
            1 | 2 => number,
            3 | 4
                if number[number.len() - 2..]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit()) =>
            {
                &number[..number.len() - 2]
            }
            _ => return None,
        };
        Generation::of_major(major.parse().ok()?)
    }

    /// Whether the plugin instruments this generation's code (gfx9 and later).
    pub fn is_instrumented(self) -> bool {
        self >= Generation::Gfx9
    }

    /// The wave size code gets without `+wavefrontsize64` / `+wavefrontsize32`: wave64 up to
    /// gfx9, wave32 from gfx10 on.
    pub fn default_wave_size(self) -> u32 {
        if self >= Generation::Gfx10 {
            32
        } else {
            64
        }
    }

    /// `s_ttracedata_imm` exists from gfx10 on; gfx9 writes every record through M0.
    pub fn has_ttracedata_imm(self) -> bool {
        self >= Generation::Gfx10
    }

    /// The `N` of `s_nop N` between `s_mov_b32 m0, <value>` and `s_ttracedata`.
    ///
    /// - gfx9: an SALU write of M0 followed by `s_sendmsg` / `s_ttracedata` needs one wait state
    ///   (LLVM's GCNHazardRecognizer, `hasReadM0SendMsgHazard`, VI to GFX9, `checkReadM0Hazards`
    ///   with one wait state). The compiler cannot see into the marker's asm, so the asm carries
    ///   it: `s_nop 0`.
    /// - gfx10 and gfx11: LLVM models no such hazard (`hasReadM0SendMsgHazard` ends at GFX9); the
    ///   `s_nop 0` is kept so that the sequence has one shape on every target.
    /// - gfx12: AMD's own pass waits `s_nop 3` (four wait states) there; LLVM models no M0 hazard
    ///   for gfx12 either, so nothing on this machine can show the hardware needs fewer, and the
    ///   reference's figure is taken. It costs idle cycles, not instructions.
    pub fn m0_trace_nop(self) -> u32 {
        match self {
            Generation::Gfx12 => 3,
            _ => 0,
        }
    }

    /// The instruction that waits for outstanding LDS operations.
    pub fn lds_wait_asm(self) -> &'static str {
        match self {
            Generation::Gfx12 => "s_wait_dscnt 0x0",
            _ => "s_waitcnt lgkmcnt(0)",
        }
    }

    /// HW_ID (to gfx9) or HW_ID1/HW_ID2 (gfx10 on) field encodings (docs/format.md, Scope
    /// filtering).
    pub fn hw_id_layout(self) -> HwIdLayout {
        let f = |reg, offset, bits| HwRegField { reg, offset, bits };
        if self <= Generation::Gfx9 {
            HwIdLayout {
                wave: f(4, 0, 4),
                simd: f(4, 4, 2),
                cu: f(4, 8, 4),
                wg: f(4, 16, 4),
            }
        } else {
            HwIdLayout {
                wave: f(23, 0, 5),
                simd: f(23, 8, 2),
                cu: f(23, 10, 4),
                wg: f(24, 16, 5),
            }
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let major = match self {
            Generation::Gfx6 => 6,
            Generation::Gfx7 => 7,
            Generation::Gfx8 => 8,
            Generation::Gfx9 => 9,
            Generation::Gfx10 => 10,
            Generation::Gfx11 => 11,
            Generation::Gfx12 => 12,
        };
        write!(f, "gfx{major}")
    }
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

/// How a target reads the shader clock that packed marker headers carry (a column of its row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderClock {
    /// No shader clock a marker header can carry.
    None,
    /// `s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES_LO, shift, bits)` (gfx1200, gfx1201).
    CyclesLo,
    /// `s_get_shader_cycles_u64`, AMD's rule for the gfx12 targets after gfx1201; the assembler
    /// knows it from LLVM [`S_GET_SHADER_CYCLES_U64_LLVM`].
    Cycles64,
}

/// The shader-clock read a pass emits on a given LLVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShaderClockRead {
    /// `s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES_LO, shift, bits)`: the window, right-aligned.
    HwReg,
    /// `s_get_shader_cycles_u64`: the whole counter; the window is cut from its low word.
    Cycles64,
}

/// A GC (graphics and compute) IP version, such as 11.0.0 for gfx1100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GcVersion {
    pub major: u32,
    pub minor: u32,
    pub step: u32,
}

impl GcVersion {
    pub const fn new(major: u32, minor: u32, step: u32) -> Self {
        GcVersion { major, minor, step }
    }

    /// The generation of this GC, by major version.
    pub fn generation(self) -> Option<Generation> {
        Generation::of_major(self.major)
    }

    /// The row of [`TARGETS`] for this GC: the first whose GC has the same major and minor
    /// (steppings of one GC share its thread-trace registers); None when no row names such a
    /// GC. What knows a GC by its version asks here (thread-trace's register families).
    pub fn target(self) -> Option<&'static Target> {
        TARGETS.iter().find(|t| {
            t.gc.is_some_and(|gc| (gc.major, gc.minor) == (self.major, self.minor))
        })
    }
}

impl fmt::Display for GcVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.step)
    }
}

impl FromStr for GcVersion {
    type Err = String;
    /// Parses `MAJOR.MINOR.STEP`, such as `11.0.0`.
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split('.').collect();
        let bad = || format!("GC version {s:?}: expected MAJOR.MINOR.STEP such as 11.0.0");
        if parts.len() != 3 {
            return Err(bad());
        }
        let n = |p: &str| p.parse::<u32>().map_err(|_| bad());
        Ok(GcVersion::new(n(parts[0])?, n(parts[1])?, n(parts[2])?))
    }
}

/// One row of [`TARGETS`]: a gfx target and the facts that are its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The processor name, such as `gfx1100`.
    pub name: &'static str,
    pub generation: Generation,
    /// Its `EF_AMDGPU_MACH` value in a code object's ELF `e_flags`, where LLVM assigns one.
    pub mach: Option<u32>,
    /// Its GC IP version, where the project needs it (thread-trace registers).
    pub gc: Option<GcVersion>,
    /// How marker headers on it carry a packed shader clock.
    pub clock: ShaderClock,
    /// Its compute unit's registers, wave slots and LDS, where known (gfx9 and later; not the
    /// targets whose figures no LLVM here could confirm).
    pub resources: Option<Resources>,
}

/// The features a target id or processor string names after the processor
/// (`gfx90a:sramecc+:xnack-`): each `+` (on) or `-` (off), absent when not named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    pub xnack: Option<bool>,
    pub sramecc: Option<bool>,
}

impl Target {
    /// A row with no machine number, GC version or shader clock.
    pub const fn new(name: &'static str, generation: Generation) -> Target {
        Target {
            name,
            generation,
            mach: None,
            gc: None,
            clock: ShaderClock::None,
            resources: None,
        }
    }

    /// The row with its `EF_AMDGPU_MACH` value.
    pub const fn mach(self, mach: u32) -> Target {
        Target {
            mach: Some(mach),
            ..self
        }
    }

    /// The row with its GC IP version.
    pub const fn gc(self, major: u32, minor: u32, step: u32) -> Target {
        Target {
            gc: Some(GcVersion::new(major, minor, step)),
            ..self
        }
    }

    /// The row with its shader-clock read.
    pub const fn clock(self, clock: ShaderClock) -> Target {
        Target { clock, ..self }
    }

    /// The row with its compute unit's figures.
    pub const fn res(self, resources: Resources) -> Target {
        Target {
            resources: Some(resources),
            ..self
        }
    }

    /// The row of processor `name` (case-insensitive), without feature suffixes.
    pub fn lookup(name: &str) -> Option<&'static Target> {
        TARGETS.iter().find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The row of a processor with features (`gfx90a`, `gfx90a:xnack+`, `gfx942:sramecc-:xnack+`)
    /// or of a whole target id (`amdgcn-amd-amdhsa--gfx90a:xnack-`), and the features named.
    /// Unknown features are ignored; an unknown processor is `None`.
    pub fn parse(id: &str) -> Option<(&'static Target, Features)> {
        let mut parts = processor_of_target_id(id).split(':');
        let target = Target::lookup(parts.next()?)?;
        let mut features = Features::default();
        for part in parts {
            let (name, on) = match part.as_bytes().last() {
                Some(b'+') => (&part[..part.len() - 1], true),
                Some(b'-') => (&part[..part.len() - 1], false),
                _ => continue,
            };
            match name {
                "xnack" => features.xnack = Some(on),
                "sramecc" => features.sramecc = Some(on),
                _ => {}
            }
        }
        Some((target, features))
    }

    /// The row whose `EF_AMDGPU_MACH` value is `mach`.
    pub fn by_mach(mach: u32) -> Option<&'static Target> {
        TARGETS.iter().find(|t| t.mach == Some(mach))
    }

    /// The wave size of code for this target with LLVM target features `llvm_features`
    /// (a function's `target-features`): gfx9 and older are always wave64; later targets are
    /// wave32 unless `+wavefrontsize64`.
    pub fn wave_size(&self, llvm_features: &str) -> u32 {
        if self.generation >= Generation::Gfx10 && llvm_features.contains("+wavefrontsize64") {
            64
        } else {
            self.generation.default_wave_size()
        }
    }

    /// The shader-clock read a pass built against LLVM `llvm_major` emits on this target, if
    /// its marker headers can carry a packed clock there: every gfx12 target, as in AMD's pass.
    /// gfx1200 and gfx1201 read `HW_REG_SHADER_CYCLES_LO`; the targets numbered after them
    /// `s_get_shader_cycles_u64`, which needs an assembler that knows it: without one those
    /// targets' headers stay unpacked (no `M:` row), where AMD's pass would emit an instruction
    /// the assembler refuses.
    pub fn shader_clock_read(&self, llvm_major: u32) -> Option<ShaderClockRead> {
        match self.clock {
            ShaderClock::None => None,
            ShaderClock::CyclesLo => Some(ShaderClockRead::HwReg),
            ShaderClock::Cycles64 => {
                (llvm_major >= S_GET_SHADER_CYCLES_U64_LLVM).then_some(ShaderClockRead::Cycles64)
            }
        }
    }
}

/// The processor and features of a target id or bundle entry id, from its last `gfx` on:
/// `amdgcn-amd-amdhsa--gfx90a:xnack-` -> `gfx90a:xnack-`; empty when it names no gfx processor.
/// `gfx` is matched in either case, as [`Target::lookup`] matches names.
pub fn processor_of_target_id(target_id: &str) -> &str {
    let b = target_id.as_bytes();
    (0..b.len().saturating_sub(2))
        .rev()
        .find(|&i| b[i..i + 3].eq_ignore_ascii_case(b"gfx"))
        .map_or("", |i| &target_id[i..])
}

/// The processor of a target id without its features: `amdgcn-amd-amdhsa--gfx90a:xnack-` ->
/// `gfx90a`; empty when it names no gfx processor.
pub fn arch_of_target_id(target_id: &str) -> &str {
    let p = processor_of_target_id(target_id);
    p.split(':').next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str) -> &'static Target {
        Target::lookup(name).unwrap_or_else(|| panic!("{name}"))
    }

    #[test]
    fn names_are_unique_and_well_formed() {
        for (i, t) in TARGETS.iter().enumerate() {
            assert!(t.name.starts_with("gfx"), "{}", t.name);
            assert!(
                TARGETS[..i].iter().all(|u| u.name != t.name),
                "{} twice",
                t.name
            );
            if let Some(m) = t.mach {
                assert_eq!(Target::by_mach(m).unwrap().name, t.name);
            }
            // The name's major is the generation's.
            let major = if t.name.len() == 6 { 1 } else { 2 };
            let n: u32 = t.name[3..3 + major].parse().unwrap();
            assert_eq!(Generation::of_major(n), Some(t.generation), "{}", t.name);
            if let Some(gc) = t.gc {
                assert_eq!(gc.generation(), Some(t.generation), "{}", t.name);
            }
        }
    }

    #[test]
    fn parses_names_with_features() {
        let (t, f) = Target::parse("gfx90a:xnack+").unwrap();
        assert_eq!((t.name, t.generation), ("gfx90a", Generation::Gfx9));
        assert_eq!(f.xnack, Some(true));
        let (t, f) = Target::parse("amdgcn-amd-amdhsa--gfx942:sramecc-:xnack+").unwrap();
        assert_eq!(t.name, "gfx942");
        assert_eq!((f.sramecc, f.xnack), (Some(false), Some(true)));
        assert_eq!(Target::parse("GFX1100").unwrap().0.name, "gfx1100");
        assert!(Target::parse("x86-64").is_none());
        assert!(Target::parse("gfx1199").is_none());
        assert!(Target::parse("").is_none());
        assert_eq!(processor_of_target_id("gfx90a"), "gfx90a");
        assert_eq!(
            arch_of_target_id("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"),
            "gfx90a"
        );
        assert_eq!(
            arch_of_target_id("amdgcn-amd-amdhsa--unknown-mach-0x77"),
            ""
        );
    }

    #[test]
    fn generations_and_wave_sizes() {
        assert_eq!(Generation::of_name("gfx11"), Some(Generation::Gfx11));
        assert_eq!(Generation::of_name("gfx9"), Some(Generation::Gfx9));
        assert_eq!(
            Generation::of_name("gfx1030:xnack-"),
            Some(Generation::Gfx10)
        );
        assert_eq!(Generation::of_name("gfx803"), Some(Generation::Gfx8));
        assert_eq!(Generation::of_name("sm_80"), None);
        assert_eq!(Generation::of_name("gfx1199"), Some(Generation::Gfx11));
        assert_eq!(Generation::of_name("gfx9ab"), Some(Generation::Gfx9));
        assert_eq!(Generation::of_name("gfx1310"), None);
        assert_eq!(Generation::of_name("gfx"), None);
        assert_eq!(Generation::of_name("gfxé1"), None);
        assert_eq!(row("gfx90a").wave_size("+wavefrontsize64"), 64);
        assert_eq!(row("gfx90a").wave_size(""), 64);
        assert_eq!(row("gfx1030").wave_size("+wavefrontsize32"), 32);
        assert_eq!(row("gfx1100").wave_size("+wavefrontsize64"), 64);
        assert_eq!(row("gfx1201").wave_size(""), 32);
        assert!(!row("gfx90a").generation.has_ttracedata_imm());
        assert!(row("gfx1030").generation.has_ttracedata_imm());
        assert!(!row("gfx803").generation.is_instrumented());
        assert_eq!(Generation::Gfx11.to_string(), "gfx11");
    }

    #[test]
    fn nops_and_waits() {
        let nops: Vec<u32> = [
            "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1201", "gfx1250",
        ]
        .iter()
        .map(|c| row(c).generation.m0_trace_nop())
        .collect();
        assert_eq!(nops, [0, 0, 0, 0, 3, 3]);
        assert_eq!(Generation::Gfx12.lds_wait_asm(), "s_wait_dscnt 0x0");
        assert_eq!(Generation::Gfx9.lds_wait_asm(), "s_waitcnt lgkmcnt(0)");
    }

    #[test]
    fn shader_clock_reads() {
        let read = |c: &str, llvm| row(c).shader_clock_read(llvm);
        assert_eq!(read("gfx1100", 22), None);
        assert_eq!(read("gfx1200", 15), Some(ShaderClockRead::HwReg));
        assert_eq!(read("gfx1201", 22), Some(ShaderClockRead::HwReg));
        for cpu in ["gfx1202", "gfx1250", "gfx1251"] {
            assert_eq!(read(cpu, 21), None, "{cpu}");
            assert_eq!(read(cpu, 22), Some(ShaderClockRead::Cycles64), "{cpu}");
        }
        // Every gfx12 target packs (given an assembler); no other does.
        for t in TARGETS {
            assert_eq!(
                t.shader_clock_read(99).is_some(),
                t.generation == Generation::Gfx12,
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn hwreg_immediates() {
        let gfx9 = Generation::Gfx9.hw_id_layout();
        // hwreg(HW_REG_HW_ID, 8, 4): (4-1)<<11 | 8<<6 | 4
        assert_eq!(gfx9.cu.imm(), (3 << 11) | (8 << 6) | 4);
        let rdna = Generation::Gfx11.hw_id_layout();
        assert_eq!(rdna.wg.imm(), (4 << 11) | (16 << 6) | 24);
    }

    #[test]
    fn gc_versions() {
        assert_eq!(
            "9.4.3".parse::<GcVersion>().unwrap(),
            GcVersion::new(9, 4, 3)
        );
        assert!("9.4".parse::<GcVersion>().is_err());
        assert!("a.b.c".parse::<GcVersion>().is_err());
        assert_eq!(row("gfx1101").gc, Some(GcVersion::new(11, 0, 3)));
        assert_eq!(GcVersion::new(10, 3, 0).to_string(), "10.3.0");
        // A GC's row, for any of its steppings; none for a GC no row names.
        assert_eq!(GcVersion::new(11, 0, 3).target().unwrap().name, "gfx1100");
        assert_eq!(GcVersion::new(11, 0, 1).target().unwrap().name, "gfx1100");
        assert_eq!(GcVersion::new(12, 0, 1).target().unwrap().name, "gfx1200");
        assert_eq!(GcVersion::new(9, 5, 0).target().unwrap().name, "gfx950");
        for gc in [(10, 3, 0), (9, 0, 1), (11, 7, 0), (13, 0, 0)] {
            assert!(
                GcVersion::new(gc.0, gc.1, gc.2).target().is_none(),
                "{gc:?}"
            );
        }
        for t in TARGETS {
            if let Some(gc) = t.gc {
                assert_eq!(gc.target().unwrap().generation, t.generation, "{}", t.name);
            }
        }
    }

    #[test]
    fn mach_numbers() {
        assert_eq!(Target::by_mach(0x03f).unwrap().name, "gfx90a");
        assert_eq!(Target::by_mach(0x04e).unwrap().name, "gfx1201");
        assert!(Target::by_mach(0x0ff).is_none());
    }
}

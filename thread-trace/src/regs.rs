//! The registers the thread-trace programs read and write, by family: dword addresses (as
//! `SET_UCONFIG_REG`, `WAIT_REG_MEM` and `COPY_DATA` take them) and field layouts, from Linux's
//! `gc_9_4_3`, `gc_11_0_0`, `gc_11_5_0` and `gc_12_0_0` offset and sh_mask headers (segment 0 of
//! GC at dword 0x2000 on GFX9 and 0x1260 from GFX11 on, segment 1 at 0xA000).

use crate::gpu::{GcVersion, Generation};
use crate::Error;

/// A register the programs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reg {
    GrbmGfxIndex,
    SpiConfigCntl,
    ComputeThreadTraceEnable,
    // GFX9 only.
    Base,
    Base2,
    Size,
    PerfMask,
    Mode,
    TokenMask2,
    Hiwater,
    // GFX11 and GFX12.
    Buf0Base,
    Buf0Size,
    Buf0BaseLo,
    Buf0BaseHi,
    // Every family.
    Ctrl,
    Mask,
    TokenMask,
    Wptr,
    Status,
}

impl Reg {
    /// The register's name in the Linux headers.
    pub fn name(self) -> &'static str {
        match self {
            Reg::GrbmGfxIndex => "GRBM_GFX_INDEX",
            Reg::SpiConfigCntl => "SPI_CONFIG_CNTL",
            Reg::ComputeThreadTraceEnable => "COMPUTE_THREAD_TRACE_ENABLE",
            Reg::Base => "SQ_THREAD_TRACE_BASE",
            Reg::Base2 => "SQ_THREAD_TRACE_BASE2",
            Reg::Size => "SQ_THREAD_TRACE_SIZE",
            Reg::PerfMask => "SQ_THREAD_TRACE_PERF_MASK",
            Reg::Mode => "SQ_THREAD_TRACE_MODE",
            Reg::TokenMask2 => "SQ_THREAD_TRACE_TOKEN_MASK2",
            Reg::Hiwater => "SQ_THREAD_TRACE_HIWATER",
            Reg::Buf0Base => "SQ_THREAD_TRACE_BUF0_BASE",
            Reg::Buf0Size => "SQ_THREAD_TRACE_BUF0_SIZE",
            Reg::Buf0BaseLo => "SQ_THREAD_TRACE_BUF0_BASE_LO",
            Reg::Buf0BaseHi => "SQ_THREAD_TRACE_BUF0_BASE_HI",
            Reg::Ctrl => "SQ_THREAD_TRACE_CTRL",
            Reg::Mask => "SQ_THREAD_TRACE_MASK",
            Reg::TokenMask => "SQ_THREAD_TRACE_TOKEN_MASK",
            Reg::Wptr => "SQ_THREAD_TRACE_WPTR",
            Reg::Status => "SQ_THREAD_TRACE_STATUS",
        }
    }

    /// Every register, for tables and lookups.
    pub const ALL: [Reg; 19] = [
        Reg::GrbmGfxIndex,
        Reg::SpiConfigCntl,
        Reg::ComputeThreadTraceEnable,
        Reg::Base,
        Reg::Base2,
        Reg::Size,
        Reg::PerfMask,
        Reg::Mode,
        Reg::TokenMask2,
        Reg::Hiwater,
        Reg::Buf0Base,
        Reg::Buf0Size,
        Reg::Buf0BaseLo,
        Reg::Buf0BaseHi,
        Reg::Ctrl,
        Reg::Mask,
        Reg::TokenMask,
        Reg::Wptr,
        Reg::Status,
    ];
}

/// The register family of GC `gc` (the generation whose thread-trace registers it has): the
/// generation of its row in sqtt-gfx's table ([`GcVersion::target`]: the GC versions known are
/// the table's), when this crate has that generation's registers. The families: GFX9 has
/// SQ_THREAD_TRACE_BASE/BASE2/SIZE/MODE, a GFX9 layout; GFX11 SQ_THREAD_TRACE_BUF0_BASE and
/// BUF0_SIZE (with the address's top bits); GFX12 SQ_THREAD_TRACE_BUF0_SIZE, BUF0_BASE_LO and
/// BUF0_BASE_HI.
pub fn family(gc: GcVersion) -> Option<Generation> {
    let generation = gc.target()?.generation;
    matches!(
        generation,
        Generation::Gfx9 | Generation::Gfx11 | Generation::Gfx12
    )
    .then_some(generation)
}

/// The dword address of `reg` in `family`, if the family has it.
pub fn address_in(family: Generation, reg: Reg) -> Option<u32> {
    use Generation::*;
    use Reg::*;
    Some(match (family, reg) {
        (_, GrbmGfxIndex) => 0xC200,
        (_, SpiConfigCntl) => 0xC440,
        (_, ComputeThreadTraceEnable) => 0x2E1E,
        (Gfx9, Base) => 0xC330,
        (Gfx9, Size) => 0xC331,
        (Gfx9, Mask) => 0xC332,
        (Gfx9, TokenMask) => 0xC333,
        (Gfx9, PerfMask) => 0xC334,
        (Gfx9, Ctrl) => 0xC335,
        (Gfx9, Mode) => 0xC336,
        (Gfx9, Base2) => 0xC337,
        (Gfx9, TokenMask2) => 0xC338,
        (Gfx9, Wptr) => 0xC339,
        (Gfx9, Status) => 0xC33A,
        (Gfx9, Hiwater) => 0xC33B,
        (Gfx11, Buf0Base) => 0xD9E8,
        (Gfx11, Buf0Size) => 0xD9E9,
        (Gfx12, Buf0Size) => 0xD9E6,
        (Gfx12, Buf0BaseLo) => 0xD9E7,
        (Gfx12, Buf0BaseHi) => 0xD9E8,
        (Gfx11 | Gfx12, Ctrl) => 0xD9EC,
        (Gfx11 | Gfx12, Mask) => 0xD9ED,
        (Gfx11 | Gfx12, TokenMask) => 0xD9EE,
        (Gfx11 | Gfx12, Wptr) => 0xD9EF,
        (Gfx11 | Gfx12, Status) => 0xD9F4,
        _ => return None,
    })
}

/// The dword address of `reg` on GC `gc`, or the error that it lacks it.
pub fn address(gc: GcVersion, reg: Reg) -> Result<u32, Error> {
    family(gc)
        .and_then(|f| address_in(f, reg))
        .ok_or(Error::MissingRegister {
            gc,
            register: reg.name(),
        })
}

/// The name of the register at dword `addr` in `family`, for printing programs.
pub fn name_at(family: Generation, addr: u32) -> Option<&'static str> {
    Reg::ALL
        .iter()
        .find(|&&r| address_in(family, r) == Some(addr))
        .map(|r| r.name())
}

/// The first dword of the registers `SET_UCONFIG_REG` writes.
pub const UCONFIG_START: u32 = 0xC000;
/// The first dword of the registers `SET_SH_REG` writes.
pub const SH_START: u32 = 0x2C00;

/// A bit field `[lo, hi]` of a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub lo: u32,
    pub hi: u32,
}

impl Field {
    pub const fn new(lo: u32, hi: u32) -> Self {
        Field { lo, hi }
    }
    /// The field's mask in place.
    pub const fn mask(self) -> u32 {
        let width = self.hi - self.lo + 1;
        let ones = if width >= 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        };
        ones << self.lo
    }
    /// `v` placed in the field (bits beyond its width dropped).
    pub const fn put(self, v: u32) -> u32 {
        (v << self.lo) & self.mask()
    }
    /// The field's value in `word`.
    pub const fn get(self, word: u32) -> u32 {
        (word & self.mask()) >> self.lo
    }
    /// The widest value the field holds.
    pub const fn max(self) -> u32 {
        self.mask() >> self.lo
    }
}

/// GRBM_GFX_INDEX fields (GFX12's engine index is 4 bits wide, its array index 2).
pub mod grbm {
    use super::Field;
    use crate::gpu::Generation;
    pub const INSTANCE_INDEX: Field = Field::new(0, 7);
    pub const SA_INDEX: Field = Field::new(8, 15);
    pub const SE_INDEX: Field = Field::new(16, 23);
    pub const SE_INDEX_GFX12: Field = Field::new(16, 19);
    pub const SA_BROADCAST: u32 = 1 << 29;
    pub const INSTANCE_BROADCAST: u32 = 1 << 30;
    pub const SE_BROADCAST: u32 = 1 << 31;
    /// Every engine, array and instance.
    pub const BROADCAST: u32 = SA_BROADCAST | INSTANCE_BROADCAST | SE_BROADCAST;

    pub fn se_index(family: Generation) -> Field {
        if family == Generation::Gfx12 {
            SE_INDEX_GFX12
        } else {
            SE_INDEX
        }
    }
}

/// SQ_THREAD_TRACE_STATUS fields.
pub mod status {
    use super::Field;
    use crate::gpu::Generation;
    /// FINISH_DONE and BUSY by family.
    pub fn finish_done(f: Generation) -> Field {
        match f {
            Generation::Gfx9 => Field::new(16, 25),
            _ => Field::new(12, 23),
        }
    }
    pub fn busy(f: Generation) -> Field {
        match f {
            Generation::Gfx9 => Field::new(30, 30),
            _ => Field::new(25, 25),
        }
    }
}

/// SQ_THREAD_TRACE_WPTR's offset in 32-byte units (29 bits from GFX11 on, 30 on GFX9).
pub fn wptr_offset(f: Generation) -> Field {
    match f {
        Generation::Gfx9 => Field::new(0, 29),
        _ => Field::new(0, 28),
    }
}

/// The buffer size fields, in 4096-byte pages: 22 bits in every family.
pub fn size_field(f: Generation) -> Field {
    match f {
        Generation::Gfx11 => Field::new(8, 29),
        _ => Field::new(0, 21),
    }
}

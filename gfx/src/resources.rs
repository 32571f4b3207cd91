//! What a compute unit offers the waves of a kernel: the figures occupancy (waves per SIMD) is
//! computed from. The per-target figures are a column of the target's row ([`Resources`], one of
//! the named sets below); what follows from the generation (the SGPR limit, SIMDs and barriers
//! per CU or WGP) are methods of [`Generation`]. The figures are LLVM's (AMDGPUBaseInfo's
//! `IsaInfo`, GCNSubtarget), checked against the compiler's own occupancy remarks
//! (`tests/tests/cost_report.rs`).

use crate::Generation;

/// How a target holds AGPRs (the accumulation registers of the matrix instructions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgprFile {
    /// No AGPRs.
    None,
    /// A file of their own beside the VGPRs (gfx908): a wave is charged the larger of the two.
    Separate,
    /// One file with the VGPRs (gfx90a and later CDNA): the architectural VGPRs, rounded up to
    /// [`UNIFIED_AGPR_ALIGNMENT`], then the AGPRs.
    Unified,
}

/// Where the AGPRs start in a unified file: the architectural VGPR count rounded up to this.
pub const UNIFIED_AGPR_ALIGNMENT: u32 = 4;

/// The largest work-group (flat work-group size) of every target.
pub const MAX_WORKGROUP_SIZE: u32 = 1024;

/// The figures of one target's compute unit. Register figures are for wave64; gfx10 and later
/// have twice the VGPRs, in twice the granule, for wave32 ([`Resources::vgprs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resources {
    /// Wave slots per SIMD: the most waves a SIMD holds.
    pub waves_per_simd: u32,
    /// VGPRs per SIMD for wave64 waves (on a unified target VGPRs and AGPRs together).
    pub vgprs_wave64: u32,
    /// The VGPR allocation granule of a wave64 wave.
    pub vgpr_granule_wave64: u32,
    pub agprs: AgprFile,
    /// LDS bytes per CU; a gfx10+ work-group processor in WGP mode (the default) shares twice
    /// this between its work-groups.
    pub lds_bytes_per_cu: u32,
}

/// GCN 5 (gfx900 to gfx906, gfx909, gfx90c): 10 waves, 256 VGPRs in fours.
pub const GCN5: Resources = Resources {
    waves_per_simd: 10,
    vgprs_wave64: 256,
    vgpr_granule_wave64: 4,
    agprs: AgprFile::None,
    lds_bytes_per_cu: 65536,
};

/// CDNA 1 (gfx908): GCN 5 with a separate file of 256 AGPRs.
pub const CDNA1: Resources = Resources {
    agprs: AgprFile::Separate,
    ..GCN5
};

/// CDNA 2 and 3 (gfx90a, gfx940 to gfx942): 8 waves, 512 unified VGPRs and AGPRs in eights.
pub const CDNA2: Resources = Resources {
    waves_per_simd: 8,
    vgprs_wave64: 512,
    vgpr_granule_wave64: 8,
    agprs: AgprFile::Unified,
    lds_bytes_per_cu: 65536,
};

/// CDNA 4 (gfx950): CDNA 2 with 160 KiB of LDS.
pub const CDNA4: Resources = Resources {
    lds_bytes_per_cu: 163840,
    ..CDNA2
};

/// RDNA 1 (gfx1010 to gfx1013): 20 waves, 512 VGPRs (wave64) in fours.
pub const RDNA1: Resources = Resources {
    waves_per_simd: 20,
    vgprs_wave64: 512,
    vgpr_granule_wave64: 4,
    agprs: AgprFile::None,
    lds_bytes_per_cu: 65536,
};

/// RDNA 2 and the smaller RDNA 3 / 3.5 parts (gfx1030 to gfx1036, gfx1102, gfx1103, gfx1150,
/// gfx1152, gfx1153): 16 waves, 512 VGPRs (wave64) in eights.
pub const RDNA2: Resources = Resources {
    waves_per_simd: 16,
    vgpr_granule_wave64: 8,
    ..RDNA1
};

/// The RDNA 3 / 3.5 / 4 parts with half as many VGPRs again (gfx1100, gfx1101, gfx1151,
/// gfx1200, gfx1201; LLVM's `Feature1_5xVGPRs`): 768 VGPRs (wave64) in twelves.
pub const RDNA3_LARGE: Resources = Resources {
    vgprs_wave64: 768,
    vgpr_granule_wave64: 12,
    ..RDNA2
};

impl Resources {
    /// Whether a wave of `wave_size` lanes gets the wave32 register file (gfx10 and later).
    fn doubles(generation: Generation, wave_size: u32) -> bool {
        wave_size == 32 && generation >= Generation::Gfx10
    }

    /// VGPRs per SIMD for waves of `wave_size` lanes.
    pub fn vgprs(&self, generation: Generation, wave_size: u32) -> u32 {
        self.vgprs_wave64 << u32::from(Self::doubles(generation, wave_size))
    }

    /// The VGPR allocation granule of a wave of `wave_size` lanes.
    pub fn vgpr_granule(&self, generation: Generation, wave_size: u32) -> u32 {
        self.vgpr_granule_wave64 << u32::from(Self::doubles(generation, wave_size))
    }

    /// The VGPRs a wave is charged: architectural VGPRs and AGPRs combined by the file's layout.
    pub fn total_vgprs(&self, arch_vgprs: u32, agprs: u32) -> u32 {
        match self.agprs {
            AgprFile::Unified if agprs > 0 => {
                arch_vgprs.div_ceil(UNIFIED_AGPR_ALIGNMENT) * UNIFIED_AGPR_ALIGNMENT + agprs
            }
            AgprFile::Unified | AgprFile::None => arch_vgprs,
            AgprFile::Separate => arch_vgprs.max(agprs),
        }
    }
}

impl Generation {
    /// Whether work-group processors (two CUs sharing their LDS, four SIMDs) exist: gfx10 and
    /// later, where code runs in WGP mode unless built with `-mcumode`.
    pub fn has_wgp_mode(self) -> bool {
        self >= Generation::Gfx10
    }

    /// The SIMDs the waves of one work-group are spread over: 4 per CU, and per WGP (two CUs of
    /// two SIMDs each) on gfx10+ in WGP mode; 2 in CU mode.
    pub fn simds_per_cu(self, wgp_mode: bool) -> u32 {
        if self.has_wgp_mode() && !wgp_mode {
            2
        } else {
            4
        }
    }

    /// Work-groups of more than one wave a CU (or WGP) can hold at once, by its barriers: 16,
    /// 32 on a WGP.
    pub fn max_barrier_workgroups(self, wgp_mode: bool) -> u32 {
        if self.has_wgp_mode() && wgp_mode {
            32
        } else {
            16
        }
    }

    /// Waves per SIMD that `sgprs` SGPRs allow (at most `max_waves`): a SIMD holds 800 SGPRs on
    /// gfx8 and gfx9 (512 before), in granules of 16 (8); from gfx10 on SGPRs limit nothing.
    pub fn occupancy_with_sgprs(self, sgprs: u32, max_waves: u32) -> u32 {
        let steps: &[(u32, u32)] = match self {
            Generation::Gfx10 | Generation::Gfx11 | Generation::Gfx12 => return max_waves,
            Generation::Gfx8 | Generation::Gfx9 => &[(80, 10), (88, 9), (100, 8)],
            Generation::Gfx6 | Generation::Gfx7 => &[(48, 10), (56, 9), (64, 8), (72, 7), (80, 6)],
        };
        let fallback = if self >= Generation::Gfx8 { 7 } else { 5 };
        let waves = steps
            .iter()
            .find(|(limit, _)| sgprs <= *limit)
            .map_or(fallback, |(_, w)| *w);
        waves.min(max_waves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    fn res(name: &str) -> Resources {
        Target::lookup(name).and_then(|t| t.resources).unwrap()
    }

    #[test]
    fn register_files() {
        let g9 = Generation::Gfx9;
        let g11 = Generation::Gfx11;
        assert_eq!(res("gfx90a").vgprs(g9, 64), 512);
        assert_eq!(res("gfx906").vgpr_granule(g9, 64), 4);
        assert_eq!(res("gfx1100").vgprs(g11, 32), 1536);
        assert_eq!(res("gfx1100").vgpr_granule(g11, 32), 24);
        assert_eq!(res("gfx1102").vgprs(g11, 32), 1024);
        assert_eq!(res("gfx1102").vgpr_granule(g11, 64), 8);
        assert_eq!(res("gfx1010").vgpr_granule(Generation::Gfx10, 32), 8);
        assert_eq!(res("gfx950").lds_bytes_per_cu, 163840);
        // gfx90a: arch VGPRs rounded to 4, then AGPRs; gfx908: the larger file.
        assert_eq!(res("gfx90a").total_vgprs(41, 33), 77);
        assert_eq!(res("gfx90a").total_vgprs(41, 0), 41);
        assert_eq!(res("gfx908").total_vgprs(11, 61), 61);
        assert!(Target::lookup("gfx803").unwrap().resources.is_none());
    }

    #[test]
    fn sgpr_limits_and_cu_shape() {
        assert_eq!(Generation::Gfx9.occupancy_with_sgprs(80, 10), 10);
        assert_eq!(Generation::Gfx9.occupancy_with_sgprs(81, 10), 9);
        assert_eq!(Generation::Gfx9.occupancy_with_sgprs(102, 10), 7);
        assert_eq!(Generation::Gfx9.occupancy_with_sgprs(90, 8), 8);
        assert_eq!(Generation::Gfx7.occupancy_with_sgprs(81, 10), 5);
        assert_eq!(Generation::Gfx10.occupancy_with_sgprs(106, 16), 16);
        assert_eq!(Generation::Gfx9.simds_per_cu(true), 4);
        assert_eq!(Generation::Gfx10.simds_per_cu(false), 2);
        assert_eq!(Generation::Gfx11.max_barrier_workgroups(true), 32);
        assert_eq!(Generation::Gfx11.max_barrier_workgroups(false), 16);
        assert_eq!(Generation::Gfx9.max_barrier_workgroups(true), 16);
    }
}

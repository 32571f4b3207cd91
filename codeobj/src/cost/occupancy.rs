//! Occupancy (waves per SIMD) as the compiler computes it for its `Occupancy [waves/SIMD]`
//! remark: the least of what the wave slots, the SGPRs, the VGPRs and the LDS per work-group
//! allow, with the target's figures from sqtt-gfx.
//!
//! LLVM's rules changed over the releases this project meets, and the report follows the
//! compiler that built the code (its major from `.comment`; the newest rules when unknown), so
//! that it equals that compiler's own remarks:
//!
//! | LLVM | LDS and work-group size | gfx1100/1101/1151/1200/1201 VGPRs |
//! |---|---|---|
//! | 15 and older | waves of the work-groups the CU's 64 KiB hold, not spread over its SIMDs (an over-estimate); no WGP doubling | as gfx10.3 (1024 wave32) |
//! | 16 to 20 | those waves spread over the SIMDs, a WGP's LDS doubled | 1536 wave32 |
//! | 21 and later | the best any work-group size from 1 to the maximum reaches | 1536 wave32 |
//!
//! Not modelled: `amdgpu-waves-per-eu` (its upper bound can lower LLVM's figure; the metadata
//! does not carry it), a minimum work-group size above 1 (HIP kernels have 1; the metadata
//! carries only the maximum), and LLVM 23's rounding of LDS to its allocation granule.

use sqtt_gfx::{Generation, Resources, Target, RDNA2, RDNA3_LARGE};

/// The first LLVM major whose rule is [`LdsRule::PerSimd`].
const PER_SIMD_LLVM: u32 = 16;
/// The first LLVM major whose rule is [`LdsRule::BestWorkgroupSize`].
const RANGE_LLVM: u32 = 21;

/// How a compiler turns LDS use and work-group size into waves per SIMD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LdsRule {
    PerCu,
    PerSimd,
    BestWorkgroupSize,
}

/// What one kernel needs, as its metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelNeeds {
    pub sgprs: u32,
    /// VGPRs charged (architectural and AGPRs combined: the metadata's `.vgpr_count`).
    pub total_vgprs: u32,
    pub lds_bytes: u32,
    pub wave_size: u32,
    pub max_workgroup_size: u32,
    /// WGP mode (gfx10+; ignored before).
    pub wgp_mode: bool,
}

/// The occupancy rules of the compiler that built a code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Its LLVM major, if known.
    pub llvm_major: Option<u32>,
}

impl Rules {
    fn lds_rule(self) -> LdsRule {
        match self.llvm_major {
            Some(m) if m < PER_SIMD_LLVM => LdsRule::PerCu,
            Some(m) if m < RANGE_LLVM => LdsRule::PerSimd,
            _ => LdsRule::BestWorkgroupSize,
        }
    }

    /// The figures this compiler used for `target`: LLVM 15 and older had no 1.5x VGPR file.
    pub fn resources(self, target: &Target) -> Option<Resources> {
        let r = target.resources?;
        if r == RDNA3_LARGE && self.lds_rule() == LdsRule::PerCu {
            return Some(RDNA2);
        }
        Some(r)
    }

    /// Waves per SIMD for `needs` on `target`; `None` when the target's figures are unknown.
    pub fn occupancy(self, target: &Target, needs: &KernelNeeds) -> Option<u32> {
        let res = self.resources(target)?;
        let generation = target.generation;
        let max_waves = res.waves_per_simd;
        let by_lds = self.occupancy_with_lds(generation, &res, needs);
        let by_sgprs = generation.occupancy_with_sgprs(needs.sgprs.max(1), max_waves);
        let by_vgprs = occupancy_with_vgprs(generation, &res, needs);
        Some(max_waves.min(by_lds).min(by_sgprs).min(by_vgprs))
    }

    /// LLVM's `getOccupancyWithLocalMemSize` (to 20) / `getOccupancyWithWorkGroupSizes` (21+).
    fn occupancy_with_lds(
        self,
        generation: Generation,
        res: &Resources,
        needs: &KernelNeeds,
    ) -> u32 {
        let rule = self.lds_rule();
        let wgp = generation.has_wgp_mode() && needs.wgp_mode;
        let lds_total = if wgp && rule != LdsRule::PerCu {
            res.lds_bytes_per_cu * 2
        } else {
            res.lds_bytes_per_cu
        };
        let max_wgs_by_lds = lds_total / needs.lds_bytes.max(1);
        if max_wgs_by_lds == 0 {
            return 1;
        }
        let max_waves = res.waves_per_simd;
        let simds = generation.simds_per_cu(needs.wgp_mode);
        let wave = needs.wave_size.max(1);
        let wg_size = needs.max_workgroup_size.max(1);
        // Work-groups of `size` a CU holds by its wave slots and barriers.
        let max_wgs = |size: u32| {
            let waves = size.div_ceil(wave);
            let slots = max_waves * simds;
            if waves == 1 {
                slots
            } else {
                (slots / waves).min(generation.max_barrier_workgroups(needs.wgp_mode))
            }
        };
        match rule {
            LdsRule::PerCu | LdsRule::PerSimd => {
                let groups = max_wgs(wg_size).min(max_wgs_by_lds);
                let waves = groups * wg_size.div_ceil(wave);
                let per_simd = if rule == LdsRule::PerCu {
                    waves
                } else {
                    waves.div_ceil(simds)
                };
                per_simd.min(max_waves)
            }
            LdsRule::BestWorkgroupSize => {
                // The most waves a CU holds over work-group sizes 1..=wg_size: as many
                // single-wave groups as fit, grown into the slots left over, or the largest
                // groups when those hold more.
                let slots = max_waves * simds;
                let groups_of_one = max_wgs(1).min(max_wgs_by_lds);
                let waves_largest = wg_size.div_ceil(wave) * max_wgs(wg_size).min(max_wgs_by_lds);
                let waves = if waves_largest >= groups_of_one {
                    waves_largest
                } else {
                    let leftover_per_group = (slots - groups_of_one) / groups_of_one;
                    groups_of_one + groups_of_one * leftover_per_group.min((wg_size - 1) / wave)
                };
                waves.div_ceil(simds).clamp(1, max_waves)
            }
        }
    }
}

/// LLVM's `getNumWavesPerEUWithNumVGPRs`.
fn occupancy_with_vgprs(generation: Generation, res: &Resources, needs: &KernelNeeds) -> u32 {
    let granule = res.vgpr_granule(generation, needs.wave_size);
    let max_waves = res.waves_per_simd;
    if needs.total_vgprs < granule {
        return max_waves;
    }
    let rounded = needs.total_vgprs.div_ceil(granule) * granule;
    (res.vgprs(generation, needs.wave_size) / rounded).clamp(1, max_waves)
}

#[cfg(test)]
mod tests;

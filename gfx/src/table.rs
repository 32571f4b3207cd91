//! The table of targets. To add one: one row, in gfx number order, with its generation, its
//! `EF_AMDGPU_MACH` value (LLVM's `llvm/BinaryFormat/ELF.h`), its GC IP version where the
//! thread-trace tools need it, its shader-clock read where marker headers carry a clock, and
//! its compute unit's figures (`resources.rs`) where an LLVM confirms them.

use crate::Generation::{Gfx10, Gfx11, Gfx12, Gfx6, Gfx7, Gfx8, Gfx9};
use crate::ShaderClock::{Cycles64, CyclesLo};
use crate::Target;
use crate::{CDNA1, CDNA2, CDNA4, GCN5, RDNA1, RDNA2, RDNA3_LARGE};

const fn t(name: &'static str, generation: crate::Generation) -> Target {
    Target::new(name, generation)
}

/// Every gfx target the project knows, one row each.
pub const TARGETS: &[Target] = &[
    t("gfx600", Gfx6).mach(0x020),
    t("gfx601", Gfx6).mach(0x021),
    t("gfx602", Gfx6).mach(0x03a),
    t("gfx700", Gfx7).mach(0x022),
    t("gfx701", Gfx7).mach(0x023),
    t("gfx702", Gfx7).mach(0x024),
    t("gfx703", Gfx7).mach(0x025),
    t("gfx704", Gfx7).mach(0x026),
    t("gfx705", Gfx7).mach(0x03b),
    t("gfx801", Gfx8).mach(0x028),
    t("gfx802", Gfx8).mach(0x029),
    t("gfx803", Gfx8).mach(0x02a),
    t("gfx805", Gfx8).mach(0x03c),
    t("gfx810", Gfx8).mach(0x02b),
    t("gfx900", Gfx9).mach(0x02c).res(GCN5),
    t("gfx902", Gfx9).mach(0x02d).res(GCN5),
    t("gfx904", Gfx9).mach(0x02e).res(GCN5),
    t("gfx906", Gfx9).mach(0x02f).res(GCN5),
    t("gfx908", Gfx9).mach(0x030).res(CDNA1),
    t("gfx909", Gfx9).mach(0x031).res(GCN5),
    t("gfx90a", Gfx9).mach(0x03f).gc(9, 4, 2).res(CDNA2),
    t("gfx90c", Gfx9).mach(0x032).res(GCN5),
    t("gfx940", Gfx9).mach(0x040).res(CDNA2),
    t("gfx941", Gfx9).mach(0x04b).res(CDNA2),
    t("gfx942", Gfx9).mach(0x04c).gc(9, 4, 3).res(CDNA2),
    t("gfx950", Gfx9).mach(0x04f).gc(9, 5, 0).res(CDNA4),
    t("gfx1010", Gfx10).mach(0x033).res(RDNA1),
    t("gfx1011", Gfx10).mach(0x034).res(RDNA1),
    t("gfx1012", Gfx10).mach(0x035).res(RDNA1),
    t("gfx1013", Gfx10).mach(0x042).res(RDNA1),
    t("gfx1030", Gfx10).mach(0x036).res(RDNA2),
    t("gfx1031", Gfx10).mach(0x037).res(RDNA2),
    t("gfx1032", Gfx10).mach(0x038).res(RDNA2),
    t("gfx1033", Gfx10).mach(0x039).res(RDNA2),
    t("gfx1034", Gfx10).mach(0x03e).res(RDNA2),
    t("gfx1035", Gfx10).mach(0x03d).res(RDNA2),
    t("gfx1036", Gfx10).mach(0x045).res(RDNA2),
    t("gfx1100", Gfx11)
        .mach(0x041)
        .gc(11, 0, 0)
        .res(RDNA3_LARGE),
    t("gfx1101", Gfx11)
        .mach(0x046)
        .gc(11, 0, 3)
        .res(RDNA3_LARGE),
    t("gfx1102", Gfx11).mach(0x047).gc(11, 0, 2).res(RDNA2),
    t("gfx1103", Gfx11).mach(0x044).res(RDNA2),
    t("gfx1150", Gfx11).mach(0x043).gc(11, 5, 0).res(RDNA2),
    t("gfx1151", Gfx11).mach(0x04a).res(RDNA3_LARGE),
    t("gfx1152", Gfx11).mach(0x055).res(RDNA2),
    t("gfx1153", Gfx11).mach(0x058).res(RDNA2),
    t("gfx1154", Gfx11).mach(0x057),
    t("gfx1170", Gfx11).mach(0x05d),
    t("gfx1171", Gfx11).mach(0x05e),
    t("gfx1172", Gfx11).mach(0x05c),
    t("gfx1200", Gfx12)
        .mach(0x048)
        .gc(12, 0, 0)
        .clock(CyclesLo)
        .res(RDNA3_LARGE),
    t("gfx1201", Gfx12)
        .mach(0x04e)
        .gc(12, 0, 1)
        .clock(CyclesLo)
        .res(RDNA3_LARGE),
    // AMD's pass names gfx1202; no LLVM assigns it a machine number yet.
    t("gfx1202", Gfx12).clock(Cycles64),
    t("gfx1250", Gfx12).mach(0x049).clock(Cycles64),
    t("gfx1251", Gfx12).mach(0x05a).clock(Cycles64),
];

//! An instruction-length decoder for AMDGPU machine code (gfx9 to gfx12), and the scan of one
//! function with it: instructions, trace records and their values, call targets.
//!
//! Why a decoder of our own and not the toolchain's disassembler: a report needs only how long
//! each instruction is and a handful of opcodes (`s_ttracedata`, the M0 writes, `s_getpc_b64`),
//! which the first dword tells: its top bits name the encoding, the encoding fixes the base
//! length, and a few fields add a literal, a DPP/SDWA dword or the extra address dwords of an
//! NSA image instruction. That is a page of rules per generation instead of LLVM's tables, runs
//! without llvm-objdump on the machine (a CI runner that only reads binaries), and goes through
//! a large fat binary in milliseconds (llvm-objdump takes seconds). `tests/tests/cost_report.rs`
//! compares the counts with llvm-objdump's disassembly of real builds of every lane's targets.
//!
//! Not decoded: gfx12.5 (gfx1250, gfx1251), whose 64-bit literals and new encodings these rules
//! do not know; such code objects report no instruction counts.

use sqtt_gfx::{Generation, Target};

/// The encoding rules of one generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// gfx9 (GCN 5, CDNA 1-4).
    Gfx9,
    /// gfx10 (RDNA 1-2).
    Gfx10,
    /// gfx11 (RDNA 3, 3.5).
    Gfx11,
    /// gfx12 (RDNA 4; not gfx12.5).
    Gfx12,
}

impl Family {
    /// The rules for a target, if this decoder knows its encodings.
    pub fn of(target: &Target) -> Option<Family> {
        match target.generation {
            Generation::Gfx9 => Some(Family::Gfx9),
            Generation::Gfx10 => Some(Family::Gfx10),
            Generation::Gfx11 => Some(Family::Gfx11),
            // gfx12.5 has 64-bit literals and other encodings.
            Generation::Gfx12 if !target.name.starts_with("gfx125") => Some(Family::Gfx12),
            _ => None,
        }
    }

    /// The M0 register's operand number (gfx11 swapped M0 and `null`).
    fn m0(self) -> u32 {
        match self {
            Family::Gfx9 | Family::Gfx10 => 124,
            Family::Gfx11 | Family::Gfx12 => 125,
        }
    }

    /// SOPP opcodes of `s_ttracedata` and `s_ttracedata_imm` (none on gfx9).
    fn ttracedata_ops(self) -> (u32, Option<u32>) {
        match self {
            Family::Gfx9 => (0x16, None),
            Family::Gfx10 => (0x16, Some(0x28)),
            Family::Gfx11 | Family::Gfx12 => (0x3a, Some(0x3b)),
        }
    }

    /// SOP1 opcodes of `s_mov_b32` and `s_getpc_b64`.
    fn sop1_ops(self) -> (u32, u32) {
        match self {
            Family::Gfx9 => (0x00, 0x1c),
            Family::Gfx10 => (0x03, 0x1f),
            Family::Gfx11 | Family::Gfx12 => (0x00, 0x47),
        }
    }

    /// SOP2 opcode of `s_or_b32`.
    fn sop2_or(self) -> u32 {
        match self {
            Family::Gfx9 => 0x0e,
            Family::Gfx10 => 0x10,
            Family::Gfx11 | Family::Gfx12 => 0x18,
        }
    }

    /// SOPK opcode of `s_setreg_imm32_b32`, the one SOPK instruction with a literal.
    fn setreg_imm32(self) -> u32 {
        match self {
            Family::Gfx9 => 0x14,
            Family::Gfx10 => 0x15,
            Family::Gfx11 | Family::Gfx12 => 0x13,
        }
    }

    /// Whether a VOP2 opcode carries a constant `K` (madmk/madak/fmamk/fmaak), a literal in any
    /// case.
    fn vop2_has_k(self, op: u32) -> bool {
        match self {
            // v_madmk/madak_f32 (gfx940+: v_fmamk/fmaak_f32), v_madmk/madak_f16.
            Family::Gfx9 => matches!(op, 0x17 | 0x18 | 0x24 | 0x25),
            // v_madmk/madak_f32 (gfx10.1), v_fmamk/fmaak_f32, v_fmamk/fmaak_f16.
            Family::Gfx10 => matches!(op, 0x20 | 0x21 | 0x2c | 0x2d | 0x37 | 0x38),
            Family::Gfx11 | Family::Gfx12 => matches!(op, 0x2c | 0x2d | 0x37 | 0x38),
        }
    }

    /// Bytes a 9-bit VALU source operand adds: a literal (255), an SDWA (249, to gfx10) or DPP
    /// (250; DPP8 233/234 from gfx10) dword.
    fn vsrc_extra(self, src: u32) -> u32 {
        match src {
            255 | 250 => 4,
            249 if matches!(self, Family::Gfx9 | Family::Gfx10) => 4,
            233 | 234 if self != Family::Gfx9 => 4,
            _ => 0,
        }
    }
}

/// Why an instruction could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset from the start of the function.
    pub offset: u64,
    pub word: u32,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "offset {:#x}: no instruction encoding starts with {:#010x}",
            self.offset, self.word
        )
    }
}

fn dword(code: &[u8], at: usize) -> Option<u32> {
    let b = code.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The length in bytes of the instruction whose first dword is `w0` (`w1` the second, when the
/// base encoding has one), or `None` for an encoding this generation does not have.
pub fn length(family: Family, w0: u32, w1: Option<u32>) -> Option<u32> {
    let lit = |src: u32| if src == 255 { 4 } else { 0 };
    if w0 >> 31 == 0 {
        // VOP1 (0111111), VOPC (0111110), VOP2: src0 in bits 8:0.
        let src0 = w0 & 0x1ff;
        let is_vop2 = w0 >> 25 < 0x3e;
        if is_vop2 && family.vop2_has_k((w0 >> 25) & 0x3f) {
            return Some(8);
        }
        return Some(4 + family.vsrc_extra(src0));
    }
    if w0 >> 30 == 0b10 {
        let ssrc0 = w0 & 0xff;
        let ssrc1 = (w0 >> 8) & 0xff;
        return Some(match w0 >> 23 {
            0x17d => 4 + lit(ssrc0),                 // SOP1
            0x17e => 4 + lit(ssrc0).max(lit(ssrc1)), // SOPC
            0x17f => 4,                              // SOPP
            _ if w0 >> 28 == 0xb => {
                // SOPK
                if (w0 >> 23) & 0x1f == family.setreg_imm32() {
                    8
                } else {
                    4
                }
            }
            _ => 4 + lit(ssrc0).max(lit(ssrc1)), // SOP2
        });
    }
    let vop3_srcs = |w1: u32| [w1 & 0x1ff, (w1 >> 9) & 0x1ff, (w1 >> 18) & 0x1ff];
    // VOP3/VOP3P from gfx10: a literal for any source; from gfx11 DPP in src0 too.
    let vop3 = |w1: Option<u32>| -> Option<u32> {
        let srcs = vop3_srcs(w1?);
        let literal = if srcs.contains(&255) { 4 } else { 0 };
        let dpp = match family {
            Family::Gfx11 | Family::Gfx12 if matches!(srcs[0], 250 | 233 | 234) => 4,
            _ => 0,
        };
        Some(8 + literal.max(dpp))
    };
    let prefix6 = w0 >> 26;
    match family {
        Family::Gfx9 => match prefix6 {
            0x30 | 0x31 | 0x34 | 0x36 | 0x37 | 0x38 | 0x3a | 0x3c => Some(8), // SMEM EXP VOP3(P) DS FLAT MUBUF MTBUF MIMG
            0x35 => Some(4),                                                  // VINTRP
            _ => None,
        },
        Family::Gfx10 => match prefix6 {
            0x3d | 0x3e | 0x36 | 0x37 | 0x38 | 0x3a => Some(8), // SMEM EXP DS FLAT MUBUF MTBUF
            0x35 | 0x33 => vop3(w1),                            // VOP3, VOP3P
            0x32 => Some(4),                                    // VINTRP
            0x3c => Some(8 + 4 * ((w0 >> 1) & 3)),              // MIMG, NSA dwords in bits 2:1
            _ => None,
        },
        Family::Gfx11 | Family::Gfx12 => {
            match (family, prefix6) {
                (_, 0x3d | 0x3e | 0x36) => return Some(8), // SMEM EXP DS
                (_, 0x35) => return vop3(w1),              // VOP3
                (_, 0x32) => {
                    // VOPD: literal for either src0 or an fmaak/fmamk half.
                    let w1 = w1?;
                    let (op_x, op_y) = ((w0 >> 22) & 0xf, (w0 >> 17) & 0x1f);
                    let k = matches!(op_x, 1 | 2) || matches!(op_y, 1 | 2);
                    let literal = k || w0 & 0x1ff == 255 || w1 & 0x1ff == 255;
                    return Some(if literal { 12 } else { 8 });
                }
                (Family::Gfx11, 0x37 | 0x38 | 0x3a) => return Some(8), // FLAT MUBUF MTBUF
                (Family::Gfx11, 0x3c) => return Some(8 + 4 * (w0 & 1)), // MIMG, NSA dword
                // VBUFFER, VIMAGE, VSAMPLE, VFLAT/VGLOBAL/VSCRATCH: 96 bits.
                (Family::Gfx12, 0x31 | 0x34 | 0x39 | 0x3b) => return Some(12),
                _ => {}
            }
            match w0 >> 24 {
                0xcc => vop3(w1), // VOP3P
                0xcd => Some(8),  // VINTERP
                0xce => Some(4),  // LDSDIR / VDSDIR
                _ => None,
            }
        }
    }
}

/// What a scan of one function found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    pub instructions: u64,
    /// `s_ttracedata` and `s_ttracedata_imm` instructions.
    pub trace_instructions: u64,
    /// The value each trace instruction writes, where the code gives it: the immediate of
    /// `s_ttracedata_imm`, the constant moved into M0 before `s_ttracedata`, or (`packed`
    /// only) the constant a register moved into M0 was last or-ed with; `None` for a run-time
    /// value (a payload).
    pub records: Vec<Option<u32>>,
    /// Addresses `s_getpc_b64` + `s_add_u32`/`s_addc_u32` compute (calls and data), when the code
    /// is at its final address (`linked`).
    pub pc_targets: Vec<u64>,
    /// Where decoding stopped, if it did.
    pub error: Option<DecodeError>,
}

/// The value of a scalar source operand that is a constant: an inline integer or float, or the
/// literal `literal`.
fn scalar_constant(src: u32, literal: Option<u32>) -> Option<u32> {
    Some(match src {
        128..=192 => src - 128,
        193..=208 => (192i32 - src as i32) as u32,
        240 => 0x3f00_0000,
        241 => 0xbf00_0000,
        242 => 0x3f80_0000,
        243 => 0xbf80_0000,
        244 => 0x4000_0000,
        245 => 0xc000_0000,
        246 => 0x4080_0000,
        247 => 0xc080_0000,
        248 => 0x3e22_f983,
        255 => literal?,
        _ => return None,
    })
}

/// How many instructions back a constant or-ed into an SGPR still counts as the header a later
/// `s_mov_b32 m0, sN` moves (the plugin's packed headers are built right before their record).
const PACKED_HEADER_REACH: u64 = 16;

/// Scans `code`, a function at address `address`. `packed`: the code object packs a clock into
/// its headers, so records written from a register are headers (no payloads exist then) whose
/// ID is in the constant or-ed into that register. `linked`: addresses are final (not a
/// relocatable object), so `s_getpc_b64` targets mean something.
pub fn scan(family: Family, code: &[u8], address: u64, packed: bool, linked: bool) -> Scan {
    let mut out = Scan::default();
    let (trace_op, trace_imm_op) = family.ttracedata_ops();
    let (mov_op, getpc_op) = family.sop1_ops();
    let or_op = family.sop2_or();
    let m0 = family.m0();
    // M0's constant, if the last write to it was one.
    let mut m0_value: Option<u32> = None;
    // Per SGPR: the constant last or-ed (or moved) into it and when.
    let mut sgpr_const: [Option<(u32, u64)>; 128] = [None; 128];
    // Per SGPR pair base: the PC `s_getpc_b64` wrote, and the low half added to it.
    let mut pc_base: [Option<(u64, Option<u32>)>; 128] = [None; 128];
    let mut at = 0usize;
    while at < code.len() {
        let Some(w0) = dword(code, at) else {
            out.error = Some(DecodeError {
                offset: at as u64,
                word: 0,
            });
            break;
        };
        let w1 = dword(code, at + 4);
        let Some(len) = length(family, w0, w1).filter(|l| at + *l as usize <= code.len()) else {
            out.error = Some(DecodeError {
                offset: at as u64,
                word: w0,
            });
            break;
        };
        out.instructions += 1;
        let literal = (len == 8).then_some(w1).flatten();
        let index = out.instructions;
        if w0 >> 23 == 0x17f {
            // SOPP
            let op = (w0 >> 16) & 0x7f;
            if op == trace_op {
                out.trace_instructions += 1;
                out.records.push(m0_value);
            } else if Some(op) == trace_imm_op {
                out.trace_instructions += 1;
                out.records.push(Some(w0 & 0xffff));
            }
        } else if w0 >> 23 == 0x17d {
            // SOP1: sdst in 22:16.
            let (op, sdst, src) = ((w0 >> 8) & 0xff, (w0 >> 16) & 0x7f, w0 & 0xff);
            if op == mov_op {
                let value = scalar_constant(src, literal).or_else(|| {
                    let (v, when) = sgpr_const.get(src as usize).copied().flatten()?;
                    (packed && index - when <= PACKED_HEADER_REACH).then_some(v)
                });
                if sdst == m0 {
                    m0_value = value;
                } else if let Some(slot) = sgpr_const.get_mut(sdst as usize) {
                    *slot = scalar_constant(src, literal).map(|v| (v, index));
                }
            } else if op == getpc_op && linked {
                if let Some(slot) = pc_base.get_mut(sdst as usize) {
                    *slot = Some((address + at as u64 + 4, None));
                }
            } else if sdst == m0 {
                m0_value = None;
            } else if let Some(slot) = sgpr_const.get_mut(sdst as usize) {
                *slot = None;
            }
        } else if w0 >> 28 == 0xb && w0 >> 23 != 0x17e {
            // SOPK: sdst in 22:16; s_movk_i32 (op 0) moves a sign-extended 16-bit constant.
            let sdst = (w0 >> 16) & 0x7f;
            let value = ((w0 >> 23) & 0x1f == 0).then_some(w0 as u16 as i16 as i32 as u32);
            if sdst == m0 {
                m0_value = value;
            } else if let Some(slot) = sgpr_const.get_mut(sdst as usize) {
                *slot = value.map(|v| (v, index));
            }
        } else if w0 >> 30 == 0b10 && w0 >> 23 != 0x17e && w0 >> 28 != 0xb {
            // SOP2: sdst in 22:16, ssrc1 in 15:8, ssrc0 in 7:0.
            let (op, sdst) = ((w0 >> 23) & 0x7f, (w0 >> 16) & 0x7f);
            let (s0, s1) = (w0 & 0xff, (w0 >> 8) & 0xff);
            if sdst == m0 {
                m0_value = None;
            } else if let Some(slot) = sgpr_const.get_mut(sdst as usize) {
                *slot = (op == or_op)
                    .then(|| scalar_constant(s1, literal).or(scalar_constant(s0, literal)))
                    .flatten()
                    .map(|v| (v, index));
            }
            // s_add_u32 sN, sN, lo / s_addc_u32 sN+1, sN+1, hi after s_getpc_b64 sN: an address
            // relative to the PC the getpc read (gfx12 may sign-extend the high half first).
            if let Some(value) = literal.filter(|_| s0 == sdst && s1 == 255) {
                let n = sdst as usize;
                if let Some(Some((base, lo))) = pc_base.get(n).copied() {
                    if lo.is_none() {
                        pc_base[n] = Some((base, Some(value)));
                    }
                } else if let Some(Some((base, Some(lo)))) =
                    n.checked_sub(1).and_then(|b| pc_base.get(b).copied())
                {
                    let offset = ((u64::from(value) << 32) | u64::from(lo)) as i64;
                    out.pc_targets.push(base.wrapping_add(offset as u64));
                    pc_base[n - 1] = None;
                }
            }
        }
        at += len as usize;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(bytes: &[u8]) -> (u32, Option<u32>) {
        (dword(bytes, 0).unwrap(), dword(bytes, 4))
    }

    /// Lengths of encodings llvm-mc gave for each generation (the bytes are its output).
    #[test]
    fn lengths_of_assembled_instructions() {
        let cases: &[(Family, &[u8], u32)] = &[
            // gfx90a
            (Family::Gfx9, &[0x02, 0x07, 0x02, 0x2e, 0, 0, 0x20, 0x41], 8), // v_madmk_f32
            (Family::Gfx9, &[0xff, 0x04, 0x02, 0x02, 0, 0, 0x20, 0x41], 8), // v_add_f32 literal
            (Family::Gfx9, &[0xf9, 0x06, 0x02, 0x02, 0, 0, 0, 0], 8),       // v_add_f32_sdwa
            (Family::Gfx9, &[0xfa, 0x06, 0x02, 0x02, 0, 0, 0, 0], 8),       // v_add_f32_dpp
            (Family::Gfx9, &[0x01, 0x05, 0x08, 0x7e], 4),                   // v_readfirstlane_b32
            (Family::Gfx9, &[0x01, 0x00, 0xff, 0xd1, 0, 0, 0, 0], 8),       // VOP3
            (Family::Gfx9, &[0x00, 0x00, 0x96, 0xbf], 4),                   // s_ttracedata
            (Family::Gfx9, &[0xff, 0x00, 0xfc, 0xbe, 0x34, 0x12, 0, 0], 8), // s_mov_b32 m0, lit
            (Family::Gfx9, &[0x34, 0x12, 0x7c, 0xb0], 4),                   // s_movk_i32
            (Family::Gfx9, &[0x01, 0xf8, 0x00, 0xba, 0x55, 0, 0, 0], 8),    // s_setreg_imm32_b32
            (Family::Gfx9, &[0x06, 0xff, 0x05, 0x87, 0x45, 0x23, 1, 0], 8), // s_or_b32 lit
            (Family::Gfx9, &[0x00, 0x00, 0x00, 0xc0, 0, 0, 0, 0], 8),       // s_load_dword
            // gfx1030
            (
                Family::Gfx10,
                &[
                    0x01, 0x00, 0x6d, 0xd7, 0x02, 0x07, 0xfe, 0x03, 0x45, 0x23, 1, 0,
                ],
                12,
            ), // v_add3_u32 lit
            (
                Family::Gfx10,
                &[0x01, 0x00, 0x6d, 0xd7, 0x02, 0x07, 0x12, 0x04],
                8,
            ), // v_add3_u32
            (
                Family::Gfx10,
                &[0xe9, 0x06, 0x02, 0x06, 0x02, 0x88, 0xc6, 0xfa],
                8,
            ), // dpp8
            (
                Family::Gfx10,
                &[0x02, 0x07, 0x02, 0x40, 0, 0, 0x20, 0x41],
                8,
            ), // v_madmk_f32
            (
                Family::Gfx10,
                &[0x0a, 0x0f, 0x80, 0xf0, 4, 0, 0x82, 0, 6, 0, 0, 0],
                12,
            ), // MIMG NSA
            (Family::Gfx10, &[0x02, 0x00, 0x04, 0xc8], 4), // v_interp_p1
            // gfx1100
            (
                Family::Gfx11,
                &[0x02, 0x07, 0x02, 0x58, 0, 0, 0x20, 0x41],
                8,
            ), // v_fmamk_f32
            (
                Family::Gfx11,
                &[
                    0x01, 0x00, 0x03, 0xd5, 0xfa, 0x06, 0x02, 0x00, 0x02, 0xe4, 0, 0xff,
                ],
                12,
            ), // VOP3 DPP
            (
                Family::Gfx11,
                &[0x01, 0x05, 0xc6, 0xc8, 0x04, 0x0b, 0x02, 0x00],
                8,
            ), // v_dual_mul_f32 x2
            (
                Family::Gfx11,
                &[0x01, 0x05, 0x46, 0xc8, 0x04, 0x0b, 0x02, 0x00],
                12,
            ), // v_dual_fmaak_f32
            (
                Family::Gfx11,
                &[0x01, 0x05, 0xc6, 0xc8, 0xff, 0x0a, 0x02, 0x00],
                12,
            ), // Y literal
            (Family::Gfx11, &[0x01, 0x00, 0x10, 0xce], 4), // lds_direct_load
            (
                Family::Gfx11,
                &[0x09, 0x0f, 0x6c, 0xf0, 0x04, 0, 2, 0x10, 6, 7, 0, 0],
                12,
            ), // MIMG NSA
            (Family::Gfx11, &[0x55, 0x00, 0xbb, 0xbf], 4), // s_ttracedata_imm
            // gfx1201
            (
                Family::Gfx12,
                &[0x7c, 0x00, 0x05, 0xec, 1, 0, 0, 0, 2, 0, 0, 0],
                12,
            ), // flat_load_b32
            (
                Family::Gfx12,
                &[0x00, 0x00, 0x05, 0xc4, 1, 8, 0x80, 0, 0, 0, 0, 0],
                12,
            ), // buffer_load_b32
            (
                Family::Gfx12,
                &[0x01, 0x00, 0xc0, 0xd3, 0, 0x10, 0, 0, 4, 5, 0, 0],
                12,
            ), // image_load
            (Family::Gfx12, &[0x00, 0x00, 0x00, 0xf4, 0, 0, 0, 0], 8), // s_load_b32
        ];
        for (family, bytes, want) in cases {
            let (w0, w1) = words(bytes);
            assert_eq!(
                length(*family, w0, w1),
                Some(*want),
                "{family:?} {bytes:02x?}"
            );
        }
        // Encodings a generation does not have.
        assert_eq!(length(Family::Gfx9, 0xf400_0000, Some(0)), None);
        assert_eq!(length(Family::Gfx12, 0xe000_0000, Some(0)), None);
    }

    fn asm(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn trace_records_and_their_values() {
        // gfx1100: s_ttracedata_imm 0x55; s_mov_b32 m0, 0x1234; s_nop 0; s_ttracedata;
        // v_readfirstlane_b32 s4, v1; s_mov_b32 m0, s4; s_ttracedata (a payload).
        let code = asm(&[
            0xbfbb_0055,
            0xbefd_00ff,
            0x1234,
            0xbf80_0000,
            0xbfba_0000,
            0x7e08_0501,
            0xbefd_0004,
            0xbfba_0000,
        ]);
        let s = scan(Family::Gfx11, &code, 0, false, true);
        assert_eq!((s.instructions, s.trace_instructions), (7, 3));
        assert_eq!(s.records, [Some(0x55), Some(0x1234), None]);
        assert!(s.error.is_none());
        // Packed: s_or_b32 s5, s6, 0x12345; s_mov_b32 m0, s5; s_ttracedata.
        let code = asm(&[0x8c05_ff06, 0x12345, 0xbefd_0005, 0xbfba_0000]);
        assert_eq!(
            scan(Family::Gfx11, &code, 0, true, true).records,
            [Some(0x12345)]
        );
        assert_eq!(scan(Family::Gfx11, &code, 0, false, true).records, [None]);
    }

    #[test]
    fn call_targets_from_getpc() {
        // gfx90a at 0x1000: s_getpc_b64 s[4:5]; s_add_u32 s4, s4, 0x100; s_addc_u32 s5, s5, 0;
        // s_swappc_b64 s[30:31], s[4:5].
        let code = asm(&[0xbe84_1c00, 0x8004_ff04, 0x100, 0x8205_ff05, 0, 0xbe9e_1e04]);
        let s = scan(Family::Gfx9, &code, 0x1000, false, true);
        assert_eq!(s.pc_targets, [0x1104]);
        assert!(scan(Family::Gfx9, &code, 0x1000, false, false)
            .pc_targets
            .is_empty());
    }

    #[test]
    fn truncated_and_unknown_code_stops_with_an_error() {
        let s = scan(
            Family::Gfx9,
            &[0xff, 0x00, 0xfc, 0xbe, 0x34],
            0,
            false,
            true,
        );
        assert_eq!(s.instructions, 0);
        assert_eq!(s.error.unwrap().offset, 0);
        let s = scan(
            Family::Gfx9,
            &asm(&[0xbf80_0000, 0xfc00_0000]),
            0,
            false,
            true,
        );
        assert_eq!((s.instructions, s.error.unwrap().offset), (1, 4));
    }
}

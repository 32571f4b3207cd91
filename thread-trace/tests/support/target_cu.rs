//! Hand-built GFX9 streams on and beside the trace's target CU (the header's DCU, shader array 0,
//! where AMD's decoder follows the waves slot by slot: `decode::Target`), with the waves AMD's
//! v0.1.6 library made of each (`reference.rs` compares with the library when one is given;
//! `packets.rs` holds the decoder to these without it). Each stream: rocprofv3's header, then
//! the tokens, each after a MISC of 40 cycles, so the `k`th token is at `40 * (k + 1)`.

/// A token: `S`/`E` a wave start/end (shader array, CU, SIMD, slot) with `S` of count 65 a
/// context save or restore's; `I` an instruction (SIMD, slot, type); `Save` a MISC
/// SAVE_CONTEXT; `Misc7` a MISC of type 7.
#[derive(Clone, Copy)]
pub enum Tok {
    S(u64, u64, u64, u64),
    S65(u64, u64, u64, u64),
    E(u64, u64, u64, u64),
    I(u64, u64, u64),
    Save,
    Misc7,
}

use Tok::*;

/// A wave as AMD numbers it: (CU, SIMD, slot, start, stop).
pub type AmdWave = (u8, u8, u8, u64, u64);

pub struct Case {
    pub name: &'static str,
    /// The header's target CU.
    pub dcu: u64,
    pub tokens: &'static [Tok],
    /// AMD's waves (its made-up ones, from time 0 for an end without a start, left out).
    pub waves: &'static [AmdWave],
}

const fn case(
    name: &'static str,
    dcu: u64,
    tokens: &'static [Tok],
    waves: &'static [AmdWave],
) -> Case {
    Case {
        name,
        dcu,
        tokens,
        waves,
    }
}

const PC: u64 = 7;
const VALU: u64 = 5;

#[rustfmt::skip]
pub const CASES: &[Case] = &[
    case("an end on the target CU of a slot it holds no wave in is dropped", 0,
        &[S(1, 0, 1, 3), E(0, 0, 1, 3), E(1, 0, 1, 3)], &[(0, 1, 3, 40, 120)]),
    case("off the target CU the shader array is not looked at", 0,
        &[S(1, 5, 1, 3), E(0, 5, 1, 3), E(1, 5, 1, 3)], &[(5, 1, 3, 40, 80)]),
    case("the header's DCU is the target", 3,
        &[S(1, 0, 1, 3), E(0, 0, 1, 3), E(1, 0, 1, 3)], &[(0, 1, 3, 40, 80)]),
    case("the DCU field is 5 bits: 16 is no 4-bit CU", 16,
        &[S(1, 0, 1, 3), E(0, 0, 1, 3), E(1, 0, 1, 3)], &[(0, 1, 3, 40, 80)]),
    case("target CU 3", 3,
        &[S(1, 3, 1, 3), E(0, 3, 1, 3), E(1, 3, 1, 3)], &[(3, 1, 3, 40, 120)]),
    case("an instruction of the slot makes it hold a wave", 0,
        &[S(1, 0, 1, 3), I(1, 3, VALU), E(0, 0, 1, 3)], &[(0, 1, 3, 40, 120)]),
    case("an instruction of another slot does not", 0,
        &[S(1, 0, 1, 3), I(1, 4, VALU), E(0, 0, 1, 3)], &[]),
    case("an instruction before the start", 0,
        &[I(1, 3, VALU), S(1, 0, 1, 3), E(0, 0, 1, 3), E(1, 0, 1, 3)], &[(0, 1, 3, 80, 120)]),
    case("a start with a count above 64 on the target CU is none", 0,
        &[S65(0, 0, 1, 3), E(0, 0, 1, 3)], &[]),
    case("a start with a count above 64 elsewhere is one", 0,
        &[S65(0, 5, 1, 3), E(0, 5, 1, 3)], &[(5, 1, 3, 40, 80)]),
    case("a start with a count above 64 in shader array 1 is one", 0,
        &[S65(1, 0, 1, 3), E(1, 0, 1, 3)], &[(0, 1, 3, 40, 80)]),
    case("a slot emptied by its end drops the next end", 0,
        &[S(0, 0, 1, 3), E(0, 0, 1, 3), S(1, 0, 1, 3), E(0, 0, 1, 3), E(1, 0, 1, 3)],
        &[(0, 1, 3, 40, 80), (0, 1, 3, 120, 200)]),
    case("a second start holds no second wave", 0,
        &[S(0, 0, 1, 3), S(0, 0, 1, 3), E(0, 0, 1, 3), E(0, 0, 1, 3)], &[(0, 1, 3, 40, 120)]),
    case("a held wave does not end in a context save", 0,
        &[S(0, 0, 1, 3), Save, E(0, 0, 1, 3)], &[]),
    case("a MISC of type 7 is no context save", 0,
        &[S(0, 0, 1, 3), Misc7, E(0, 0, 1, 3)], &[(0, 1, 3, 40, 120)]),
    case("a count above 64 without a save changes nothing", 0,
        &[S(0, 0, 1, 3), Misc7, S65(0, 0, 1, 3), E(0, 0, 1, 3)], &[(0, 1, 3, 40, 160)]),
    case("one restoring start is not enough", 0,
        &[S(0, 0, 1, 3), Save, S65(0, 0, 1, 3), E(0, 0, 1, 3)], &[]),
    case("two restoring starts await a PC", 0,
        &[S(0, 0, 1, 3), Save, S65(0, 0, 1, 3), S65(0, 0, 1, 3), E(0, 0, 1, 3)], &[]),
    case("restored by the PC", 0,
        &[S(0, 0, 1, 3), Save, S65(0, 0, 1, 3), S65(0, 0, 1, 3), I(1, 3, PC), E(0, 0, 1, 3)],
        &[(0, 1, 3, 40, 240)]),
    case("another instruction does not restore", 0,
        &[S(0, 0, 1, 3), Save, S65(0, 0, 1, 3), S65(0, 0, 1, 3), I(1, 3, VALU), E(0, 0, 1, 3)],
        &[]),
    case("a PC before the restoring starts does not restore", 0,
        &[S(0, 0, 1, 3), Save, I(1, 3, PC), S65(0, 0, 1, 3), S65(0, 0, 1, 3), E(0, 0, 1, 3)], &[]),
    case("restoring starts of another CU do not restore", 0,
        &[S(0, 0, 1, 3), Save, S65(0, 5, 1, 3), S65(0, 5, 1, 3), I(1, 3, PC), E(0, 0, 1, 3)], &[]),
    case("a save with no wave held changes nothing", 0,
        &[Save, S(0, 0, 1, 3), E(0, 0, 1, 3)], &[(0, 1, 3, 80, 120)]),
    case("an end dropped in a save, the wave ends once restored", 0,
        &[S(0, 0, 1, 3), Save, E(0, 0, 1, 3), S65(0, 0, 1, 3), S65(0, 0, 1, 3), I(1, 3, PC), E(0, 0, 1, 3)],
        &[(0, 1, 3, 40, 280)]),
    case("a wave an instruction made is held in a save", 0,
        &[S(1, 0, 1, 3), I(1, 3, VALU), Save, E(0, 0, 1, 3), E(1, 0, 1, 3)],
        &[(0, 1, 3, 40, 200)]),
    case("and ends once restored", 0,
        &[S(1, 0, 1, 3), I(1, 3, VALU), Save, S65(0, 0, 1, 3), S65(0, 0, 1, 3), I(1, 3, PC),
          E(0, 0, 1, 3)], &[(0, 1, 3, 40, 280)]),
    case("a wave an instruction made before its start is held in a save", 0,
        &[I(1, 3, VALU), Save, S(0, 0, 1, 3), E(0, 0, 1, 3)], &[]),
    case("a save holds every held slot", 0,
        &[S(0, 0, 1, 4), S(0, 0, 1, 3), Save, E(0, 0, 1, 4), E(0, 0, 1, 3)], &[]),
];

/// The stream of `case`.
pub fn bytes(case: &Case) -> Vec<u8> {
    stream(case.dcu, case.tokens)
}

/// `n` random tokens of 16 slots (CU 0, the target, and CU 1; both shader arrays; two SIMDs of
/// two slots each): starts, restoring starts, ends, instructions (of type PC or VALU), saves,
/// so that the slots' records, saves and restores meet in every order. `below(k)` draws from
/// `0..k`.
#[allow(dead_code)]
pub fn random_tokens(below: &mut impl FnMut(u64) -> u64, n: usize) -> Vec<Tok> {
    (0..n)
        .map(|_| {
            let (sh, cu, simd, slot) = (below(2), below(2), below(2), below(2));
            match below(20) {
                0..=4 => S(sh, cu, simd, slot),
                5..=6 => S65(sh, cu, simd, slot),
                7..=11 => E(sh, cu, simd, slot),
                12..=16 => I(simd, slot, if below(2) == 0 { PC } else { VALU }),
                17..=18 => Save,
                _ => Misc7,
            }
        })
        .collect()
}

/// The stream of `tokens` with target CU `dcu`.
pub fn stream(dcu: u64, tokens: &[Tok]) -> Vec<u8> {
    let mut words: Vec<u16> = Vec::new();
    let header: u64 = 0x11 | 5 << 13 | 0xF << 16 | dcu << 20;
    words.extend((0..4).map(|k| (header >> (16 * k)) as u16));
    let gap = 10 << 4;
    words.push(gap);
    for &t in tokens {
        let wave =
            |sh: u64, cu: u64, simd: u64, slot: u64| sh << 5 | cu << 6 | slot << 10 | simd << 14;
        match t {
            S(sh, cu, simd, slot) => words.extend([(3 | wave(sh, cu, simd, slot)) as u16, 0]),
            S65(sh, cu, simd, slot) => {
                let v = 3 | wave(sh, cu, simd, slot) | 65 << 22;
                words.extend([v as u16, (v >> 16) as u16]);
            }
            E(sh, cu, simd, slot) => words.push((6 | wave(sh, cu, simd, slot)) as u16),
            I(simd, slot, ty) => words.push((10 | slot << 5 | simd << 9 | ty << 11) as u16),
            Save => words.push(6 << 13),
            Misc7 => words.push(7 << 13),
        }
        words.push(gap);
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

//! The start and stop programs over random GPU shapes, read back with a PM4 reader written
//! here apart from the library's: every traced engine selected, programmed and restored to
//! broadcast; harvested ones untouched; sizes in pages; each die's engines under its predicate;
//! caches coherent before and after; each end stored, confirmed, after its engine is idle.

use proptest::prelude::*;
use sqtt_thread_trace::{length, start, stop, Error, GcVersion, Gpu, MAX_PAGES, PAGE};

/// Register dword addresses, from the Linux gc headers.
const GRBM_GFX_INDEX: u32 = 0xC200;
const COMPUTE_THREAD_TRACE_ENABLE: u32 = 0x2E1E;

struct Regs {
    /// Registers holding the buffer address's bits 12.. (low word) and 44.. (high word).
    base_lo: u32,
    base_hi: u32,
    /// The size register and its field's low bit.
    size: u32,
    size_lo: u32,
    /// The register that turns an engine's trace on (CTRL.MODE / MODE.MODE) and the on bit.
    enable: u32,
    enable_bit: u32,
    token_mask: u32,
    status: u32,
    wptr: u32,
    busy: u32,
    finish_done: Option<u32>,
    se_bits: u32,
}

fn regs(gc: GcVersion) -> Regs {
    match gc.major {
        9 => Regs {
            base_lo: 0xC330,
            base_hi: 0xC337,
            size: 0xC331,
            size_lo: 0,
            enable: 0xC336,
            enable_bit: 1 << 21,
            token_mask: 0xC333,
            status: 0xC33A,
            wptr: 0xC339,
            busy: 1 << 30,
            finish_done: None,
            se_bits: 8,
        },
        11 => Regs {
            base_lo: 0xD9E8,
            base_hi: 0xD9E9,
            size: 0xD9E9,
            size_lo: 8,
            enable: 0xD9EC,
            enable_bit: 1,
            token_mask: 0xD9EE,
            status: 0xD9F4,
            wptr: 0xD9EF,
            busy: 1 << 25,
            finish_done: Some(0xFFF << 12),
            se_bits: 8,
        },
        _ => Regs {
            base_lo: 0xD9E7,
            base_hi: 0xD9E8,
            size: 0xD9E6,
            size_lo: 0,
            enable: 0xD9EC,
            enable_bit: 1,
            token_mask: 0xD9EE,
            status: 0xD9F4,
            wptr: 0xD9EF,
            busy: 1 << 25,
            finish_done: Some(0xFFF << 12),
            se_bits: 4,
        },
    }
}

/// What a packet did, and where: the dies its predicate runs it on (None: every die) and the
/// engine GRBM_GFX_INDEX selected (None: broadcast).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Act {
    Write {
        reg: u32,
        value: u32,
    },
    Wait {
        function: u32,
        reg: u32,
        reference: u32,
        mask: u32,
    },
    Copy {
        reg: u32,
        dst: u64,
        confirmed: bool,
    },
    Event(u32),
    Acquire,
}

#[derive(Debug, Clone)]
struct Step {
    dies: Option<u32>,
    selected: Option<u32>,
    act: Act,
}

/// Reads `words` as PM4 type-3 packets, keeping the predicate and the GRBM selection.
fn read(words: &[u32], se_bits: u32) -> Vec<Step> {
    let mut steps = Vec::new();
    let (mut i, mut dies, mut left, mut selected) = (0usize, None, 0u32, None);
    while i < words.len() {
        let h = words[i];
        assert_eq!(h >> 30, 3, "word {i} is no type-3 header: {h:#x}");
        let op = (h >> 8) & 0xFF;
        let n = ((h >> 16) & 0x3FFF) as usize + 1;
        assert!(i + 1 + n <= words.len(), "packet at {i} runs past the end");
        let body = &words[i + 1..i + 1 + n];
        let here = if left > 0 { dies } else { None };
        if left > 0 {
            assert!(
                left as usize > n,
                "a predicate ends inside the packet at {i}"
            );
            left -= (n + 1) as u32;
        }
        let act = match op {
            0x23 => {
                assert!(here.is_none(), "nested predicates");
                dies = Some(body[0] >> 24);
                left = body[0] & 0x3FFF;
                None
            }
            0x79 => {
                let reg = 0xC000 + body[0];
                if reg == GRBM_GFX_INDEX {
                    selected = if body[1] >> 31 == 1 {
                        None
                    } else {
                        Some((body[1] >> 16) & ((1 << se_bits) - 1))
                    };
                }
                Some(Act::Write {
                    reg,
                    value: body[1],
                })
            }
            0x76 => Some(Act::Write {
                reg: 0x2C00 + body[0],
                value: body[1],
            }),
            0x3C => {
                assert_eq!(body[0] & 0x30, 0, "a wait on memory");
                Some(Act::Wait {
                    function: body[0] & 7,
                    reg: body[1],
                    reference: body[3],
                    mask: body[4],
                })
            }
            0x40 => Some(Act::Copy {
                reg: body[1],
                dst: u64::from(body[3]) | (u64::from(body[4]) << 32),
                confirmed: body[0] & (1 << 20) != 0,
            }),
            0x46 => Some(Act::Event(body[0] & 0x3F)),
            0x58 => Some(Act::Acquire),
            other => panic!("unexpected opcode {other:#x}"),
        };
        if let Some(act) = act {
            steps.push(Step {
                dies: here,
                selected,
                act,
            });
        }
        i += 1 + n;
    }
    assert_eq!(left, 0, "a predicate runs past the end");
    steps
}

const GCS: [GcVersion; 8] = [
    GcVersion::new(9, 4, 2),
    GcVersion::new(9, 4, 3),
    GcVersion::new(9, 5, 0),
    GcVersion::new(11, 0, 0),
    GcVersion::new(11, 0, 3),
    GcVersion::new(11, 5, 0),
    GcVersion::new(12, 0, 0),
    GcVersion::new(12, 0, 1),
];

#[derive(Debug, Clone)]
struct Case {
    gpu: Gpu,
    wgps: Vec<Vec<u32>>,
    pages: u64,
    address: u64,
    ends: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (0..GCS.len(), 1usize..=8, 1usize..=8, 1usize..=2).prop_flat_map(
        |(gc, engines, xccs, arrays)| {
            let n = engines * xccs;
            (
                Just(Gpu {
                    gc: GCS[gc],
                    shader_engines: engines,
                    xccs,
                    clock_hz: 100_000_000,
                }),
                prop::collection::vec(
                    prop::collection::vec(prop_oneof![2 => Just(0u32), 3 => 1u32..6], arrays),
                    n,
                ),
                prop_oneof![Just(1u64), Just(MAX_PAGES), 1u64..=MAX_PAGES],
                0u64..(1 << 20),
                0u64..(1 << 30),
            )
                .prop_map(|(gpu, wgps, pages, page, ends)| Case {
                    gpu,
                    wgps,
                    pages,
                    address: page * PAGE,
                    ends: ends * 4,
                })
        },
    )
}

fn traced(c: &Case, e: usize) -> bool {
    c.wgps[e].iter().any(|&n| n > 0)
}

/// Where engine `e` must be programmed: under its die's predicate on a GPU of several dies, with
/// its engine selected.
fn place(c: &Case, e: usize) -> (Option<u32>, Option<u32>) {
    let dies = (c.gpu.xccs > 1).then(|| 1 << (e / c.gpu.shader_engines));
    (dies, Some((e % c.gpu.shader_engines) as u32))
}

fn first_and_last_acquire(steps: &[Step]) -> bool {
    matches!(steps.first().map(|s| &s.act), Some(Act::Acquire))
        && matches!(steps.last().map(|s| &s.act), Some(Act::Acquire))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn start_programs_each_traced_engine(c in case()) {
        let size = c.pages * PAGE;
        let r = regs(c.gpu.gc);
        let words = start(&c.gpu, &c.wgps, size, c.address).unwrap();
        let steps = read(&words, r.se_bits);
        prop_assert!(first_and_last_acquire(&steps));
        for e in 0..c.gpu.engines() {
            let (dies, selected) = place(&c, e);
            let mine: Vec<&Step> = steps.iter().filter(|s| s.dies == dies && s.selected == selected && s.selected.is_some()).collect();
            // Writes on engine e's die and selection belong to engine e alone.
            if !traced(&c, e) {
                prop_assert!(mine.is_empty(), "harvested engine {} programmed", e);
                continue;
            }
            let value = |reg: u32| mine.iter().rev().find_map(|s| match s.act {
                Act::Write { reg: r2, value } if r2 == reg => Some(value),
                _ => None,
            });
            let buffer = c.address + e as u64 * size;
            let lo = value(r.base_lo).expect("base written");
            prop_assert_eq!(lo, (buffer >> 12) as u32, "engine {} base", e);
            let hi = value(r.base_hi).expect("high base written");
            prop_assert_eq!(hi & 0xF, ((buffer >> 44) & 0xF) as u32);
            let sz = value(r.size).expect("size written");
            prop_assert_eq!(u64::from((sz >> r.size_lo) & 0x3F_FFFF), c.pages, "engine {} size in pages", e);
            let on = value(r.enable).expect("trace turned on");
            prop_assert!(on & r.enable_bit != 0);
            let tokens = value(r.token_mask).expect("token mask written");
            // Instruction tokens: GFX9 INST (bit 10) included; from GFX11 INST (bit 8) not excluded.
            let itrace = if c.gpu.gc.major == 9 { tokens & (1 << 10) != 0 } else { tokens & (1 << 8) == 0 };
            prop_assert_eq!(itrace, e < 2, "engine {} instruction tracing", e);
        }
        // Every selection is restored to broadcast before the queue's trace enable, and at the end.
        let enable = steps.iter().position(|s| matches!(s.act, Act::Write { reg: COMPUTE_THREAD_TRACE_ENABLE, value: 1 })).unwrap();
        prop_assert!(steps[enable].selected.is_none() && steps[enable].dies.is_none());
        prop_assert!(steps.last().unwrap().selected.is_none());
        // A write outside any engine's selection programs no trace register.
        for s in &steps {
            if s.selected.is_none() {
                if let Act::Write { reg, .. } = s.act {
                    prop_assert!(reg == GRBM_GFX_INDEX || reg == 0xC440 || reg == COMPUTE_THREAD_TRACE_ENABLE, "broadcast write of {:#x}", reg);
                }
            }
            if let Some(d) = s.dies {
                prop_assert!(c.gpu.xccs > 1 && d.count_ones() == 1);
            }
        }
    }

    #[test]
    fn stop_stores_each_traced_engines_end(c in case()) {
        let r = regs(c.gpu.gc);
        let words = stop(&c.gpu, &c.wgps, c.ends).unwrap();
        let steps = read(&words, r.se_bits);
        prop_assert!(first_and_last_acquire(&steps));
        prop_assert!(steps.iter().any(|s| s.act == Act::Event(0x37)));
        let mut copies = 0;
        for e in 0..c.gpu.engines() {
            let (dies, selected) = place(&c, e);
            let mine: Vec<&Step> = steps.iter().filter(|s| s.dies == dies && s.selected == selected).collect();
            if !traced(&c, e) {
                prop_assert!(mine.is_empty(), "harvested engine {} awaited", e);
                continue;
            }
            let copy = mine.iter().position(|s| matches!(s.act, Act::Copy { .. })).expect("end stored");
            let Act::Copy { reg, dst, confirmed } = mine[copy].act.clone() else { unreachable!() };
            prop_assert_eq!(reg, r.wptr);
            prop_assert_eq!(dst, c.ends + 4 * e as u64);
            prop_assert!(confirmed);
            copies += 1;
            // Before it: the wait until the engine is not busy, after its finish on GFX11+.
            let busy = mine[..copy].iter().position(|s| s.act == Act::Wait { function: 3, reg: r.status, reference: 0, mask: r.busy });
            prop_assert!(busy.is_some(), "engine {} not awaited", e);
            if let Some(done) = r.finish_done {
                let fin = mine[..copy].iter().position(|s| s.act == Act::Wait { function: 4, reg: r.status, reference: 0, mask: done });
                prop_assert!(fin.is_some() && fin < busy, "engine {} finish", e);
            }
        }
        let all_copies = steps.iter().filter(|s| matches!(s.act, Act::Copy { .. })).count();
        prop_assert_eq!(copies, all_copies);
        prop_assert!(steps.last().unwrap().selected.is_none());
    }

    #[test]
    fn refuses_bad_arguments(c in case(), size in any::<u64>(), address in any::<u64>()) {
        let ok_size = size % PAGE == 0 && size >= PAGE && size / PAGE <= MAX_PAGES;
        match start(&c.gpu, &c.wgps, size, c.address) {
            Err(Error::Size { size: s }) => prop_assert!(!ok_size && s == size),
            Ok(_) => prop_assert!(ok_size),
            Err(Error::AddressRange { .. }) => prop_assert!(ok_size),
            Err(e) => prop_assert!(false, "{}", e),
        }
        let aligned = address % PAGE == 0;
        match start(&c.gpu, &c.wgps, PAGE, address) {
            Err(Error::Misaligned { .. }) => prop_assert!(!aligned),
            Err(Error::AddressRange { .. }) => prop_assert!(aligned),
            Ok(_) => prop_assert!(aligned),
            Err(e) => prop_assert!(false, "{}", e),
        }
        match stop(&c.gpu, &c.wgps, address) {
            Err(Error::Misaligned { align: 4, .. }) => prop_assert!(address % 4 != 0),
            Ok(_) => prop_assert!(address % 4 == 0),
            Err(e) => prop_assert!(false, "{}", e),
        }
        let mut short = c.wgps.clone();
        short.pop();
        prop_assert_eq!(start(&c.gpu, &short, PAGE, 0), Err(Error::Engines { got: short.len(), expected: c.gpu.engines() }));
        prop_assert_eq!(stop(&c.gpu, &short, 0), Err(Error::Engines { got: short.len(), expected: c.gpu.engines() }));
    }

    #[test]
    fn length_counts_from_the_buffer(units in 0u32..(1 << 24), page in 0u64..(1 << 30)) {
        let buffer = page * PAGE;
        for gc in GCS {
            let g = Gpu::new(gc, 1);
            let word = if gc.major == 11 && gc.minor == 0 {
                ((buffer >> 5) as u32).wrapping_add(units) & 0x1FFF_FFFF
            } else {
                units
            };
            prop_assert_eq!(length(&g, buffer, word), u64::from(units) * 32, "GC {}", gc);
        }
    }
}

#[test]
fn an_unknown_gc_lacks_the_registers() {
    for gc in [
        GcVersion::new(10, 3, 0),
        GcVersion::new(9, 0, 1),
        GcVersion::new(13, 0, 0),
    ] {
        let g = Gpu::new(gc, 2);
        let w = vec![vec![1]; 2];
        assert!(
            matches!(start(&g, &w, PAGE, 0), Err(Error::MissingRegister { .. })),
            "{gc}"
        );
        assert!(
            matches!(stop(&g, &w, 0), Err(Error::MissingRegister { .. })),
            "{gc}"
        );
    }
}

#[test]
fn every_builtin_part_has_programs() {
    for name in sqtt_thread_trace::builtin_names() {
        let s = sqtt_thread_trace::builtin(name).unwrap();
        let w = s.wgps();
        let on = start(&s.gpu, &w, 16 << 20, 1 << 32).unwrap_or_else(|e| panic!("{name}: {e}"));
        let off = stop(&s.gpu, &w, 0x1000).unwrap_or_else(|e| panic!("{name}: {e}"));
        let r = regs(s.gpu.gc);
        let copies = read(&off, r.se_bits)
            .iter()
            .filter(|s| matches!(s.act, Act::Copy { .. }))
            .count();
        assert_eq!(copies, s.gpu.engines(), "{name}");
        assert!(!read(&on, r.se_bits).is_empty());
    }
}

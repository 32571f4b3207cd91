//! The decoders against streams the in-tree encoder writes from lists of events: round trips,
//! every pairing rule, the clock through the markers, traces cut at every byte, and random
//! bytes (which must never panic).

#[path = "../../tools/tests/support/rng.rs"]
mod test_rng;

use proptest::prelude::*;
use sqtt_thread_trace::decode::{
    decode, decode_halves, decode_split_halves, decode_steps, shader_data, ShaderData, Sink, Split,
};
use sqtt_thread_trace::synth::{Encoder, Form, Slot};
use sqtt_thread_trace::{clock, markers, waves, GcVersion, Generation, Gpu, Marker, Wave};

fn gpu(g: Generation) -> Gpu {
    let gc = match g {
        Generation::Gfx9 => GcVersion::new(9, 4, 3),
        Generation::Gfx11 => GcVersion::new(11, 0, 0),
        Generation::Gfx12 => GcVersion::new(12, 0, 1),
        other => panic!("no trace stream of {other}"),
    };
    Gpu::new(gc, 1)
}

const ALL: [Generation; 3] = [Generation::Gfx9, Generation::Gfx11, Generation::Gfx12];

/// Zero bytes after a trace: NOPs on RDNA, MISC tokens of no time on CDNA, as the hardware pads
/// up to a whole 32-byte unit.
const PADDING: [u8; 32] = [0; 32];

#[derive(Debug, Clone)]
enum Ev {
    Gap(u64),
    Start(usize, bool),
    End(usize, bool),
    Marker(u64),
    Nop,
    Other(usize, u128),
    /// Shader data: key, value, imm, flag (GFX11 exec, GFX12 sdt), inline.
    Data(usize, u32, bool, u32, bool),
    /// WAVE_START_EXT: key, inline, extensions, NOPs before each.
    StartExt(usize, bool, usize, usize),
    /// RDNA: a context save or restore.
    Context(usize, bool),
    /// GFX9: a time reset to this absolute stamp, and the stamp it owes.
    Reset(u64),
    Stamp,
    /// RDNA: a TIMESTAMP with realtime and PL set (no time).
    StampLost(u64),
    /// GFX12: a shader-data packet in a slot of RDNA 3's sizes.
    Rdna3Code(usize, u32, bool, bool),
}

fn slot_for(g: Generation, raw: (u32, u32, u32, u32)) -> Slot {
    let (sa, wgp, simd, slot) = raw;
    match g {
        // CDNA SIMDs have wave slots 0 to 9.
        Generation::Gfx9 => Slot {
            sa: sa & 1,
            wgp: wgp & 0xF,
            simd: simd & 3,
            slot: (slot & 0xF) % 10,
        },
        Generation::Gfx11 => Slot {
            sa: sa & 1,
            wgp: wgp & 7,
            simd: simd & 3,
            slot: slot & 0x1F,
        },
        Generation::Gfx12 => Slot {
            sa: sa & 1,
            wgp: wgp & 0xF,
            simd: simd & 3,
            slot: slot & 0x1F,
        },
        other => panic!("no trace stream of {other}"),
    }
}

/// Writes `evs` with `keys`, and gives the encoder (which knows what it wrote).
fn write(g: Generation, keys: &[Slot], evs: &[Ev]) -> Encoder {
    let mut e = Encoder::new(g);
    let mut last: Option<(u64, u64)> = None;
    for ev in evs {
        match *ev {
            Ev::Gap(n) => e.gap(n),
            Ev::Start(k, inline) => e.start(keys[k % keys.len()], inline),
            Ev::End(k, inline) => e.end(keys[k % keys.len()], inline),
            Ev::Marker(slope) => {
                let t = e.time();
                let rt = match last {
                    None => 1_000_000 + t,
                    // A GFX9 time reset may take the shader time back a few cycles: the
                    // realtime never goes back (that marker is no distinct one, for the clock
                    // as for `distinct` below).
                    Some((t0, r0)) => r0 + slope * t.saturating_sub(t0),
                };
                e.marker(rt);
                last = Some((t, rt));
            }
            Ev::Nop => e.nop(),
            Ev::Other(pick, payload) => e.other(pick, payload),
            Ev::Data(k, v, imm, flag, inline) => {
                let form = if imm { Form::Imm } else { Form::Full };
                e.shader_data_flags(keys[k % keys.len()], v, form, flag, inline);
            }
            Ev::StartExt(k, inline, exts, nops) => {
                e.start_ext(keys[k % keys.len()], inline, exts, nops)
            }
            Ev::Context(k, save) if g != Generation::Gfx9 => e.context(keys[k % keys.len()], save),
            Ev::Reset(a) if g == Generation::Gfx9 => e.time_reset(a),
            Ev::Stamp => e.stamp(),
            Ev::StampLost(f) => e.stamp_lost(f),
            Ev::Rdna3Code(k, v, imm, bit7) if g == Generation::Gfx12 => {
                let form = if imm { Form::Imm } else { Form::Full };
                e.shader_data_rdna3_code(keys[k % keys.len()], v, form, bit7);
            }
            Ev::Context(..) | Ev::Reset(_) | Ev::Rdna3Code(..) => {}
        }
    }
    e.flush();
    e
}

fn events(far: u64) -> impl Strategy<Value = Vec<Ev>> {
    let ev = prop_oneof![
        3 => (0u64..20).prop_map(Ev::Gap),
        1 => (0..far).prop_map(Ev::Gap),
        3 => (0usize..8, any::<bool>()).prop_map(|(k, i)| Ev::Start(k, i)),
        3 => (0usize..8, any::<bool>()).prop_map(|(k, i)| Ev::End(k, i)),
        1 => (1u64..8).prop_map(Ev::Marker),
        1 => Just(Ev::Nop),
        2 => (any::<usize>(), any::<u128>()).prop_map(|(p, v)| Ev::Other(p, v)),
        2 => (0usize..8, any::<u32>(), any::<bool>(), prop_oneof![3 => Just(0u32), 1 => 0u32..4], any::<bool>())
            .prop_map(|(k, v, imm, f, i)| Ev::Data(k, v, imm, f, i)),
        1 => (0usize..8, any::<bool>(), 0usize..3, 0usize..2).prop_map(|(k, i, x, n)| Ev::StartExt(k, i, x, n)),
        1 => (0usize..8, any::<bool>()).prop_map(|(k, s)| Ev::Context(k, s)),
        1 => (1u64 << 30..1 << 44).prop_map(Ev::Reset),
        1 => Just(Ev::Stamp),
        1 => any::<u64>().prop_map(Ev::StampLost),
        1 => (0usize..8, any::<u32>(), any::<bool>(), any::<bool>()).prop_map(|(k, v, imm, b)| Ev::Rdna3Code(k, v, imm, b)),
    ];
    prop::collection::vec(ev, 0..80)
}

fn generation() -> impl Strategy<Value = Generation> {
    prop_oneof![
        Just(Generation::Gfx9),
        Just(Generation::Gfx11),
        Just(Generation::Gfx12)
    ]
}

fn case() -> impl Strategy<Value = (Generation, Vec<Slot>, Vec<Ev>)> {
    generation().prop_flat_map(|g| {
        let far = if g == Generation::Gfx9 {
            1 << 10
        } else {
            1 << 24
        };
        let key = (
            0u32..2,
            prop_oneof![Just(0u32), Just(1), Just(7), Just(15)],
            0u32..4,
            prop_oneof![Just(0u32), Just(1), Just(15), Just(31)],
        )
            .prop_map(move |raw| slot_for(g, raw));
        (Just(g), prop::collection::vec(key, 1..4), events(far))
    })
}

/// The realtime of shader time `t` on the line of `markers` around it, written apart from the
/// library's.
fn realtime(markers: &[Marker], t: u64) -> i128 {
    let mut i = 0;
    while i + 2 < markers.len() && t >= markers[i + 1].time {
        i += 1;
    }
    let (a, b) = (markers[i], markers[i + 1]);
    let (s0, r0, s1, r1) = (
        a.time as i128,
        a.realtime as i128,
        b.time as i128,
        b.realtime as i128,
    );
    r0 + (t as i128 - s0) * (r1 - r0) / (s1 - s0)
}

struct Times {
    last: u64,
    monotonic: bool,
}

impl Sink for Times {
    fn wave_start(&mut self, _: u32, _: u32, _: u32, t: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
    }
    fn wave_end(&mut self, _: u32, _: u32, _: u32, t: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
    }
    fn marker(&mut self, t: u64, _: u64) {
        self.monotonic &= t >= self.last;
        self.last = t;
    }
}

/// Everything a decoder reports, in order.
#[derive(Default, Debug, PartialEq)]
struct Log(Vec<(u8, u64, u64, u64)>);

impl Sink for Log {
    fn wave_start(&mut self, cu: u32, simd: u32, slot: u32, t: u64) {
        self.0.push((
            0,
            t,
            u64::from(cu) << 16 | u64::from(simd) << 8 | u64::from(slot),
            0,
        ));
    }
    fn wave_end(&mut self, cu: u32, simd: u32, slot: u32, t: u64) {
        self.0.push((
            1,
            t,
            u64::from(cu) << 16 | u64::from(simd) << 8 | u64::from(slot),
            0,
        ));
    }
    fn marker(&mut self, t: u64, r: u64) {
        self.0.push((2, t, r, 0));
    }
    fn shader_data(&mut self, r: ShaderData) {
        self.0.push((
            3,
            r.time,
            u64::from(r.value),
            u64::from(r.cu) << 24
                | u64::from(r.simd) << 16
                | u64::from(r.wave) << 8
                | u64::from(r.flags),
        ));
    }
    fn dropped_shader_data(&mut self, r: ShaderData) {
        self.0.push((4, r.time, u64::from(r.value), 0));
    }
}

/// A [`Split`] sink: the second half's events in a log of their own, joined by moving their
/// times (the one field that has a time).
impl Split for Log {
    type Part = Log;
    type Mark = usize;
    fn part(&mut self) -> Log {
        Log::default()
    }
    fn mark(part: &Log) -> usize {
        part.0.len()
    }
    fn join(&mut self, part: Log, from: usize, to: usize, offset: u64) {
        let moved = part.0[from..to]
            .iter()
            .map(|&(k, t, a, b)| (k, t.wrapping_add(offset), a, b));
        self.0.extend(moved);
    }
}

/// A stream walked in two halves at once gives what one walk gives: every event, in order, and
/// the same summary (stop included), wherever the middle falls; so does a [`Split`] sink, which
/// collects the second half itself; and both give what the walk gives packet by packet without
/// its tight loops (which take plain packets, shader data and time stamps on their own).
fn halves_agree(g: Generation, data: &[u8]) -> Result<bool, TestCaseError> {
    let (mut one, mut two, mut split) = (Log::default(), Log::default(), Log::default());
    let mut steps = Log::default();
    let s0 = decode_steps(g, data, &mut steps);
    let (s1, _) = decode_halves(g, data, &mut one, false);
    prop_assert_eq!(s0, s1);
    prop_assert_eq!(&steps, &one);
    let (s2, met) = decode_halves(g, data, &mut two, true);
    let (s3, met_split) = decode_split_halves(g, data, &mut split, true);
    prop_assert_eq!(s1, s2);
    prop_assert_eq!(s1, s3);
    prop_assert_eq!(met, met_split);
    prop_assert_eq!(&one, &two);
    prop_assert_eq!(&one, &split);
    Ok(met)
}

/// A stream (found by fuzzing) whose second half ends in a WAVE_START_EXT's extension run cut by
/// the end: walked in halves, the stream still stops there, cut.
#[test]
fn halves_keep_a_cut_extension_run() {
    let hex = "91099068000f000055090f00005509822e00ffffffffd156000982400000003f00000000006809824c00000000006809820027000000090200c2117777f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f377777777";
    let data: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    for g in [Generation::Gfx11, Generation::Gfx12] {
        halves_agree(g, &data).unwrap();
    }
}

/// Long streams of every packet, whole, cut and corrupted: the halves meet (the second half's
/// events are used) and give what one walk gives.
#[test]
fn long_streams_walk_in_halves() {
    let mut met = 0;
    for g in [Generation::Gfx11, Generation::Gfx12] {
        for seed in 0..40u64 {
            let mut rng = test_rng::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut next = move || rng.next();
            let keys: Vec<Slot> = (0..6)
                .map(|i| slot_for(g, (i & 1, i * 3, i & 3, i * 5)))
                .collect();
            let mut e = Encoder::new(g);
            for _ in 0..3000 {
                let k = keys[(next() % 6) as usize];
                match next() % 10 {
                    0 => e.start(k, next() % 2 == 0),
                    1 => e.end(k, next() % 2 == 0),
                    2 => e.gap(next() % 300),
                    3 => e.marker(next() >> 20),
                    4 => {
                        e.shader_data_flags(k, next() as u32, Form::Full, (next() % 4) as u32, true)
                    }
                    5 => e.start_ext(k, true, (next() % 3) as usize, (next() % 2) as usize),
                    _ => e.other(
                        next() as usize,
                        u128::from(next()) << 64 | u128::from(next()),
                    ),
                }
            }
            e.flush();
            let mut bytes = e.bytes();
            met += usize::from(halves_agree(g, &bytes).unwrap());
            let n = bytes.len();
            halves_agree(g, &bytes[..n * 3 / 4]).unwrap();
            bytes[n / 2 + (seed as usize % 64)] ^= 0x5A;
            halves_agree(g, &bytes).unwrap();
            for x in &mut bytes[n / 2 + 40..n / 2 + 80] {
                *x = 0x77;
            }
            halves_agree(g, &bytes).unwrap();
        }
    }
    assert!(met >= 76, "the halves met in {met} of 80 streams");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Two halves at once, on streams of every packet and on cut or corrupted ones.
    #[test]
    fn halves_walk_as_one((g, keys, evs) in case(), cut in any::<prop::sample::Index>(), flip in any::<Option<(prop::sample::Index, u8)>>()) {
        let e = write(g, &keys, &evs);
        let mut bytes = e.bytes();
        halves_agree(g, &bytes)?;
        if let Some((at, x)) = flip {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] ^= x;
            }
        }
        let n = if bytes.is_empty() { 0 } else { cut.index(bytes.len() + 1) };
        halves_agree(g, &bytes[..n])?;
        halves_agree(g, &bytes)?;
    }

    /// And on random bytes, with or without a header (GFX9 walks one stream, tight loop or not).
    #[test]
    fn halves_walk_as_one_on_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..4096), header in any::<bool>()) {
        for g in [Generation::Gfx9, Generation::Gfx11, Generation::Gfx12] {
            let mut data = Vec::new();
            if header {
                data.extend_from_slice(&Encoder::new(g).bytes());
            }
            data.extend_from_slice(&bytes);
            halves_agree(g, &data)?;
        }
    }

    /// A stream's waves are its starts and ends paired by slot, in the order they end.
    #[test]
    fn waves_round_trip((g, keys, evs) in case()) {
        let e = write(g, &keys, &evs);
        let mut bytes = e.bytes();
        bytes.extend_from_slice(&PADDING);
        let want: Vec<Wave> = e.waves.iter().map(|x| x.wave).collect();
        prop_assert_eq!(waves(&gpu(g), &bytes), want);
        prop_assert_eq!(markers(&gpu(g), &bytes), e.markers.clone());
        let mut t = Times { last: 0, monotonic: true };
        decode(g, &bytes, &mut t);
        // GFX9's time resets may set the time back (AMD's decoder re-anchors to the stamp).
        prop_assert!(t.monotonic || evs.iter().any(|e| matches!(e, Ev::Reset(_))) && g == Generation::Gfx9);
    }

    /// Every prefix of a stream decodes to the waves and the shader-data records whose packets
    /// it holds whole; a prefix that cuts a packet says where.
    #[test]
    fn cut_at_every_byte((g, keys, evs) in case()) {
        let e = write(g, &keys, &evs);
        let bytes = e.bytes();
        for n in 0..=bytes.len() {
            let ws = waves(&gpu(g), &bytes[..n]);
            let (records, summary) = shader_data(g, &bytes[..n]);
            if !e.times_hold_within(n) {
                // A GFX9 time reset whose TIMESTAMP is cut off: other times, the same count.
                prop_assert_eq!(ws.len(), e.waves_within(n).len());
                prop_assert_eq!(records.len(), e.records_within(n).len());
                continue;
            }
            prop_assert_eq!(ws, e.waves_within(n), "{} bytes", n);
            prop_assert_eq!(records, e.records_within(n), "{} bytes", n);
            if let Some(stop) = summary.stop {
                prop_assert!(stop.offset <= n);
            }
        }
    }

    /// A stream's shader-data records, as AMD's decoder reports them, in stream order; exec
    /// records (GFX11) none, sdt ones (GFX12) privileged.
    #[test]
    fn records_round_trip((g, keys, evs) in case()) {
        let e = write(g, &keys, &evs);
        let mut bytes = e.bytes();
        bytes.extend_from_slice(&PADDING);
        let (records, summary) = shader_data(g, &bytes);
        prop_assert_eq!(records, e.all_records());
        prop_assert_eq!(summary.stop, None);
    }

    /// The clock passes through the markers and maps a time on the line of the two around it,
    /// or of the first two or last two outside them.
    #[test]
    fn clock_through_markers((g, keys, evs) in case()) {
        let e = write(g, &keys, &evs);
        let mut bytes = e.bytes();
        bytes.extend_from_slice(&PADDING);
        let mut distinct: Vec<Marker> = Vec::new();
        for m in &e.markers {
            if distinct.last().is_none_or(|l| m.time > l.time) {
                distinct.push(*m);
            }
        }
        let c = clock(&gpu(g), &bytes);
        if distinct.len() < 2 {
            prop_assert!(c.is_none());
        } else {
            let c = c.expect("a clock");
            let first = distinct[0].time;
            let last = distinct[distinct.len() - 1].time;
            let mut ts = vec![first.saturating_sub(1000), first, last, last + 1000];
            for m in &distinct {
                ts.push(m.time);
                ts.push(m.time + 1);
                prop_assert_eq!(c.realtime(m.time), m.realtime as i128);
            }
            for t in ts {
                prop_assert_eq!(c.realtime(t), realtime(&distinct, t), "time {}", t);
            }
        }
    }

    /// Random bytes, alone or after a header, never make a decoder panic; its waves pair.
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), header in any::<bool>()) {
        for g in ALL {
            let mut data = Vec::new();
            if header && g != Generation::Gfx9 {
                data.extend_from_slice(&Encoder::new(g).bytes());
            }
            data.extend_from_slice(&bytes);
            let ws = waves(&gpu(g), &data);
            for w in &ws {
                prop_assert!(w.start <= w.stop || w.stop < 1 << 60);
            }
            let _ = clock(&gpu(g), &data).map(|c| (c.realtime(0), c.realtime(u64::MAX), c.seconds(1)));
            let _ = markers(&gpu(g), &data);
        }
    }
}

fn key(g: Generation, sa: u32, wgp: u32, simd: u32, slot: u32) -> Slot {
    slot_for(g, (sa, wgp, simd, slot))
}

/// RDNA: a second start of a slot before its end means the first's end was lost, and the first
/// is dropped. CDNA (AMD's decoder): a start on a running slot is no new wave, the first stays.
#[test]
fn a_second_start_drops_the_first_on_rdna_and_is_ignored_on_cdna() {
    for g in ALL {
        let k = key(g, 1, 3, 2, 5);
        let mut e = Encoder::new(g);
        e.start(k, false);
        e.gap(10);
        e.start(k, false);
        e.gap(7);
        e.end(k, false);
        e.flush();
        let ws = waves(&gpu(g), &e.bytes());
        assert_eq!(ws.len(), 1, "{g:?}");
        let s = e.scale();
        let start = if g == Generation::Gfx9 { 0 } else { 10 * s };
        assert_eq!((ws[0].start, ws[0].stop), (start, 17 * s), "{g:?}");
    }
}

/// CDNA: AMD's decoder keys a running wave by CU, SIMD and slot without the shader array: a
/// start in the other array of a running slot is no new wave, and its end ends the first.
#[test]
fn cdna_slots_ignore_the_shader_array() {
    let g = Generation::Gfx9;
    let (a, b) = (key(g, 1, 3, 2, 5), key(g, 0, 3, 2, 5));
    let mut e = Encoder::new(g);
    e.start(a, false);
    e.gap(10);
    e.start(b, false);
    e.gap(7);
    e.end(b, false);
    e.gap(2);
    e.end(a, false);
    e.flush();
    let ws = waves(&gpu(g), &e.bytes());
    assert_eq!(ws, e.waves.iter().map(|x| x.wave).collect::<Vec<_>>());
    assert_eq!(
        ws,
        vec![Wave {
            cu: 3 | 1 << 4,
            simd: 2,
            slot: 5,
            start: 0,
            stop: 68
        }]
    );
}

#[test]
fn an_end_without_a_start_is_dropped() {
    for g in ALL {
        let (a, b) = (key(g, 0, 1, 0, 0), key(g, 0, 1, 0, 1));
        let mut e = Encoder::new(g);
        e.end(a, false);
        e.start(b, false);
        e.gap(3);
        e.end(a, false);
        e.end(b, false);
        e.end(b, false);
        e.flush();
        let ws = waves(&gpu(g), &e.bytes());
        assert_eq!(ws.len(), 1, "{g:?}");
        assert_eq!(ws[0].slot, 1);
    }
}

#[test]
fn waves_come_in_the_order_they_end_and_name_their_unit() {
    for g in ALL {
        let top = if g == Generation::Gfx9 { 9 } else { 15 };
        let (a, b) = (key(g, 1, 7, 3, top), key(g, 0, 2, 1, 3));
        let mut e = Encoder::new(g);
        e.start(a, true);
        e.gap(1);
        e.start(b, true);
        e.gap(2);
        e.end(b, true);
        e.gap(30);
        e.end(a, true);
        e.flush();
        let ws = waves(&gpu(g), &e.bytes());
        let s = e.scale();
        let shift = match g {
            Generation::Gfx11 => 3,
            _ => 4,
        };
        assert_eq!(
            ws,
            vec![
                Wave {
                    cu: 2,
                    simd: 1,
                    slot: 3,
                    start: s,
                    stop: 3 * s
                },
                Wave {
                    cu: 7 | (1 << shift),
                    simd: 3,
                    slot: top,
                    start: 0,
                    stop: 33 * s
                },
            ],
            "{g:?}"
        );
    }
}

#[test]
fn the_time_packet_adds_four() {
    for g in [Generation::Gfx11, Generation::Gfx12] {
        let k = key(g, 0, 0, 0, 0);
        let mut e = Encoder::new(g);
        e.start(k, false);
        e.gap(4); // a TIME packet of field 0
        e.end(k, false);
        e.gap(19); // field 15
        e.start(k, false);
        e.end(k, false);
        e.flush();
        let bytes = e.bytes();
        let ws = waves(&gpu(g), &bytes);
        assert_eq!(
            ws.iter().map(|w| (w.start, w.stop)).collect::<Vec<_>>(),
            vec![(0, 4), (23, 23)]
        );
    }
}

#[test]
fn an_empty_trace_has_no_waves_and_no_clock() {
    for g in ALL {
        assert!(waves(&gpu(g), &[]).is_empty());
        assert!(clock(&gpu(g), &[]).is_none());
        assert!(waves(&gpu(g), &Encoder::new(g).bytes()).is_empty());
    }
}

#[test]
fn two_markers_at_one_time_give_no_clock() {
    for g in [Generation::Gfx11, Generation::Gfx12] {
        let mut e = Encoder::new(g);
        e.marker(100);
        e.marker(200);
        e.flush();
        assert_eq!(markers(&gpu(g), &e.bytes()).len(), 2);
        assert!(clock(&gpu(g), &e.bytes()).is_none());
        e.gap(50);
        e.marker(300);
        let c = clock(&gpu(g), &e.bytes()).expect("a clock");
        // Of the two at time 0, the first is kept.
        assert_eq!(c.realtime(0), 100);
        assert_eq!(c.realtime(25), 200);
        assert_eq!(c.realtime(100), 500);
    }
}

#[test]
fn gfx9_has_no_clock() {
    let mut e = Encoder::new(Generation::Gfx9);
    e.marker(1);
    e.gap(10);
    e.marker(2);
    assert!(clock(&gpu(Generation::Gfx9), &e.bytes()).is_none());
}

#[test]
fn every_truncation_of_every_capture_is_safe() {
    // Real bytes cut at every length, and with each byte flipped, decode without panicking.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sqtt-captures");
    assert!(
        dir.is_dir(),
        "the real captures are missing at {}",
        dir.display()
    );
    for (arch, g) in [
        ("gfx1100", Generation::Gfx11),
        ("gfx1200", Generation::Gfx12),
        ("gfx950", Generation::Gfx9),
    ] {
        let data = std::fs::read(dir.join(arch).join("gemm_run_0/kern0_se0.att")).unwrap();
        let full = waves(&gpu(g), &data);
        let mut previous = 0;
        for n in 0..=data.len() {
            let ws = waves(&gpu(g), &data[..n]);
            assert!(ws.len() >= previous, "{arch}: {n} bytes lost waves");
            assert_eq!(ws[..], full[..ws.len()], "{arch}: {n} bytes");
            previous = ws.len();
        }
        let mut flipped = data.clone();
        for i in 0..flipped.len() {
            flipped[i] ^= 0xA5;
            let _ = waves(&gpu(g), &flipped);
            let _ = clock(&gpu(g), &flipped);
            flipped[i] ^= 0xA5;
        }
    }
}

#[test]
fn wide_timestamps_at_odd_nibbles() {
    // A layout-4 timestamp holds 52 bits up to the packet's bit 63: at an odd nibble its top
    // nibble lies in the byte after the first eight.
    for g in [Generation::Gfx11, Generation::Gfx12] {
        for nops in 0..4 {
            let wide = if g == Generation::Gfx12 {
                0xF_1234_5678_9ABC
            } else {
                0xF_8765_4321
            };
            let mut e = Encoder::new(g);
            for _ in 0..nops {
                e.nop();
            }
            e.marker(wide);
            e.gap(wide); // a delta of as many bits, in a timestamp packet of its own
            e.marker(wide + 5);
            let k = key(g, 0, 0, 0, 0);
            e.start(k, false);
            e.end(k, false);
            e.flush();
            let bytes = e.bytes();
            let ms = markers(&gpu(g), &bytes);
            assert_eq!(
                ms,
                vec![
                    Marker {
                        time: 0,
                        realtime: wide
                    },
                    Marker {
                        time: wide,
                        realtime: wide + 5
                    }
                ],
                "{g:?} {nops}"
            );
            assert_eq!(waves(&gpu(g), &bytes)[0].start, wide, "{g:?} {nops}");
        }
    }
}

#[test]
fn a_clock_needs_two_increasing_markers() {
    use sqtt_thread_trace::ClockMap;
    let m = |time, realtime| Marker { time, realtime };
    assert!(ClockMap::new(vec![], 1).is_none());
    assert!(ClockMap::new(vec![m(1, 1)], 1).is_none());
    assert!(ClockMap::new(vec![m(1, 1), m(1, 2)], 1).is_none());
    assert!(ClockMap::new(vec![m(2, 1), m(1, 2)], 1).is_none());
    let c = ClockMap::new(vec![m(0, 0), m(1, u64::MAX)], 100).unwrap();
    // Far from the markers the line saturates rather than overflows.
    let _ = (
        c.realtime(u64::MAX),
        c.seconds(u64::MAX),
        c.cycles_per_tick(),
    );
    assert_eq!(c.realtime(1), i128::from(u64::MAX));
    assert_eq!(c.clock_hz(), 100);
    assert_eq!(c.markers().len(), 2);
}

#[test]
fn times_that_wrap_do_not_panic() {
    // 8192 layout-4 timestamps of the widest delta pass 2^64 cycles: a corrupt trace, decoded all
    // the same (in debug builds, where an overflow would panic).
    for g in [Generation::Gfx11, Generation::Gfx12] {
        let mut e = Encoder::new(g);
        let k = key(g, 0, 0, 0, 0);
        e.start(k, false);
        let widest = if g == Generation::Gfx11 {
            (1u64 << 36) - 1
        } else {
            (1u64 << 52) - 1
        };
        for i in 0..5000 {
            e.gap(widest.min(u64::MAX - e.time()));
            if i % 1000 == 0 {
                e.marker(i);
            }
        }
        e.end(k, false);
        let mut bytes = e.bytes();
        // Timestamps of the widest field, written by hand so that their sum wraps.
        let unit: u128 = 0x01 | (u128::from(widest) << 12);
        let nibbles = if g == Generation::Gfx11 { 12 } else { 16 };
        let mut extra = Vec::new();
        for _ in 0..(1 << 13) {
            for i in 0..nibbles {
                extra.push(((unit >> (4 * i)) & 0xF) as u8);
            }
        }
        for c in extra.chunks(2) {
            bytes.push(c[0] | (c.get(1).copied().unwrap_or(0) << 4));
        }
        bytes.extend_from_slice(&e.bytes()[8..]);
        let _ = waves(&gpu(g), &bytes);
        let _ = clock(&gpu(g), &bytes).map(|c| c.realtime(u64::MAX));
    }
}

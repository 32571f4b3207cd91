//! The shader-data path of every decoder on arbitrary bytes: no panic; every record's fields in
//! their ranges (flags IMM and PRIV only, PRIV only on GFX12, an immediate's value 8 bits,
//! AMD's cu, SIMD and slot numbering); RDNA times never run back; the bytes up to where the
//! decoder stopped give the same records and the same stop; a walk in two halves at once gives
//! what one walk gives, into a plain sink and into a `Split` one; and the walks with their tight
//! loops give what the walk packet by packet gives.
//! Run with `cargo +nightly fuzz run raw_records` from thread-trace/ (cargo-fuzz needs nightly).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqtt_thread_trace::decode::{
    decode, decode_halves, decode_split_halves, decode_steps, shader_data, ShaderData, Sink,
    Split, SHADER_DATA_IMM, SHADER_DATA_PRIV,
};
use sqtt_thread_trace::Generation;

/// The records, in order.
#[derive(Default)]
struct Records(Vec<ShaderData>);

impl Sink for Records {
    fn shader_data(&mut self, r: ShaderData) {
        self.0.push(r);
    }
}

/// The second half's records kept apart and joined with their times moved.
impl Split for Records {
    type Part = Records;
    type Mark = usize;
    fn part(&mut self) -> Records {
        Records::default()
    }
    fn mark(part: &Records) -> usize {
        part.0.len()
    }
    fn join(&mut self, part: Records, from: usize, to: usize, offset: u64) {
        self.0
            .extend(part.0[from..to].iter().map(|r| r.moved(offset)));
    }
}

/// Counts the records and the packets dropped beside them.
#[derive(Default)]
struct Count {
    records: usize,
    dropped: usize,
}

impl Sink for Count {
    fn shader_data(&mut self, _: ShaderData) {
        self.records += 1;
    }
    fn dropped_shader_data(&mut self, r: ShaderData) {
        assert_eq!(r.flags & SHADER_DATA_PRIV, 0);
        self.dropped += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    for g in [Generation::Gfx9, Generation::Gfx11, Generation::Gfx12] {
        let (records, summary) = shader_data(g, data);
        // Walked in two halves at once (as long streams are), the same records and summary.
        let mut halves = Records::default();
        let (s2, _) = decode_halves(g, data, &mut halves, true);
        assert_eq!(s2, summary);
        assert_eq!(halves.0, records);
        let mut split = Records::default();
        let (s3, _) = decode_split_halves(g, data, &mut split, true);
        assert_eq!(s3, summary);
        assert_eq!(split.0, records);
        let mut steps = Records::default();
        assert_eq!(decode_steps(g, data, &mut steps), summary);
        assert_eq!(steps.0, records);
        let mut count = Count::default();
        let again = decode(g, data, &mut count);
        assert_eq!(summary, again);
        assert_eq!(records.len(), count.records);
        assert!(summary.consumed <= data.len());
        if let Some(stop) = summary.stop {
            assert!(stop.offset <= data.len());
            let _ = stop.to_string();
        }
        let mut last = 0;
        for r in &records {
            assert_eq!(r.flags & !(SHADER_DATA_IMM | SHADER_DATA_PRIV), 0, "{r:?}");
            assert!(r.simd < 4, "{r:?}");
            match g {
                Generation::Gfx9 => {
                    assert_eq!(r.flags, 0, "{r:?}");
                    assert!(r.cu < 16 && r.wave < 10, "{r:?}");
                }
                Generation::Gfx11 => {
                    assert_eq!(r.flags & SHADER_DATA_PRIV, 0, "{r:?}");
                    assert!(r.cu & 0x7F < 8 && r.wave < 32, "{r:?}");
                }
                _ => assert!(r.cu & 0x7F < 16 && r.wave < 32, "{r:?}"),
            }
            if r.flags & SHADER_DATA_IMM != 0 {
                assert!(r.value <= 0xFF, "{r:?}");
            }
            if g != Generation::Gfx9 {
                assert!(r.time >= last, "times run back: {r:?}");
                assert!(r.time <= summary.time, "{r:?}");
                last = r.time;
            }
        }
        // The bytes up to where it stopped give the same records (with the 8 bytes after them:
        // a packet's fields are read from the 64 bits at its start, past its end for GFX12's
        // shader data in RDNA 3 sizes, as AMD's decoder reads them).
        let (prefix, _) = shader_data(g, &data[..(summary.consumed + 8).min(data.len())]);
        assert_eq!(prefix, records);
        if let Some(stop) = summary.stop {
            let (_, s) = shader_data(g, &data[..(stop.offset + 9).min(data.len())]);
            if stop.offset + 9 <= data.len()
                && !matches!(stop.reason, sqtt_thread_trace::decode::StopReason::Cut)
            {
                assert_eq!(s.stop, Some(stop));
            }
        }
    }
});

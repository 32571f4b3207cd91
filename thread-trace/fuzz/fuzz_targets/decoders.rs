//! Every decoder on arbitrary bytes: no panic, waves that pair, a clock that maps any time.
//! Run with `cargo +nightly fuzz run decoders` from thread-trace/ (cargo-fuzz needs nightly).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqtt_thread_trace::decode::{decode, header_layout, Sink};
use sqtt_thread_trace::{clock, markers, waves, GcVersion, Gpu};

/// Counts what the decoder reports.
struct Count(usize);

impl Sink for Count {
    fn wave_start(&mut self, _: u32, _: u32, _: u32, _: u64) {
        self.0 += 1;
    }
    fn wave_end(&mut self, _: u32, _: u32, _: u32, _: u64) {
        self.0 += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = header_layout(data);
    for gc in [
        GcVersion::new(9, 4, 3),
        GcVersion::new(11, 0, 0),
        GcVersion::new(12, 0, 1),
    ] {
        let gpu = Gpu::new(gc, 1);
        let ws = waves(&gpu, data);
        // Each wave is a start and an end the decoder reported.
        let mut n = Count(0);
        let s = decode(gpu.generation().unwrap(), data, &mut n);
        assert!(2 * ws.len() <= n.0);
        assert!(s.consumed <= data.len());
        let _ = markers(&gpu, data);
        if let Some(c) = clock(&gpu, data) {
            for t in [0, 1, u64::MAX / 2, u64::MAX] {
                let _ = c.realtime(t);
                let _ = c.seconds(t);
            }
            let _ = c.cycles_per_tick();
        }
    }
});

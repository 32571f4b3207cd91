//! Peak heap of `sqtt flamegraph` and `sqtt perfetto` stays flat as the trace grows: the same
//! program run by five times as many waves (so the same stacks and names, five times the
//! records, waves and shaderdata bytes) may cost only a little more memory. Every
//! allocation of this test binary is counted, so a buffer, history or table that keeps
//! something per record shows as megabytes here.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use sqtt_tools::commands;
use sqtt_tools::diag::NoProgress;
use sqtt_tools::engine::Options;
use sqtt_tools::perfetto::Format;

#[path = "support/program_trace.rs"]
mod program_trace;
use program_trace::write_trace;

struct Counting;
static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap bytes above the level at the start of `f`.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = NOW.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - base
}

/// Peak heap of flamegraph and perfetto on the trace of `waves_per_slot`, and its records.
fn peaks(waves_per_slot: u32, packed: bool) -> (usize, usize, u64) {
    let dir = tempfile::tempdir().unwrap();
    let records = write_trace(dir.path(), waves_per_slot, packed);
    let opts = Options::default();
    let mut stacks = 0;
    let fg = peak_of(|| {
        let out = commands::flamegraph(dir.path(), &opts, &NoProgress).unwrap();
        assert_eq!(out.totals.run.records, records);
        stacks = out.folded.len();
    });
    assert!(stacks >= 6, "{stacks} stacks");
    let pf = peak_of(|| {
        let out = commands::perfetto(dir.path(), None, None, Format::Protobuf, &opts, &NoProgress)
            .unwrap();
        assert!(out.events > records / 2);
    });
    (fg, pf, records)
}

#[test]
fn peak_heap_is_flat_in_trace_size() {
    for packed in [false, true] {
        let (fg_small, pf_small, n_small) = peaks(8, packed);
        let (fg_large, pf_large, n_large) = peaks(40, packed);
        assert_eq!(n_large, 5 * n_small);
        // What may grow: the occupancy spans (tens of bytes per wave, about 80 KiB here). A
        // byte per record would add 165 KiB.
        let slack = 128 << 10;
        for (tool, small, large) in [
            ("flamegraph", fg_small, fg_large),
            ("perfetto", pf_small, pf_large),
        ] {
            eprintln!(
                "{tool} packed={packed}: peak heap {small} B at {n_small} records, {large} B at {n_large}"
            );
            assert!(
                large <= small + slack,
                "{tool} (packed: {packed}): peak heap {small} B at {n_small} records, {large} B at {n_large}"
            );
        }
    }
}

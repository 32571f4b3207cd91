//! `sqtt perfetto`: one Perfetto timeline file per ui directory.
//!
//! A process per dispatch, a thread track per wave instance, slices for scopes (categories
//! `sqtt.function`, `sqtt.user`) and thread-scoped instants for points (`sqtt.point`, with the
//! marker ID, value, source location and payload as arguments). Events of one wave are written
//! in time order as they are decoded; scopes still open at the wave's end are closed there.
//!
//! [`Timeline`] keeps the open scopes and the counts; an [`Encoder`] writes the file:
//! [`proto::ProtoEncoder`] Perfetto's native protobuf trace (the default, `.pftrace`),
//! [`json::JsonEncoder`] the Chrome Trace Event JSON (`.perfetto.json`).

pub mod json;
pub mod proto;

use std::io::{self, Write};

use rustc_hash::FxHashSet;

use crate::diag::{kind, Diagnostics};
use crate::engine::{Marker, Names, ScopeKind, ScopeOp, Sink, Wave};

/// The file format of `sqtt perfetto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Perfetto's protobuf trace (TrackEvent), `<ui dir>.pftrace`.
    #[default]
    Protobuf,
    /// Chrome Trace Event JSON, `<ui dir>.perfetto.json`.
    Json,
}

impl Format {
    /// The file name suffix of the format.
    pub fn suffix(self) -> &'static str {
        match self {
            Format::Protobuf => ".pftrace",
            Format::Json => ".perfetto.json",
        }
    }
}

/// The JSON thread ID of a wave instance: `(1 << 31) | (se << 26) | (cu << 20) | (simd << 16) |
/// (wave << 8) | instance` when the fields fit (Perfetto reads `tid` as a 32-bit number, and
/// bit 31 keeps it clear of tid 0), else `None`.
pub fn thread_id(se: u32, cu: u32, simd: u32, wave: u32, instance: u32) -> Option<u32> {
    if se < 32 && cu < 64 && simd < 16 && wave < 256 && instance < 256 {
        Some((1 << 31) | (se << 26) | (cu << 20) | (simd << 16) | (wave << 8) | instance)
    } else {
        None
    }
}

/// The category of a scope's slices.
pub fn category(k: ScopeKind) -> &'static str {
    match k {
        ScopeKind::Function => "sqtt.function",
        ScopeKind::User => "sqtt.user",
    }
}

/// The category of point instants.
pub const POINT_CATEGORY: &str = "sqtt.point";

/// Writes the events of one timeline file. `slot` is the engine's stream slot: one wave at a
/// time, from [`Encoder::thread`] to the next `thread` of the same slot.
pub trait Encoder {
    /// A dispatch's process, before its first thread. `pid`: the dispatch, `None` for records
    /// with no occupancy.
    fn process(&mut self, pid: Option<u64>, name: &str);
    /// A wave instance's thread track.
    fn thread(&mut self, slot: usize, wave: &Wave);
    /// A slice begins.
    fn begin(&mut self, names: &Names, slot: usize, time: u64, frame: u32, kind: ScopeKind);
    /// The innermost open slice ends.
    fn end(&mut self, slot: usize, time: u64);
    /// A point.
    fn instant(&mut self, names: &Names, slot: usize, time: u64, m: &Marker, payload: &[u32]);
    /// The slot's wave ended (its open slices were ended before).
    fn wave_end(&mut self, _slot: usize) {}
    /// Events written so far.
    fn events(&self) -> u64;
}

/// The Perfetto sink: the open scopes of each wave, unmatched counts, and an encoder.
pub struct Timeline<E> {
    enc: E,
    stacks: Vec<Vec<u32>>,
    pids: FxHashSet<Option<u64>>,
    pub unmatched_enter: u64,
    pub unmatched_exit: u64,
    first_unmatched: Option<String>,
}

impl<E: Encoder> Timeline<E> {
    pub fn new(enc: E) -> Timeline<E> {
        Timeline {
            enc,
            stacks: Vec::new(),
            pids: FxHashSet::default(),
            unmatched_enter: 0,
            unmatched_exit: 0,
            first_unmatched: None,
        }
    }

    /// Events written.
    pub fn events(&self) -> u64 {
        self.enc.events()
    }

    /// The encoder, to finish the file.
    pub fn into_encoder(self) -> E {
        self.enc
    }

    pub fn report(&self, diag: &mut Diagnostics) {
        let ex = self.first_unmatched.clone().unwrap_or_default();
        diag.warn_n(kind::UNMATCHED_ENTER, self.unmatched_enter, || ex);
        diag.warn_n(kind::UNMATCHED_EXIT, self.unmatched_exit, String::new);
    }
}

impl<E: Encoder> Sink for Timeline<E> {
    fn wave_start(&mut self, names: &Names, slot: usize, w: &Wave) {
        if self.pids.insert(w.dispatch) {
            let kname = names.get(w.kernel);
            let pname = match w.dispatch {
                Some(d) => format!("dispatch {d}: {kname}"),
                None => "unknown dispatch (no occupancy)".to_string(),
            };
            self.enc.process(w.dispatch, &pname);
        }
        if self.stacks.len() <= slot {
            self.stacks.resize_with(slot + 1, Vec::new);
        }
        self.stacks[slot].clear();
        self.enc.thread(slot, w);
    }

    fn scope(&mut self, names: &Names, slot: usize, t: u64, op: ScopeOp, m: &Marker) {
        if matches!(op, ScopeOp::Exit | ScopeOp::ExitEnter) {
            if self.stacks[slot].pop().is_some() {
                self.enc.end(slot, t);
            } else {
                self.unmatched_exit += 1;
            }
        }
        if matches!(op, ScopeOp::Enter | ScopeOp::ExitEnter) {
            self.enc.begin(names, slot, t, m.frame, m.scope_kind());
            self.stacks[slot].push(m.frame);
        }
    }

    fn point(&mut self, names: &Names, slot: usize, t: u64, m: &Marker, payload: &[u32]) {
        self.enc.instant(names, slot, t, m, payload);
    }

    fn wave_end(&mut self, names: &Names, slot: usize, w: &Wave, end: u64) {
        let stack = &mut self.stacks[slot];
        if let Some(&top) = stack.last() {
            self.unmatched_enter += stack.len() as u64;
            if self.first_unmatched.is_none() {
                self.first_unmatched = Some(format!(
                    "{} in se {} cu {} simd {} wave {} #{}",
                    names.get(top),
                    w.se,
                    w.cu,
                    w.simd,
                    w.wave_id,
                    w.instance
                ));
            }
        }
        while stack.pop().is_some() {
            self.enc.end(slot, end);
        }
        self.enc.wave_end(slot);
    }
}

/// Output written in blocks of about this size.
const OUT_BLOCK: usize = 1 << 20;

/// An output buffer that goes out in blocks and keeps the first write error.
struct BlockWriter<W> {
    out: W,
    buf: Vec<u8>,
    err: Option<io::Error>,
}

impl<W: Write> BlockWriter<W> {
    fn new(out: W) -> BlockWriter<W> {
        BlockWriter {
            out,
            buf: Vec::with_capacity(OUT_BLOCK + 4096),
            err: None,
        }
    }

    /// Writes the buffer out once it holds a block.
    #[inline]
    fn maybe_flush(&mut self) {
        if self.buf.len() >= OUT_BLOCK {
            self.write_out();
        }
    }

    fn write_out(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Writes what is left, then `tail`, and returns the writer.
    fn finish(mut self, tail: &[u8]) -> io::Result<W> {
        self.write_out();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.write_all(tail)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

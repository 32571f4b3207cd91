//! `sqtt perfetto`: one Perfetto timeline file per ui directory.
//!
//! A process per dispatch, a thread track per wave instance, slices for scopes (categories
//! `sqtt.function`, `sqtt.user`) and thread-scoped instants for points (`sqtt.point`, with the
//! marker ID, value, source location and payload as arguments). Events of one wave are written
//! in time order as they are decoded; scopes still open at the wave's end are closed there.
//!
//! [`Timeline`] decides what the file shows (pids, tids, names, times in ns, arguments), keeps
//! the open scopes and the counts; an [`Encoder`] only writes it down, so the two formats show
//! the same: [`proto::ProtoEncoder`] Perfetto's native protobuf trace (the default, `.pftrace`),
//! [`json::JsonEncoder`] the Chrome Trace Event JSON (`.perfetto.json`).

pub mod json;
pub mod proto;

use std::io::{self, Write};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::codeobj::MarkerClass;
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

/// The category of a scope's slices.
pub fn category(k: ScopeKind) -> &'static str {
    match k {
        ScopeKind::Function => "sqtt.function",
        ScopeKind::User => "sqtt.user",
    }
}

/// The category of point instants.
pub const POINT_CATEGORY: &str = "sqtt.point";

/// The largest pid and tid: both formats' readers take them as 32-bit signed numbers.
const MAX_ID: u32 = i32::MAX as u32;

/// A wave instance's thread, as both formats show it.
#[derive(Debug, Clone, Copy)]
pub struct Thread<'a> {
    /// Its process (its dispatch's).
    pub pid: u32,
    /// 1, 2, 3, ... in the order the waves are met (unique in the file).
    pub tid: u32,
    /// `SE{se}/CU{cu}/SIMD{simd}/W{wave}#{instance}`.
    pub name: &'a str,
}

/// Writes the events of one timeline file: what to show is decided by [`Timeline`] (processes,
/// threads, names, times in ns), so that the formats cannot differ in it. `slot` is the engine's
/// stream slot: one wave at a time, from [`Encoder::thread`] to the next `thread` of the same
/// slot.
pub trait Encoder {
    /// A dispatch's process, before its first thread `first_tid`.
    fn process(&mut self, pid: u32, first_tid: u32, name: &str);
    /// A wave instance's thread track.
    fn thread(&mut self, slot: usize, t: &Thread);
    /// A slice begins.
    fn begin(&mut self, names: &Names, slot: usize, ns: u64, frame: u32, kind: ScopeKind);
    /// The innermost open slice ends.
    fn end(&mut self, slot: usize, ns: u64);
    /// A point. `value` is its value when that is not the legacy form of its ID (`id << 2`,
    /// as every decoded point's is); `payload` its data payload (none for address blocks).
    fn instant(&mut self, names: &Names, slot: usize, ns: u64, p: &Point);
    /// The slot's wave ended (its open slices were ended before).
    fn wave_end(&mut self, _slot: usize) {}
    /// Events written so far.
    fn events(&self) -> u64;
}

/// A point as both formats show it.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    pub frame: u32,
    pub id: u32,
    /// The value, when it is not `id << 2`.
    pub value: Option<u32>,
    pub source_loc: Option<&'a str>,
    pub payload: &'a [u32],
}

/// The Perfetto sink: what the timeline shows (processes and their pids, threads, their tids
/// and names, times), the open scopes of each wave, unmatched counts, and an encoder.
pub struct Timeline<E> {
    enc: E,
    clock_ghz: Option<f64>,
    stacks: Vec<Vec<u32>>,
    /// The pid of each dispatch's process (`None`: records with no occupancy).
    pids: FxHashMap<Option<u64>, u32>,
    used_pids: FxHashSet<u32>,
    next_spare_pid: u32,
    next_tid: u32,
    pub unmatched_enter: u64,
    pub unmatched_exit: u64,
    first_unmatched: Option<String>,
}

/// `cycles` in ns: `cycles / clock_rate_ghz` rounded, or the cycles labelled as ns.
pub fn ns(cycles: u64, clock_ghz: Option<f64>) -> u64 {
    match clock_ghz {
        None => cycles,
        Some(g) => (cycles as f64 / g).round() as u64,
    }
}

impl<E: Encoder> Timeline<E> {
    pub fn new(enc: E, clock_ghz: Option<f64>) -> Timeline<E> {
        Timeline {
            enc,
            clock_ghz,
            stacks: Vec::new(),
            pids: FxHashMap::default(),
            used_pids: FxHashSet::default(),
            next_spare_pid: MAX_ID,
            next_tid: 1,
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

    /// The pid of a new process: the dispatch ID when it is one (Perfetto keeps pid 0 for its
    /// idle process, and reads pids as 32-bit signed numbers) and still free, else one counted
    /// down from `i32::MAX` (records with no occupancy get one too: never a dispatch's).
    fn new_pid(&mut self, dispatch: Option<u64>) -> u32 {
        let own = dispatch
            .and_then(|d| u32::try_from(d).ok())
            .filter(|&d| (1..=MAX_ID).contains(&d) && !self.used_pids.contains(&d));
        let pid = own.unwrap_or_else(|| {
            while self.used_pids.contains(&self.next_spare_pid) {
                self.next_spare_pid -= 1;
            }
            self.next_spare_pid
        });
        self.used_pids.insert(pid);
        pid
    }
}

impl<E: Encoder> Sink for Timeline<E> {
    fn wave_start(&mut self, names: &Names, slot: usize, w: &Wave) {
        let tid = self.next_tid;
        self.next_tid = if tid == MAX_ID { 1 } else { tid + 1 };
        let pid = match self.pids.get(&w.dispatch) {
            Some(&p) => p,
            None => {
                let pid = self.new_pid(w.dispatch);
                self.pids.insert(w.dispatch, pid);
                let kname = names.get(w.kernel);
                let pname = match w.dispatch {
                    Some(d) => format!("dispatch {d}: {kname}"),
                    None => "unknown dispatch (no occupancy)".to_string(),
                };
                self.enc.process(pid, tid, &pname);
                pid
            }
        };
        if self.stacks.len() <= slot {
            self.stacks.resize_with(slot + 1, Vec::new);
        }
        self.stacks[slot].clear();
        let name = format!(
            "SE{}/CU{}/SIMD{}/W{}#{}",
            w.se, w.cu, w.simd, w.wave_id, w.instance
        );
        let t = Thread {
            pid,
            tid,
            name: &name,
        };
        self.enc.thread(slot, &t);
    }

    fn scope(&mut self, names: &Names, slot: usize, t: u64, op: ScopeOp, m: &Marker) {
        let t = ns(t, self.clock_ghz);
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
        let p = Point {
            frame: m.frame,
            id: m.id,
            value: (m.value != m.id << 2).then_some(m.value),
            source_loc: m.entry.and_then(|e| e.source_loc.as_deref()),
            // An address block's records are its payload; `sqtt memory` shows them.
            payload: if matches!(m.class, MarkerClass::Address(_)) {
                &[]
            } else {
                payload
            },
        };
        self.enc.instant(names, slot, ns(t, self.clock_ghz), &p);
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
        let end = ns(end, self.clock_ghz);
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

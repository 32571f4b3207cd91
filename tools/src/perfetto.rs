//! `sqtt perfetto`: one Chrome Trace Event JSON file per ui directory.
//!
//! `pid` is the dispatch (0 = unknown), one thread per wave instance named
//! `CU{cu}/SIMD{simd}/W{wid}#{inst}`; scopes are `B`/`E` slices (categories `sqtt.function`,
//! `sqtt.user`), points are thread-scoped instants (`sqtt.point`). Events of one thread are
//! written in time order as they are decoded; scopes still open at the wave's end are closed
//! there. Timestamps are microseconds of `cycles / clock_rate_ghz` ns, or cycles labelled as ns
//! without a clock rate.

use std::io::{self, Write};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::codeobj::MarkerClass;
use crate::diag::{kind, Diagnostics};
use crate::engine::{Marker, Names, ScopeKind, ScopeOp, Sink, Wave};

/// The thread ID of a wave instance: `(1 << 31) | (se << 26) | (cu << 20) | (simd << 16) |
/// (wave << 8) | instance` when the fields fit (Perfetto reads `tid` as a 32-bit number, and
/// bit 31 keeps it clear of tid 0), else a number counted down from `u32::MAX`.
pub fn thread_id(se: u32, cu: u32, simd: u32, wave: u32, instance: u32) -> Option<u32> {
    if se < 32 && cu < 64 && simd < 16 && wave < 256 && instance < 256 {
        Some((1 << 31) | (se << 26) | (cu << 20) | (simd << 16) | (wave << 8) | instance)
    } else {
        None
    }
}

const OUT_BLOCK: usize = 1 << 20;

struct PState {
    pid: u64,
    tid: u32,
    stack: Vec<u32>,
}

/// The Perfetto writer of one ui directory.
pub struct Perfetto<W: Write> {
    out: W,
    clock_ghz: Option<f64>,
    slots: Vec<PState>,
    pids: FxHashSet<u64>,
    tids: FxHashSet<u32>,
    next_spare: u32,
    escaped: Vec<Option<Box<str>>>,
    kernel_names: FxHashMap<u64, u32>,
    pub events: u64,
    pub unmatched_enter: u64,
    pub unmatched_exit: u64,
    first_unmatched: Option<String>,
    err: Option<io::Error>,
    buf: Vec<u8>,
}

fn ts_into(buf: &mut Vec<u8>, cycles: u64, clock: Option<f64>) {
    match clock {
        None => {
            let mut b = itoa::Buffer::new();
            buf.extend_from_slice(b.format(cycles / 1000).as_bytes());
            let frac = cycles % 1000;
            buf.push(b'.');
            buf.push(b'0' + (frac / 100) as u8);
            buf.push(b'0' + (frac / 10 % 10) as u8);
            buf.push(b'0' + (frac % 10) as u8);
        }
        Some(g) => {
            let us = cycles as f64 / g / 1000.0;
            let _ = write!(buf, "{us:.3}");
        }
    }
}

impl<W: Write> Perfetto<W> {
    /// Starts the file. `source` names the ui directory in `otherData`.
    pub fn new(mut out: W, source: &str, clock_ghz: Option<f64>) -> io::Result<Perfetto<W>> {
        let unit = match clock_ghz {
            Some(g) => format!("ns at {g} GHz"),
            None => "SQTT cycles labelled as ns".to_string(),
        };
        write!(
            out,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"source\":{},\"time_unit\":{}}},\"traceEvents\":[",
            serde_json::to_string(source).unwrap_or_default(),
            serde_json::to_string(&unit).unwrap_or_default()
        )?;
        Ok(Perfetto {
            out,
            clock_ghz,
            slots: Vec::new(),
            pids: FxHashSet::default(),
            tids: FxHashSet::default(),
            next_spare: u32::MAX,
            escaped: Vec::new(),
            kernel_names: FxHashMap::default(),
            events: 0,
            unmatched_enter: 0,
            unmatched_exit: 0,
            first_unmatched: None,
            err: None,
            buf: Vec::with_capacity(OUT_BLOCK + 4096),
        })
    }

    fn name_json(&mut self, names: &Names, frame: u32) -> &str {
        let i = frame as usize;
        if self.escaped.len() <= i {
            self.escaped.resize(i + 1, None);
        }
        let e = self.escaped[i].get_or_insert_with(|| {
            serde_json::to_string(names.get(frame))
                .unwrap_or_default()
                .into_boxed_str()
        });
        e
    }

    /// The separator before the next event.
    fn sep(&mut self) {
        self.buf
            .extend_from_slice(if self.events == 0 { b"\n" } else { b",\n" });
    }

    /// Ends an event; the buffer goes out in blocks of about 1 MiB.
    fn flush_event(&mut self) {
        self.events += 1;
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

    /// `{"ph":PH,"name":NAME,"cat":CAT,"ts":TS,"pid":P,"tid":T` (unclosed).
    fn head(
        &mut self,
        ph: &str,
        name_frame: Option<(u32, &Names)>,
        cat: &str,
        t: u64,
        slot: usize,
    ) {
        let (pid, tid) = (self.slots[slot].pid, self.slots[slot].tid);
        self.sep();
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(b"{\"ph\":\"");
        buf.extend_from_slice(ph.as_bytes());
        buf.extend_from_slice(b"\"");
        if let Some((f, names)) = name_frame {
            buf.extend_from_slice(b",\"name\":");
            buf.extend_from_slice(self.name_json(names, f).as_bytes());
        }
        if !cat.is_empty() {
            buf.extend_from_slice(b",\"cat\":\"");
            buf.extend_from_slice(cat.as_bytes());
            buf.extend_from_slice(b"\"");
        }
        buf.extend_from_slice(b",\"ts\":");
        ts_into(&mut buf, t, self.clock_ghz);
        let mut b = itoa::Buffer::new();
        buf.extend_from_slice(b",\"pid\":");
        buf.extend_from_slice(b.format(pid).as_bytes());
        buf.extend_from_slice(b",\"tid\":");
        buf.extend_from_slice(b.format(tid).as_bytes());
        self.buf = buf;
    }

    fn meta(&mut self, what: &str, pid: u64, tid: u32, name: &str) {
        self.sep();
        let _ = write!(
            self.buf,
            "{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            serde_json::to_string(name).unwrap_or_default()
        );
        self.flush_event();
    }

    fn cat(k: ScopeKind) -> &'static str {
        match k {
            ScopeKind::Function => "sqtt.function",
            ScopeKind::User => "sqtt.user",
        }
    }

    fn end_slice(&mut self, slot: usize, t: u64) {
        if self.slots[slot].stack.pop().is_some() {
            // An E closes the thread's innermost open B; name and category are implied.
            self.head("E", None, "", t, slot);
            self.buf.push(b'}');
            self.flush_event();
        }
    }

    /// Closes the JSON and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.write_out();
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }

    pub fn report(&self, diag: &mut Diagnostics) {
        let ex = self.first_unmatched.clone().unwrap_or_default();
        diag.warn_n(kind::UNMATCHED_ENTER, self.unmatched_enter, || ex);
        diag.warn_n(kind::UNMATCHED_EXIT, self.unmatched_exit, String::new);
    }
}

impl<W: Write> Sink for Perfetto<W> {
    fn wave_start(&mut self, names: &Names, slot: usize, w: &Wave) {
        let pid = w.dispatch.unwrap_or(0);
        if self.pids.insert(pid) {
            let kname = names.get(w.kernel).to_string();
            let pname = match w.dispatch {
                Some(d) => format!("dispatch {d}: {kname}"),
                None => "unknown dispatch (no occupancy)".to_string(),
            };
            self.kernel_names.insert(pid, w.kernel);
            // The process's own thread (tid = pid), as Chrome traces name processes.
            self.meta("process_name", pid, pid as u32, &pname);
        }
        let mut tid = thread_id(w.se, w.cu, w.simd, w.wave_id, w.instance);
        if tid.is_some_and(|t| self.tids.contains(&t)) {
            tid = None;
        }
        let tid = tid.unwrap_or_else(|| {
            while self.tids.contains(&self.next_spare) {
                self.next_spare -= 1;
            }
            self.next_spare
        });
        self.tids.insert(tid);
        while self.slots.len() <= slot {
            self.slots.push(PState {
                pid: 0,
                tid: 0,
                stack: Vec::new(),
            });
        }
        let st = &mut self.slots[slot];
        st.pid = pid;
        st.tid = tid;
        st.stack.clear();
        let tname = format!("CU{}/SIMD{}/W{}#{}", w.cu, w.simd, w.wave_id, w.instance);
        self.meta("thread_name", pid, tid, &tname);
    }

    fn scope(&mut self, names: &Names, slot: usize, t: u64, op: ScopeOp, m: &Marker) {
        if matches!(op, ScopeOp::Exit | ScopeOp::ExitEnter) {
            if self.slots[slot].stack.is_empty() {
                self.unmatched_exit += 1;
            } else {
                self.end_slice(slot, t);
            }
        }
        if matches!(op, ScopeOp::Enter | ScopeOp::ExitEnter) {
            let k = m.scope_kind();
            self.head("B", Some((m.frame, names)), Self::cat(k), t, slot);
            self.buf.push(b'}');
            self.flush_event();
            self.slots[slot].stack.push(m.frame);
        }
    }

    fn point(&mut self, names: &Names, slot: usize, t: u64, m: &Marker, payload: &[u32]) {
        self.head("i", Some((m.frame, names)), "sqtt.point", t, slot);
        let mut b = itoa::Buffer::new();
        self.buf
            .extend_from_slice(b",\"s\":\"t\",\"args\":{\"id\":");
        self.buf.extend_from_slice(b.format(m.id).as_bytes());
        self.buf.extend_from_slice(b",\"value\":");
        self.buf.extend_from_slice(b.format(m.value).as_bytes());
        if let Some(loc) = m.entry.and_then(|e| e.source_loc.as_deref()) {
            self.buf.extend_from_slice(b",\"source_loc\":");
            self.buf
                .extend_from_slice(serde_json::to_string(loc).unwrap_or_default().as_bytes());
        }
        if !payload.is_empty() && !matches!(m.class, MarkerClass::Address(_)) {
            self.buf.extend_from_slice(b",\"payload\":[");
            for (i, p) in payload.iter().enumerate() {
                if i > 0 {
                    self.buf.push(b',');
                }
                self.buf.extend_from_slice(b.format(*p).as_bytes());
            }
            self.buf.push(b']');
        }
        self.buf.extend_from_slice(b"}}");
        self.flush_event();
    }

    fn wave_end(&mut self, names: &Names, slot: usize, w: &Wave, end: u64) {
        let open = self.slots[slot].stack.len() as u64;
        if open > 0 {
            self.unmatched_enter += open;
            if self.first_unmatched.is_none() {
                let top = self.slots[slot].stack.last().copied().unwrap_or(0);
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
        while !self.slots[slot].stack.is_empty() {
            self.end_slice(slot, end);
        }
    }
}

//! The Chrome Trace Event JSON form of the timeline (`sqtt perfetto --json`).
//!
//! What it shows is the [`Timeline`](super::Timeline)'s: `pid` and `tid` as given, `M` events
//! naming processes and threads; scopes are `B`/`E` slices, points thread-scoped instants (`i`).
//! Timestamps are the timeline's ns written as microseconds with three decimals.

use std::io::{self, Write};

use super::{category, BlockWriter, Encoder, Point, Thread, POINT_CATEGORY};
use crate::engine::{Names, ScopeKind};

/// The JSON writer of one ui directory.
pub struct JsonEncoder<W: Write> {
    w: BlockWriter<W>,
    /// `(pid, tid)` of each slot's wave.
    slots: Vec<(u32, u32)>,
    escaped: Vec<Option<Box<str>>>,
    events: u64,
}

/// `ns` as microseconds with three decimals (exact).
fn ts_into(buf: &mut Vec<u8>, ns: u64) {
    let mut b = itoa::Buffer::new();
    buf.extend_from_slice(b.format(ns / 1000).as_bytes());
    let frac = ns % 1000;
    buf.push(b'.');
    buf.push(b'0' + (frac / 100) as u8);
    buf.push(b'0' + (frac / 10 % 10) as u8);
    buf.push(b'0' + (frac % 10) as u8);
}

impl<W: Write> JsonEncoder<W> {
    /// Starts the file. `source` names the ui directory in `otherData`.
    pub fn new(mut out: W, source: &str, clock_ghz: Option<f64>) -> io::Result<JsonEncoder<W>> {
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
        Ok(JsonEncoder {
            w: BlockWriter::new(out),
            slots: Vec::new(),
            escaped: Vec::new(),
            events: 0,
        })
    }

    /// Closes the JSON and returns the writer.
    pub fn finish(self) -> io::Result<W> {
        self.w.finish(b"\n]}\n")
    }

    fn name_json(&mut self, names: &Names, frame: u32) -> &str {
        let i = frame as usize;
        if self.escaped.len() <= i {
            self.escaped.resize(i + 1, None);
        }
        self.escaped[i].get_or_insert_with(|| {
            serde_json::to_string(names.get(frame))
                .unwrap_or_default()
                .into_boxed_str()
        })
    }

    /// The separator before the next event.
    fn sep(&mut self) {
        self.w
            .buf
            .extend_from_slice(if self.events == 0 { b"\n" } else { b",\n" });
    }

    /// Ends an event.
    fn flush_event(&mut self) {
        self.events += 1;
        self.w.maybe_flush();
    }

    /// `{"ph":PH,"name":NAME,"cat":CAT,"ts":TS,"pid":P,"tid":T` (unclosed).
    fn head(&mut self, ph: &str, name: Option<(u32, &Names)>, cat: &str, t: u64, slot: usize) {
        let (pid, tid) = self.slots[slot];
        self.sep();
        let mut buf = std::mem::take(&mut self.w.buf);
        buf.extend_from_slice(b"{\"ph\":\"");
        buf.extend_from_slice(ph.as_bytes());
        buf.extend_from_slice(b"\"");
        if let Some((f, names)) = name {
            buf.extend_from_slice(b",\"name\":");
            buf.extend_from_slice(self.name_json(names, f).as_bytes());
        }
        if !cat.is_empty() {
            buf.extend_from_slice(b",\"cat\":\"");
            buf.extend_from_slice(cat.as_bytes());
            buf.extend_from_slice(b"\"");
        }
        buf.extend_from_slice(b",\"ts\":");
        ts_into(&mut buf, t);
        let mut b = itoa::Buffer::new();
        buf.extend_from_slice(b",\"pid\":");
        buf.extend_from_slice(b.format(pid).as_bytes());
        buf.extend_from_slice(b",\"tid\":");
        buf.extend_from_slice(b.format(tid).as_bytes());
        self.w.buf = buf;
    }

    fn meta(&mut self, what: &str, pid: u32, tid: u32, name: &str) {
        self.sep();
        let _ = write!(
            self.w.buf,
            "{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            serde_json::to_string(name).unwrap_or_default()
        );
        self.flush_event();
    }
}

impl<W: Write> Encoder for JsonEncoder<W> {
    fn process(&mut self, pid: u32, first_tid: u32, name: &str) {
        // Perfetto makes a thread of every event's (pid, tid), this one's included: the
        // process's first wave thread, which is there anyway.
        self.meta("process_name", pid, first_tid, name);
    }

    fn thread(&mut self, slot: usize, t: &Thread) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, (0, 0));
        }
        self.slots[slot] = (t.pid, t.tid);
        self.meta("thread_name", t.pid, t.tid, t.name);
    }

    fn begin(&mut self, names: &Names, slot: usize, t: u64, frame: u32, kind: ScopeKind) {
        self.head("B", Some((frame, names)), category(kind), t, slot);
        self.w.buf.push(b'}');
        self.flush_event();
    }

    fn end(&mut self, slot: usize, t: u64) {
        // An E closes the thread's innermost open B; name and category are implied.
        self.head("E", None, "", t, slot);
        self.w.buf.push(b'}');
        self.flush_event();
    }

    fn instant(&mut self, names: &Names, slot: usize, t: u64, p: &Point) {
        self.head("i", Some((p.frame, names)), POINT_CATEGORY, t, slot);
        let buf = &mut self.w.buf;
        let mut b = itoa::Buffer::new();
        buf.extend_from_slice(b",\"s\":\"t\",\"args\":{\"id\":");
        buf.extend_from_slice(b.format(p.id).as_bytes());
        if let Some(v) = p.value {
            buf.extend_from_slice(b",\"value\":");
            buf.extend_from_slice(b.format(v).as_bytes());
        }
        if let Some(loc) = p.source_loc {
            buf.extend_from_slice(b",\"source_loc\":");
            buf.extend_from_slice(serde_json::to_string(loc).unwrap_or_default().as_bytes());
        }
        if !p.payload.is_empty() {
            buf.extend_from_slice(b",\"payload\":[");
            for (i, v) in p.payload.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(b.format(*v).as_bytes());
            }
            buf.push(b']');
        }
        buf.extend_from_slice(b"}}");
        self.flush_event();
    }

    fn events(&self) -> u64 {
        self.events
    }
}

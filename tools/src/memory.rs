//! `sqtt memory`: address-trace blocks as JSON (per-lane addresses, source locations) and a
//! per-op summary (cache-line utilisation for 64 B and 128 B lines, stride, coalescing).

use std::collections::BTreeMap;
use std::io::{self, Write};

use sqtt_files::output::printable;

use serde_json::{json, Value};

use crate::codeobj::AddrCategory;
use crate::engine::{AddressBlock, Marker, Names, Sink, Wave};

/// Line sizes of the summary.
pub const LINE_SIZES: [u64; 2] = [64, 128];

/// Figures of one op (one code object marker ID).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpStats {
    pub code_object: Option<u64>,
    pub marker_id: u32,
    pub name: String,
    pub category: String,
    pub kind: String,
    pub source_loc: Option<String>,
    pub executions: u64,
    pub active_lanes: u64,
    /// Distinct bytes touched, summed over executions.
    pub bytes: u64,
    /// Distinct lines touched, summed over executions, per line size.
    pub lines: [u64; 2],
    /// The fewest lines the bytes could fit in, summed, per line size.
    pub ideal_lines: [u64; 2],
    /// Executions whose lanes all step by one stride: stride -> count.
    pub strides: BTreeMap<i64, u64>,
    /// Executions with at least two lanes and no single stride.
    pub irregular: u64,
    /// Kernels (dispatch names) the op ran in.
    pub kernels: std::collections::BTreeSet<String>,
}

impl OpStats {
    fn add(&mut self, b: &AddressBlock, access_size: u64) {
        self.executions += 1;
        self.active_lanes += b.lanes.len() as u64;
        let mut ranges: Vec<(u64, u64)> = b
            .addresses
            .iter()
            .map(|&a| (a, a.saturating_add(access_size)))
            .collect();
        ranges.sort_unstable();
        let mut bytes = 0u64;
        let mut cur: Option<(u64, u64)> = None;
        for (s, e) in ranges.iter().copied() {
            match cur {
                Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
                Some((cs, ce)) => {
                    bytes += ce - cs;
                    cur = Some((s, e));
                }
                None => cur = Some((s, e)),
            }
        }
        if let Some((cs, ce)) = cur {
            bytes += ce - cs;
        }
        self.bytes += bytes;
        for (i, l) in LINE_SIZES.iter().enumerate() {
            let mut lines: Vec<u64> = Vec::with_capacity(b.addresses.len());
            for (s, e) in &ranges {
                let mut x = s / l;
                while x <= (e - 1) / l {
                    lines.push(x);
                    x += 1;
                }
            }
            lines.sort_unstable();
            lines.dedup();
            self.lines[i] += lines.len() as u64;
            self.ideal_lines[i] += bytes.div_ceil(*l);
        }
        if b.addresses.len() >= 2 {
            let d0 = b.addresses[1].wrapping_sub(b.addresses[0]) as i64;
            if b.addresses
                .windows(2)
                .all(|w| w[1].wrapping_sub(w[0]) as i64 == d0)
            {
                *self.strides.entry(d0).or_default() += 1;
            } else {
                self.irregular += 1;
            }
        }
    }

    /// The most common uniform stride (bytes between consecutive active lanes).
    pub fn stride(&self) -> Option<i64> {
        self.strides
            .iter()
            .max_by_key(|(s, c)| (**c, -(s.abs())))
            .map(|(s, _)| *s)
    }

    pub fn utilisation(&self, i: usize) -> f64 {
        if self.lines[i] == 0 {
            0.0
        } else {
            self.bytes as f64 / (self.lines[i] * LINE_SIZES[i]) as f64
        }
    }

    pub fn coalescing(&self, i: usize) -> f64 {
        if self.lines[i] == 0 {
            0.0
        } else {
            self.ideal_lines[i] as f64 / self.lines[i] as f64
        }
    }

    pub fn to_json(&self) -> Value {
        let per = |x: u64| {
            if self.executions == 0 {
                0.0
            } else {
                x as f64 / self.executions as f64
            }
        };
        let uniform: u64 = self.strides.values().sum();
        let with_two = uniform + self.irregular;
        json!({
            "code_object": self.code_object,
            "marker_id": self.marker_id,
            "op": self.name,
            "category": self.category,
            "kind": self.kind,
            "source_loc": self.source_loc,
            "kernels": self.kernels,
            "executions": self.executions,
            "active_lanes": self.active_lanes,
            "avg_active_lanes": round3(per(self.active_lanes)),
            "bytes_per_exec": round3(per(self.bytes)),
            "lines_64B_per_exec": round3(per(self.lines[0])),
            "utilisation_64B": round3(self.utilisation(0)),
            "coalescing_64B": round3(self.coalescing(0)),
            "lines_128B_per_exec": round3(per(self.lines[1])),
            "utilisation_128B": round3(self.utilisation(1)),
            "coalescing_128B": round3(self.coalescing(1)),
            "stride": self.stride(),
            "uniform_stride_fraction": if with_two == 0 { Value::Null } else { json!(round3(uniform as f64 / with_two as f64)) },
        })
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Collects address blocks of every ui directory.
pub struct MemoryReport<W: Write> {
    out: Option<W>,
    access_size: u64,
    ui: String,
    waves: Vec<Wave>,
    pub blocks: u64,
    pub ops: BTreeMap<(Option<u64>, u32), OpStats>,
    err: Option<io::Error>,
}

impl<W: Write> MemoryReport<W> {
    /// `out` receives `{"traces":[...` (the summary and the end come with [`Self::finish`]);
    /// `None` collects the summary only. `access_size` is the bytes each lane accesses.
    pub fn new(mut out: Option<W>, access_size: u64) -> io::Result<MemoryReport<W>> {
        if let Some(o) = out.as_mut() {
            o.write_all(b"{\"traces\":[")?;
        }
        Ok(MemoryReport {
            out,
            access_size: access_size.max(1),
            ui: String::new(),
            waves: Vec::new(),
            blocks: 0,
            ops: BTreeMap::new(),
            err: None,
        })
    }

    /// Starts the next ui directory.
    pub fn set_dir(&mut self, name: &str) {
        self.ui = name.to_string();
        self.waves.clear();
    }

    pub fn summary_json(&self) -> Value {
        Value::Array(self.ops.values().map(OpStats::to_json).collect())
    }

    /// Writes the summary and closes the JSON.
    pub fn finish(mut self, warnings: &[String]) -> io::Result<Option<W>> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        let summary = self.summary_json();
        if let Some(o) = self.out.as_mut() {
            write!(
                o,
                "\n],\"summary\":{},\"warnings\":{}}}\n",
                summary,
                Value::from(warnings.to_vec())
            )?;
            o.flush()?;
        }
        Ok(self.out)
    }

    /// The summary as a text table.
    pub fn summary_table(&self) -> String {
        let mut s = format!(
            "{:<44} {:>7} {:>6} {:>8} {:>6} {:>8} {:>6} {:>6} {:>7}\n",
            "op", "execs", "lanes", "lines64", "util64", "lines128", "util128", "coal64", "stride"
        );
        for o in self.ops.values() {
            let per = |x: u64| x as f64 / o.executions.max(1) as f64;
            let name = match &o.source_loc {
                Some(l) => format!("{}#{} @ {}", o.name, o.marker_id, l),
                None => format!("{}#{}", o.name, o.marker_id),
            };
            let name = printable(&name);
            let stride = o
                .stride()
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into());
            s.push_str(&format!(
                "{:<44} {:>7} {:>6.1} {:>8.2} {:>6.3} {:>8.2} {:>6.3} {:>6.3} {:>7}\n",
                name,
                o.executions,
                per(o.active_lanes),
                per(o.lines[0]),
                o.utilisation(0),
                per(o.lines[1]),
                o.utilisation(1),
                o.coalescing(0),
                stride
            ));
        }
        s
    }
}

fn hex(a: u64) -> Value {
    Value::String(format!("{a:#x}"))
}

impl<W: Write> Sink for MemoryReport<W> {
    fn wants_addresses(&self) -> bool {
        true
    }

    fn wave_start(&mut self, _names: &Names, slot: usize, wave: &Wave) {
        if self.waves.len() <= slot {
            self.waves.resize(slot + 1, Wave::default());
        }
        self.waves[slot] = *wave;
    }

    fn address(&mut self, names: &Names, slot: usize, time: u64, m: &Marker, b: &AddressBlock) {
        let w = self.waves[slot];
        let loc = m.entry.and_then(|e| e.source_loc.clone());
        let name = names.get(m.frame).to_string();
        let stats = self
            .ops
            .entry((w.codeobj, m.id))
            .or_insert_with(|| OpStats {
                code_object: w.codeobj,
                marker_id: m.id,
                name: name.clone(),
                category: b.layout.label().to_string(),
                kind: b.op.to_string(),
                source_loc: loc.clone(),
                ..Default::default()
            });
        stats.add(b, self.access_size);
        if !stats.kernels.contains(names.get(w.kernel)) {
            stats.kernels.insert(names.get(w.kernel).to_string());
        }
        self.blocks += 1;
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let mut v = json!({
            "ui_dir": self.ui,
            "dispatch": w.dispatch,
            "kernel": names.get(w.kernel),
            "code_object": w.codeobj,
            "se": w.se, "cu": w.cu, "simd": w.simd, "wave_id": w.wave_id, "instance": w.instance,
            "time": time,
            "marker_id": m.id,
            "op": name,
            "category": b.layout.label(),
            "kind": b.op,
            "source_loc": loc,
            "wave_size": b.wave_size,
            "exec": hex(b.exec),
            "lanes": b.lanes,
        });
        let o = v.as_object_mut().expect("object");
        match b.layout {
            AddrCategory::Permute => {
                o.insert("indices".into(), json!(b.addresses));
                o.insert(
                    "source_lanes".into(),
                    json!(b.addresses.iter().map(|a| a / 4).collect::<Vec<_>>()),
                );
            }
            AddrCategory::Lds => {
                o.insert("addresses".into(), json!(b.addresses));
            }
            _ => {
                o.insert(
                    "addresses".into(),
                    Value::Array(b.addresses.iter().map(|a| hex(*a)).collect()),
                );
            }
        }
        if let Some(bp) = b.buffer {
            o.insert("base".into(), hex(bp.base));
            o.insert("soffset".into(), json!(bp.soffset));
            o.insert("voffsets".into(), json!(b.voffsets));
            if b.layout == AddrCategory::StructBuffer {
                o.insert("stride".into(), json!(bp.stride));
                o.insert("vindex".into(), json!(b.vindex));
            }
        }
        let sep: &[u8] = if self.blocks == 1 { b"\n" } else { b",\n" };
        if self.err.is_none() {
            if let Err(e) = out
                .write_all(sep)
                .and_then(|_| serde_json::to_writer(&mut *out, &v).map_err(io::Error::from))
            {
                self.err = Some(e);
            }
        }
    }
}

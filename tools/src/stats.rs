//! `sqtt stats`: per kernel and per scope (function, user marker) the count, total, mean, min
//! and max of their durations, sorted by total.
//!
//! A kernel's samples are its waves, from the wave's start to its end; a scope's are its
//! instances, from enter to exit (inclusive of nested scopes; one still open at its wave's end
//! is closed there, as in the flamegraph).

use sqtt_files::output::printable;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::engine::{Marker, Names, ScopeKind, ScopeOp, Sink, Wave};

/// The `schema` of [`StatsReport`].
pub const SCHEMA: &str = "sqtt-stats";
/// The `version` of [`StatsReport`]; raised when a field changes meaning or goes away.
pub const VERSION: u32 = 1;

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// The waves of a kernel.
    Kernel,
    /// A function scope.
    Function,
    /// A user scope (named, or a numeric marker ID).
    User,
}

impl RowKind {
    pub fn label(self) -> &'static str {
        match self {
            RowKind::Kernel => "kernel",
            RowKind::Function => "function",
            RowKind::User => "user",
        }
    }
}

/// One row of `sqtt stats --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsRow {
    pub kernel: String,
    /// The scope's name; `None` on a kernel row.
    pub scope: Option<String>,
    pub kind: RowKind,
    pub count: u64,
    pub total_cycles: u64,
    pub mean_cycles: f64,
    pub min_cycles: u64,
    pub max_cycles: u64,
    /// The same in ns, with `--clock-rate-ghz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ns: Option<f64>,
}

/// The document `sqtt stats --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`VERSION`] of the writer.
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_rate_ghz: Option<f64>,
    /// Sorted by total cycles, largest first (then kernel, kind and scope).
    pub rows: Vec<StatsRow>,
}

#[derive(Debug, Clone, Copy)]
struct Acc {
    count: u64,
    total: u64,
    min: u64,
    max: u64,
}

impl Acc {
    fn add(&mut self, d: u64) {
        self.count += 1;
        self.total += d;
        self.min = self.min.min(d);
        self.max = self.max.max(d);
    }
}

impl Default for Acc {
    fn default() -> Acc {
        Acc {
            count: 0,
            total: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

#[derive(Debug, Default, Clone)]
struct SState {
    kernel: u32,
    begin: u64,
    /// Open scopes: (frame, kind, enter time).
    stack: Vec<(u32, RowKind, u64)>,
}

/// The stats sink.
#[derive(Debug, Default)]
pub struct Stats {
    slots: Vec<SState>,
    /// (kernel frame, kind, scope frame or u32::MAX) -> durations.
    acc: FxHashMap<(u32, RowKind, u32), Acc>,
}

impl Stats {
    pub fn new() -> Stats {
        Stats::default()
    }

    fn close(&mut self, slot: usize, time: u64) {
        let st = &mut self.slots[slot];
        if let Some((frame, kind, t0)) = st.stack.pop() {
            let k = st.kernel;
            self.acc
                .entry((k, kind, frame))
                .or_default()
                .add(time.saturating_sub(t0));
        }
    }

    /// The rows, sorted.
    pub fn report(&self, names: &Names, clock_ghz: Option<f64>) -> StatsReport {
        let ns = |c: f64| clock_ghz.map(|g| c / g);
        let mut rows: Vec<StatsRow> = self
            .acc
            .iter()
            .filter(|(_, a)| a.count > 0)
            .map(|(&(k, kind, f), a)| {
                let mean = a.total as f64 / a.count as f64;
                StatsRow {
                    kernel: names.get(k).to_string(),
                    scope: (f != u32::MAX).then(|| names.get(f).to_string()),
                    kind,
                    count: a.count,
                    total_cycles: a.total,
                    mean_cycles: mean,
                    min_cycles: a.min,
                    max_cycles: a.max,
                    total_ns: ns(a.total as f64),
                    mean_ns: ns(mean),
                    min_ns: ns(a.min as f64),
                    max_ns: ns(a.max as f64),
                }
            })
            .collect();
        rows.sort_by(|a, b| {
            b.total_cycles
                .cmp(&a.total_cycles)
                .then_with(|| a.kernel.cmp(&b.kernel))
                .then_with(|| a.kind.cmp(&b.kind))
                .then_with(|| a.scope.cmp(&b.scope))
        });
        StatsReport {
            schema: SCHEMA.to_string(),
            version: VERSION,
            clock_rate_ghz: clock_ghz,
            rows,
        }
    }
}

impl Sink for Stats {
    fn wave_start(&mut self, _names: &Names, slot: usize, wave: &Wave) {
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, SState::default());
        }
        let st = &mut self.slots[slot];
        st.kernel = wave.kernel;
        st.begin = wave.begin;
        st.stack.clear();
    }

    fn scope(&mut self, _names: &Names, slot: usize, time: u64, op: ScopeOp, m: &Marker) {
        if matches!(op, ScopeOp::Exit | ScopeOp::ExitEnter) {
            self.close(slot, time);
        }
        if matches!(op, ScopeOp::Enter | ScopeOp::ExitEnter) {
            let kind = match m.scope_kind() {
                ScopeKind::Function => RowKind::Function,
                ScopeKind::User => RowKind::User,
            };
            self.slots[slot].stack.push((m.frame, kind, time));
        }
    }

    fn wave_end(&mut self, _names: &Names, slot: usize, _wave: &Wave, end: u64) {
        while !self.slots[slot].stack.is_empty() {
            self.close(slot, end);
        }
        let st = &self.slots[slot];
        let (k, d) = (st.kernel, end.saturating_sub(st.begin));
        self.acc
            .entry((k, RowKind::Kernel, u32::MAX))
            .or_default()
            .add(d);
    }
}

fn num(x: f64) -> String {
    format!("{x:.1}")
}

/// The rows as an aligned text table.
pub fn to_text(r: &StatsReport) -> String {
    let ns = r.clock_rate_ghz.is_some();
    let mut head = vec!["kind", "count", "total", "mean", "min", "max"];
    if ns {
        head.extend(["total_ns", "mean_ns", "min_ns", "max_ns"]);
    }
    let mut cells: Vec<Vec<String>> = Vec::new();
    for row in &r.rows {
        let mut c = vec![
            row.kind.label().to_string(),
            row.count.to_string(),
            row.total_cycles.to_string(),
            num(row.mean_cycles),
            row.min_cycles.to_string(),
            row.max_cycles.to_string(),
        ];
        if ns {
            for v in [row.total_ns, row.mean_ns, row.min_ns, row.max_ns] {
                c.push(num(v.unwrap_or(0.0)));
            }
        }
        cells.push(c);
    }
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.len());
        }
    }
    let mut out = String::new();
    let unit = if ns { "cycles, then ns" } else { "cycles" };
    let _ = writeln!(out, "# durations in {unit}, sorted by total");
    for (i, (h, w)) in head.iter().zip(&width).enumerate() {
        if i == 0 {
            let _ = write!(out, "{h:<w$}");
        } else {
            let _ = write!(out, "  {h:>w$}");
        }
    }
    let _ = writeln!(out, "  kernel / scope");
    for (row, c) in r.rows.iter().zip(&cells) {
        for (i, (s, w)) in c.iter().zip(&width).enumerate() {
            if i == 0 {
                let _ = write!(out, "{s:<w$}");
            } else {
                let _ = write!(out, "  {s:>w$}");
            }
        }
        match &row.scope {
            Some(s) => {
                let _ = writeln!(out, "  {} / {}", printable(&row.kernel), printable(s));
            }
            None => {
                let _ = writeln!(out, "  {}", printable(&row.kernel));
            }
        }
    }
    out
}

/// A quoted CSV field, its control characters escaped so that every row is one line.
pub(crate) fn csv_field(s: &str) -> String {
    format!("\"{}\"", printable(s).replace('"', "\"\""))
}

/// The rows as CSV with a header line (names always quoted).
pub fn to_csv(r: &StatsReport) -> String {
    let ns = r.clock_rate_ghz.is_some();
    let mut out =
        String::from("kernel,scope,kind,count,total_cycles,mean_cycles,min_cycles,max_cycles");
    if ns {
        out.push_str(",total_ns,mean_ns,min_ns,max_ns");
    }
    out.push('\n');
    for row in &r.rows {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{}",
            csv_field(&row.kernel),
            csv_field(row.scope.as_deref().unwrap_or("")),
            row.kind.label(),
            row.count,
            row.total_cycles,
            row.mean_cycles,
            row.min_cycles,
            row.max_cycles
        );
        if ns {
            for v in [row.total_ns, row.mean_ns, row.min_ns, row.max_ns] {
                let _ = write!(out, ",{}", v.unwrap_or(0.0));
            }
        }
        out.push('\n');
    }
    out
}

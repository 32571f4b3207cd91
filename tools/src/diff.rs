//! `sqtt diff A B`: two captures of the same kernels compared stack by stack, for A/B tuning.
//!
//! A stack is a kernel frame and the scopes open below it (`kernel;scope;scope`), as the
//! flamegraph draws them. Its instances are the waves of the kernel (for the kernel frame
//! alone) or the times the innermost scope ran in that context, from enter to exit (nested
//! scopes included; one still open at its wave's end is closed there). Per side: the count of
//! instances, their mean and total cycles; the ratio of the means B/A; and whether the
//! difference is beyond the noise between waves: Welch's two-sided t-test on the waves' own
//! means of the stack (a wave's instances are not independent of each other, waves are).
//! Stacks found on one side only are listed as such.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::diag::{Diagnostics, Progress};
use crate::engine::{Marker, Names, Options, ScopeOp, Sink, Wave};
use crate::error::Error;
use crate::flamegraph::Flamegraph;

/// The `schema` of [`DiffReport`].
pub const SCHEMA: &str = "sqtt-diff";
/// The `schema_version` of [`DiffReport`]; raised when a field changes meaning or goes away
/// (new fields may appear without).
pub const SCHEMA_VERSION: u32 = 1;
/// The significance level of the test unless `--alpha` says otherwise.
pub const DEFAULT_ALPHA: f64 = 0.01;

/// What the significance test is, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestInfo {
    /// `"welch_t"`: Welch's unequal-variances t-test.
    pub name: String,
    /// What is compared: `"per-wave mean cycles of the stack"`.
    pub samples: String,
    /// `"two-sided"`.
    pub sides: String,
    /// A difference is significant when its p-value is below this.
    pub alpha: f64,
}

/// Which side a stack was found on, when only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    A,
    B,
}

/// One stack of `sqtt diff --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffRow {
    /// `kernel;scope;...`, the flamegraph's frames.
    pub stack: String,
    /// Instances on each side (waves for a kernel frame alone).
    pub a_count: u64,
    pub b_count: u64,
    /// Mean cycles of an instance (`None` on the side the stack is not on).
    pub a_mean: Option<f64>,
    pub b_mean: Option<f64>,
    pub a_total: u64,
    pub b_total: u64,
    /// `b_mean / a_mean` (`None` when the stack is on one side only, or A's mean is 0).
    pub ratio: Option<f64>,
    /// `b_total / a_total`.
    pub total_ratio: Option<f64>,
    /// Waves the stack ran in on each side: the samples of the test.
    pub a_waves: u64,
    pub b_waves: u64,
    /// The test's two-sided p-value (`None` with fewer than two waves on a side).
    pub p_value: Option<f64>,
    /// `p_value < alpha`.
    pub significant: bool,
    /// The side the stack is on, when only one.
    pub only_in: Option<Side>,
}

/// The document `sqtt diff --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffReport {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The two captures as given.
    pub a: String,
    pub b: String,
    /// `"cycles"`.
    pub unit: String,
    pub test: TestInfo,
    /// By the change of total cycles, largest first (then by stack).
    pub rows: Vec<DiffRow>,
}

/// Count, total and the per-wave moments of one stack on one side.
#[derive(Debug, Default, Clone, Copy)]
struct Acc {
    count: u64,
    total: u64,
    /// Waves, the mean of their means and the sum of squared deviations (Welford).
    waves: u64,
    mean: f64,
    m2: f64,
}

impl Acc {
    fn add_wave(&mut self, count: u64, total: u64) {
        self.count += count;
        self.total += total;
        let x = total as f64 / count as f64;
        self.waves += 1;
        let d = x - self.mean;
        self.mean += d / self.waves as f64;
        self.m2 += d * (x - self.mean);
    }

    fn variance(&self) -> f64 {
        if self.waves < 2 {
            0.0
        } else {
            self.m2 / (self.waves - 1) as f64
        }
    }
}

/// One slot's wave: its stack of open scopes and what the wave's stacks ran.
#[derive(Debug, Default)]
struct SlotState {
    kernel: u32,
    begin: u64,
    /// Open scopes: (stack node, enter time).
    open: Vec<(u32, u64)>,
    /// This wave's stacks: node -> (instances, cycles).
    ran: Vec<(u32, u64, u64)>,
}

/// The sink: a trie of stacks with their counts.
#[derive(Debug, Default)]
struct Stacks {
    /// Node -> (parent node or u32::MAX, frame).
    nodes: Vec<(u32, u32)>,
    index: FxHashMap<(u32, u32), u32>,
    acc: Vec<Acc>,
    slots: Vec<SlotState>,
}

impl Stacks {
    fn node(&mut self, parent: u32, frame: u32) -> u32 {
        if let Some(&n) = self.index.get(&(parent, frame)) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push((parent, frame));
        self.acc.push(Acc::default());
        self.index.insert((parent, frame), n);
        n
    }

    fn ran(&mut self, slot: usize, node: u32, cycles: u64) {
        let ran = &mut self.slots[slot].ran;
        match ran.iter_mut().find(|r| r.0 == node) {
            Some(r) => {
                r.1 += 1;
                r.2 += cycles;
            }
            None => ran.push((node, 1, cycles)),
        }
    }

    fn close(&mut self, slot: usize, time: u64) {
        if let Some((node, t0)) = self.slots[slot].open.pop() {
            self.ran(slot, node, time.saturating_sub(t0));
        }
    }

    fn top(&self, slot: usize) -> u32 {
        let s = &self.slots[slot];
        s.open.last().map_or(s.kernel, |o| o.0)
    }

    /// The frames of `node`, joined with `;`.
    fn stack(&self, names: &Names, mut node: u32) -> String {
        let mut frames = Vec::new();
        while node != u32::MAX {
            let (parent, frame) = self.nodes[node as usize];
            // As in folded stacks: the names escaped, a `;` in one no separator.
            frames.push(crate::flamegraph::folded_frame(names.get(frame)));
            node = parent;
        }
        frames.reverse();
        frames.join(";")
    }
}

impl Sink for Stacks {
    fn wave_start(&mut self, _names: &Names, slot: usize, wave: &Wave) {
        if self.slots.len() <= slot {
            self.slots.resize_with(slot + 1, SlotState::default);
        }
        let kernel = self.node(u32::MAX, wave.kernel);
        let s = &mut self.slots[slot];
        s.kernel = kernel;
        s.begin = wave.begin;
        s.open.clear();
        s.ran.clear();
    }

    fn scope(&mut self, _names: &Names, slot: usize, time: u64, op: ScopeOp, m: &Marker) {
        if matches!(op, ScopeOp::Exit | ScopeOp::ExitEnter) {
            self.close(slot, time);
        }
        if matches!(op, ScopeOp::Enter | ScopeOp::ExitEnter) {
            let node = self.node(self.top(slot), m.frame);
            self.slots[slot].open.push((node, time));
        }
    }

    fn wave_end(&mut self, _names: &Names, slot: usize, _wave: &Wave, end: u64) {
        while !self.slots[slot].open.is_empty() {
            self.close(slot, end);
        }
        let (kernel, begin) = (self.slots[slot].kernel, self.slots[slot].begin);
        self.ran(slot, kernel, end.saturating_sub(begin));
        for (node, count, cycles) in std::mem::take(&mut self.slots[slot].ran) {
            self.acc[node as usize].add_wave(count, cycles);
        }
    }
}

/// Both sinks of one side: the stacks' counts, and the flamegraph's folded cycles for the SVG.
struct Side2<'a> {
    stacks: &'a mut Stacks,
    flame: &'a mut Flamegraph,
}

impl Sink for Side2<'_> {
    fn wave_start(&mut self, names: &Names, slot: usize, wave: &Wave) {
        self.stacks.wave_start(names, slot, wave);
        self.flame.wave_start(names, slot, wave);
    }
    fn scope(&mut self, names: &Names, slot: usize, time: u64, op: ScopeOp, m: &Marker) {
        self.stacks.scope(names, slot, time, op, m);
        self.flame.scope(names, slot, time, op, m);
    }
    fn wave_end(&mut self, names: &Names, slot: usize, wave: &Wave, end: u64) {
        self.stacks.wave_end(names, slot, wave, end);
        self.flame.wave_end(names, slot, wave, end);
    }
}

/// One capture read: its stacks by name, and its folded cycles.
struct Capture {
    stacks: BTreeMap<String, Acc>,
    folded: crate::flamegraph::Folded,
    diag: Diagnostics,
}

fn read_capture(dir: &Path, opts: &Options, progress: &dyn Progress) -> Result<Capture, Error> {
    let mut names = Names::default();
    let mut stacks = Stacks::default();
    let mut flame = Flamegraph::new();
    let mut sink = Side2 {
        stacks: &mut stacks,
        flame: &mut flame,
    };
    let (mut diag, _) = crate::commands::read(dir, opts, &mut names, &mut sink, progress)?;
    flame.report(&mut diag);
    let by_name = (0..stacks.nodes.len() as u32)
        .filter(|&n| stacks.acc[n as usize].waves > 0)
        .map(|n| (stacks.stack(&names, n), stacks.acc[n as usize]))
        .collect();
    Ok(Capture {
        stacks: by_name,
        folded: flame.folded(&names),
        diag,
    })
}

/// What `sqtt diff` gives.
pub struct DiffOutput {
    pub report: DiffReport,
    /// Inferno's differential folded lines: `stack cycles_a cycles_b`, sorted by stack.
    pub folded: Vec<(String, u64, u64)>,
    /// The warnings of A and of B.
    pub diag_a: Diagnostics,
    pub diag_b: Diagnostics,
}

/// Compares capture `a` (read with `opts_a`) with capture `b` (`opts_b`).
pub fn diff(
    a: &Path,
    b: &Path,
    opts_a: &Options,
    opts_b: &Options,
    alpha: f64,
    progress: &dyn Progress,
) -> Result<DiffOutput, Error> {
    let ca = read_capture(a, opts_a, progress)?;
    let cb = read_capture(b, opts_b, progress)?;
    let mut keys: Vec<&String> = ca.stacks.keys().chain(cb.stacks.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .map(|k| row(k, ca.stacks.get(k), cb.stacks.get(k), alpha))
        .collect();
    rows.sort_by(|x, y| {
        let change = |r: &DiffRow| r.b_total.abs_diff(r.a_total);
        change(y)
            .cmp(&change(x))
            .then_with(|| x.stack.cmp(&y.stack))
    });
    let mut folded: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (s, c) in ca.folded.iter() {
        folded.entry(s.to_string()).or_default().0 += c;
    }
    for (s, c) in cb.folded.iter() {
        folded.entry(s.to_string()).or_default().1 += c;
    }
    Ok(DiffOutput {
        report: DiffReport {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            a: a.display().to_string(),
            b: b.display().to_string(),
            unit: "cycles".into(),
            test: TestInfo {
                name: "welch_t".into(),
                samples: "per-wave mean cycles of the stack".into(),
                sides: "two-sided".into(),
                alpha,
            },
            rows,
        },
        folded: folded.into_iter().map(|(s, (x, y))| (s, x, y)).collect(),
        diag_a: ca.diag,
        diag_b: cb.diag,
    })
}

fn row(stack: &str, a: Option<&Acc>, b: Option<&Acc>, alpha: f64) -> DiffRow {
    let mean = |x: Option<&Acc>| x.map(|x| x.total as f64 / x.count as f64);
    let (a_mean, b_mean) = (mean(a), mean(b));
    let ratio = |x: f64, y: f64| (x > 0.0).then(|| y / x);
    let (za, zb) = (
        a.copied().unwrap_or_default(),
        b.copied().unwrap_or_default(),
    );
    let p_value = match (a, b) {
        (Some(a), Some(b)) => welch_p(
            (a.waves, a.mean, a.variance()),
            (b.waves, b.mean, b.variance()),
        ),
        _ => None,
    };
    DiffRow {
        stack: stack.to_string(),
        a_count: za.count,
        b_count: zb.count,
        a_mean,
        b_mean,
        a_total: za.total,
        b_total: zb.total,
        ratio: a_mean.zip(b_mean).and_then(|(x, y)| ratio(x, y)),
        total_ratio: (a.is_some() && b.is_some())
            .then(|| ratio(za.total as f64, zb.total as f64))
            .flatten(),
        a_waves: za.waves,
        b_waves: zb.waves,
        p_value,
        significant: p_value.is_some_and(|p| p < alpha),
        only_in: match (a, b) {
            (Some(_), None) => Some(Side::A),
            (None, Some(_)) => Some(Side::B),
            _ => None,
        },
    }
}

/// The two-sided p-value of Welch's t-test between samples of `(n, mean, variance)`, `None`
/// with fewer than two samples on a side. Samples without spread differ for sure when their
/// means differ (p 0), and not at all when not (p 1).
pub fn welch_p(a: (u64, f64, f64), b: (u64, f64, f64)) -> Option<f64> {
    let ((na, ma, va), (nb, mb, vb)) = (a, b);
    if na < 2 || nb < 2 {
        return None;
    }
    let (sa, sb) = (va / na as f64, vb / nb as f64);
    let se2 = sa + sb;
    // Means that differ by rounding only are equal.
    let scale = ma.abs().max(mb.abs()).max(1.0);
    if se2 <= (scale * 1e-12).powi(2) {
        return Some(if (ma - mb).abs() <= scale * 1e-12 {
            1.0
        } else {
            0.0
        });
    }
    let t = (mb - ma) / se2.sqrt();
    // Welch-Satterthwaite degrees of freedom.
    let df = se2 * se2 / (sa * sa / (na - 1) as f64 + sb * sb / (nb - 1) as f64);
    Some(incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0))
}

/// `ln Γ(x)` for `x > 0` (Lanczos' series, g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The regularized incomplete beta function `I_x(a, b)`, from its continued fraction (taken
/// on the side where it converges fast).
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function, evaluated by Lentz's method.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut f = d;
    for m in 1..=400 {
        let m = f64::from(m);
        // The even step, then the odd one.
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        f *= c * d;
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = c * d;
        f *= step;
        if (step - 1.0).abs() < 1e-14 {
            break;
        }
    }
    f
}

fn num(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.1}"))
}

fn ratio_text(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |v| format!("{v:.3}"))
}

fn p_text(p: Option<f64>) -> String {
    p.map_or("-".to_string(), |p| {
        if p > 0.0 && p < 1e-4 {
            format!("{p:.1e}")
        } else {
            format!("{p:.4}")
        }
    })
}

/// What a row's last column says: `grew`/`shrank` when significant, `only A`/`only B`.
fn verdict(r: &DiffRow) -> &'static str {
    match (r.only_in, r.significant) {
        (Some(Side::A), _) => "only A",
        (Some(Side::B), _) => "only B",
        (None, true) if r.b_mean > r.a_mean => "grew",
        (None, true) => "shrank",
        (None, false) => "",
    }
}

/// The report as an aligned text table, with a header saying what is compared and how.
pub fn to_text(r: &DiffReport) -> String {
    let head = [
        "a_count", "b_count", "a_mean", "b_mean", "ratio", "a_total", "b_total", "p", "change",
    ];
    let cells: Vec<[String; 9]> = r
        .rows
        .iter()
        .map(|row| {
            [
                row.a_count.to_string(),
                row.b_count.to_string(),
                num(row.a_mean),
                num(row.b_mean),
                ratio_text(row.ratio),
                row.a_total.to_string(),
                row.b_total.to_string(),
                p_text(row.p_value),
                verdict(row).to_string(),
            ]
        })
        .collect();
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.len());
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "# A: {}", r.a);
    let _ = writeln!(out, "# B: {}", r.b);
    let _ = writeln!(
        out,
        "# {}; ratio = b_mean / a_mean; p: Welch's t-test ({}) on the per-wave mean {} of each \
         stack, a change when p < {}",
        r.unit, r.test.sides, r.unit, r.test.alpha
    );
    let (grew, shrank, only) = r
        .rows
        .iter()
        .fold((0, 0, 0), |(g, s, o), row| match verdict(row) {
            "grew" => (g + 1, s, o),
            "shrank" => (g, s + 1, o),
            "only A" | "only B" => (g, s, o + 1),
            _ => (g, s, o),
        });
    let _ = writeln!(
        out,
        "# {} stacks: {grew} grew, {shrank} shrank, {only} on one side only; sorted by the \
         change of total {}",
        r.rows.len(),
        r.unit
    );
    for (i, (h, w)) in head.iter().zip(&width).enumerate() {
        if i == head.len() - 1 {
            let _ = write!(out, "  {h:<w$}");
        } else {
            let _ = write!(out, "{}{h:>w$}", if i == 0 { "" } else { "  " });
        }
    }
    let _ = writeln!(out, "  stack");
    for (row, c) in r.rows.iter().zip(&cells) {
        for (i, (s, w)) in c.iter().zip(&width).enumerate() {
            if i == c.len() - 1 {
                let _ = write!(out, "  {s:<w$}");
            } else {
                let _ = write!(out, "{}{s:>w$}", if i == 0 { "" } else { "  " });
            }
        }
        let _ = writeln!(out, "  {}", row.stack);
    }
    out
}

/// The rows as CSV with a header line (the stack always quoted; empty fields where a value is
/// absent).
pub fn to_csv(r: &DiffReport) -> String {
    let mut out = String::from(
        "stack,a_count,b_count,a_mean,b_mean,a_total,b_total,ratio,total_ratio,a_waves,b_waves,p_value,significant,only_in\n",
    );
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            crate::stats::csv_field(&row.stack),
            row.a_count,
            row.b_count,
            opt(row.a_mean),
            opt(row.b_mean),
            row.a_total,
            row.b_total,
            opt(row.ratio),
            opt(row.total_ratio),
            row.a_waves,
            row.b_waves,
            opt(row.p_value),
            row.significant,
            match row.only_in {
                Some(Side::A) => "a",
                Some(Side::B) => "b",
                None => "",
            }
        );
    }
    out
}

/// Writes a differential flamegraph (inferno's differential folded lines `stack a b`: the
/// frames as wide as B, red where they grew, blue where they shrank).
pub fn write_svg<W: std::io::Write>(
    out: W,
    folded: &[(String, u64, u64)],
    title: &str,
) -> std::io::Result<()> {
    let lines: Vec<String> = folded
        .iter()
        .map(|(s, a, b)| format!("{s} {a} {b}"))
        .collect();
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "cycles".to_string();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided p-values of Student's t (a table's critical values), and of Welch's test on
    /// samples whose variances differ (computed independently).
    #[test]
    fn t_test_p_values() {
        let p = |t: f64, df: f64| incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
        for (t, df, want) in [
            (2.228, 10.0, 0.05),
            (3.169, 10.0, 0.01),
            (12.706, 1.0, 0.05),
            (1.960, 1e7, 0.05),
            (2.576, 1e7, 0.01),
            (0.0, 5.0, 1.0),
        ] {
            let got = p(t, df);
            assert!((got - want).abs() < 2e-4, "t {t} df {df}: {got}");
        }
        // Means 10 and 12, variances 4 and 9, five and eight samples: t = 1.4415, df = 10.873,
        // p = 0.17762 (the t density integrated numerically).
        let got = welch_p((5, 10.0, 4.0), (8, 12.0, 9.0)).unwrap();
        assert!((got - 0.17762).abs() < 1e-4, "{got}");
        assert_eq!(welch_p((1, 1.0, 0.0), (5, 2.0, 1.0)), None);
        assert_eq!(welch_p((3, 5.0, 0.0), (3, 5.0, 0.0)), Some(1.0));
        assert_eq!(welch_p((3, 5.0, 0.0), (3, 6.0, 0.0)), Some(0.0));
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }
}

//! The cost report of `sqtt-hipcc --check --cost` / `sqtt funcmap --cost`: the versioned JSON
//! types (docs/check-json.md, "The cost report"), the pairing with a baseline build, the CI
//! limits, and the text table and CSV.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{kernel_costs, Delta, Figures, MarkerCounts};
use crate::{demangle, CodeObject};

/// Version of the cost report's schema (bumped when a field changes meaning or disappears).
pub const COST_SCHEMA_VERSION: u32 = 1;

/// The limits that make the report a CI gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Waves per SIMD a kernel may lose against its baseline.
    pub max_occupancy_drop: Option<u32>,
    /// Architectural VGPRs a kernel may add.
    pub max_added_vgprs: Option<u32>,
    /// Percent a kernel's code bytes (with its callees) may grow.
    pub max_code_growth_pct: Option<f64>,
}

impl Limits {
    pub fn any(&self) -> bool {
        self.max_occupancy_drop.is_some()
            || self.max_added_vgprs.is_some()
            || self.max_code_growth_pct.is_some()
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    pub schema_version: u32,
    pub tool: String,
    pub arch_filter: Option<String>,
    pub limits: Limits,
    pub files: Vec<CostFile>,
    /// Every limit a kernel exceeded, or could not be checked against.
    pub violations: Vec<Violation>,
    /// `--require`, as in the funcmap report.
    pub requirements: Vec<crate::report::RequirementReport>,
    pub ok: bool,
    pub exit_code: i32,
}

/// One input file and its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostFile {
    pub path: String,
    pub baseline: Option<String>,
    pub error: Option<String>,
    pub code_objects: Vec<CostCodeObject>,
}

/// One code object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostCodeObject {
    pub location: String,
    pub bundle_index: Option<usize>,
    pub target_id: String,
    pub arch: String,
    /// The LLVM major whose occupancy rules apply (the producer in `.comment`), or null: the
    /// newest rules.
    pub llvm_major: Option<u32>,
    /// The funcmap's state: `ok`, `missing`, `invalid`, `not_linked`.
    pub funcmap: String,
    /// Why the metadata could not be read.
    pub error: Option<String>,
    pub totals: Totals,
    /// The paired code object of the baseline, if any.
    pub baseline_location: Option<String>,
    pub kernels: Vec<KernelReport>,
}

/// The whole code object: every function once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub kernels: usize,
    pub functions: usize,
    pub instructions: Option<u64>,
    pub code_bytes: u64,
    pub trace_instructions: Option<u64>,
    pub markers: MarkerCounts,
}

/// One kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelReport {
    pub name: String,
    pub demangled: Option<String>,
    pub arch: String,
    pub wave_size: u32,
    #[serde(flatten)]
    pub figures: Figures,
    pub markers: MarkerCounts,
    pub callees: Vec<String>,
    pub notes: Vec<String>,
    /// The same kernel in the baseline build.
    pub baseline: Option<Figures>,
    /// This build minus the baseline.
    pub delta: Option<Delta>,
}

/// A limit a kernel exceeded (or that could not be checked for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub path: String,
    pub arch: String,
    pub kernel: String,
    /// `max_occupancy_drop`, `max_added_vgprs` or `max_code_growth_pct`.
    pub limit: String,
    pub allowed: f64,
    /// The kernel's figure; null when it could not be computed.
    pub actual: Option<f64>,
    pub message: String,
}

fn totals(co: &CodeObject) -> Totals {
    let mut t = Totals {
        kernels: co.code.kernels.len(),
        functions: co.code.functions.len(),
        instructions: Some(0),
        trace_instructions: Some(0),
        ..Totals::default()
    };
    let map = co.funcmap.map();
    for f in &co.code.functions {
        t.code_bytes += f.bytes;
        match &f.scan {
            Some(s) => {
                t.instructions = t.instructions.map(|n| n + s.instructions);
                t.trace_instructions = t.trace_instructions.map(|n| n + s.trace_instructions);
                for r in &s.records {
                    t.markers.count(*r, map);
                }
            }
            None => {
                t.instructions = None;
                t.trace_instructions = None;
            }
        }
    }
    t
}

/// The baseline code object that corresponds to `co`: the same translation unit (bundle) and
/// processor.
fn paired<'a>(co: &CodeObject, baseline: &'a [CodeObject]) -> Option<&'a CodeObject> {
    let key = |c: &CodeObject| {
        (
            c.bundle_index,
            sqtt_gfx::processor_of_target_id(&c.target_id).to_string(),
        )
    };
    baseline.iter().find(|b| key(b) == key(co))
}

/// The report of one code object against its baseline (if any).
pub fn code_object_report(co: &CodeObject, baseline: Option<&CodeObject>) -> CostCodeObject {
    let base_costs = baseline.map(kernel_costs).unwrap_or_default();
    let base_by_name: std::collections::HashMap<&str, Figures> = base_costs
        .iter()
        .map(|b| (b.name.as_str(), b.figures))
        .collect();
    let kernels = kernel_costs(co)
        .into_iter()
        .map(|k| {
            let base = base_by_name.get(k.name.as_str()).copied();
            let d = demangle(&k.name);
            KernelReport {
                demangled: (d != k.name).then_some(d),
                arch: co.arch.clone(),
                wave_size: k.wave_size,
                delta: base.map(|b| k.figures.minus(&b)),
                baseline: base,
                figures: k.figures,
                markers: k.markers,
                callees: k.callees,
                notes: k.notes,
                name: k.name,
            }
        })
        .collect();
    CostCodeObject {
        location: co.location.clone(),
        bundle_index: co.bundle_index,
        target_id: co.target_id.clone(),
        arch: co.arch.clone(),
        llvm_major: co.code.llvm_major,
        funcmap: co.funcmap.status().into(),
        error: co.code.metadata_error.clone(),
        totals: totals(co),
        baseline_location: baseline.map(|b| b.location.clone()),
        kernels,
    }
}

/// Pairs each code object with the baseline's and makes the file's report.
pub fn file_report(
    path: &str,
    cos: &[CodeObject],
    baseline: Option<(&str, &[CodeObject])>,
) -> CostFile {
    CostFile {
        path: path.to_string(),
        baseline: baseline.map(|(p, _)| p.to_string()),
        error: None,
        code_objects: cos
            .iter()
            .map(|co| code_object_report(co, baseline.and_then(|(_, b)| paired(co, b))))
            .collect(),
    }
}

/// Every limit the kernels of `files` exceed. A kernel the limits cannot be checked for (no
/// baseline of that name, no occupancy) is a violation too: a gate never passes by not looking.
pub fn check_limits(files: &[CostFile], limits: &Limits) -> Vec<Violation> {
    let mut out = Vec::new();
    if !limits.any() {
        return out;
    }
    for f in files {
        for co in &f.code_objects {
            for k in &co.kernels {
                let mut v = |limit: &str, allowed: f64, actual: Option<f64>, what: String| {
                    out.push(Violation {
                        path: f.path.clone(),
                        arch: co.arch.clone(),
                        kernel: k.name.clone(),
                        limit: limit.into(),
                        allowed,
                        actual,
                        message: format!("{} [{}] {}: {what}", f.path, co.arch, k.name),
                    });
                };
                let Some(base) = &k.baseline else {
                    v(
                        "baseline",
                        0.0,
                        None,
                        "no kernel of this name in the baseline: the limits cannot be checked"
                            .into(),
                    );
                    continue;
                };
                if let Some(max) = limits.max_occupancy_drop {
                    match k.figures.occupancy.zip(base.occupancy) {
                        Some((now, was)) => {
                            let drop = i64::from(was) - i64::from(now);
                            if drop > i64::from(max) {
                                v(
                                    "max_occupancy_drop",
                                    f64::from(max),
                                    Some(drop as f64),
                                    format!(
                                        "occupancy {was} -> {now} waves/SIMD drops {drop}, more \
                                         than --max-occupancy-drop {max}"
                                    ),
                                );
                            }
                        }
                        None => v(
                            "max_occupancy_drop",
                            f64::from(max),
                            None,
                            format!("no occupancy figures for {}: --max-occupancy-drop cannot be checked", co.arch),
                        ),
                    }
                }
                if let Some(max) = limits.max_added_vgprs {
                    let added = i64::from(k.figures.vgprs) - i64::from(base.vgprs);
                    if added > i64::from(max) {
                        v(
                            "max_added_vgprs",
                            f64::from(max),
                            Some(added as f64),
                            format!(
                                "VGPRs {} -> {} adds {added}, more than --max-added-vgprs {max}",
                                base.vgprs, k.figures.vgprs
                            ),
                        );
                    }
                }
                if let Some(max) = limits.max_code_growth_pct {
                    let growth = growth_pct(base.code_bytes, k.figures.code_bytes);
                    if growth > max {
                        v(
                            "max_code_growth_pct",
                            max,
                            Some(growth),
                            format!(
                                "code {} -> {} bytes grows {growth:.1} %, more than \
                                 --max-code-growth {max}",
                                base.code_bytes, k.figures.code_bytes
                            ),
                        );
                    }
                }
            }
        }
    }
    out
}

/// Percent growth from `base` to `now` (0 for two empty functions, infinite from nothing).
pub fn growth_pct(base: u64, now: u64) -> f64 {
    if base == 0 {
        return if now == 0 { 0.0 } else { f64::INFINITY };
    }
    (now as f64 - base as f64) * 100.0 / base as f64
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn signed(d: i64) -> String {
    if d > 0 {
        format!("+{d}")
    } else {
        d.to_string()
    }
}

/// A cell: the value, and `(+d)` when a baseline differs.
fn cell(now: String, delta: Option<i64>) -> String {
    match delta {
        Some(d) if d != 0 => format!("{now} ({})", signed(d)),
        _ => now,
    }
}

/// The markers column: the header counts by kind that are not zero.
fn marker_text(m: &MarkerCounts) -> String {
    let parts: Vec<String> = [
        ("function", m.function),
        ("user", m.user),
        ("point", m.point),
        ("barrier", m.barrier),
        ("memory", m.memory),
        ("address", m.address),
        ("other", m.other),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {n}"))
    .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// The text table of one file.
pub fn render_text(f: &CostFile, demangle_names: bool) -> String {
    let mut out = String::new();
    for co in &f.code_objects {
        let rules = co.llvm_major.map_or_else(
            || "newest LLVM's rules".to_string(),
            |m| format!("LLVM {m}'s rules"),
        );
        let _ = writeln!(
            out,
            "{} [{}] ({}): {} kernel(s), occupancy by {rules}",
            f.path,
            co.arch,
            co.location,
            co.kernels.len()
        );
        if let (Some(b), Some(loc)) = (&f.baseline, &co.baseline_location) {
            let _ = writeln!(
                out,
                "  against {b} ({loc}); (+n) = this build minus that one"
            );
        }
        if let Some(e) = &co.error {
            let _ = writeln!(out, "  {e}");
        }
        let header = [
            "kernel",
            "SGPR",
            "VGPR",
            "AGPR",
            "scratch",
            "LDS",
            "waves/SIMD",
            "instructions",
            "bytes",
            "trace",
            "markers",
        ];
        let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
        for k in &co.kernels {
            let d = k.delta.as_ref();
            let name = match (&k.demangled, demangle_names) {
                (Some(n), true) => n.clone(),
                _ => k.name.clone(),
            };
            let fig = &k.figures;
            let mut bytes = cell(fig.code_bytes.to_string(), d.map(|d| d.code_bytes));
            if let Some(b) = &k.baseline {
                if b.code_bytes != fig.code_bytes {
                    bytes = format!("{bytes} {:+.1}%", growth_pct(b.code_bytes, fig.code_bytes));
                }
            }
            rows.push(vec![
                name,
                cell(fig.sgprs.to_string(), d.map(|d| d.sgprs)),
                cell(fig.vgprs.to_string(), d.map(|d| d.vgprs)),
                cell(fig.agprs.to_string(), d.map(|d| d.agprs)),
                cell(fig.scratch_bytes.to_string(), d.map(|d| d.scratch_bytes)),
                cell(fig.lds_bytes.to_string(), d.map(|d| d.lds_bytes)),
                cell(opt(fig.occupancy), d.and_then(|d| d.occupancy)),
                cell(opt(fig.instructions), d.and_then(|d| d.instructions)),
                bytes,
                cell(
                    opt(fig.trace_instructions),
                    d.and_then(|d| d.trace_instructions),
                ),
                marker_text(&k.markers),
            ]);
        }
        let widths: Vec<usize> = (0..header.len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let mut line = String::from(" ");
            for (c, v) in r.iter().enumerate() {
                let pad = widths[c] - v.chars().count();
                // Names and markers left-aligned, figures right-aligned.
                if c == 0 || c == header.len() - 1 {
                    let _ = write!(line, " {v}{}", " ".repeat(pad));
                } else {
                    let _ = write!(line, " {}{v}", " ".repeat(pad));
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for k in &co.kernels {
            for n in &k.notes {
                let _ = writeln!(out, "  note: {}: {n}", k.name);
            }
        }
        let t = &co.totals;
        let _ = writeln!(
            out,
            "  code object: {} function(s), {} instructions, {} bytes, {} trace instructions",
            t.functions,
            opt(t.instructions),
            t.code_bytes,
            opt(t.trace_instructions)
        );
    }
    out
}

/// The CSV header.
pub const CSV_HEADER: &str = "file,location,arch,kernel,wave_size,sgprs,vgprs,agprs,\
scratch_bytes,lds_bytes,occupancy,instructions,code_bytes,trace_instructions,markers_function,\
markers_user,markers_point,markers_barrier,markers_memory,markers_address,baseline_sgprs,\
baseline_vgprs,baseline_agprs,baseline_scratch_bytes,baseline_lds_bytes,baseline_occupancy,\
baseline_instructions,baseline_code_bytes,baseline_trace_instructions";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn figure_fields(f: Option<&Figures>) -> Vec<String> {
    match f {
        None => vec![String::new(); 9],
        Some(f) => vec![
            f.sgprs.to_string(),
            f.vgprs.to_string(),
            f.agprs.to_string(),
            f.scratch_bytes.to_string(),
            f.lds_bytes.to_string(),
            f.occupancy.map_or_else(String::new, |v| v.to_string()),
            f.instructions.map_or_else(String::new, |v| v.to_string()),
            f.code_bytes.to_string(),
            f.trace_instructions
                .map_or_else(String::new, |v| v.to_string()),
        ],
    }
}

/// One CSV row per kernel (no header).
pub fn render_csv(f: &CostFile) -> String {
    let mut out = String::new();
    for co in &f.code_objects {
        for k in &co.kernels {
            let m = &k.markers;
            let mut fields = vec![
                csv_field(&f.path),
                csv_field(&co.location),
                co.arch.clone(),
                csv_field(&k.name),
                k.wave_size.to_string(),
            ];
            fields.extend(figure_fields(Some(&k.figures)));
            fields.extend(
                [m.function, m.user, m.point, m.barrier, m.memory, m.address]
                    .map(|n| n.to_string()),
            );
            fields.extend(figure_fields(k.baseline.as_ref()));
            let _ = writeln!(out, "{}", fields.join(","));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str, fig: Figures, base: Option<Figures>) -> KernelReport {
        KernelReport {
            name: name.into(),
            demangled: None,
            arch: "gfx90a".into(),
            wave_size: 64,
            figures: fig,
            markers: MarkerCounts::default(),
            callees: vec![],
            notes: vec![],
            delta: base.map(|b| fig.minus(&b)),
            baseline: base,
        }
    }

    fn file(kernels: Vec<KernelReport>) -> CostFile {
        CostFile {
            path: "app".into(),
            baseline: Some("plain".into()),
            error: None,
            code_objects: vec![CostCodeObject {
                location: "code object".into(),
                bundle_index: None,
                target_id: "amdgcn-amd-amdhsa--gfx90a".into(),
                arch: "gfx90a".into(),
                llvm_major: Some(15),
                funcmap: "ok".into(),
                error: None,
                totals: Totals::default(),
                baseline_location: Some("code object".into()),
                kernels,
            }],
        }
    }

    fn fig(vgprs: u32, occupancy: u32, code_bytes: u64) -> Figures {
        Figures {
            sgprs: 20,
            vgprs,
            occupancy: Some(occupancy),
            instructions: Some(code_bytes / 4),
            code_bytes,
            trace_instructions: Some(0),
            ..Figures::default()
        }
    }

    #[test]
    fn limits_name_the_kernel_and_the_limit() {
        let f = file(vec![
            kernel("a", fig(40, 6, 1100), Some(fig(30, 8, 1000))),
            kernel("b", fig(30, 8, 1000), Some(fig(30, 8, 1000))),
            kernel("c", fig(30, 8, 1000), None),
        ]);
        let limits = Limits {
            max_occupancy_drop: Some(1),
            max_added_vgprs: Some(8),
            max_code_growth_pct: Some(9.5),
        };
        let v = check_limits(std::slice::from_ref(&f), &limits);
        let names: Vec<(&str, &str)> = v
            .iter()
            .map(|v| (v.kernel.as_str(), v.limit.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("a", "max_occupancy_drop"),
                ("a", "max_added_vgprs"),
                ("a", "max_code_growth_pct"),
                ("c", "baseline")
            ]
        );
        assert!(
            v[0].message.contains("occupancy 8 -> 6"),
            "{}",
            v[0].message
        );
        assert_eq!(v[2].actual, Some(10.0));
        // Within the limits: nothing.
        let loose = Limits {
            max_occupancy_drop: Some(2),
            max_added_vgprs: Some(10),
            max_code_growth_pct: Some(10.0),
        };
        let f = file(vec![kernel("a", fig(40, 6, 1100), Some(fig(30, 8, 1000)))]);
        assert!(check_limits(&[f], &loose).is_empty());
        assert!(check_limits(&[], &Limits::default()).is_empty());
    }

    #[test]
    fn text_and_csv_show_figures_and_deltas() {
        let f = file(vec![kernel("a", fig(40, 6, 1100), Some(fig(30, 8, 1000)))]);
        let text = render_text(&f, false);
        assert!(text.contains("40 (+10)"), "{text}");
        assert!(text.contains("6 (-2)"), "{text}");
        assert!(text.contains("1100 (+100) +10.0%"), "{text}");
        assert!(text.contains("LLVM 15's rules"), "{text}");
        let csv = render_csv(&f);
        let fields: Vec<&str> = csv.trim_end().split(',').collect();
        assert_eq!(fields.len(), CSV_HEADER.split(',').count());
        assert_eq!(fields[3], "a");
        assert_eq!(fields[6], "40");
        assert_eq!(fields[21], "30");
        assert_eq!(csv_field("a,b\"c"), "\"a,b\"\"c\"");
        assert_eq!(growth_pct(0, 0), 0.0);
        assert!(growth_pct(0, 4).is_infinite());
    }
}

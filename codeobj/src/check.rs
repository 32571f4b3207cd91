//! The funcmap check shared by `sqtt-hipcc --check` and `sqtt funcmap`: read each file's code
//! objects, print their tables (or one summary line each, or a JSON report), check every funcmap
//! and every `--require`, and return the exit status. With `--cost`, the cost report instead
//! (what each kernel costs, against a `--baseline` build, with its limits: [`crate::cost`]).
//!
//! Exit status: 0 every selected code object has a valid funcmap (or is not yet linked) and every
//! requirement is met; 1 a funcmap is missing or invalid, a file holds no (selected) code object
//! or cannot be parsed, or a requirement is missing; 2 a file that cannot be opened. With
//! `--cost` a funcmap does not decide (a plain build has none); a kernel over a `--max-*` limit,
//! or a metadata note that cannot be read, is 1.

use std::io::Write;
use std::path::Path;

use crate::cost::report::{self as cost_report, CostReport, Limits, COST_SCHEMA_VERSION};
use crate::report::{
    CheckReport, CodeObjectReport, FileReport, RequirementReport, RequirementResult, SCHEMA_VERSION,
};
use crate::require::Requirement;
use crate::table::render_code_object;
use crate::{CodeObject, Error, FuncmapState};
use sqtt_files::output::printable;

/// The exit statuses of the check (both binaries' help and man pages).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "every selected code object has a valid funcmap (or is not yet linked) and every \
         requirement is met",
    ),
    (
        "1",
        "a funcmap is missing or invalid, a requirement is missing, a file holds no (selected) \
         code object, a file is corrupt, or (--cost) a kernel is over a --max-* limit",
    ),
    (
        "2",
        "a usage error: an unknown option, a malformed --require, no FILE, a file that cannot \
         be opened",
    ),
];

/// What to check and how to print it.
#[derive(Debug, Default)]
pub struct CheckOptions {
    pub demangle: bool,
    pub json: bool,
    pub requires: Vec<Requirement>,
    pub arch: Option<String>,
    pub quiet: bool,
    pub skip_non_amdgpu: bool,
    pub files: Vec<String>,
    /// `--cost`: the cost report instead of the funcmap tables.
    pub cost: bool,
    /// `--csv` (with `--cost`).
    pub csv: bool,
    /// `--baseline`, one per file (with `--cost`).
    pub baselines: Vec<String>,
    /// `--max-*` (with `--baseline`).
    pub limits: Limits,
}

/// The options as command-line arguments, for both binaries' clap parsers.
#[cfg(feature = "cli")]
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// demangle C++ names in the table
    #[arg(long)]
    pub demangle: bool,
    /// print a JSON report (docs/check-json.md) instead of the tables
    #[arg(long)]
    pub json: bool,
    /// one summary line per code object instead of the tables
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// skip files that hold no AMDGPU code (directories, scripts, host binaries)
    #[arg(long = "skip-non-amdgpu")]
    pub skip_non_amdgpu: bool,
    /// require a funcmap row of KIND whose name matches GLOB (repeatable); KIND: kernel,
    /// function, user, point, barrier, memory, address, any
    #[arg(long, value_name = "KIND:GLOB", allow_hyphen_values = true)]
    pub require: Vec<String>,
    /// check only code objects of this processor (e.g. gfx90a)
    #[arg(long, value_name = "GFX")]
    pub arch: Option<String>,
    /// print what each kernel costs (registers, scratch, LDS, occupancy, instructions, code
    /// bytes, trace instructions, markers) instead of the funcmap tables
    #[arg(long)]
    pub cost: bool,
    /// with --cost: the same program built without instrumentation, one per FILE in order; adds
    /// its figures and the difference per kernel
    #[arg(long, value_name = "PLAIN", value_hint = clap::ValueHint::FilePath)]
    pub baseline: Vec<String>,
    /// with --baseline: fail (exit 1) when a kernel loses more than N waves per SIMD
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_occupancy_drop: Option<String>,
    /// with --baseline: fail (exit 1) when a kernel gains more than N VGPRs
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_added_vgprs: Option<String>,
    /// with --baseline: fail (exit 1) when a kernel's code (with its callees) grows more than
    /// PCT percent
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub max_code_growth: Option<String>,
    /// with --cost: CSV, one row per kernel, instead of the table
    #[arg(long)]
    pub csv: bool,
    /// executables, shared libraries, .o files, code objects, offload bundles
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub files: Vec<String>,
}

/// A `--max-*` value: a whole number, or (`fraction`) a number, not negative.
#[cfg(feature = "cli")]
fn limit_value<T: std::str::FromStr>(
    option: &str,
    value: Option<&str>,
    what: &str,
) -> Result<Option<T>, String> {
    let Some(v) = value else { return Ok(None) };
    let bad = || format!("{option} {v:?}: expected {what}");
    let trimmed = v.trim();
    if trimmed.starts_with('-') || trimmed.is_empty() {
        return Err(bad());
    }
    trimmed.parse::<T>().map(Some).map_err(|_| bad())
}

#[cfg(feature = "cli")]
impl CheckArgs {
    /// The options, or the usage error (`--require` malformed, `--arch` empty, no file).
    pub fn options(self) -> Result<CheckOptions, String> {
        let requires = self
            .require
            .iter()
            .map(|s| Requirement::parse(s).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        if self.arch.as_deref() == Some("") {
            return Err("--arch needs a processor such as gfx90a".into());
        }
        if self.files.is_empty() {
            return Err("no FILE given".into());
        }
        let limits = Limits {
            max_occupancy_drop: limit_value(
                "--max-occupancy-drop",
                self.max_occupancy_drop.as_deref(),
                "a whole number of waves per SIMD, such as 1",
            )?,
            max_added_vgprs: limit_value(
                "--max-added-vgprs",
                self.max_added_vgprs.as_deref(),
                "a whole number of VGPRs, such as 8",
            )?,
            max_code_growth_pct: limit_value::<f64>(
                "--max-code-growth",
                self.max_code_growth.as_deref(),
                "a percentage, such as 5 or 2.5",
            )?
            .map(|p| {
                if p.is_finite() {
                    Ok(p)
                } else {
                    Err(format!(
                        "--max-code-growth {p}: expected a percentage, such as 5 or 2.5"
                    ))
                }
            })
            .transpose()?,
        };
        let needs_cost = [
            (!self.baseline.is_empty(), "--baseline"),
            (self.csv, "--csv"),
            (limits.max_occupancy_drop.is_some(), "--max-occupancy-drop"),
            (limits.max_added_vgprs.is_some(), "--max-added-vgprs"),
            (limits.max_code_growth_pct.is_some(), "--max-code-growth"),
        ];
        if let Some((_, name)) = needs_cost.iter().find(|(set, _)| *set && !self.cost) {
            return Err(format!("{name} needs --cost"));
        }
        if self.csv && self.json {
            return Err("--csv and --json: choose one".into());
        }
        if limits.any() && self.baseline.is_empty() {
            let name = needs_cost[2..]
                .iter()
                .find(|(set, _)| *set)
                .map_or("", |(_, n)| n);
            return Err(format!(
                "{name} needs --baseline PLAIN (the same program built without instrumentation)"
            ));
        }
        if !self.baseline.is_empty() && self.baseline.len() != self.files.len() {
            return Err(format!(
                "--baseline given {} time(s) for {} FILE(s): give one baseline per FILE, in the same order",
                self.baseline.len(),
                self.files.len()
            ));
        }
        Ok(CheckOptions {
            demangle: self.demangle,
            json: self.json,
            requires,
            arch: self.arch,
            quiet: self.quiet,
            skip_non_amdgpu: self.skip_non_amdgpu,
            files: self.files,
            cost: self.cost,
            csv: self.csv,
            baselines: self.baseline,
            limits,
        })
    }
}

/// `--quiet`: `FILE [ARCH] (LOCATION): STATE`.
pub fn summary_line(path: &str, co: &CodeObject) -> String {
    let kernels = co.kernels().count();
    let state = match &co.funcmap {
        FuncmapState::NotLinked => "not linked yet (-fgpu-rdc bitcode)".to_string(),
        FuncmapState::Missing => format!("no funcmap, {kernels} kernel(s)"),
        FuncmapState::Malformed(e) => format!("malformed funcmap: {e}"),
        FuncmapState::Present { map, problems, .. } if problems.is_empty() => format!(
            "funcmap ok, {} row(s), {kernels} kernel(s)",
            map.entries.len()
        ),
        FuncmapState::Present { problems, .. } => {
            format!("invalid funcmap, {} problem(s)", problems.len())
        }
    };
    format!("{path} [{}] ({}): {state}", co.arch, co.location)
}

struct FileResult {
    path: String,
    result: Result<Vec<CodeObject>, Error>,
}

/// Reads a file's selected code objects; `None` when `--skip-non-amdgpu` skips it.
fn load(o: &CheckOptions, f: &str) -> Option<FileResult> {
    let path = Path::new(f);
    if o.skip_non_amdgpu && path.is_dir() {
        return None;
    }
    let all = crate::read_path(path);
    let no_amdgpu = match &all {
        Ok(cos) => cos.is_empty(),
        Err(Error::Unrecognised { .. }) => true,
        Err(_) => path.metadata().is_ok_and(|m| m.len() == 0),
    };
    if o.skip_non_amdgpu && no_amdgpu {
        return None;
    }
    let result = all.map(|cos| selected(o, cos));
    Some(FileResult {
        path: f.to_string(),
        result,
    })
}

/// Why a file gave no code objects to report, if it gave none: (message, a usage error).
fn file_problem(o: &CheckOptions, fr: &FileResult) -> Option<(String, bool)> {
    match &fr.result {
        Err(e) => Some((e.to_string(), matches!(e, Error::Io { .. }))),
        Ok(cos) if cos.is_empty() => Some((
            match &o.arch {
                Some(a) => format!("{}: no code object for {a}", fr.path),
                None => format!("{}: no AMDGPU code object", fr.path),
            },
            false,
        )),
        Ok(_) => None,
    }
}

/// Every `--require` in every linked code object, and whether one is missing anywhere (each
/// missing one is pushed to `errors`).
fn requirement_reports(
    o: &CheckOptions,
    files: &[FileResult],
    errors: &mut Vec<String>,
) -> (Vec<RequirementReport>, bool) {
    let before = errors.len();
    let mut req_reports = Vec::new();
    for r in &o.requires {
        let mut results = Vec::new();
        for fr in files {
            let Ok(cos) = &fr.result else { continue };
            for co in cos {
                if co.funcmap == FuncmapState::NotLinked {
                    continue;
                }
                let matches = r.matches(co);
                let satisfied = !matches.is_empty();
                if !satisfied {
                    errors.push(format!(
                        "{} [{}]: missing {} ({})",
                        fr.path, co.arch, r.spec, co.location
                    ));
                }
                results.push(RequirementResult {
                    path: fr.path.clone(),
                    location: co.location.clone(),
                    arch: co.arch.clone(),
                    satisfied,
                    matches,
                });
            }
        }
        req_reports.push(RequirementReport {
            spec: r.spec.clone(),
            kind: r.kind,
            pattern: r.pattern.clone(),
            satisfied: results.iter().all(|x| x.satisfied),
            results,
        });
    }
    let missing = errors.len() > before;
    (req_reports, missing)
}

/// 2 for a usage error (a file that cannot be opened), else 1 when a check failed, else 0.
fn exit_code(usage_error: bool, failed: bool) -> i32 {
    if usage_error {
        2
    } else {
        i32::from(failed)
    }
}

/// The code objects `--arch` selects.
fn selected(o: &CheckOptions, cos: Vec<CodeObject>) -> Vec<CodeObject> {
    cos.into_iter()
        .filter(|c| o.arch.as_deref().is_none_or(|a| c.matches_arch(a)))
        .collect()
}

fn tool_name() -> String {
    // The project and its version: both binaries give the same report.
    format!("sqtt-hipcc {}", env!("CARGO_PKG_VERSION"))
}

/// Reads, prints and checks; report on `out`, one line per problem on `err` (each prefixed with
/// `prog: `). Returns the exit status.
///
/// Names and bundle IDs come from the files: outside JSON, what a terminal would act on is
/// escaped ([`printable`]). A report that cannot be written is an error (status 1 at least,
/// one line on `err` naming what failed); a closed pipe (`| head`) ends the report quietly and
/// leaves the status the check's own, so a pipeline cannot hide a failed check.
pub fn run(o: &CheckOptions, prog: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (mut text, mut problems) = (Vec::new(), Vec::new());
    let mut code = report(o, prog, &mut text, &mut problems);
    let text = String::from_utf8_lossy(&text);
    let text = if o.json {
        text
    } else {
        escape_lines(&text).into()
    };
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if sqtt_files::output::is_broken_pipe(&e) => {}
        Err(e) => {
            let _ = writeln!(err, "{prog}: error: {e}");
            code = code.max(1);
        }
    }
    let _ = err.write_all(escape_lines(&String::from_utf8_lossy(&problems)).as_bytes());
    code
}

/// Each line of `text` through [`printable`], the line breaks kept.
fn escape_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.strip_suffix('\n') {
            Some(l) => {
                out.push_str(&printable(l));
                out.push('\n');
            }
            None => out.push_str(&printable(line)),
        }
    }
    out
}

/// [`run`]'s work: the report into `out`, the problems into `err`, the status.
fn report(o: &CheckOptions, prog: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut files: Vec<FileResult> = Vec::new();
    let mut skipped: Vec<&str> = Vec::new();
    for f in &o.files {
        match load(o, f) {
            Some(fr) => files.push(fr),
            None => skipped.push(f),
        }
    }
    if files.is_empty() {
        // Everything skipped: a CI glob that matched no device code is a failure, not a pass.
        let _ = writeln!(err, "{prog}: none of the files holds AMDGPU code");
        return 1;
    }
    if !o.json {
        for f in &skipped {
            let _ = writeln!(out, "{f}: no AMDGPU code, skipped");
        }
    }
    if o.cost {
        return run_cost(o, prog, &files, out, err);
    }
    let mut failed = false;
    let mut usage_error = false;
    let mut errors: Vec<String> = Vec::new();
    let mut file_reports = Vec::new();
    for fr in &files {
        let mut rep = FileReport {
            path: fr.path.clone(),
            error: None,
            code_objects: Vec::new(),
        };
        if let Some((msg, usage)) = file_problem(o, fr) {
            failed = true;
            usage_error |= usage;
            errors.push(msg.clone());
            rep.error = Some(msg);
        } else if let Ok(cos) = &fr.result {
            for co in cos {
                let problems = co.funcmap.problem_texts();
                if !problems.is_empty() {
                    failed = true;
                }
                if o.quiet && !o.json {
                    let _ = writeln!(out, "{}", summary_line(&fr.path, co));
                } else if !o.json {
                    let _ = write!(out, "{}", render_code_object(&fr.path, co, o.demangle));
                }
                for p in &problems {
                    errors.push(format!("{} [{}]: {p}", fr.path, co.arch));
                }
                rep.code_objects.push(CodeObjectReport::of(co));
            }
        }
        file_reports.push(rep);
    }

    let (req_reports, missing) = requirement_reports(o, &files, &mut errors);
    failed |= missing;

    let code = exit_code(usage_error, failed);
    if o.json {
        let report = CheckReport {
            schema_version: SCHEMA_VERSION,
            tool: tool_name(),
            arch_filter: o.arch.clone(),
            files: file_reports,
            requirements: req_reports,
            ok: code == 0,
            exit_code: code,
        };
        write_json(out, &report);
    }
    finish(prog, out, err, &errors);
    code
}

/// `--cost`: the cost report of every file, against its baseline, and the limits.
fn run_cost(
    o: &CheckOptions,
    prog: &str,
    files: &[FileResult],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    let mut failed = false;
    let mut usage_error = false;
    let mut errors: Vec<String> = Vec::new();
    // Baselines pair with the files by position (the options made sure the counts agree); one
    // for a skipped file is skipped with it.
    let baselines: Vec<Option<FileResult>> = o
        .files
        .iter()
        .enumerate()
        .filter(|(_, f)| files.iter().any(|fr| fr.path == **f))
        .map(|(i, _)| {
            o.baselines.get(i).map(|b| FileResult {
                path: b.clone(),
                result: crate::read_path(Path::new(b)).map(|cos| selected(o, cos)),
            })
        })
        .collect();
    let mut reports = Vec::new();
    for (fr, base) in files.iter().zip(&baselines) {
        let mut problem = file_problem(o, fr);
        if problem.is_none() {
            if let Some(b) = base {
                problem = file_problem(o, b).map(|(m, u)| (format!("baseline {m}"), u));
            }
        }
        if let Some((msg, usage)) = problem {
            failed = true;
            usage_error |= usage;
            errors.push(msg.clone());
            reports.push(cost_report::CostFile {
                path: fr.path.clone(),
                baseline: base.as_ref().map(|b| b.path.clone()),
                error: Some(msg),
                code_objects: Vec::new(),
            });
            continue;
        }
        let cos = fr.result.as_deref().unwrap_or_default();
        let base = base.as_ref().and_then(|b| {
            b.result
                .as_ref()
                .ok()
                .map(|c| (b.path.as_str(), c.as_slice()))
        });
        let rep = cost_report::file_report(&fr.path, cos, base);
        for co in &rep.code_objects {
            if let Some(e) = &co.error {
                // No figures to report: as a corrupt file.
                failed = true;
                errors.push(format!("{} [{}]: {e}", fr.path, co.arch));
            }
            if base.is_some() && co.baseline_location.is_none() {
                errors.push(format!(
                    "{} [{}]: no code object of the baseline is the same translation unit and processor ({})",
                    fr.path, co.arch, co.location
                ));
            }
        }
        reports.push(rep);
    }
    let violations = cost_report::check_limits(&reports, &o.limits);
    failed |= !violations.is_empty();
    let (requirements, missing) = requirement_reports(o, files, &mut errors);
    failed |= missing;
    let code = exit_code(usage_error, failed);
    if o.json {
        let report = CostReport {
            schema_version: COST_SCHEMA_VERSION,
            tool: tool_name(),
            arch_filter: o.arch.clone(),
            limits: o.limits,
            files: reports,
            violations: violations.clone(),
            requirements,
            ok: code == 0,
            exit_code: code,
        };
        write_json(out, &report);
    } else if o.csv {
        let _ = writeln!(out, "{}", cost_report::CSV_HEADER);
        for r in &reports {
            let _ = write!(out, "{}", cost_report::render_csv(r));
        }
    } else {
        for r in &reports {
            let _ = write!(out, "{}", cost_report::render_text(r, o.demangle));
        }
    }
    finish(
        prog,
        out,
        err,
        errors.iter().chain(violations.iter().map(|v| &v.message)),
    );
    code
}

/// A report as indented JSON, on a line of its own.
fn write_json(out: &mut dyn Write, report: &impl serde::Serialize) {
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string_pretty(report).unwrap_or_default()
    );
}

/// The end of a run: standard output flushed, then each error on stderr after the program's name.
fn finish<'a>(
    prog: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
    errors: impl IntoIterator<Item = &'a String>,
) {
    let _ = out.flush();
    for e in errors {
        let _ = writeln!(err, "{prog}: {e}");
    }
}

//! The funcmap check shared by `sqtt-hipcc --check` and `sqtt funcmap`: read each file's code
//! objects, print their tables (or one summary line each, or a JSON report), check every funcmap
//! and every `--require`, and return the exit status.
//!
//! Exit status: 0 every selected code object has a valid funcmap (or is not yet linked) and every
//! requirement is met; 1 a funcmap is missing or invalid, a file holds no (selected) code object
//! or cannot be parsed, or a requirement is missing; 2 a file that cannot be opened.

use std::io::Write;
use std::path::Path;

use crate::report::{
    CheckReport, CodeObjectReport, FileReport, RequirementReport, RequirementResult, SCHEMA_VERSION,
};
use crate::require::Requirement;
use crate::table::render_code_object;
use crate::{CodeObject, Error, FuncmapState};

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
         code object, or a file is corrupt",
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
    /// executables, shared libraries, .o files, code objects, offload bundles
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub files: Vec<String>,
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
        Ok(CheckOptions {
            demangle: self.demangle,
            json: self.json,
            requires,
            arch: self.arch,
            quiet: self.quiet,
            skip_non_amdgpu: self.skip_non_amdgpu,
            files: self.files,
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

/// Reads, prints and checks; report on `out`, one line per problem on `err` (each prefixed with
/// `prog: `). Returns the exit status.
pub fn run(o: &CheckOptions, prog: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut failed = false;
    let mut usage_error = false;
    let mut files: Vec<FileResult> = Vec::new();
    let mut skipped: Vec<&str> = Vec::new();
    for f in &o.files {
        let path = Path::new(f);
        if o.skip_non_amdgpu && path.is_dir() {
            skipped.push(f);
            continue;
        }
        let all = crate::read_path(path);
        let no_amdgpu = match &all {
            Ok(cos) => cos.is_empty(),
            Err(Error::Unrecognised { .. }) => true,
            Err(_) => path.metadata().is_ok_and(|m| m.len() == 0),
        };
        if o.skip_non_amdgpu && no_amdgpu {
            skipped.push(f);
            continue;
        }
        let result = all.map(|cos| {
            cos.into_iter()
                .filter(|c| o.arch.as_deref().is_none_or(|a| c.matches_arch(a)))
                .collect::<Vec<_>>()
        });
        files.push(FileResult {
            path: f.clone(),
            result,
        });
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
    let mut errors: Vec<String> = Vec::new();
    let mut file_reports = Vec::new();
    for fr in &files {
        let mut rep = FileReport {
            path: fr.path.clone(),
            error: None,
            code_objects: Vec::new(),
        };
        match &fr.result {
            Err(e) => {
                if matches!(e, Error::Io { .. }) {
                    usage_error = true;
                }
                failed = true;
                errors.push(e.to_string());
                rep.error = Some(e.to_string());
            }
            Ok(cos) if cos.is_empty() => {
                failed = true;
                let msg = match &o.arch {
                    Some(a) => format!("{}: no code object for {a}", fr.path),
                    None => format!("{}: no AMDGPU code object", fr.path),
                };
                errors.push(msg.clone());
                rep.error = Some(msg);
            }
            Ok(cos) => {
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
        }
        file_reports.push(rep);
    }

    let mut req_reports = Vec::new();
    for r in &o.requires {
        let mut results = Vec::new();
        for fr in &files {
            let Ok(cos) = &fr.result else { continue };
            for co in cos {
                if co.funcmap == FuncmapState::NotLinked {
                    continue;
                }
                let matches = r.matches(co);
                let satisfied = !matches.is_empty();
                if !satisfied {
                    failed = true;
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

    let code = if usage_error {
        2
    } else if failed {
        1
    } else {
        0
    };
    if o.json {
        let report = CheckReport {
            schema_version: SCHEMA_VERSION,
            // The project and its version: both binaries give the same report.
            tool: format!("sqtt-hipcc {}", env!("CARGO_PKG_VERSION")),
            arch_filter: o.arch.clone(),
            files: file_reports,
            requirements: req_reports,
            ok: code == 0,
            exit_code: code,
        };
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    }
    let _ = out.flush();
    for e in &errors {
        let _ = writeln!(err, "{prog}: {e}");
    }
    code
}

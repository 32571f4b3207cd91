//! `sqtt-hipcc --check FILE... [--demangle] [--json] [--require KIND:GLOB]... [--arch GFX]`.
//!
//! Exit status: 0 every selected code object has a valid funcmap (or is not yet linked) and every
//! requirement is met; 1 a funcmap is missing or invalid, a file holds no (selected) code object
//! or cannot be parsed, or a requirement is missing; 2 usage errors (unknown option, malformed
//! `--require`, no file, a file that cannot be opened).

use std::io::Write;

use sqtt_codeobj::report::{
    CheckReport, CodeObjectReport, FileReport, RequirementReport, RequirementResult, SCHEMA_VERSION,
};
use sqtt_codeobj::require::Requirement;
use sqtt_codeobj::table::render_code_object;
use sqtt_codeobj::{CodeObject, Error, FuncmapState};

pub const HELP: &str = "\
usage: sqtt-hipcc --check [OPTIONS] FILE...

Prints the .sqtt_funcmap of every code object in FILE (executable, shared library, .o, bare code
object, offload bundle, CCOB bundle) and checks it.

  --demangle           demangle C++ names in the table
  --json               print a JSON report (schema: docs/check-json.md) instead of the tables
  --require KIND:GLOB  require a funcmap row of KIND whose mangled or demangled name matches GLOB
                       in every selected code object; KIND: kernel, function, user, point,
                       barrier, memory, address, any (repeatable)
  --arch GFX           check only code objects of this processor (e.g. gfx90a)
  --quiet              one summary line per code object instead of the tables
  --skip-non-amdgpu    skip (with a note) files that hold no AMDGPU code: directories, scripts,
                       empty files, host-only binaries (so `--check build/bin/*` works)
  --help               this text

Exit status: 0 all valid and all requirements met, 1 a check failed, 2 usage error.
";

struct Options {
    demangle: bool,
    json: bool,
    requires: Vec<Requirement>,
    arch: Option<String>,
    quiet: bool,
    skip_other: bool,
    files: Vec<String>,
}

fn usage(msg: &str) -> i32 {
    eprintln!("sqtt-hipcc --check: error: {msg}");
    eprintln!("run `sqtt-hipcc --check --help` for the options");
    2
}

/// `--check`'s options as a clap command (also the source of the completions and man page).
pub fn command() -> clap::Command {
    use clap::{Arg, ArgAction, Command};
    Command::new("sqtt-hipcc --check")
        .about("Print and check the .sqtt_funcmap of every code object in FILE")
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(
            Arg::new("help")
                .long("help")
                .short('h')
                .action(ArgAction::SetTrue)
                .help("this text"),
        )
        .arg(
            Arg::new("demangle")
                .long("demangle")
                .action(ArgAction::SetTrue)
                .help("demangle C++ names in the table"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print a JSON report (docs/check-json.md) instead of the tables"),
        )
        .arg(
            Arg::new("quiet")
                .long("quiet")
                .short('q')
                .action(ArgAction::SetTrue)
                .help("one summary line per code object instead of the tables"),
        )
        .arg(
            Arg::new("skip-non-amdgpu")
                .long("skip-non-amdgpu")
                .action(ArgAction::SetTrue)
                .help("skip files that hold no AMDGPU code (directories, scripts, host binaries)"),
        )
        .arg(
            Arg::new("require")
                .long("require")
                .value_name("KIND:GLOB")
                .action(ArgAction::Append)
                .allow_hyphen_values(true)
                .help("require a funcmap row of KIND whose name matches GLOB (repeatable)"),
        )
        .arg(
            Arg::new("arch")
                .long("arch")
                .value_name("GFX")
                .help("check only code objects of this processor (e.g. gfx90a)"),
        )
        .arg(
            Arg::new("files")
                .value_name("FILE")
                .num_args(0..)
                .action(ArgAction::Append)
                .value_hint(clap::ValueHint::FilePath),
        )
}

fn parse(args: &[String]) -> Result<Option<Options>, String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let m = command()
        .try_get_matches_from(std::iter::once("--check".to_string()).chain(args.iter().cloned()))
        .map_err(|e| {
            let ctx = |k| match e.get(k) {
                Some(ContextValue::String(s)) => s.clone(),
                _ => String::new(),
            };
            match e.kind() {
                ErrorKind::UnknownArgument => {
                    format!("unknown option {}", ctx(ContextKind::InvalidArg))
                }
                ErrorKind::InvalidValue | ErrorKind::NoEquals => {
                    let arg = ctx(ContextKind::InvalidArg);
                    let name = arg.split([' ', '=']).next().unwrap_or_default().to_string();
                    format!("{name} needs a value")
                }
                _ => e
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches("error: ")
                    .to_string(),
            }
        })?;
    if m.get_flag("help") {
        return Ok(None);
    }
    let mut requires = Vec::new();
    for spec in m.get_many::<String>("require").into_iter().flatten() {
        requires.push(Requirement::parse(spec).map_err(|e| e.to_string())?);
    }
    let arch = m.get_one::<String>("arch").cloned();
    if arch.as_deref() == Some("") {
        return Err("--arch needs a processor such as gfx90a".into());
    }
    let o = Options {
        demangle: m.get_flag("demangle"),
        json: m.get_flag("json"),
        requires,
        arch,
        quiet: m.get_flag("quiet"),
        skip_other: m.get_flag("skip-non-amdgpu"),
        files: m
            .get_many::<String>("files")
            .into_iter()
            .flatten()
            .cloned()
            .collect(),
    };
    if o.files.is_empty() {
        return Err("no FILE given".into());
    }
    Ok(Some(o))
}

/// `--quiet`: `FILE [ARCH] (LOCATION): STATE`.
fn summary_line(path: &str, co: &CodeObject) -> String {
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

pub fn main(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{HELP}");
            return 0;
        }
        Err(e) => return usage(&e),
    };
    let mut failed = false;
    let mut usage_error = false;
    let mut files: Vec<FileResult> = Vec::new();
    let mut skipped: Vec<&str> = Vec::new();
    for f in &o.files {
        let path = std::path::Path::new(f);
        if o.skip_other && path.is_dir() {
            skipped.push(f);
            continue;
        }
        let all = sqtt_codeobj::read_path(path);
        let no_amdgpu = match &all {
            Ok(cos) => cos.is_empty(),
            Err(Error::Unrecognised { .. }) => true,
            Err(_) => path.metadata().is_ok_and(|m| m.len() == 0),
        };
        if o.skip_other && no_amdgpu {
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
        eprintln!("sqtt-hipcc --check: none of the files holds AMDGPU code");
        return 1;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
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
        eprintln!("sqtt-hipcc --check: {e}");
    }
    code
}

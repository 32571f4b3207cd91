//! `sqtt-hipcc --check FILE... [--demangle] [--json] [--require KIND:GLOB]... [--arch GFX]
//! [--cost [--baseline PLAIN]... [--max-*]]`: the options and their errors here; the check itself
//! is `sqtt_codeobj::check`, which `sqtt funcmap` runs too.
//!
//! Exit status: 0 every selected code object has a valid funcmap (or is not yet linked) and every
//! requirement is met; 1 a funcmap is missing or invalid, a file holds no (selected) code object
//! or cannot be parsed, or a requirement is missing; 2 usage errors (unknown option, malformed
//! `--require`, no file, a file that cannot be opened).

use sqtt_codeobj::check::{self, CheckArgs, CheckOptions};
use sqtt_files::output::stderr_line;

fn usage(msg: &str) -> i32 {
    stderr_line(format_args!("sqtt-hipcc --check: error: {msg}"));
    stderr_line("run `sqtt-hipcc --check --help` for the options");
    2
}

/// `--check`'s options as a clap command (also the source of the completions and man page).
pub fn command() -> clap::Command {
    use clap::{Arg, ArgAction, Args, Command};
    // The about after augment_args, which sets CheckArgs' own doc comment as the command's.
    CheckArgs::augment_args(
        Command::new("sqtt-hipcc --check")
            .disable_help_flag(true)
            .disable_version_flag(true)
            .arg(
                Arg::new("help")
                    .long("help")
                    .short('h')
                    .action(ArgAction::SetTrue)
                    .help("this text"),
            ),
    )
    .about("Print and check the .sqtt_funcmap of every code object in FILE")
    .override_usage("sqtt-hipcc --check [OPTIONS] FILE...")
    .after_help(exit_statuses())
}

/// The check's exit statuses, for `--check --help`.
fn exit_statuses() -> String {
    let mut text = String::from("Exit status:");
    for (status, meaning) in check::EXIT_STATUS {
        text.push_str(&format!("\n  {status}  {meaning}"));
    }
    text
}

/// `--check --help`: made from the clap command, as the man page is.
fn help() -> String {
    command().render_help().to_string()
}

fn parse(args: &[String]) -> Result<Option<CheckOptions>, String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    use clap::FromArgMatches;
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
    let args = CheckArgs::from_arg_matches(&m).map_err(|e| e.to_string())?;
    args.options().map(Some)
}

pub fn main(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return match sqtt_files::output::print(&help()) {
                Ok(()) => 0,
                Err(e) if sqtt_files::output::is_broken_pipe(&e) => 0,
                Err(e) => {
                    stderr_line(format_args!("sqtt-hipcc --check: error: {e}"));
                    1
                }
            };
        }
        Err(e) => return usage(&e),
    };
    check::run(
        &o,
        "sqtt-hipcc --check",
        &mut sqtt_files::output::stdout(),
        &mut std::io::stderr().lock(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Result<Option<CheckOptions>, String> {
        parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn cost_options_and_their_errors() {
        let o = args(&[
            "--cost",
            "--baseline",
            "plain",
            "--max-occupancy-drop",
            "1",
            "--max-added-vgprs",
            "8",
            "--max-code-growth",
            "2.5",
            "app",
        ])
        .unwrap()
        .unwrap();
        assert!(o.cost && !o.csv);
        assert_eq!(o.baselines, ["plain"]);
        assert_eq!(o.limits.max_occupancy_drop, Some(1));
        assert_eq!(o.limits.max_added_vgprs, Some(8));
        assert_eq!(o.limits.max_code_growth_pct, Some(2.5));

        let err = |a: &[&str]| args(a).err().unwrap_or_else(|| panic!("{a:?} accepted"));
        assert!(err(&["--baseline", "p", "app"]).contains("--baseline needs --cost"));
        assert!(err(&["--csv", "app"]).contains("--csv needs --cost"));
        assert!(
            err(&["--cost", "--max-added-vgprs", "4", "app"]).contains("needs --baseline PLAIN")
        );
        let e = err(&[
            "--cost",
            "--baseline",
            "p",
            "--max-occupancy-drop",
            "-1",
            "app",
        ]);
        assert!(
            e.contains("--max-occupancy-drop \"-1\"") && e.contains("whole number"),
            "{e}"
        );
        let e = err(&[
            "--cost",
            "--baseline",
            "p",
            "--max-code-growth",
            "inf",
            "app",
        ]);
        assert!(e.contains("--max-code-growth"), "{e}");
        let e = err(&["--cost", "--baseline", "p", "--max-added-vgprs", "x", "app"]);
        assert!(e.contains("\"x\""), "{e}");
        let e = err(&["--cost", "--baseline", "p", "a", "b"]);
        assert!(e.contains("one baseline per FILE"), "{e}");
        assert!(err(&["--cost", "--csv", "--json", "app"]).contains("choose one"));
    }
}

//! Shell completions and man pages (`--sqtt-completions=SHELL`, `--sqtt-man[=check]`), made by
//! clap_complete and clap_mangen from clap descriptions of the wrapper's own options and of
//! `--check` (whose parser is the same clap command). install.sh installs them.

use clap::{Arg, ArgAction, Command, ValueHint};

use crate::error::Error;

/// The wrapper's own options, for completions and the man page (the hipcc pass-through is a
/// table in args.rs, not clap: everything else goes to hipcc unchanged).
pub fn wrapper_command() -> Command {
    let flag = |name: &'static str, help: &'static str| {
        Arg::new(name)
            .long(name)
            .action(ArgAction::SetTrue)
            .help(help)
    };
    Command::new("sqtt-hipcc")
        .version(env!("CARGO_PKG_VERSION"))
        .about("A drop-in hipcc that builds with SQTT instrumentation, and checks funcmaps")
        .long_about(
            "sqtt-hipcc is used exactly like hipcc: every argument but its own --sqtt-* options \
             goes to the real hipcc; compile steps get the SQTT pass plugin, the markers.hpp \
             include directory and -DSQTT_ENABLED=1, and the device code is checked afterwards. \
             Settings: sqtt.toml (found from the working directory upward), then SQTT_* \
             variables. `sqtt-hipcc --check FILE...` checks finished binaries (sqtt-hipcc-check(1)).",
        )
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(
            Arg::new("sqtt-config")
                .long("sqtt-config")
                .value_name("PATH")
                .value_hint(ValueHint::FilePath)
                .help("use this sqtt.toml"),
        )
        .arg(flag("sqtt-verbose", "trace what the wrapper does on stderr"))
        .arg(flag("sqtt-include-dir", "print the directory of markers.hpp"))
        .arg(flag("sqtt-toolchain", "print the hipcc, LLVM major and plugin found"))
        .arg(
            Arg::new("sqtt-flags")
                .long("sqtt-flags")
                .value_name("CLANG")
                .num_args(0..=1)
                .require_equals(true)
                .value_hint(ValueHint::CommandName)
                .help("print the flags that instrument a plain `CLANG -x hip` compile"),
        )
        .arg(flag(
            "sqtt-launch",
            "run the rest of the command line with the resolved settings exported",
        ))
        .arg(flag("sqtt-help", "the wrapper's own usage"))
        .arg(flag("check", "check funcmaps of FILE... (see sqtt-hipcc-check(1))"))
        .arg(
            Arg::new("hipcc-arguments")
                .value_name("HIPCC-ARGUMENTS")
                .num_args(0..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .value_hint(ValueHint::AnyPath),
        )
}

/// `--sqtt-completions=SHELL`: the completion script on stdout.
pub fn completions(shell: &str) -> Result<(), Error> {
    use clap_complete::Shell;
    let sh: Shell = shell
        .parse()
        .map_err(|_| Error::UnknownShell(shell.to_string()))?;
    let mut cmd = wrapper_command();
    // Into memory first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(sh, &mut cmd, "sqtt-hipcc", &mut script);
    crate::wrap::print(&String::from_utf8_lossy(&script))
}

/// `--sqtt-man` (sqtt-hipcc.1) or `--sqtt-man=check` (sqtt-hipcc-check.1) on stdout.
pub fn man(which: Option<&str>) -> Result<(), Error> {
    let cmd = match which {
        None | Some("") => wrapper_command(),
        Some("check") => crate::check::command().name("sqtt-hipcc-check"),
        Some(other) => return Err(Error::UnknownManPage(other.to_string())),
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .map_err(Error::Stdout)?;
    crate::wrap::print(&String::from_utf8_lossy(&page))
}

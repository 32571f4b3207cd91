//! The wrapper's own options (`--sqtt-*`, never passed to hipcc): one table, [`OPTIONS`], from
//! which the parser ([`split_own`]), `--sqtt-help`, the man page and the completions (the clap
//! [`command`]) and the unknown-option message are made. To add an option: a row here (name,
//! value, help, and what it sets in [`OwnOptions`]), then what it does in `wrap::main`.

use std::path::PathBuf;

use clap::{Arg, ArgAction, Command, ValueHint};

use crate::error::Error;

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Nothing: `--sqtt-NAME`.
    None,
    /// A value, `--sqtt-NAME=VALUE` or `--sqtt-NAME VALUE`.
    Required(&'static str),
    /// An optional value, only as `--sqtt-NAME=VALUE`.
    Optional(&'static str),
    /// Every argument after it: `--sqtt-NAME ARGS...`.
    Rest(&'static str),
}

/// One option: its name after `--sqtt-`, its value, its help and what it sets.
pub struct OwnOption {
    pub name: &'static str,
    pub value: Value,
    pub hint: ValueHint,
    /// One line, for `--sqtt-help`, the completions and the man page.
    pub help: &'static str,
    /// More, for `--sqtt-help` and the man page (empty: nothing more).
    pub long_help: &'static str,
    /// Records the option (and its value) in [`OwnOptions`], or says why the value is bad.
    pub set: fn(&mut OwnOptions, Option<String>) -> Result<(), Error>,
}

impl OwnOption {
    /// `--sqtt-config=PATH`, `--sqtt-flags[=CLANG]`, `--sqtt-launch CMD...`.
    pub fn usage(&self) -> String {
        let n = self.name;
        match self.value {
            Value::None => format!("--sqtt-{n}"),
            Value::Required(v) => format!("--sqtt-{n}={v}"),
            Value::Optional(v) => format!("--sqtt-{n}[={v}]"),
            Value::Rest(v) => format!("--sqtt-{n} {v}..."),
        }
    }

    /// The option as a clap argument (for help, man page and completions only: parsing is
    /// [`split_own`]'s, since every other argument goes to hipcc as it is).
    fn arg(&self) -> Arg {
        let arg = Arg::new(self.name)
            .long(format!("sqtt-{}", self.name))
            .help(self.help);
        let arg = if self.long_help.is_empty() {
            arg
        } else {
            arg.long_help(format!("{}. {}", self.help, self.long_help))
        };
        match self.value {
            Value::None => arg.action(ArgAction::SetTrue),
            Value::Required(v) => arg.value_name(v).num_args(1).value_hint(self.hint),
            Value::Optional(v) => arg
                .value_name(v)
                .num_args(0..=1)
                .require_equals(true)
                .value_hint(self.hint),
            Value::Rest(v) => arg
                .value_name(v)
                .num_args(1..)
                .allow_hyphen_values(true)
                .value_hint(self.hint),
        }
    }
}

/// `--sqtt-flags[=[FORMAT:]CLANG]`: for which clang, and how the words are printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagsRequest {
    pub format: FlagsFormat,
    /// The clang the flags are for (its LLVM major chooses the plugin); default hipcc's.
    pub clang: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagsFormat {
    /// One line of words for a shell, a Makefile or CMAKE_<LANG>_FLAGS: unquoted unless a word
    /// needs quotes.
    Shell,
    /// A CMake list (`;` between the words).
    Cmake,
}

impl FlagsRequest {
    /// `cmake`, `shell`, `cmake:CLANG`, `shell:CLANG`, `CLANG` or nothing.
    fn parse(value: Option<String>) -> FlagsRequest {
        let value = value.filter(|v| !v.is_empty());
        let (format, clang) = match value.as_deref() {
            Some("cmake") => (FlagsFormat::Cmake, None),
            Some("shell") => (FlagsFormat::Shell, None),
            Some(v) => match v.split_once(':') {
                Some(("cmake", c)) => (FlagsFormat::Cmake, Some(c)),
                Some(("shell", c)) => (FlagsFormat::Shell, Some(c)),
                _ => (FlagsFormat::Shell, Some(v)),
            },
            None => (FlagsFormat::Shell, None),
        };
        FlagsRequest {
            format,
            clang: clang.filter(|c| !c.is_empty()).map(PathBuf::from),
        }
    }
}

/// The wrapper's own options as given.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct OwnOptions {
    pub config: Option<PathBuf>,
    pub verbose: bool,
    pub help: bool,
    pub include_dir: bool,
    pub toolchain: bool,
    pub flags: Option<FlagsRequest>,
    pub stamp: Option<PathBuf>,
    pub launch: bool,
    pub completions: Option<String>,
    pub man: Option<Option<String>>,
    pub version: bool,
}

/// Every own option, in the order of the help.
pub const OPTIONS: &[OwnOption] = &[
    OwnOption {
        name: "config",
        value: Value::Required("PATH"),
        hint: ValueHint::FilePath,
        help: "use this sqtt.toml",
        long_help: "(default: SQTT_CONFIG, else sqtt.toml found from the working directory \
                    upward)",
        set: |o, v| {
            o.config = v.map(PathBuf::from);
            Ok(())
        },
    },
    OwnOption {
        name: "verbose",
        value: Value::None,
        hint: ValueHint::Other,
        help: "print what the wrapper does on stderr (also SQTT_VERBOSE=1)",
        long_help: "",
        set: |o, _| {
            o.verbose = true;
            Ok(())
        },
    },
    OwnOption {
        name: "include-dir",
        value: Value::None,
        hint: ValueHint::Other,
        help: "print the directory of markers.hpp and exit",
        long_help: "",
        set: |o, _| {
            o.include_dir = true;
            Ok(())
        },
    },
    OwnOption {
        name: "toolchain",
        value: Value::None,
        hint: ValueHint::Other,
        help: "print the hipcc found, its clang's LLVM major, that LLVM's directory and the \
               plugin for it (key=value lines), and exit",
        long_help: "",
        set: |o, _| {
            o.toolchain = true;
            Ok(())
        },
    },
    OwnOption {
        name: "flags",
        value: Value::Optional("[FORMAT:]CLANG"),
        hint: ValueHint::CommandName,
        help: "print the flags that instrument a plain `CLANG -x hip` compile and exit",
        long_help: "The plugin built for CLANG's LLVM major (default: hipcc's clang), the \
                    markers.hpp directory and -DSQTT_ENABLED=1; the settings are read by the \
                    plugin from sqtt.toml and SQTT_* (or put on the command line by \
                    --sqtt-launch). FORMAT `shell` (the default): one line of words, quoted only \
                    where a shell needs it (for $(...), Makefiles, CMAKE_HIP_FLAGS); `cmake`: a \
                    CMake list (--sqtt-flags=cmake or --sqtt-flags=cmake:clang++-21).",
        set: |o, v| {
            o.flags = Some(FlagsRequest::parse(v));
            Ok(())
        },
    },
    OwnOption {
        name: "stamp",
        value: Value::Required("FILE"),
        hint: ValueHint::FilePath,
        help: "write what a compile would get (settings, sqtt.toml, compiler, plugin and its \
               hash) to FILE when it differs from FILE's content, and exit",
        long_help: "A build step for Make and Ninja: objects that depend on FILE are rebuilt \
                    after any change of the settings, also a new sqtt.toml or a variable (the \
                    CMake package adds it). An argument after it names the compiler of a \
                    --sqtt-launch route (default: the wrapper's hipcc).",
        set: |o, v| {
            o.stamp = v.map(PathBuf::from);
            Ok(())
        },
    },
    OwnOption {
        name: "launch",
        value: Value::Rest("COMPILER ARGS"),
        hint: ValueHint::CommandName,
        help: "run COMPILER (after a compiler cache such as ccache, if one is given first) with \
               the plugin, the settings, the include directory and -DSQTT_ENABLED=1 on its \
               command line",
        long_help: "A compiler and linker launcher for CMake's HIP language or a plain clang \
                    (the CMake package sets it): the compile's dependency file gets sqtt.toml \
                    and the plugin, -fgpu-rdc is handled as the wrapper does, and a ccache after \
                    it hashes everything that decides the instrumentation.",
        set: |o, _| {
            o.launch = true;
            Ok(())
        },
    },
    OwnOption {
        name: "completions",
        value: Value::Required("SHELL"),
        hint: ValueHint::Other,
        help: "print a completion script (bash, zsh, fish, elvish, powershell) and exit",
        long_help: "",
        set: |o, v| {
            o.completions = v;
            Ok(())
        },
    },
    OwnOption {
        name: "man",
        value: Value::Optional("check"),
        hint: ValueHint::Other,
        help: "print the man page sqtt-hipcc(1), or sqtt-hipcc-check(1), and exit",
        long_help: "",
        set: |o, v| {
            o.man = Some(v);
            Ok(())
        },
    },
    OwnOption {
        name: "version",
        value: Value::None,
        hint: ValueHint::Other,
        help: "print sqtt-hipcc's version and exit (--version is hipcc's, with two lines more)",
        long_help: "",
        set: |o, _| {
            o.version = true;
            Ok(())
        },
    },
    OwnOption {
        name: "help",
        value: Value::None,
        hint: ValueHint::Other,
        help: "print this help and exit",
        long_help: "",
        set: |o, _| {
            o.help = true;
            Ok(())
        },
    },
];

/// Splits `--sqtt-*` options off the arguments (the rest goes to hipcc, or is `--sqtt-launch`'s
/// command).
pub fn split_own(argv: &[String]) -> Result<(OwnOptions, Vec<String>), Error> {
    let mut own = OwnOptions::default();
    let mut rest = Vec::with_capacity(argv.len());
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        i += 1;
        let Some(opt) = a.strip_prefix("--sqtt-") else {
            rest.push(a.clone());
            continue;
        };
        let (name, joined) = match opt.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (opt, None),
        };
        let Some(row) = OPTIONS.iter().find(|o| o.name == name) else {
            return Err(unknown(a));
        };
        let value = match row.value {
            Value::None | Value::Rest(_) if joined.is_some() => {
                return Err(Error::OwnOptionValue {
                    option: a.clone(),
                    problem: format!("takes no value: {}", row.usage()),
                })
            }
            Value::None => None,
            Value::Required(_) => {
                let v = match joined {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        argv.get(i - 1).cloned()
                    }
                };
                match v {
                    Some(v) if !v.is_empty() => Some(v),
                    _ => {
                        return Err(Error::OwnOptionValue {
                            option: format!("--sqtt-{name}"),
                            problem: format!("needs a value: {}", row.usage()),
                        })
                    }
                }
            }
            Value::Optional(_) => joined,
            Value::Rest(_) => {
                rest.extend(argv[i..].iter().cloned());
                i = argv.len();
                None
            }
        };
        (row.set)(&mut own, value)?;
    }
    Ok((own, rest))
}

/// An unknown `--sqtt-*`: the closest own option, and all of them.
fn unknown(arg: &str) -> Error {
    let name = arg.trim_start_matches("--sqtt-");
    let name = name.split('=').next().unwrap_or(name);
    let suggestion = OPTIONS
        .iter()
        .map(|o| (strsim::levenshtein(name, o.name), o))
        .filter(|(d, o)| *d <= 2.max(o.name.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, o)| o.usage());
    Error::UnknownOwnOption {
        option: arg.to_string(),
        suggestion,
        known: OPTIONS
            .iter()
            .map(OwnOption::usage)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

const ABOUT: &str = "A drop-in hipcc that builds with SQTT instrumentation, and checks funcmaps";

const LONG_ABOUT: &str = "sqtt-hipcc is used exactly like hipcc: every argument but its own \
    --sqtt-* options goes to the real hipcc; compile steps get the SQTT pass plugin, the settings \
    as plugin options, the markers.hpp include directory and -DSQTT_ENABLED=1, and the device \
    code is checked afterwards. Settings: sqtt.toml (found from the working directory upward), \
    then SQTT_* variables. `sqtt-hipcc --check FILE...` checks finished binaries \
    (sqtt-hipcc-check(1)).";

const AFTER_HELP: &str = "Settings: sqtt.toml, then SQTT_* variables over it (docs/settings.md; \
    installed under PREFIX/share/doc/sqtt-hipcc/ by install.sh --prefix). \
    `sqtt-hipcc --check --help` for the check of finished binaries.";

/// The wrapper as a clap command, made from [`OPTIONS`]: `--sqtt-help`, the man page and the
/// completions.
pub fn command() -> Command {
    let mut cmd = Command::new("sqtt-hipcc")
        .version(env!("CARGO_PKG_VERSION"))
        .about(ABOUT)
        .long_about(LONG_ABOUT)
        .after_help(AFTER_HELP)
        .override_usage(
            "sqtt-hipcc [--sqtt-config=PATH] [--sqtt-verbose] HIPCC-ARGUMENTS...\n       \
             sqtt-hipcc --check [OPTIONS] FILE...\n       \
             sqtt-hipcc --sqtt-launch [ccache] COMPILER ARGS...",
        )
        .disable_help_flag(true)
        .disable_version_flag(true);
    for o in OPTIONS {
        cmd = cmd.arg(o.arg());
    }
    cmd.arg(
        Arg::new("check")
            .long("check")
            .action(ArgAction::SetTrue)
            .help("check the funcmaps of FILE... (sqtt-hipcc-check(1); --check --help)"),
    )
    .arg(
        Arg::new("hipcc-arguments")
            .value_name("HIPCC-ARGUMENTS")
            .help("everything else: hipcc's own arguments, passed on as they are")
            .num_args(0..)
            .trailing_var_arg(true)
            .allow_hyphen_values(true)
            .value_hint(ValueHint::AnyPath),
    )
}

/// `--sqtt-help`.
pub fn help() -> String {
    command().render_long_help().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    #[test]
    fn own_options_come_off_and_the_rest_stays_in_order() {
        let (o, rest) = split_own(&v("--sqtt-config=a.toml -c k.hip --sqtt-verbose")).unwrap();
        assert_eq!(o.config, Some(PathBuf::from("a.toml")));
        assert!(o.verbose);
        assert_eq!(rest, v("-c k.hip"));
        let (o, rest) = split_own(&v("--sqtt-config b.toml -c")).unwrap();
        assert_eq!(o.config, Some(PathBuf::from("b.toml")));
        assert_eq!(rest, v("-c"));
        let (o, rest) = split_own(&v("--sqtt-launch ccache clang++ --sqtt-x -c k.hip")).unwrap();
        assert!(o.launch);
        assert_eq!(
            rest,
            v("ccache clang++ --sqtt-x -c k.hip"),
            "the command is not parsed"
        );
        let (o, rest) = split_own(&v("--sqtt-stamp=s.stamp clang++-15")).unwrap();
        assert_eq!(o.stamp, Some(PathBuf::from("s.stamp")));
        assert_eq!(rest, v("clang++-15"));
        assert_eq!(split_own(&v("--sqtt-man")).unwrap().0.man, Some(None));
        assert_eq!(
            split_own(&v("--sqtt-man=check")).unwrap().0.man,
            Some(Some("check".into()))
        );
    }

    #[test]
    fn flags_take_a_format_and_a_clang() {
        let flags = |a: &str| split_own(&v(a)).unwrap().0.flags.unwrap();
        let req = |format, clang: Option<&str>| FlagsRequest {
            format,
            clang: clang.map(PathBuf::from),
        };
        use FlagsFormat::*;
        assert_eq!(flags("--sqtt-flags"), req(Shell, None));
        assert_eq!(flags("--sqtt-flags="), req(Shell, None));
        assert_eq!(
            flags("--sqtt-flags=clang++-15"),
            req(Shell, Some("clang++-15"))
        );
        assert_eq!(flags("--sqtt-flags=cmake"), req(Cmake, None));
        assert_eq!(
            flags("--sqtt-flags=cmake:/usr/bin/clang++"),
            req(Cmake, Some("/usr/bin/clang++"))
        );
        assert_eq!(flags("--sqtt-flags=shell:clang"), req(Shell, Some("clang")));
    }

    #[test]
    fn bad_own_options_name_themselves_and_what_is_accepted() {
        for (bad, says) in [
            ("--sqtt-foo", "unknown option --sqtt-foo"),
            (
                "--sqtt-config",
                "--sqtt-config needs a value: --sqtt-config=PATH",
            ),
            ("--sqtt-config=", "--sqtt-config needs a value"),
            (
                "--sqtt-stamp",
                "--sqtt-stamp needs a value: --sqtt-stamp=FILE",
            ),
            (
                "--sqtt-verbose=1",
                "--sqtt-verbose=1 takes no value: --sqtt-verbose",
            ),
            (
                "--sqtt-launch=clang",
                "takes no value: --sqtt-launch COMPILER ARGS...",
            ),
            (
                "--sqtt-flag",
                "(did you mean --sqtt-flags[=[FORMAT:]CLANG]?)",
            ),
            ("--sqtt-tool-chain", "(did you mean --sqtt-toolchain?)"),
        ] {
            let e = split_own(&v(bad)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            let text = e.to_string();
            assert!(text.contains(says), "{bad}: {text}");
        }
        // The list of the table, every row.
        let text = split_own(&v("--sqtt-zzzzzz")).unwrap_err().to_string();
        assert!(!text.contains("did you mean"), "{text}");
        for o in OPTIONS {
            assert!(text.contains(&o.usage()), "{text}");
        }
    }

    /// docs/driver.md's table of own options names every row, and no option that is not one.
    #[test]
    fn the_reference_lists_every_own_option() {
        let doc = include_str!("../../docs/driver.md");
        let table: Vec<&str> = doc
            .lines()
            .skip_while(|l| !l.starts_with("## Own options and variables"))
            .take_while(|l| !l.starts_with("### "))
            .filter(|l| l.starts_with("| `--sqtt-"))
            .collect();
        for o in OPTIONS {
            let long = format!("`--sqtt-{}", o.name);
            assert!(
                table.iter().any(|l| l.starts_with(&format!("| {long}"))),
                "docs/driver.md lacks {long}"
            );
        }
        for line in table {
            let name = line["| `--sqtt-".len()..]
                .split(|c: char| !(c.is_ascii_lowercase() || c == '-'))
                .next()
                .unwrap();
            assert!(
                OPTIONS.iter().any(|o| o.name == name),
                "docs/driver.md names --sqtt-{name}, which is no own option"
            );
        }
    }

    /// The help, the man page and the completions are made from the same rows as the parser.
    #[test]
    fn every_row_is_in_the_help_man_page_and_completions() {
        let help = help();
        let mut page = Vec::new();
        clap_mangen::Man::new(command()).render(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        let mut bash = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Bash,
            &mut command(),
            "sqtt-hipcc",
            &mut bash,
        );
        let bash = String::from_utf8(bash).unwrap();
        for o in OPTIONS {
            let long = format!("--sqtt-{}", o.name);
            assert!(
                help.contains(&long) && help.contains(o.help),
                "{long}: {help}"
            );
            assert!(page.contains(&long.replace('-', "\\-")), "{long}");
            assert!(bash.contains(&long), "{long}");
            // And the parser knows it.
            let arg = match o.value {
                Value::None | Value::Optional(_) => long.clone(),
                Value::Required(_) => format!("{long}=x"),
                Value::Rest(_) => format!("{long} clang++"),
            };
            assert!(split_own(&v(&arg)).is_ok(), "{arg}");
        }
    }
}

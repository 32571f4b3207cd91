//! What can make the wrapper itself fail, and the exit status each failure gives.
//!
//! Every variant but [`Error::FuncmapCheck`] is found before the compiler runs (exit 2: bad
//! input or settings, nothing run, nothing written). A compiler that fails is no error of ours:
//! its status is passed on as it is (see `launch::Status`).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use sqtt_config::show::{cut, quoted};

use crate::locate::{plugin_build_command, plugin_feature, PLUGIN_FILE};

/// A path or argument for a message, cut when very long ([`sqtt_config::show`]).
fn shown(p: &Path) -> String {
    cut(&p.display().to_string()).into_owned()
}

/// Who named a compiler the wrapper was to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedBy {
    /// `SQTT_HIPCC`, or the `hipcc` key of a sqtt.toml.
    Setting(sqtt_config::Origin),
    /// `--sqtt-flags=CLANG`.
    FlagsOption,
    /// `--sqtt-launch CMD`.
    LaunchCommand,
}

impl fmt::Display for NamedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NamedBy::Setting(origin) => write!(f, "{origin}"),
            NamedBy::FlagsOption => write!(f, "--sqtt-flags"),
            NamedBy::LaunchCommand => write!(f, "--sqtt-launch"),
        }
    }
}

/// A failure of the wrapper.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Own options.
    #[error(
        "unknown option {}{}; sqtt-hipcc's own options are {known} (every other option goes to \
         hipcc)",
        cut(.option),
        .suggestion.as_ref().map(|s| format!(" (did you mean {s}?)")).unwrap_or_default()
    )]
    UnknownOwnOption {
        option: String,
        /// The closest own option's usage.
        suggestion: Option<String>,
        /// Every own option's usage.
        known: String,
    },
    #[error("{} {problem}", cut(.option))]
    OwnOptionValue { option: String, problem: String },
    /// A malformed or unknown `-mllvm -sqtt-marker-*` (the message says which).
    #[error("{0}")]
    PluginOption(String),
    #[error("--sqtt-launch needs a command: sqtt-hipcc --sqtt-launch [ccache] clang++ ARGS...")]
    LaunchNeedsCommand,
    #[error(
        "--sqtt-stamp=FILE takes at most one more argument, the compiler (got {})",
        cut(&.0.join(" "))
    )]
    StampArguments(Vec<String>),
    #[error("cannot write the settings stamp {}: {source}", shown(.path))]
    Stamp { path: PathBuf, source: io::Error },
    #[error(
        "--sqtt-completions: unknown shell {}; accepted: bash, zsh, fish, elvish, powershell",
        quoted(.0)
    )]
    UnknownShell(String),
    #[error("--sqtt-man: unknown page {}; accepted: --sqtt-man, --sqtt-man=check", quoted(.0))]
    UnknownManPage(String),
    /// Standard output could not be written (`--sqtt-flags > /dev/full`); the message names it.
    #[error("{0}")]
    Stdout(io::Error),

    // The arguments and the settings.
    /// `@file`s that name themselves, nest too deep or expand too far (the message says which).
    #[error("{0}")]
    ResponseFiles(String),
    #[error(transparent)]
    Settings(#[from] sqtt_config::ConfigError),
    #[error("cannot read the working directory: {0}")]
    WorkingDirectory(io::Error),

    // The real hipcc.
    #[error(
        "sqtt-hipcc is calling itself (the hipcc it found runs sqtt-hipcc again); set SQTT_HIPCC \
         to the real hipcc"
    )]
    CallsItself,
    #[error("{by} names {}, which {why}", shown(.path))]
    HipccNotExecutable {
        path: PathBuf,
        by: NamedBy,
        /// "does not exist", "is a directory", "is not executable".
        why: String,
    },
    #[error("{by} names sqtt-hipcc itself ({}); name the real hipcc", shown(.path))]
    HipccIsSelf { path: PathBuf, by: NamedBy },
    #[error(
        "cannot find the real hipcc: set SQTT_HIPCC=/path/to/hipcc, or HIP_PATH/ROCM_PATH, or put \
         hipcc on PATH (looked there and in {rocm}/bin)"
    )]
    HipccNotFound { rocm: &'static str },
    #[error("cannot run {} --version: {source}", shown(.compiler))]
    ClangVersionProbe {
        compiler: PathBuf,
        source: io::Error,
    },
    #[error(
        "cannot tell which clang {} uses: `{} --version` printed no \"clang version N\" line",
        shown(.0), shown(.0)
    )]
    ClangVersionUnknown(PathBuf),

    // The plugin.
    #[error(
        "SQTT_PLUGIN names {}, which is {what}, not a regular file; set it to the plugin file \
         ({PLUGIN_FILE})", shown(.path)
    )]
    PluginNotRegular { path: PathBuf, what: &'static str },
    #[error("SQTT_PLUGIN names {}, which does not exist ({source})", shown(.path))]
    PluginMissing { path: PathBuf, source: io::Error },
    /// No plugin in any of the places looked at (the message names them and how to build one).
    #[error("{0}")]
    PluginNotFound(String),
    #[error("cannot read the plugin {}: {source}", shown(.path))]
    PluginUnreadable { path: PathBuf, source: io::Error },
    #[error("the plugin {} is not a shared object: {reason}", shown(.path))]
    PluginNotSharedObject { path: PathBuf, reason: String },
    #[error(
        "cannot tell which LLVM the plugin {} was built for (no .sqtt_plugin_info section, no \
         libLLVM-N.so dependency); rebuild it with `cargo build -p sqtt-plugin`", shown(.0)
    )]
    PluginLlvmUnknown(PathBuf),
    /// The plugin and the compiler's clang disagree on the LLVM major (clang would crash).
    #[error(
        "the plugin {} was built for LLVM {plugin_major}, but {}{via} uses clang {clang_major}: \
         clang would crash loading it. Build the plugin for LLVM {clang_major} (`{}`, cargo \
         feature {}) and unset SQTT_PLUGIN or point it at that build, or use a hipcc on clang \
         {plugin_major} (HIP_CLANG_PATH)", shown(.plugin), shown(.compiler),
        plugin_build_command(*.clang_major), plugin_feature(*.clang_major)
    )]
    PluginLlvmMismatch {
        plugin: PathBuf,
        plugin_major: u32,
        compiler: PathBuf,
        /// ` (HIP_CLANG_PATH=...)` when that variable chose the clang, else empty.
        via: String,
        clang_major: u32,
    },
    /// `--sqtt-flags=CLANG`: no plugin for that clang's major.
    #[error(
        "the plugin {} is not built for LLVM {major}; build it with `{}`",
        shown(.plugin), plugin_build_command(*.major)
    )]
    PluginNotForLlvm { plugin: PathBuf, major: u32 },

    // Files of our own.
    #[error(
        "cannot write {header} to {}: {source} (set SQTT_CACHE_DIR to a writable directory)",
        shown(.path)
    )]
    Headers {
        header: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("cannot extend {}: {source}", shown(.path))]
    DepFile { path: PathBuf, source: io::Error },
    #[error(
        "no private cache directory can be made in {}: {source} (set SQTT_CACHE_DIR to a \
         directory of your own)", shown(.parent)
    )]
    PrivateCache { parent: PathBuf, source: io::Error },

    // The compiler cache.
    #[error(
        "the ccache setting (SQTT_CCACHE, or `ccache` in sqtt.toml) names {}, which {}; install \
         ccache, give its path, or turn the setting off (SQTT_CCACHE=0)",
        shown(.0),
        if .0.components().count() == 1 { "is not on PATH" } else { "is not an executable file" }
    )]
    CacheNotFound(PathBuf),

    // Running.
    #[error("cannot run {}: {source}", shown(.program))]
    Launch { program: PathBuf, source: io::Error },
    /// The compiler succeeded without writing an output the step writes (exit 1).
    #[error(
        "{} exited with status 0 but {why} {}; the step failed", shown(.program), shown(.path)
    )]
    OutputNotWritten {
        program: PathBuf,
        path: PathBuf,
        /// "did not write", "left unchanged".
        why: &'static str,
    },
    /// The funcmaps of what the compiler wrote are missing or invalid (exit 1); one line per
    /// problem, the outputs moved aside.
    #[error("{}", .problems.join("\n"))]
    FuncmapCheck { problems: Vec<String> },
}

impl Error {
    /// The wrapper's exit status: 1 when the outputs of a successful compiler are missing or
    /// were rejected by the post-build check, or stdout could not be written; 2 for everything
    /// found before the compiler ran.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::FuncmapCheck { .. } | Error::OutputNotWritten { .. } | Error::Stdout(_) => 1,
            _ => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(Error::FuncmapCheck { problems: vec![] }.exit_code(), 1);
        assert_eq!(Error::CallsItself.exit_code(), 2);
        let unknown = Error::UnknownOwnOption {
            option: "--sqtt-x".into(),
            suggestion: None,
            known: String::new(),
        };
        assert_eq!(unknown.exit_code(), 2);
        let e = Error::Launch {
            program: "/h".into(),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with("cannot run /h: "), "{e}");
    }

    #[test]
    fn messages_name_what_failed() {
        let e = Error::PluginLlvmMismatch {
            plugin: "/p/libsqtt_plugin.so".into(),
            plugin_major: 15,
            compiler: "/usr/bin/hipcc".into(),
            via: String::new(),
            clang_major: 16,
        };
        assert_eq!(
            e.to_string(),
            "the plugin /p/libsqtt_plugin.so was built for LLVM 15, but /usr/bin/hipcc uses clang \
             16: clang would crash loading it. Build the plugin for LLVM 16 (`./install.sh --llvm \
             16`, cargo feature llvm16-0) and unset SQTT_PLUGIN or point it at that build, or use \
             a hipcc on clang 15 (HIP_CLANG_PATH)"
        );
        assert_eq!(
            Error::FuncmapCheck {
                problems: vec!["a".into(), "b".into()]
            }
            .to_string(),
            "a\nb"
        );
    }
}

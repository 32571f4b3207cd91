//! Settings of sqtt-hipcc and of the pass plugin.
//!
//! One parser and one validator for `sqtt.toml` and the `SQTT_*` variables. The driver merges the
//! file and the environment into one [`Settings`], validates it, and hands it to the plugin as
//! `SQTT_*` variables ([`Settings::to_env`]) and plugin options; the plugin reads them back with
//! [`Settings::located`], as the driver read them. Both sides therefore accept the same values
//! and give them the same meaning. Every setting is one row of [`setting::SETTINGS`], from which
//! the parsing, the messages, the exported variables, the plugin options and the generated
//! documentation ([`docs`]) are read.

use std::fmt;
use std::path::{Path, PathBuf};

pub mod discover;
pub mod docs;
mod parse;
pub mod setting;
pub mod show;
pub mod trust;

pub use discover::{locate_config, ConfigFile, Ignored, Located};
pub use setting::{Setting, SETTINGS};

/// Name of the configuration file looked up from the working directory upward.
pub const CONFIG_FILE_NAME: &str = "sqtt.toml";

/// The variables that the driver and the plugin read or set themselves, beside the table. Those
/// of [`setting::SETTINGS`] rows are the rows' own names; the rest are no settings of
/// `sqtt.toml` and never reach [`Settings`].
pub mod var {
    use crate::setting;

    /// The driver's switch, also set for `--sqtt-launch`'s command.
    pub const ENABLED: &str = setting::ENABLED.var;
    /// Driver only: path of the real hipcc.
    pub const HIPCC: &str = setting::HIPCC.var;
    /// Driver only: print what the wrapper does on stderr.
    pub const VERBOSE: &str = setting::VERBOSE.var;
    /// Driver only: run hipcc under this compiler cache.
    pub const CCACHE: &str = setting::CCACHE.var;
    /// Path of sqtt.toml (the driver's, and a plugin's loaded without the driver).
    pub const CONFIG: &str = "SQTT_CONFIG";
    /// Directories whose `sqtt.toml` is used whoever owns it (`:`-separated; `DIR/*`, `*`).
    pub const SAFE_DIRECTORY: &str = "SQTT_SAFE_DIRECTORY";
    /// Driver only: path of the plugin shared object.
    pub const PLUGIN: &str = "SQTT_PLUGIN";
    /// Set by the driver on `-fgpu-rdc` compile steps: the plugin only places bare markers and
    /// records its ledger; IDs and the funcmap are made once, at device link time, for all
    /// translation units together.
    pub const DEFER_TO_LINK: &str = "SQTT_DEFER_TO_LINK";
    /// Set by the driver in the environment of the compiler it runs. The plugin then takes the
    /// settings the driver exported instead of looking for sqtt.toml, and a wrapper that sees
    /// it refuses to run below itself (the hipcc it found was sqtt-hipcc).
    pub const HIPCC_DEPTH: &str = "SQTT_HIPCC_DEPTH";
    /// The driver's cache directory (markers.hpp, the clang version of each hipcc).
    pub const CACHE_DIR: &str = "SQTT_CACHE_DIR";
}

/// Automatic function entry/exit instrumentation threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FunctionThreshold {
    /// `0`: no function instrumentation.
    #[default]
    Off,
    /// `N`: instrument functions with more than N non-trivial IR instructions.
    Count(u32),
    /// `cost:N`: instrument functions whose weighted cost exceeds N.
    Cost(u32),
}

impl FunctionThreshold {
    pub fn is_on(self) -> bool {
        !matches!(self, FunctionThreshold::Off)
    }
}

impl fmt::Display for FunctionThreshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FunctionThreshold::Off => write!(f, "0"),
            FunctionThreshold::Count(n) => write!(f, "{n}"),
            FunctionThreshold::Cost(n) => write!(f, "cost:{n}"),
        }
    }
}

/// `SQTT_INSTRUMENT_MEMORY=N:M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryGrouping {
    /// N: memory operations per marker (at least 1).
    pub ops_per_marker: u32,
    /// M: the largest instruction gap between two operations of one group.
    pub max_gap: u32,
}

impl fmt::Display for MemoryGrouping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ops_per_marker, self.max_gap)
    }
}

/// `SQTT_MEM_BARRIER`: the reordering boundary planted around every marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemBarrier {
    /// Nothing but the sched_barrier hints.
    None,
    /// An empty `asm sideeffect "" "~{memory}"`.
    Asm,
    /// `fence syncscope("workgroup") acq_rel` (local address space only where MMRA exists).
    #[default]
    Fence,
}

impl MemBarrier {
    pub fn name(self) -> &'static str {
        match self {
            MemBarrier::None => "none",
            MemBarrier::Asm => "asm",
            MemBarrier::Fence => "fence",
        }
    }
}

/// `SQTT_TRACE_ADDRESSES`: which address categories are traced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressTrace {
    /// flat/global (AS 0/1), buffer intrinsics and their atomics.
    pub memory: bool,
    /// LDS (AS 3), LDS atomics, ds_permute / ds_bpermute.
    pub lds: bool,
}

impl AddressTrace {
    pub fn is_on(self) -> bool {
        self.memory || self.lds
    }
}

impl fmt::Display for AddressTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.memory, self.lds) {
            (true, true) => write!(f, "memory,lds"),
            (true, false) => write!(f, "memory"),
            (false, true) => write!(f, "lds"),
            (false, false) => write!(f, "off"),
        }
    }
}

/// Scope filtering masks (`SQTT_SCOPE_*`). A set bit N lets unit N emit markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub wave: u32,
    pub simd: u32,
    pub cu: u32,
    pub wg: u32,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            wave: u32::MAX,
            simd: 0xF,
            cu: 0x3,
            wg: u32::MAX,
        }
    }
}

impl Scope {
    /// Whether filtering is active for a field of `field_bits` bits (a mask that does not
    /// cover every value of the field filters).
    pub fn filters(mask: u32, field_bits: u32) -> bool {
        let values = 1u64 << field_bits.min(6);
        let needed: u64 = if values >= 32 {
            u32::MAX as u64
        } else {
            (1u64 << values) - 1
        };
        (mask as u64 & needed) != needed
    }
}

/// Every instrumentation setting, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Master switch of the driver (`SQTT_ENABLED`, `enabled`). Off: the build is plain hipcc's.
    pub enabled: bool,
    pub instrument_functions: FunctionThreshold,
    pub instrument_barriers: bool,
    pub instrument_memory: Option<MemoryGrouping>,
    pub mem_barrier: MemBarrier,
    pub trace_addresses: AddressTrace,
    /// gfx12 marker header bits reserved for the shader clock (0: packing off).
    pub shader_clock_bits: u32,
    /// Source bit offset of the packed clock window.
    pub shader_clock_shift: u32,
    pub scope: Scope,
    /// Driver only: the real hipcc (`hipcc` key, `SQTT_HIPCC`).
    pub hipcc: Option<PathBuf>,
    /// Driver only: say what the wrapper does on stderr.
    pub verbose: bool,
    /// Driver only: the compiler cache hipcc runs under (`ccache` key, `SQTT_CCACHE`): a path,
    /// or a name looked up on PATH.
    pub ccache: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            instrument_functions: FunctionThreshold::Off,
            instrument_barriers: false,
            instrument_memory: None,
            mem_barrier: MemBarrier::Fence,
            trace_addresses: AddressTrace::default(),
            shader_clock_bits: 0,
            shader_clock_shift: DEFAULT_SHADER_CLOCK_SHIFT,
            scope: Scope::default(),
            hipcc: None,
            verbose: false,
            ccache: None,
        }
    }
}

/// Default of `SQTT_SHADER_CLOCK_SHIFT`.
pub const DEFAULT_SHADER_CLOCK_SHIFT: u32 = 4;
/// Largest accepted `SQTT_SHADER_CLOCK_BITS` (leaves 6 ID bits beside the 2 flags... and more).
pub const MAX_SHADER_CLOCK_BITS: u32 = 24;

/// Where a bad value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An environment variable.
    Env(&'static str),
    /// A key of a configuration file.
    File { path: PathBuf, key: String },
    /// A plugin option (`-mllvm -sqtt-marker-...`).
    Option(&'static str),
}

impl Origin {
    /// Where the value of `row` comes from when the settings have one: its variable when that is
    /// set (a variable wins over the file), else the key of `file`.
    pub fn of(row: &Setting, file: Option<&Path>, get: &dyn Fn(&str) -> Option<String>) -> Origin {
        match file {
            Some(path) if get(row.var).is_none_or(|v| v.trim().is_empty()) => Origin::File {
                path: path.to_path_buf(),
                key: row.key.to_string(),
            },
            _ => Origin::Env(row.var),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Env(v) => write!(f, "environment variable {v}"),
            Origin::File { path, key } => write!(f, "key `{key}` in {}", path.display()),
            Origin::Option(o) => write!(f, "plugin option -{o}"),
        }
    }
}

/// A setting that cannot be used. The message names the key or variable, the bad value and the
/// accepted forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{origin} has the invalid value {}; accepted: {expected}", show::quoted(.value))]
    BadValue {
        origin: Origin,
        value: String,
        expected: String,
    },
    #[error(
        "{path}: unknown key `{key}`{hint}; known keys: {known}",
        path = .path.display(),
        key = show::cut(.key),
        hint = hint_text(.suggestion)
    )]
    UnknownKey {
        path: PathBuf,
        key: String,
        suggestion: Option<String>,
        known: String,
    },
    #[error("cannot read configuration file {path}: {reason}", path = .path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{path} is not valid TOML at line {line}, column {column}: {reason}", path = .path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    /// Two settings of which at most one may be on.
    #[error("{first} and {second} are mutually exclusive: {why}")]
    MutuallyExclusive {
        first: String,
        second: String,
        why: &'static str,
    },
    #[error("{first} and {second} cannot be combined: {why}")]
    Conflict {
        first: String,
        second: String,
        why: &'static str,
    },
}

fn hint_text(s: &Option<String>) -> String {
    match s {
        Some(k) => format!(" (did you mean `{k}`?)"),
        None => String::new(),
    }
}

impl Settings {
    /// Settings from the `SQTT_*` variables alone, over the defaults (no file, no plugin
    /// options). `get` returns a variable's value; empty values count as unset.
    pub fn from_env<F>(get: F) -> Result<Settings, ConfigError>
    where
        F: Fn(&str) -> Option<String>,
    {
        let mut s = Settings::default();
        s.apply_env(&get)?;
        s.validate()?;
        Ok(s)
    }

    /// Settings from a configuration file's text over the defaults (no environment).
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Settings, ConfigError> {
        let mut s = Settings::default();
        let keys = parse::apply_toml(&mut s, text, path)?;
        s.validate_named(&|row| {
            set_by(&keys, row).then(|| Origin::File {
                path: path.to_path_buf(),
                key: row.key.to_string(),
            })
        })?;
        Ok(s)
    }

    /// The file (if any), then every set `SQTT_*` variable over it.
    pub fn load(
        file: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        Settings::load_with_options(file, get, |_| None)
    }

    /// [`Settings::load`], then every given plugin option over it (`option(name)` returns the
    /// value of `-name=VALUE` when it was given).
    pub fn load_with_options(
        file: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
        option: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let file = file.map(ConfigFile::read).transpose()?;
        Settings::from_sources(file.as_ref(), get, option)
    }

    /// The settings of the configuration [`locate_config`] found (the driver's and the plugin's
    /// view): its file, the variables over it, the plugin options over both.
    pub fn located(
        located: &Located,
        get: impl Fn(&str) -> Option<String>,
        option: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let file = located.file.clone().transpose()?;
        Settings::from_sources(file.as_ref(), get, option)
    }

    /// A configuration file's text (if any), then the variables, then the plugin options.
    pub fn from_sources(
        file: Option<&ConfigFile>,
        get: impl Fn(&str) -> Option<String>,
        option: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let mut s = Settings::default();
        let mut keys = Vec::new();
        if let Some(f) = file {
            keys = parse::apply_toml(&mut s, &f.text, &f.path)?;
        }
        let file = file.map(|f| f.path.as_path());
        let vars = s.apply_env(&get)?;
        let options = s.apply_options(&option)?;
        // A conflict names the option that set a setting, else the key of the file for a
        // setting the file made and no variable replaced, else the variable.
        s.validate_named(&|row| {
            if set_by(&options, row) {
                return row.option.map(Origin::Option);
            }
            match file {
                Some(path) if !set_by(&vars, row) && set_by(&keys, row) => Some(Origin::File {
                    path: path.to_path_buf(),
                    key: row.key.to_string(),
                }),
                _ => None,
            }
        })?;
        Ok(s)
    }

    /// Applies the given plugin options and returns their settings. An option given with an
    /// empty value (`-sqtt-marker-scope-cu=`) counts as not given, as an empty variable does.
    fn apply_options<O>(&mut self, option: &O) -> Result<Vec<&'static Setting>, ConfigError>
    where
        O: Fn(&str) -> Option<String>,
    {
        let mut set = Vec::new();
        for row in setting::instrumentation() {
            let Some(name) = row.option else { continue };
            if let Some(v) = option(name).filter(|v| !v.trim().is_empty()) {
                parse::apply_value(self, row, &v, Origin::Option(name))?;
                set.push(row);
            }
        }
        Ok(set)
    }

    /// Applies the set variables (an empty or all-blank value counts as unset) and returns
    /// their settings.
    fn apply_env<F>(&mut self, get: &F) -> Result<Vec<&'static Setting>, ConfigError>
    where
        F: Fn(&str) -> Option<String>,
    {
        let mut set = Vec::new();
        for row in SETTINGS {
            if let Some(v) = get(row.var).filter(|v| !v.trim().is_empty()) {
                parse::apply_value(self, row, &v, Origin::Env(row.var))?;
                set.push(row);
            }
        }
        Ok(set)
    }

    /// What is allowed but surely not meant, as sentences: a scope mask of 0 selects nothing,
    /// so no marker can ever be emitted.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.enabled {
            return out;
        }
        for row in SETTINGS.iter().filter(|r| r.toml == setting::Toml::Mask) {
            if parse::parse_mask(&(row.get)(self)) == Some(0) {
                out.push(format!(
                    "{} (`{}`) is 0: it selects no {}, so no marker can ever be emitted; \
                     use -1 for all",
                    row.var,
                    row.key,
                    row.key.trim_start_matches("scope.")
                ));
            }
        }
        out
    }

    /// Checks that the settings can be used together (a conflict names the variables).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_named(&|_| None)
    }

    /// [`Settings::validate`], naming a setting by `origin(row)`: the key of a configuration
    /// file or the plugin option its value came from, `None` for the variable.
    fn validate_named(
        &self,
        origin: &dyn Fn(&Setting) -> Option<Origin>,
    ) -> Result<(), ConfigError> {
        use setting::{INSTRUMENT_MEMORY, SHADER_CLOCK_BITS, SHADER_CLOCK_SHIFT, TRACE_ADDRESSES};
        let name = |row: &Setting| {
            let value = (row.get)(self);
            match origin(row) {
                Some(Origin::File { path, key }) => {
                    format!("`{key} = {value}` in {}", path.display())
                }
                Some(Origin::Option(o)) => format!("-{o}={value}"),
                Some(Origin::Env(_)) | None => format!("{}={value}", row.var),
            }
        };
        if self.trace_addresses.is_on() && self.instrument_memory.is_some() {
            return Err(ConfigError::MutuallyExclusive {
                first: name(&TRACE_ADDRESSES),
                second: name(&INSTRUMENT_MEMORY),
                why: "address tracing already emits a marker for every memory operation; \
                      unset one of them",
            });
        }
        if self.shader_clock_bits != 0 && self.trace_addresses.is_on() {
            return Err(ConfigError::Conflict {
                first: name(&SHADER_CLOCK_BITS),
                second: name(&TRACE_ADDRESSES),
                why: "address-trace markers carry payload records, which require the shader \
                      clock bits to be 0",
            });
        }
        if self.shader_clock_bits + self.shader_clock_shift > 32 {
            return Err(ConfigError::Conflict {
                first: name(&SHADER_CLOCK_BITS),
                second: name(&SHADER_CLOCK_SHIFT),
                why: "the clock window (bits + shift) must fit the 32-bit shader-clock low word",
            });
        }
        Ok(())
    }

    /// Whether gfx12 clock packing is asked for.
    pub fn clock_packing(&self) -> bool {
        self.shader_clock_bits != 0
    }

    /// The `SQTT_*` variables that reproduce these instrumentation settings exactly
    /// (`Settings::from_env(to_env)` gives the same instrumentation settings back).
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        setting::instrumentation()
            .map(|row| (row.var, (row.get)(self)))
            .collect()
    }

    /// The plugin options that reproduce these instrumentation settings exactly, as clang's
    /// `-mllvm` values (`-sqtt-marker-mem-barrier=fence`, ...), in the order of [`Settings::to_env`].
    pub fn to_plugin_options(&self) -> Vec<String> {
        setting::instrumentation()
            .filter_map(|row| Some(format!("-{}={}", row.option?, (row.get)(self))))
            .collect()
    }

    /// A short stable text of the instrumentation settings, for hashing into cache keys.
    pub fn fingerprint(&self) -> String {
        self.to_env()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(";")
    }
}

/// Whether `row` is among the settings `set`.
fn set_by(set: &[&Setting], row: &Setting) -> bool {
    set.iter().any(|s| s.var == row.var)
}

#[cfg(test)]
#[path = "../../tools/tests/support/device.rs"]
mod device;
#[cfg(test)]
mod tests;

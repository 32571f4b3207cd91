//! The table of settings: one row per setting, and everything about it. Parsing of the
//! environment, `sqtt.toml` and the plugin options, the error messages, [`Settings::to_env`],
//! [`Settings::to_plugin_options`], the known keys, the plugin's `cl::opt`s, `sqtt.toml.example`
//! and the settings tables of README.md and docs/settings.md are all read off these rows.
//!
//! To add a setting: a field of [`Settings`] (and its value in `Settings::default`), one row
//! here, and the code that uses it. Then `SQTT_BLESS=1 cargo test -p sqtt-config` rewrites the
//! generated files.

use std::path::PathBuf;

use crate::parse::{
    parse_addresses, parse_bool, parse_functions, parse_mask, parse_mem_barrier, parse_memory,
    parse_u32_dec,
};
use crate::{Settings, MAX_SHADER_CLOCK_BITS};

/// One setting: its names in every place, its forms and its documentation, and how it reads and
/// writes its field of [`Settings`].
#[derive(Clone, Copy)]
pub struct Setting {
    /// The environment variable: `SQTT_MEM_BARRIER`.
    pub var: &'static str,
    /// The `sqtt.toml` key; `scope.cu` is `cu` in a `[scope]` table.
    pub key: &'static str,
    /// The plugin option (`-mllvm -sqtt-marker-mem-barrier=...`, named as AMD's pass names it)
    /// of an instrumentation setting. `None`: a setting of the wrapper alone, which the plugin
    /// reads but does not act on and which [`Settings::to_env`] does not export.
    pub option: Option<&'static str>,
    /// The value's shape in short, after `=` in `-help-hidden` and in README's table:
    /// `none|asm|fence`.
    pub values: &'static str,
    /// The accepted forms, in the words of an error message.
    pub forms: &'static str,
    /// Which TOML types the key takes.
    pub toml: Toml,
    /// What the setting does (sqtt.toml.example's comment, the tables' meaning column).
    pub doc: &'static str,
    /// Parses a value in the variable's form into the field; `None`: not one of `forms`.
    pub set: fn(&mut Settings, &str) -> Option<()>,
    /// The field as the variable's text, which `set` reads back to the same value; empty when
    /// unset (only `hipcc`).
    pub get: fn(&Settings) -> String,
}

impl Setting {
    /// Whether the plugin acts on this setting (it has a plugin option and is exported).
    pub fn is_instrumentation(&self) -> bool {
        self.option.is_some()
    }

    /// The default, as the variable's text.
    pub fn default_text(&self) -> String {
        (self.get)(&Settings::default())
    }
}

impl std::fmt::Debug for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setting")
            .field("var", &self.var)
            .finish_non_exhaustive()
    }
}

/// The TOML types a key takes. Every accepted value is turned into the variable's text, which
/// the row's `set` then parses, so a key and its variable accept the same values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toml {
    /// `true`/`false`, the integers 0 and 1, or a string of the variable's words.
    Bool,
    /// A string.
    Path,
    /// `true`/`false`, the integers 0 and 1, or a string: the variable's words or a path.
    BoolOrPath,
    /// A non-negative integer, or a string.
    IntOrString,
    /// A non-negative integer only.
    Int,
    /// A string only.
    String,
    /// A string, or `false` for off.
    StringOrFalse,
    /// A string, an array of strings (empty: off), or `false` for off.
    List,
    /// An integer taken as the number it is (`-1`: all ones), or a string read as the variable.
    Mask,
}

/// `none`, AMD's pass's word for off (of the memory markers and the address traces), as `off`.
fn none_is_off(v: &str) -> &str {
    if v.trim().eq_ignore_ascii_case("none") {
        "off"
    } else {
        v
    }
}

const BOOL_FORMS: &str = "0, 1, true, false, on, off, yes or no";
const MASK_FORMS: &str = "a hex bitmask such as 0x3 (the 0x may be left out), or -1 for all";

/// Declares each row as a constant of its own name (so code can name a row, as the cross-setting
/// checks do) and [`SETTINGS`] as all of them, in order.
macro_rules! settings {
    ($($(#[$doc:meta])* $name:ident = $row:expr;)*) => {
        $($(#[$doc])* pub const $name: Setting = $row;)*
        /// Every setting, in the order of [`Settings::to_env`], of the plugin options on a
        /// command line and of sqtt.toml.example (the `[scope]` keys last, as TOML needs).
        pub const SETTINGS: &[Setting] = &[$($name),*];
    };
}

settings! {
    ENABLED = Setting {
        var: "SQTT_ENABLED",
        key: "enabled",
        option: None,
        values: "0|1",
        forms: BOOL_FORMS,
        toml: Toml::Bool,
        doc: "Master switch. false: sqtt-hipcc builds exactly what plain hipcc builds \
              (markers.hpp stays on the include path, every marker compiles to nothing).",
        set: |s, v| parse_bool(v).map(|b| s.enabled = b),
        get: |s| u8::from(s.enabled).to_string(),
    };
    INSTRUMENT_FUNCTIONS = Setting {
        var: "SQTT_INSTRUMENT_FUNCTIONS",
        key: "instrument_functions",
        option: Some("sqtt-marker-instrument-functions"),
        values: "0|N|cost:N",
        forms: "0 (off), N (instrument functions of more than N IR instructions) or cost:N \
                (weighted cost above N)",
        toml: Toml::IntOrString,
        doc: "Automatic entry/exit markers in device functions (not kernels) bigger than a \
              threshold: 0 = off, N = more than N IR instructions, \"cost:N\" = weighted cost \
              above N (global memory 10, LDS 4, MFMA/WMMA 16, everything else 1).",
        set: |s, v| parse_functions(v).map(|t| s.instrument_functions = t),
        get: |s| s.instrument_functions.to_string(),
    };
    INSTRUMENT_BARRIERS = Setting {
        var: "SQTT_INSTRUMENT_BARRIERS",
        key: "instrument_barriers",
        option: Some("sqtt-marker-instrument-barriers"),
        values: "0|1",
        forms: BOOL_FORMS,
        toml: Toml::Bool,
        doc: "Point markers around s_barrier / __syncthreads (and s_barrier_signal / \
              s_barrier_wait on gfx12).",
        set: |s, v| parse_bool(v).map(|b| s.instrument_barriers = b),
        get: |s| u8::from(s.instrument_barriers).to_string(),
    };
    INSTRUMENT_MEMORY = Setting {
        var: "SQTT_INSTRUMENT_MEMORY",
        key: "instrument_memory",
        option: Some("sqtt-marker-instrument-memory"),
        values: "N:M|off",
        forms: "N:M with N >= 1 operations per marker and M >= 0 the largest instruction gap \
                (e.g. 2:5), or off (or none)",
        toml: Toml::StringOrFalse,
        doc: "Point markers on groups of memory operations (global, flat, constant, buffer; not LDS or scratch): \"N:M\" = one \
              marker per N operations, a group ends at a gap of more than M instructions or a \
              load/store change. \"off\" (or \"none\") to disable. Cannot be combined with \
              trace_addresses.",
        set: |s, v| parse_memory(none_is_off(v)).map(|m| s.instrument_memory = m),
        get: |s| s.instrument_memory.map_or_else(|| "off".into(), |m| m.to_string()),
    };
    MEM_BARRIER = Setting {
        var: "SQTT_MEM_BARRIER",
        key: "mem_barrier",
        option: Some("sqtt-marker-mem-barrier"),
        values: "none|asm|fence",
        forms: "none, asm or fence, in any case (synonyms: 0/off, 1/compiler/clobber, 2/on/hw)",
        toml: Toml::String,
        doc: "Reordering boundary around every marker: \"fence\" (most accurate placement), \
              \"asm\" (compiler barrier only, no machine code) or \"none\".",
        set: |s, v| parse_mem_barrier(v).map(|b| s.mem_barrier = b),
        get: |s| s.mem_barrier.name().into(),
    };
    TRACE_ADDRESSES = Setting {
        var: "SQTT_TRACE_ADDRESSES",
        key: "trace_addresses",
        option: Some("sqtt-marker-trace-addresses"),
        values: "memory|lds|memory,lds|off",
        forms: "memory, lds, both comma-separated in either order (memory,lds), or off (or 0, \
                or none)",
        toml: Toml::List,
        doc: "Per-lane address traces of memory operations: \"memory\" (global/flat/buffer), \
              \"lds\" (LDS and ds_permute/ds_bpermute), \"memory,lds\", or \"off\" (or \
              \"none\"). Expensive (a readlane loop per operation).",
        set: |s, v| parse_addresses(none_is_off(v)).map(|a| s.trace_addresses = a),
        get: |s| s.trace_addresses.to_string(),
    };
    SHADER_CLOCK_BITS = Setting {
        var: "SQTT_SHADER_CLOCK_BITS",
        key: "shader_clock_bits",
        option: Some("sqtt-marker-shader-clock-bits"),
        values: "0..24",
        forms: "an unsigned integer from 0 (off) to 24",
        toml: Toml::Int,
        doc: "gfx12: high bits of every pass-made marker header that carry a sample of the \
              shader clock. 0 = off. Not allowed with markers that carry payloads \
              (sqtt_marker_data, address traces).",
        set: |s, v| {
            let bits = parse_u32_dec(v).filter(|b| *b <= MAX_SHADER_CLOCK_BITS)?;
            s.shader_clock_bits = bits;
            Some(())
        },
        get: |s| s.shader_clock_bits.to_string(),
    };
    SHADER_CLOCK_SHIFT = Setting {
        var: "SQTT_SHADER_CLOCK_SHIFT",
        key: "shader_clock_shift",
        option: Some("sqtt-marker-shader-clock-shift"),
        values: "0..31",
        forms: "an unsigned integer from 0 to 31",
        toml: Toml::Int,
        doc: "gfx12: bit offset of the sampled shader-clock window (bits + shift must be at \
              most 32).",
        set: |s, v| parse_u32_dec(v).filter(|b| *b < 32).map(|b| s.shader_clock_shift = b),
        get: |s| s.shader_clock_shift.to_string(),
    };
    HIPCC = Setting {
        var: "SQTT_HIPCC",
        key: "hipcc",
        option: None,
        values: "path",
        forms: "a path",
        toml: Toml::Path,
        doc: "The real hipcc (default: HIP_PATH/bin/hipcc, ROCM_PATH/bin/hipcc, then hipcc on \
              PATH; never sqtt-hipcc itself).",
        set: |s, v| {
            s.hipcc = Some(PathBuf::from(v));
            Some(())
        },
        get: |s| s.hipcc.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
    };
    VERBOSE = Setting {
        var: "SQTT_VERBOSE",
        key: "verbose",
        option: None,
        values: "0|1",
        forms: BOOL_FORMS,
        toml: Toml::Bool,
        doc: "Print what sqtt-hipcc does on stderr (also --sqtt-verbose).",
        set: |s, v| parse_bool(v).map(|b| s.verbose = b),
        get: |s| u8::from(s.verbose).to_string(),
    };
    CCACHE = Setting {
        var: "SQTT_CCACHE",
        key: "ccache",
        option: None,
        values: "0|1|path",
        forms: "0, 1, true, false, on, off, yes or no, or the path of ccache (a name without a / \
                is looked up on PATH)",
        toml: Toml::BoolOrPath,
        doc: "Run hipcc under ccache (sqtt-hipcc -> ccache -> hipcc): ccache then hashes the \
              plugin, its content hash and every setting, all on hipcc's command line, so a \
              changed setting or plugin misses and the same ones hit, with ccache's default \
              configuration. 1: the ccache on PATH; or its path. The recommended way to use \
              ccache (`ccache sqtt-hipcc` hashes none of them).",
        set: |s, v| {
            s.ccache = match parse_bool(v) {
                Some(on) => on.then(|| PathBuf::from("ccache")),
                None => Some(PathBuf::from(v.trim())),
            };
            Some(())
        },
        get: |s| s.ccache.as_ref().map_or_else(|| "0".into(), |p| p.display().to_string()),
    };
    SCOPE_WAVE = Setting {
        var: "SQTT_SCOPE_WAVE",
        key: "scope.wave",
        option: Some("sqtt-marker-scope-wave"),
        values: "0xMASK|-1",
        forms: MASK_FORMS,
        toml: Toml::Mask,
        doc: "Scope filter, like every `[scope]` key a hex bitmask (\"0x3\": units 0 and 1) or -1 \
              for all: the wave slots whose waves emit markers.",
        set: |s, v| parse_mask(v).map(|m| s.scope.wave = m),
        get: |s| hex(s.scope.wave),
    };
    SCOPE_SIMD = Setting {
        var: "SQTT_SCOPE_SIMD",
        key: "scope.simd",
        option: Some("sqtt-marker-scope-simd"),
        values: "0xMASK|-1",
        forms: MASK_FORMS,
        toml: Toml::Mask,
        doc: "Scope filter: the SIMDs whose waves emit markers.",
        set: |s, v| parse_mask(v).map(|m| s.scope.simd = m),
        get: |s| hex(s.scope.simd),
    };
    SCOPE_CU = Setting {
        var: "SQTT_SCOPE_CU",
        key: "scope.cu",
        option: Some("sqtt-marker-scope-cu"),
        values: "0xMASK|-1",
        forms: MASK_FORMS,
        toml: Toml::Mask,
        doc: "Scope filter: the compute units (work-group processors on RDNA) whose waves emit \
              markers.",
        set: |s, v| parse_mask(v).map(|m| s.scope.cu = m),
        get: |s| hex(s.scope.cu),
    };
    SCOPE_WG = Setting {
        var: "SQTT_SCOPE_WG",
        key: "scope.wg",
        option: Some("sqtt-marker-scope-wg"),
        values: "0xMASK|-1",
        forms: MASK_FORMS,
        toml: Toml::Mask,
        doc: "Scope filter: the workgroups whose waves emit markers.",
        set: |s, v| parse_mask(v).map(|m| s.scope.wg = m),
        get: |s| hex(s.scope.wg),
    };
}

fn hex(mask: u32) -> String {
    format!("0x{mask:X}")
}

/// The row of a variable.
pub fn by_var(var: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.var == var)
}

/// The row of a `sqtt.toml` key (`scope.cu` for `cu` in `[scope]`).
pub fn by_key(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The row of a plugin option (`sqtt-marker-mem-barrier`, without the leading `-`).
pub fn by_option(option: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.option == Some(option))
}

/// The rows of the instrumentation settings, each with its plugin option.
pub fn instrumentation() -> impl Iterator<Item = &'static Setting> {
    SETTINGS.iter().filter(|s| s.is_instrumentation())
}

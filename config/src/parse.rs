//! Parsing of single values (shared by the file and the environment) and of `sqtt.toml`.

use std::path::{Path, PathBuf};

use crate::{
    AddressTrace, ConfigError, FunctionThreshold, MemBarrier, MemoryGrouping, Origin, Settings,
    MAX_SHADER_CLOCK_BITS,
};

/// Every key `sqtt.toml` accepts (`scope.*` live in a `[scope]` table).
pub const KNOWN_TOML_KEYS: &[&str] = &[
    "enabled",
    "verbose",
    "hipcc",
    "instrument_functions",
    "instrument_barriers",
    "instrument_memory",
    "mem_barrier",
    "trace_addresses",
    "shader_clock_bits",
    "shader_clock_shift",
    "scope.wave",
    "scope.simd",
    "scope.cu",
    "scope.wg",
];

const BOOL_FORMS: &str = "0, 1, true, false, on, off, yes or no";
const FUNCTIONS_FORMS: &str =
    "0 (off), N (instrument functions of more than N IR instructions) or cost:N (weighted cost above N)";
const MEMORY_FORMS: &str =
    "N:M with N >= 1 operations per marker and M >= 0 the largest instruction gap (e.g. 2:5), or off";
const BARRIER_FORMS: &str = "none, asm or fence (synonyms: 0/off, 1/compiler/clobber, 2/on/hw)";
const ADDRESS_FORMS: &str = "memory, lds, memory,lds, or off";
const MASK_FORMS: &str = "a hex bitmask such as 0x3 (the 0x may be left out), or -1 for all";

fn bad(origin: &Origin, value: &str, expected: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        origin: origin.clone(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

fn parse_u32_dec(v: &str) -> Option<u32> {
    let t = v.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// A scope mask: hex with or without `0x`, or `-1` (all ones).
pub(crate) fn parse_mask(v: &str) -> Option<u32> {
    let t = v.trim();
    if t == "-1" {
        return Some(u32::MAX);
    }
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

fn parse_functions(v: &str) -> Option<FunctionThreshold> {
    let t = v.trim();
    let threshold = |n: u32, cost: bool| match (n, cost) {
        (0, _) => FunctionThreshold::Off,
        (n, false) => FunctionThreshold::Count(n),
        (n, true) => FunctionThreshold::Cost(n),
    };
    if let Some((word, rest)) = t.split_once(':') {
        if !word.trim().eq_ignore_ascii_case("cost") {
            return None;
        }
        return parse_u32_dec(rest).map(|n| threshold(n, true));
    }
    if t.eq_ignore_ascii_case("off") {
        return Some(FunctionThreshold::Off);
    }
    parse_u32_dec(t).map(|n| threshold(n, false))
}

fn parse_memory(v: &str) -> Option<Option<MemoryGrouping>> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("off") {
        return Some(None);
    }
    let (n, m) = t.split_once(':')?;
    let ops_per_marker = parse_u32_dec(n)?;
    let max_gap = parse_u32_dec(m)?;
    if ops_per_marker == 0 {
        return None;
    }
    Some(Some(MemoryGrouping {
        ops_per_marker,
        max_gap,
    }))
}

fn parse_mem_barrier(v: &str) -> Option<MemBarrier> {
    match v.trim().to_ascii_lowercase().as_str() {
        "none" | "0" | "off" => Some(MemBarrier::None),
        "asm" | "1" | "compiler" | "clobber" => Some(MemBarrier::Asm),
        "fence" | "2" | "on" | "hw" => Some(MemBarrier::Fence),
        _ => None,
    }
}

fn parse_addresses(v: &str) -> Option<AddressTrace> {
    let t = v.trim();
    let mut out = AddressTrace::default();
    if t.eq_ignore_ascii_case("off") || t == "0" {
        return Some(out);
    }
    for part in t.split(',') {
        match part.trim().to_ascii_lowercase().as_str() {
            "memory" => out.memory = true,
            "lds" => out.lds = true,
            _ => return None,
        }
    }
    Some(out)
}

/// Applies one textual value to the setting named by its TOML key.
pub(crate) fn apply_value(
    s: &mut Settings,
    key: &str,
    v: &str,
    origin: Origin,
) -> Result<(), ConfigError> {
    match key {
        "enabled" => s.enabled = parse_bool(v).ok_or_else(|| bad(&origin, v, BOOL_FORMS))?,
        "verbose" => s.verbose = parse_bool(v).ok_or_else(|| bad(&origin, v, BOOL_FORMS))?,
        "hipcc" => s.hipcc = Some(PathBuf::from(v)),
        "instrument_functions" => {
            s.instrument_functions =
                parse_functions(v).ok_or_else(|| bad(&origin, v, FUNCTIONS_FORMS))?
        }
        "instrument_barriers" => {
            s.instrument_barriers = parse_bool(v).ok_or_else(|| bad(&origin, v, BOOL_FORMS))?
        }
        "instrument_memory" => {
            s.instrument_memory = parse_memory(v).ok_or_else(|| bad(&origin, v, MEMORY_FORMS))?
        }
        "mem_barrier" => {
            s.mem_barrier = parse_mem_barrier(v).ok_or_else(|| bad(&origin, v, BARRIER_FORMS))?
        }
        "trace_addresses" => {
            s.trace_addresses = parse_addresses(v).ok_or_else(|| bad(&origin, v, ADDRESS_FORMS))?
        }
        "shader_clock_bits" => {
            s.shader_clock_bits = parse_u32_dec(v)
                .filter(|b| *b <= MAX_SHADER_CLOCK_BITS)
                .ok_or_else(|| {
                    bad(
                        &origin,
                        v,
                        format!("an unsigned integer from 0 (off) to {MAX_SHADER_CLOCK_BITS}"),
                    )
                })?
        }
        "shader_clock_shift" => {
            s.shader_clock_shift = parse_u32_dec(v)
                .filter(|b| *b < 32)
                .ok_or_else(|| bad(&origin, v, "an unsigned integer from 0 to 31"))?
        }
        "scope.wave" | "scope.simd" | "scope.cu" | "scope.wg" => {
            let m = parse_mask(v).ok_or_else(|| bad(&origin, v, MASK_FORMS))?;
            match key {
                "scope.wave" => s.scope.wave = m,
                "scope.simd" => s.scope.simd = m,
                "scope.cu" => s.scope.cu = m,
                _ => s.scope.wg = m,
            }
        }
        _ => unreachable!("apply_value called with unknown key {key}"),
    }
    Ok(())
}

/// The closest known key, for a "did you mean" hint.
fn suggest(key: &str) -> Option<String> {
    KNOWN_TOML_KEYS
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min()
        .map(|(_, k)| k.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The textual form of a TOML value for the shared parser, checking its type per key.
fn value_text(key: &str, v: &toml::Value, origin: &Origin) -> Result<String, ConfigError> {
    use toml::Value;
    let shown = match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let expected = |forms: &str| bad(origin, &shown, forms.to_string());
    Ok(match (key, v) {
        ("enabled" | "verbose" | "instrument_barriers", Value::Boolean(b)) => b.to_string(),
        ("enabled" | "verbose" | "instrument_barriers", Value::Integer(i))
            if (0..=1).contains(i) =>
        {
            i.to_string()
        }
        // The same words as the variables (`"yes"`, `"off"`, ...), checked by apply_value.
        ("enabled" | "verbose" | "instrument_barriers", Value::String(s)) => s.clone(),
        ("enabled" | "verbose" | "instrument_barriers", _) => {
            return Err(expected(&format!(
                "true, false, 0, 1 or a string: {BOOL_FORMS}"
            )))
        }
        ("hipcc", Value::String(s)) => s.clone(),
        ("hipcc", _) => return Err(expected("a path string")),
        (
            "instrument_functions" | "shader_clock_bits" | "shader_clock_shift",
            Value::Integer(i),
        ) if *i >= 0 => i.to_string(),
        ("instrument_functions", Value::String(s)) => s.clone(),
        ("instrument_functions", _) => return Err(expected(FUNCTIONS_FORMS)),
        ("shader_clock_bits" | "shader_clock_shift", _) => {
            return Err(expected("an unsigned integer"))
        }
        ("instrument_memory" | "mem_barrier", Value::String(s)) => s.clone(),
        ("instrument_memory", Value::Boolean(false)) => "off".into(),
        ("instrument_memory", _) => return Err(expected(MEMORY_FORMS)),
        ("mem_barrier", _) => return Err(expected(BARRIER_FORMS)),
        ("trace_addresses", Value::String(s)) => s.clone(),
        ("trace_addresses", Value::Boolean(false)) => "off".into(),
        ("trace_addresses", Value::Array(items)) => {
            let mut parts = Vec::new();
            for it in items {
                match it.as_str() {
                    Some(p) => parts.push(p.to_string()),
                    None => return Err(expected(r#"["memory"], ["lds"] or ["memory", "lds"]"#)),
                }
            }
            if parts.is_empty() {
                "off".into()
            } else {
                parts.join(",")
            }
        }
        ("trace_addresses", _) => return Err(expected(ADDRESS_FORMS)),
        (_, Value::Integer(-1)) => "-1".into(),
        (_, Value::Integer(i)) if *i >= 0 && *i <= u32::MAX as i64 => format!("{i:x}"),
        (_, Value::String(s)) => s.clone(),
        _ => return Err(expected(MASK_FORMS)),
    })
}

/// Applies a whole `sqtt.toml` text.
/// Returns the keys it set.
pub(crate) fn apply_toml(
    s: &mut Settings,
    text: &str,
    path: &Path,
) -> Result<Vec<String>, ConfigError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let at = e.span().map(|r| r.start).unwrap_or(0).min(text.len());
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        ConfigError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            reason: e.message().trim().to_string(),
        }
    })?;
    let known = KNOWN_TOML_KEYS.join(", ");
    let unknown = |key: String| ConfigError::UnknownKey {
        path: path.to_path_buf(),
        suggestion: suggest(&key),
        key,
        known: known.clone(),
    };
    let mut entries: Vec<(String, &toml::Value)> = Vec::new();
    for (k, v) in &table {
        if k == "scope" {
            let Some(sub) = v.as_table() else {
                return Err(bad(
                    &Origin::File {
                        path: path.to_path_buf(),
                        key: "scope".into(),
                    },
                    &v.to_string(),
                    "a [scope] table with keys wave, simd, cu, wg",
                ));
            };
            for (sk, sv) in sub {
                entries.push((format!("scope.{sk}"), sv));
            }
        } else {
            entries.push((k.clone(), v));
        }
    }
    let mut set = Vec::new();
    for (key, v) in entries {
        if !KNOWN_TOML_KEYS.contains(&key.as_str()) {
            return Err(unknown(key));
        }
        let origin = Origin::File {
            path: path.to_path_buf(),
            key: key.clone(),
        };
        // An empty string is refused in the file (a variable set to "" counts as unset).
        if v.as_str().is_some_and(|t| t.trim().is_empty()) {
            return Err(bad(
                &origin,
                v.as_str().unwrap_or_default(),
                format!(
                    "{}; an empty value is refused in sqtt.toml: remove the key for the default",
                    forms_of(&key)
                ),
            ));
        }
        set.push(key.clone());
        let text = value_text(&key, v, &origin)?;
        // Integers given to mask keys were turned into hex text above; keep the error showing
        // what the user wrote.
        apply_value(s, &key, &text, origin.clone()).map_err(|e| match e {
            ConfigError::BadValue {
                origin, expected, ..
            } => ConfigError::BadValue {
                origin,
                value: match v {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                expected,
            },
            other => other,
        })?;
    }
    Ok(set)
}

/// The accepted forms of a key, for messages.
fn forms_of(key: &str) -> &'static str {
    match key {
        "enabled" | "verbose" | "instrument_barriers" => BOOL_FORMS,
        "hipcc" => "a path",
        "instrument_functions" => FUNCTIONS_FORMS,
        "instrument_memory" => MEMORY_FORMS,
        "mem_barrier" => BARRIER_FORMS,
        "trace_addresses" => ADDRESS_FORMS,
        "shader_clock_bits" => "an unsigned integer from 0 (off) to 24",
        "shader_clock_shift" => "an unsigned integer from 0 to 31",
        _ => MASK_FORMS,
    }
}

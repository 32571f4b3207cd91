//! Parsing of single values (shared by the file and the environment) and of `sqtt.toml`.

use std::path::Path;

use crate::setting::{self, Setting, Toml, SETTINGS};
use crate::{
    AddressTrace, ConfigError, FunctionThreshold, MemBarrier, MemoryGrouping, Origin, Settings,
};

fn bad(origin: &Origin, value: &str, expected: impl Into<String>) -> ConfigError {
    ConfigError::BadValue {
        origin: origin.clone(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

pub(crate) fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

pub(crate) fn parse_u32_dec(v: &str) -> Option<u32> {
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

pub(crate) fn parse_functions(v: &str) -> Option<FunctionThreshold> {
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

pub(crate) fn parse_memory(v: &str) -> Option<Option<MemoryGrouping>> {
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

pub(crate) fn parse_mem_barrier(v: &str) -> Option<MemBarrier> {
    match v.trim().to_ascii_lowercase().as_str() {
        "none" | "0" | "off" => Some(MemBarrier::None),
        "asm" | "1" | "compiler" | "clobber" => Some(MemBarrier::Asm),
        "fence" | "2" | "on" | "hw" => Some(MemBarrier::Fence),
        _ => None,
    }
}

pub(crate) fn parse_addresses(v: &str) -> Option<AddressTrace> {
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

/// Applies one textual value (a variable's, an option's, or a key's made into that form).
pub(crate) fn apply_value(
    s: &mut Settings,
    row: &Setting,
    v: &str,
    origin: Origin,
) -> Result<(), ConfigError> {
    (row.set)(s, v).ok_or_else(|| bad(&origin, v, row.forms))
}

/// The closest known key, for a "did you mean" hint.
fn suggest(key: &str) -> Option<String> {
    let len = key.chars().count();
    SETTINGS
        .iter()
        .filter_map(|row| {
            let most = 3.max(row.key.len() / 4);
            // The distance is at least the difference in length: a key far longer than any
            // known one (a 900 KB line) is not compared character by character.
            (len.abs_diff(row.key.len()) <= most)
                .then(|| (strsim::levenshtein(key, row.key), row.key))
                .filter(|(d, _)| *d <= most)
        })
        .min()
        .map(|(_, k)| k.to_string())
}

/// The variable's text for a TOML value, checking its type against the row's [`Toml`].
fn value_text(row: &Setting, v: &toml::Value, origin: &Origin) -> Result<String, ConfigError> {
    use toml::Value;
    let shown = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let expected = |forms: &str| Err(bad(origin, &shown, forms.to_string()));
    match (row.toml, v) {
        // Strings take the variable's words (`"yes"`, `"off"`, ...), checked by the row.
        (
            Toml::Mask | Toml::Bool | Toml::BoolOrPath | Toml::Path | Toml::IntOrString,
            Value::String(s),
        )
        | (Toml::String | Toml::StringOrFalse | Toml::List, Value::String(s)) => Ok(s.clone()),
        (Toml::Bool | Toml::BoolOrPath, Value::Boolean(b)) => Ok(b.to_string()),
        (Toml::Bool | Toml::BoolOrPath, Value::Integer(i)) if (0..=1).contains(i) => {
            Ok(i.to_string())
        }
        (Toml::BoolOrPath, _) => expected("true, false, 0, 1 or a path string"),
        (Toml::Bool, _) => expected(&format!("true, false, 0, 1 or a string: {}", row.forms)),
        (Toml::Path, _) => expected("a path string"),
        (Toml::IntOrString | Toml::Int, Value::Integer(i)) if *i >= 0 => Ok(i.to_string()),
        (Toml::Int, _) => expected("an unsigned integer"),
        (Toml::StringOrFalse | Toml::List, Value::Boolean(false)) => Ok("off".into()),
        (Toml::List, Value::Array(items)) => {
            let mut parts = Vec::new();
            for it in items {
                match it.as_str() {
                    Some(p) => parts.push(p.to_string()),
                    None => return expected(r#"["memory"], ["lds"] or ["memory", "lds"]"#),
                }
            }
            Ok(if parts.is_empty() {
                "off".into()
            } else {
                parts.join(",")
            })
        }
        (Toml::Mask, Value::Integer(-1)) => Ok("-1".into()),
        (Toml::Mask, Value::Integer(i)) if *i >= 0 && *i <= u32::MAX as i64 => Ok(format!("{i:x}")),
        (Toml::IntOrString | Toml::String | Toml::StringOrFalse | Toml::List | Toml::Mask, _) => {
            expected(row.forms)
        }
    }
}

/// Applies a whole `sqtt.toml` text. Returns the settings it set.
pub(crate) fn apply_toml(
    s: &mut Settings,
    text: &str,
    path: &Path,
) -> Result<Vec<&'static Setting>, ConfigError> {
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
    let known = SETTINGS
        .iter()
        .map(|row| row.key)
        .collect::<Vec<_>>()
        .join(", ");
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
        let Some(row) = setting::by_key(&key) else {
            return Err(unknown(key));
        };
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
                    row.forms
                ),
            ));
        }
        set.push(row);
        let text = value_text(row, v, &origin)?;
        // Integers given to mask keys were turned into hex text above; keep the error showing
        // what the user wrote.
        apply_value(s, row, &text, origin.clone()).map_err(|e| match e {
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

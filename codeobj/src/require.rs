//! `--require KIND:GLOB` assertions on funcmaps.

use std::fmt;

use crate::glob::{Glob, GlobError};
use crate::{demangle, CodeObject, Entry, EntryKind};

/// What a requirement looks for; its JSON form is [`ReqKind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReqKind {
    /// `K:` rows.
    Kernel,
    /// `F:` rows.
    Function,
    /// `U:` rows.
    User,
    /// Every `P:` row.
    Point,
    /// `P:` rows of barrier markers (`barrier`, `barrier_signal`, `barrier_wait`, `barrier_*`).
    Barrier,
    /// `P:` rows of memory-operation markers (`vmem_load`, `vmem_store`, `vmem_*`).
    Memory,
    /// `P:` rows of address-trace markers (`addr_trace_*`).
    Address,
    /// Any `F:`, `K:`, `U:` or `P:` row.
    Any,
}

impl ReqKind {
    pub const ALL: &'static [(&'static str, ReqKind)] = &[
        ("kernel", ReqKind::Kernel),
        ("function", ReqKind::Function),
        ("user", ReqKind::User),
        ("point", ReqKind::Point),
        ("barrier", ReqKind::Barrier),
        ("memory", ReqKind::Memory),
        ("address", ReqKind::Address),
        ("any", ReqKind::Any),
    ];

    pub fn name(self) -> &'static str {
        ReqKind::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(n, _)| *n)
            .unwrap_or("any")
    }

    /// Whether a funcmap row is of this kind.
    pub fn covers(self, e: &Entry) -> bool {
        let point = e.kind == EntryKind::Point;
        match self {
            ReqKind::Kernel => e.kind == EntryKind::Kernel,
            ReqKind::Function => e.kind == EntryKind::Function,
            ReqKind::User => e.kind == EntryKind::User,
            ReqKind::Point => point,
            ReqKind::Barrier => point && (e.name == "barrier" || e.name.starts_with("barrier_")),
            ReqKind::Memory => point && e.name.starts_with("vmem_"),
            ReqKind::Address => point && e.is_address_trace(),
            ReqKind::Any => true,
        }
    }
}

/// A `--require` spec that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequireError {
    #[error("--require {0:?}: expected KIND:NAME with KIND one of {kinds}", kinds = kind_list())]
    NoColon(String),
    #[error("--require {spec:?}: unknown kind {kind:?}; expected one of {kinds}", kinds = kind_list())]
    UnknownKind { spec: String, kind: String },
    #[error("--require {0:?}: the name pattern is empty (use `*` for any name)")]
    EmptyPattern(String),
    #[error("--require {spec:?}: {err}")]
    BadGlob { spec: String, err: GlobError },
}

fn kind_list() -> String {
    ReqKind::ALL
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One `KIND:GLOB` requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The spec as given.
    pub spec: String,
    pub kind: ReqKind,
    pub pattern: String,
    glob: Glob,
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spec)
    }
}

impl Requirement {
    pub fn parse(spec: &str) -> Result<Requirement, RequireError> {
        let (kind, pattern) = spec
            .split_once(':')
            .ok_or_else(|| RequireError::NoColon(spec.into()))?;
        let kind = ReqKind::ALL
            .iter()
            .find(|(n, _)| *n == kind.trim())
            .map(|(_, k)| *k)
            .ok_or_else(|| RequireError::UnknownKind {
                spec: spec.into(),
                kind: kind.into(),
            })?;
        if pattern.is_empty() {
            return Err(RequireError::EmptyPattern(spec.into()));
        }
        let glob = Glob::new(pattern).map_err(|err| RequireError::BadGlob {
            spec: spec.into(),
            err,
        })?;
        Ok(Requirement {
            spec: spec.into(),
            kind,
            pattern: pattern.into(),
            glob,
        })
    }

    /// Whether a row satisfies the requirement: its kind matches and the glob matches the
    /// mangled name, the demangled name, or the demangled name without its parameter list.
    pub fn matches_entry(&self, e: &Entry) -> bool {
        if !self.kind.covers(e) {
            return false;
        }
        if self.glob.matches(&e.name) {
            return true;
        }
        let d = demangle(&e.name);
        d != e.name
            && (self.glob.matches(&d)
                || self.glob.matches(strip_params(&d))
                || base_names(&d).iter().any(|b| self.glob.matches(b)))
    }

    /// Names of the rows of a code object's funcmap that satisfy the requirement.
    pub fn matches(&self, co: &CodeObject) -> Vec<String> {
        co.funcmap
            .map()
            .map(|m| {
                m.entries
                    .iter()
                    .filter(|e| self.matches_entry(e))
                    .map(|e| e.name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The shorter names a demangled function is known by: `void ns::triad_kernel<float>(float*)`
/// gives `ns::triad_kernel<float>`, `ns::triad_kernel`, `triad_kernel<float>` and `triad_kernel`
/// (a template's return type comes first in its demangled name; the base name is what people
/// write in `--require kernel:triad_kernel`).
pub fn base_names(demangled: &str) -> Vec<String> {
    let t = strip_params(demangled);
    // Drop a return type: everything up to the last space outside <...> and (...).
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in t.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    let qualified = &t[start..];
    let mut out = vec![qualified.to_string()];
    let without_args = strip_template_args(qualified);
    out.push(without_args.to_string());
    for n in [qualified, without_args] {
        if let Some(last) = split_last_scope(n) {
            out.push(last.to_string());
        }
    }
    out.dedup();
    out
}

/// `f<int, g<h>>` -> `f` (a trailing balanced template argument list).
fn strip_template_args(name: &str) -> &str {
    if !name.ends_with('>') {
        return name;
    }
    let mut depth = 0i32;
    for (i, c) in name.char_indices().rev() {
        match c {
            '>' => depth += 1,
            '<' => {
                depth -= 1;
                if depth == 0 {
                    return &name[..i];
                }
            }
            _ => {}
        }
    }
    name
}

/// `a::b<c::d>::f<x::y>` -> `f<x::y>` (the last `::` outside template arguments).
fn split_last_scope(name: &str) -> Option<&str> {
    let mut depth = 0i32;
    let mut last = None;
    let b = name.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && i + 1 < b.len() && b[i + 1] == b':' => last = Some(i + 2),
            _ => {}
        }
    }
    last.map(|i| &name[i..])
}

/// `ns::f<int>(float*, int) const` -> `ns::f<int>`.
pub fn strip_params(demangled: &str) -> &str {
    let t = demangled.trim_end();
    let t = t.strip_suffix(" const").unwrap_or(t);
    if !t.ends_with(')') {
        return demangled;
    }
    let mut depth = 0i32;
    for (i, c) in t.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return &t[..i];
                }
            }
            _ => {}
        }
    }
    demangled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: EntryKind, name: &str) -> Entry {
        Entry {
            kind,
            id: Some(1),
            name: name.into(),
            source_loc: None,
        }
    }

    #[test]
    fn template_kernels_match_by_base_name() {
        assert_eq!(
            base_names("void ns::triad_kernel<float>(float*, int)"),
            vec![
                "ns::triad_kernel<float>",
                "ns::triad_kernel",
                "triad_kernel<float>",
                "triad_kernel"
            ]
        );
        let r = Requirement::parse("kernel:triad_kernel").unwrap();
        assert!(r.matches_entry(&entry(EntryKind::Kernel, "_Z12triad_kernelIfEvPKT_S2_PS0_")));
        let r = Requirement::parse("kernel:triad_kernel<float>").unwrap();
        assert!(r.matches_entry(&entry(EntryKind::Kernel, "_Z12triad_kernelIfEvPKT_S2_PS0_")));
        let r = Requirement::parse("kernel:triad").unwrap();
        assert!(!r.matches_entry(&entry(EntryKind::Kernel, "_Z12triad_kernelIfEvPKT_S2_PS0_")));
    }

    #[test]
    fn specs() {
        assert!(matches!(
            Requirement::parse("user"),
            Err(RequireError::NoColon(_))
        ));
        assert!(matches!(
            Requirement::parse("users:x"),
            Err(RequireError::UnknownKind { .. })
        ));
        assert!(matches!(
            Requirement::parse("user:"),
            Err(RequireError::EmptyPattern(_))
        ));
        assert!(matches!(
            Requirement::parse("user:[x"),
            Err(RequireError::BadGlob { .. })
        ));
        let r = Requirement::parse("kernel:my_kernel").unwrap();
        assert!(r.matches_entry(&entry(EntryKind::Kernel, "_Z9my_kernelPfi")));
        let r = Requirement::parse("kernel:my_kernel(float*, int)").unwrap();
        assert!(r.matches_entry(&entry(EntryKind::Kernel, "_Z9my_kernelPfi")));
        let r = Requirement::parse("kernel:_Z9my_*").unwrap();
        assert!(r.matches_entry(&entry(EntryKind::Kernel, "_Z9my_kernelPfi")));
        assert!(!r.matches_entry(&entry(EntryKind::Function, "_Z9my_kernelPfi")));
        let b = Requirement::parse("barrier:*").unwrap();
        assert!(b.matches_entry(&entry(EntryKind::Point, "barrier_wait")));
        assert!(!b.matches_entry(&entry(EntryKind::Point, "vmem_load")));
        let m = Requirement::parse("memory:vmem_*").unwrap();
        assert!(m.matches_entry(&entry(EntryKind::Point, "vmem_store")));
        let a = Requirement::parse("address:*load*").unwrap();
        assert!(a.matches_entry(&entry(EntryKind::Point, "addr_trace_lds_load")));
        assert!(!a.matches_entry(&entry(EntryKind::Point, "load")));
        assert_eq!(strip_params("a::b<int>(int (*)(int)) const"), "a::b<int>");
    }
}

//! The JSON report of `sqtt-hipcc --check --json` (schema documented in docs/check-json.md).
//! Versioned: [`SCHEMA_VERSION`] grows when a field changes meaning or disappears; new fields
//! may be added without a bump.

use serde::{Deserialize, Serialize};

use crate::{demangle, CodeObject, EntryKind, FuncmapState};

/// Version of the report schema.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub schema_version: u32,
    /// Tool that wrote the report, e.g. `sqtt-hipcc 0.1.0`.
    pub tool: String,
    /// `--arch` filter, when given.
    pub arch_filter: Option<String>,
    pub files: Vec<FileReport>,
    pub requirements: Vec<RequirementReport>,
    /// Every selected code object valid (or not yet linked) and every requirement met.
    pub ok: bool,
    /// The process exit status: 0 ok, 1 check failed, 2 usage error.
    pub exit_code: i32,
}

/// One input file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileReport {
    pub path: String,
    /// Why the file could not be read; `code_objects` is empty then.
    pub error: Option<String>,
    /// Selected code objects (all, without `--arch`).
    pub code_objects: Vec<CodeObjectReport>,
}

/// One code object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeObjectReport {
    pub location: String,
    pub bundle_index: Option<usize>,
    pub target_id: String,
    pub arch: String,
    /// `ok`, `missing`, `invalid` or `not_linked`.
    pub status: String,
    pub problems: Vec<String>,
    pub summary: Summary,
    /// Funcmaps the section joins (1; more after an `-fgpu-rdc` link), 0 without funcmap.
    pub translation_units: usize,
    pub entries: Vec<EntryReport>,
}

/// The counts of the one-line CI summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub kernels: usize,
    pub functions: usize,
    pub user: usize,
    pub points: usize,
    /// Markers with `extra_payload_count > 0`.
    pub payload_markers: usize,
    pub wave_size: Option<u32>,
    /// `M:` layout, `None` for the legacy full-ID layout.
    pub shader_clock_bits: Option<u32>,
    pub shader_clock_shift: Option<u32>,
}

impl Summary {
    pub fn of(co: &CodeObject) -> Summary {
        let Some(m) = co.funcmap.map() else {
            return Summary::default();
        };
        let mut s = Summary {
            payload_markers: m.payloads.iter().filter(|(_, n)| *n > 0).count(),
            wave_size: m.wave_size,
            shader_clock_bits: m.clock_layout.map(|l| l.shader_clock_bits),
            shader_clock_shift: m.clock_layout.map(|l| l.shader_clock_shift),
            ..Summary::default()
        };
        for e in &m.entries {
            *s.count_of(e.kind) += 1;
        }
        s
    }

    /// The count of a row kind. Every kind has one: a new [`EntryKind`] stops the build here
    /// until the summary counts it (and docs/check-json.md names the field).
    fn count_of(&mut self, kind: EntryKind) -> &mut usize {
        match kind {
            EntryKind::Kernel => &mut self.kernels,
            EntryKind::Function => &mut self.functions,
            EntryKind::User => &mut self.user,
            EntryKind::Point => &mut self.points,
        }
    }

    /// `off` or `BITS@SHIFT`.
    pub fn clock_text(&self) -> String {
        match (self.shader_clock_bits, self.shader_clock_shift) {
            (Some(b), Some(s)) => format!("{b}@{s}"),
            _ => "off".into(),
        }
    }
}

/// One funcmap row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryReport {
    /// `kernel`, `function`, `user` or `point` (`EntryKind::json_name`).
    pub kind: EntryKind,
    pub id: Option<u32>,
    pub name: String,
    /// The demangled name, when it differs.
    pub demangled: Option<String>,
    pub source_loc: Option<String>,
    /// Address of the kernel's or function's symbol.
    pub vaddr: Option<u64>,
    /// A function row without a symbol (inlined everywhere).
    pub inlined: bool,
    pub extra_payload_count: u32,
    pub address_trace: bool,
}

impl CodeObjectReport {
    pub fn of(co: &CodeObject) -> CodeObjectReport {
        let mut entries = Vec::new();
        if let Some(m) = co.funcmap.map() {
            for e in crate::table::ordered_entries(m) {
                let sym = co.symbol(&e.name);
                let vaddr = match e.kind {
                    EntryKind::Kernel | EntryKind::Function => sym.map(|s| s.vaddr),
                    _ => None,
                };
                let d = demangle(&e.name);
                entries.push(EntryReport {
                    kind: e.kind,
                    id: e.id,
                    name: e.name.clone(),
                    demangled: (d != e.name).then_some(d),
                    source_loc: e.source_loc.clone(),
                    vaddr,
                    inlined: e.kind == EntryKind::Function && sym.is_none(),
                    extra_payload_count: e.id.map(|i| m.payload_count(i)).unwrap_or(0),
                    address_trace: e.is_address_trace(),
                });
            }
        }
        let translation_units = match &co.funcmap {
            FuncmapState::Present { parts, .. } => *parts,
            _ => 0,
        };
        CodeObjectReport {
            location: co.location.clone(),
            bundle_index: co.bundle_index,
            target_id: co.target_id.clone(),
            arch: co.arch.clone(),
            status: co.funcmap.status().into(),
            problems: co.funcmap.problem_texts(),
            summary: Summary::of(co),
            translation_units,
            entries,
        }
    }
}

/// One `--require` spec and where it was looked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementReport {
    pub spec: String,
    pub kind: crate::require::ReqKind,
    pub pattern: String,
    /// Met in every selected code object.
    pub satisfied: bool,
    pub results: Vec<RequirementResult>,
}

/// A requirement in one code object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequirementResult {
    pub path: String,
    pub location: String,
    pub arch: String,
    pub satisfied: bool,
    /// Names of the rows that satisfy it.
    pub matches: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Funcmap, FuncmapState};

    fn code_object(funcmap: &str) -> CodeObject {
        CodeObject {
            location: "code object".into(),
            bundle_index: None,
            bundle_entry_id: None,
            target_id: "amdgcn-amd-amdhsa--gfx90a".into(),
            arch: "gfx90a".into(),
            funcmap: FuncmapState::Present {
                map: Funcmap::parse(funcmap.as_bytes()).unwrap(),
                problems: Vec::new(),
                parts: 1,
            },
            symbols: Vec::new(),
            size: 0,
            code: Default::default(),
        }
    }

    /// Each row is counted once, under its own kind: the counts add up to the rows.
    #[test]
    fn the_summary_counts_every_row_by_its_kind() {
        let co = code_object(
            "K:_Z1kv\nK:_Z2k2v\nF:1:_Z1fv\nU:2:work\nU:3:more\nU:4:most\nP:5:barrier\n",
        );
        let s = Summary::of(&co);
        assert_eq!(
            (s.kernels, s.functions, s.user, s.points),
            (2, 1, 3, 1),
            "{s:?}"
        );
        let map = co.funcmap.map().unwrap();
        assert_eq!(
            s.kernels + s.functions + s.user + s.points,
            map.entries.len()
        );
        for kind in EntryKind::ALL {
            assert!(map.entries.iter().any(|e| e.kind == kind), "{kind:?}");
        }
    }
}

//! Marker IDs.
//!
//! The early phase records what it instrumented in module metadata (`!sqtt.markers.early`) and
//! writes each bare marker's key and role into its asm text ([`placeholder_asm`]); keys carry a
//! per-translation-unit prefix so that modules linked together (`-fgpu-rdc`) never mix them
//! up. The late phase reads the ledger back, applies the function threshold, compacts the
//! surviving IDs by emission count (ties by original order) and allocates every later ID from
//! the same counter ([`FinalIds`]).

use std::collections::HashMap;

use sqtt_markers::funcmap::{Entry, EntryKind, Funcmap};

use crate::llvm::{MdItem, Module, Value};

/// Module metadata holding the early ledger.
pub const EARLY_LEDGER_MD: &str = "sqtt.markers.early";
/// Instruction metadata `!{!"function"}` on the bare early markers of a function at or below the
/// threshold before optimisation, which the late phase removes if that function is gone by then
/// (see [`crate::prune`]). Only a hint (other placeholders carry none): a marker's identity is
/// its asm text, and the optimiser may drop the tag ([`placeholder_asm`]).
pub const MARKER_TAG_MD: &str = "sqtt.m";

/// What the asm text of every bare early marker starts with (an asm comment: it emits nothing
/// if one ever reached codegen).
pub const PLACEHOLDER_PREFIX: &str = "; sqtt marker ";

/// The asm text of a bare early marker: `; sqtt marker KEY ROLE`. The identity lives in the
/// text, not in metadata, because SimplifyCFG hoists or sinks identical calls from the two
/// sides of a branch into one and drops the metadata it does not know: with one text for every
/// placeholder, `if (c) point("a"); else point("b");` became a single untagged asm and both
/// markers vanished. Placeholders of different markers now differ (the optimiser cannot merge
/// calls of different asm), and two copies of the same marker merged into one remain that marker,
/// met once on every path as before.
pub fn placeholder_asm(key: u64, role: Role) -> String {
    format!("{PLACEHOLDER_PREFIX}{key} {}", role as u64)
}

/// What an early ledger entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EarlyKind {
    Function,
    Scope,
    Point,
    /// A point followed by one payload record.
    Data,
}

impl EarlyKind {
    fn code(self) -> &'static str {
        match self {
            EarlyKind::Function => "F",
            EarlyKind::Scope => "U",
            EarlyKind::Point => "P",
            EarlyKind::Data => "D",
        }
    }
    fn from_code(s: &str) -> Option<EarlyKind> {
        Some(match s {
            "F" => EarlyKind::Function,
            "U" => EarlyKind::Scope,
            "P" => EarlyKind::Point,
            "D" => EarlyKind::Data,
            _ => return None,
        })
    }
}

/// What a bare early marker does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Enter = 0,
    Exit = 1,
    ExitEnter = 2,
    Point = 3,
}

impl Role {
    fn from_code(v: u64) -> Option<Role> {
        Some(match v {
            0 => Role::Enter,
            1 => Role::Exit,
            2 => Role::ExitEnter,
            3 => Role::Point,
            _ => return None,
        })
    }

    /// Whether the marker's value carries its ID (exits do not).
    pub fn emits_id(self) -> bool {
        !matches!(self, Role::Exit)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyEntry {
    pub key: u64,
    pub kind: EarlyKind,
    pub name: String,
    pub source_loc: Option<String>,
    /// Size before optimisation (functions).
    pub pre_size: u64,
}

/// The early phase's ledger, written into the module.
pub struct EarlyLedger {
    tu: u64,
    next_local: u64,
    by_name: HashMap<(EarlyKind, String), u64>,
    entries: Vec<EarlyEntry>,
    tag_kind: u32,
}

/// A stable 32-bit hash of a module identifier (FNV-1a), the key prefix of its markers.
fn tu_hash(s: &str) -> u64 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    u64::from(h)
}

impl EarlyLedger {
    pub fn new(m: Module) -> EarlyLedger {
        EarlyLedger {
            tu: tu_hash(&m.identifier()),
            next_local: 1,
            by_name: HashMap::new(),
            entries: Vec::new(),
            tag_kind: m.md_kind(MARKER_TAG_MD),
        }
    }

    fn add(
        &mut self,
        kind: EarlyKind,
        name: &str,
        source_loc: Option<String>,
        pre_size: u64,
    ) -> u64 {
        let key = (self.tu << 32) | self.next_local;
        self.next_local += 1;
        self.entries.push(EarlyEntry {
            key,
            kind,
            name: name.to_string(),
            source_loc,
            pre_size,
        });
        key
    }

    /// A named user scope or point (deduplicated per kind).
    pub fn named(&mut self, kind: EarlyKind, name: &str) -> u64 {
        if let Some(k) = self.by_name.get(&(kind, name.to_string())) {
            return *k;
        }
        let key = self.add(kind, name, None, 0);
        self.by_name.insert((kind, name.to_string()), key);
        key
    }

    pub fn function(&mut self, name: &str, source_loc: Option<String>, pre_size: u64) -> u64 {
        self.add(EarlyKind::Function, name, source_loc, pre_size)
    }

    /// Tags a bare marker of a small function (pre-optimisation size at or below the threshold)
    /// with that function's name: once the function has no definition, the marker is certain to
    /// go.
    pub fn tag_removable(&self, m: Module, inst: Value, function: &str) {
        let node = m.md_node(&[MdItem::Str(function.to_string())]);
        inst.set_metadata(self.tag_kind, node);
    }

    pub fn write(&self, m: Module) {
        for e in &self.entries {
            m.add_named_md(
                EARLY_LEDGER_MD,
                m.md_node(&[
                    MdItem::Int(e.key),
                    MdItem::Str(e.kind.code().into()),
                    MdItem::Str(e.name.clone()),
                    MdItem::Str(e.source_loc.clone().unwrap_or_default()),
                    MdItem::Int(e.pre_size),
                ]),
            );
        }
        if self.entries.is_empty() {
            // An empty ledger still says "the early phase ran".
            m.add_named_md(EARLY_LEDGER_MD, m.md_node(&[]));
        }
    }
}

/// Whether the early phase ran on (or was linked into) this module.
pub fn has_early_ledger(m: Module) -> bool {
    !m.named_md(EARLY_LEDGER_MD).is_empty()
}

/// The early ledger entries of a module (all linked translation units).
pub fn read_early(m: Module) -> Vec<EarlyEntry> {
    let mut out: Vec<EarlyEntry> = Vec::new();
    for node in m.named_md(EARLY_LEDGER_MD) {
        let [MdItem::Int(key), MdItem::Str(kind), MdItem::Str(name), MdItem::Str(loc), MdItem::Int(pre_size)] =
            node.as_slice()
        else {
            continue;
        };
        let Some(kind) = EarlyKind::from_code(kind) else {
            continue;
        };
        if out.iter().any(|e| e.key == *key) {
            continue;
        }
        out.push(EarlyEntry {
            key: *key,
            kind,
            name: name.clone(),
            source_loc: (!loc.is_empty()).then(|| loc.clone()),
            pre_size: *pre_size,
        });
    }
    out
}

/// The key and role of a bare early marker, read from its asm text ([`placeholder_asm`]); None
/// for any other instruction.
pub fn read_tag(inst: Value) -> Option<(u64, Role)> {
    let text = inst.called_inline_asm()?.strip_prefix(PLACEHOLDER_PREFIX)?;
    let (key, role) = text.split_once(' ')?;
    Some((key.parse().ok()?, Role::from_code(role.parse().ok()?)?))
}

/// The function named by a bare marker's tag whose disappearance settles that the marker goes.
pub fn removable_if_gone(items: &[MdItem]) -> Option<&str> {
    match items {
        [MdItem::Str(name)] => Some(name),
        _ => None,
    }
}

/// Which named-marker namespace a late-resolved name lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NamedKind {
    /// enter / exit
    Scope,
    Point,
    /// point + payload
    Data,
}

/// The funcmap row groups in AMD's order: the section lists functions (by ID), kernels, named
/// user markers, the pass's barrier/memory points, then address traces (after `W:`), each group
/// but the first in the order its rows were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum RowGroup {
    Function,
    User,
    System,
    Address,
}

/// Final marker IDs, from one counter starting at 1, and the funcmap rows they make.
pub struct FinalIds {
    next_id: u32,
    named: HashMap<(NamedKind, String), u32>,
    /// Rows in the order they were made, with their group and, for named markers resolved early,
    /// their place in the early ledger (AMD keeps that order through compaction).
    entries: Vec<(RowGroup, Option<usize>, Entry)>,
    payloads: Vec<(u32, u32)>,
    pub wave_size: Option<u32>,
}

impl Default for FinalIds {
    fn default() -> Self {
        FinalIds::new()
    }
}

impl FinalIds {
    pub fn new() -> FinalIds {
        FinalIds {
            next_id: 1,
            named: HashMap::new(),
            entries: Vec::new(),
            payloads: Vec::new(),
            wave_size: None,
        }
    }

    fn push(
        &mut self,
        group: RowGroup,
        early_rank: Option<usize>,
        kind: EntryKind,
        name: &str,
        source_loc: Option<String>,
    ) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push((
            group,
            early_rank,
            Entry {
                kind,
                id: Some(id),
                name: name.to_string(),
                source_loc,
            },
        ));
        id
    }

    /// An instrumented function.
    pub fn function(&mut self, name: &str, source_loc: Option<String>) -> u32 {
        self.push(
            RowGroup::Function,
            None,
            EntryKind::Function,
            name,
            source_loc,
        )
    }

    /// A point marker the pass itself defines (barriers, memory, address traces).
    pub fn system_point(&mut self, name: &str, source_loc: Option<String>, payload: u32) -> u32 {
        let group = if name.starts_with(sqtt_markers::funcmap::ADDR_TRACE_PREFIX) {
            RowGroup::Address
        } else {
            RowGroup::System
        };
        let id = self.push(group, None, EntryKind::Point, name, source_loc);
        if payload > 0 {
            self.payloads.push((id, payload));
        }
        id
    }

    /// A named marker, deduplicated per kind.
    pub fn named(&mut self, kind: NamedKind, name: &str) -> u32 {
        self.named_ranked(kind, name, None)
    }

    /// A named marker the early phase resolved, `rank` its place in the early ledger.
    pub fn named_early(&mut self, kind: NamedKind, name: &str, rank: usize) -> u32 {
        self.named_ranked(kind, name, Some(rank))
    }

    fn named_ranked(&mut self, kind: NamedKind, name: &str, rank: Option<usize>) -> u32 {
        if let Some(id) = self.named.get(&(kind, name.to_string())) {
            return *id;
        }
        let entry_kind = match kind {
            NamedKind::Scope => EntryKind::User,
            NamedKind::Point | NamedKind::Data => EntryKind::Point,
        };
        let id = self.push(RowGroup::User, rank, entry_kind, name, None);
        self.named.insert((kind, name.to_string()), id);
        if kind == NamedKind::Data {
            self.payloads.push((id, 1));
        }
        id
    }

    /// The funcmap of the module, rows in AMD's order: functions by ID, the kernels as given
    /// (module order), named markers (those resolved early in early-ledger order, then the
    /// others as met), barrier and memory points, then address traces. Each `R:` row is written
    /// after its marker's row by the writer.
    pub fn funcmap(&self, kernels: Vec<Entry>) -> Funcmap {
        let mut rows: Vec<&(RowGroup, Option<usize>, Entry)> = self.entries.iter().collect();
        // Stable: within a group, rows keep the order they were made in.
        rows.sort_by_key(|(group, rank, e)| match group {
            RowGroup::Function => (*group, 0, e.id.unwrap_or(0) as usize),
            RowGroup::User => (*group, rank.map_or(1, |_| 0), rank.unwrap_or(0)),
            _ => (*group, 0, 0),
        });
        let (functions, rest): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|(group, _, _)| *group == RowGroup::Function);
        let entries = functions
            .into_iter()
            .map(|(_, _, e)| e.clone())
            .chain(kernels)
            .chain(rest.into_iter().map(|(_, _, e)| e.clone()))
            .collect();
        Funcmap {
            entries,
            wave_size: self.wave_size,
            payloads: self.payloads.clone(),
            clock_layout: None,
            malformed_layout: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows come out grouped as AMD's pass writes them, whatever order the IDs were made in.
    #[test]
    fn funcmap_rows_in_amds_order() {
        let mut ids = FinalIds::new();
        // Compaction made a frequent user marker ID 1, ahead of a function and an earlier name.
        assert_eq!(ids.named_early(NamedKind::Scope, "hot", 1), 1);
        assert_eq!(ids.function("_Z1fv", Some("a.hip:3".into())), 2);
        assert_eq!(ids.named_early(NamedKind::Point, "cold", 0), 3);
        assert_eq!(ids.system_point("barrier", None, 0), 4);
        assert_eq!(ids.named(NamedKind::Data, "late"), 5);
        assert_eq!(
            ids.system_point("addr_trace_load", Some("a.hip:9".into()), 66),
            6
        );
        ids.wave_size = Some(64);
        let kernel = Entry {
            kind: EntryKind::Kernel,
            id: None,
            name: "_Z1kv".into(),
            source_loc: Some("a.hip:7".into()),
        };
        let text = ids.funcmap(vec![kernel]).to_string();
        assert_eq!(
            text,
            "F:2:_Z1fv@a.hip:3\nK:_Z1kv@a.hip:7\nP:3:cold\nU:1:hot\nP:5:late\n\
             R:5:extra_payload_count=1\nP:4:barrier\nW:64\nP:6:addr_trace_load@a.hip:9\n\
             R:6:extra_payload_count=66\n"
        );
    }
}

//! Marker IDs: one counter from 1, deduplicated per kind, and the funcmap rows they become.

use std::collections::HashMap;

use sqtt_markers::funcmap::{Entry, EntryKind, Funcmap};

/// Which named-marker namespace a name lives in (names are deduplicated per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NamedKind {
    /// enter / exit
    Scope,
    Point,
    /// point + payload
    Data,
}

#[derive(Default)]
pub struct Ledger {
    next_id: u32,
    named: HashMap<(NamedKind, String), u32>,
    entries: Vec<Entry>,
    payloads: Vec<(u32, u32)>,
    pub wave_size: Option<u32>,
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger {
            next_id: 1,
            ..Ledger::default()
        }
    }

    fn allocate(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// The ID of a named marker, allocated on first sight.
    pub fn named(&mut self, kind: NamedKind, name: &str) -> u32 {
        if let Some(id) = self.named.get(&(kind, name.to_string())) {
            return *id;
        }
        let id = self.allocate();
        self.named.insert((kind, name.to_string()), id);
        self.entries.push(Entry {
            kind: match kind {
                NamedKind::Scope => EntryKind::User,
                NamedKind::Point | NamedKind::Data => EntryKind::Point,
            },
            id: Some(id),
            name: name.to_string(),
            source_loc: None,
        });
        if kind == NamedKind::Data {
            self.payloads.push((id, 1));
        }
        id
    }

    pub fn has_payload_markers(&self) -> bool {
        self.payloads.iter().any(|(_, n)| *n > 0)
    }

    /// The funcmap of the module: kernels first, then markers in ID order, then `R:` rows.
    pub fn funcmap(&self, kernels: Vec<Entry>) -> Funcmap {
        let mut entries = kernels;
        let mut markers = self.entries.clone();
        markers.sort_by_key(|e| e.id);
        entries.extend(markers);
        Funcmap {
            entries,
            wave_size: self.wave_size,
            payloads: self.payloads.clone(),
            clock_layout: None,
            malformed_layout: None,
        }
    }
}

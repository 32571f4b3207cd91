//! The `.sqtt_funcmap` section: one writer and one parser.
//!
//! The section holds rows, each ending in a newline, and a NUL byte after the last (AMD's layout;
//! the parser also reads the older one: rows only separated by newlines, `W:` first, `R:` rows
//! last):
//!
//! ```text
//! F:id:name[@source_loc]      function (enter/exit scope)
//! K:name[@source_loc]         kernel (vaddr lookup only, not instrumented)
//! U:id:name                   user scope marker
//! P:id:name[@source_loc]      point marker (barrier, memory op, user point, address trace)
//! W:N                         wave size (32 or 64)
//! R:id:extra_payload_count=N  payload records following the header of marker `id`
//! M:shader_clock_bits=N;shader_clock_shift=S   gfx12 clock packing layout
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::encoding::{MarkerEncoding, ID_BITS};

/// The ELF section name.
pub const SECTION_NAME: &str = ".sqtt_funcmap";

/// Prefix of address-trace point markers.
pub const ADDR_TRACE_PREFIX: &str = "addr_trace_";

/// Declares an enum and its `ALL` (every variant, in declaration order) from one list, so a new
/// kind is in `ALL`, which the parser looks row letters up in, without anyone having to remember.
macro_rules! with_all {
    ($(#[$attr:meta])* pub enum $name:ident { $($(#[$doc:meta])* $kind:ident,)* }) => {
        $(#[$attr])*
        pub enum $name {
            $($(#[$doc])* $kind,)*
        }

        impl $name {
            /// Every kind, in declaration order.
            pub const ALL: [$name; [$(stringify!($kind)),*].len()] = [$($name::$kind),*];
        }
    };
}

with_all! {
    /// The kind of a funcmap row that names a marker or a kernel. Every spelling of a kind lives
    /// here: the row prefix ([`EntryKind::prefix`]), the table word ([`EntryKind::label`]), the
    /// JSON name ([`EntryKind::json_name`], also its serde form) and the words other writers use
    /// ([`EntryKind::from_word`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
    pub enum EntryKind {
        /// `F:` an instrumented function.
        Function,
        /// `K:` a kernel (no marker ID).
        Kernel,
        /// `U:` a named user scope.
        User,
        /// `P:` a point marker.
        Point,
    }
}

impl EntryKind {
    /// The row's type letter.
    pub fn prefix(self) -> char {
        match self {
            EntryKind::Function => 'F',
            EntryKind::Kernel => 'K',
            EntryKind::User => 'U',
            EntryKind::Point => 'P',
        }
    }

    /// The kind of a row type letter (`W:`, `R:`, `M:` rows are no entries).
    pub fn from_prefix(c: char) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|k| k.prefix() == c)
    }

    /// The name in JSON reports (`function`, `kernel`, `user`, `point`).
    pub fn json_name(self) -> &'static str {
        match self {
            EntryKind::Function => "function",
            EntryKind::Kernel => "kernel",
            EntryKind::User => "user",
            EntryKind::Point => "point",
        }
    }

    /// A kind from any of its words, case-insensitive: the prefix letter, the table word or the
    /// JSON name (`f`, `func`, `function`; ...), as other writers of funcmap tables (att_tool's
    /// `code.json`) spell them.
    pub fn from_word(word: &str) -> Option<EntryKind> {
        let w = word.trim().to_ascii_lowercase();
        EntryKind::ALL.into_iter().find(|k| {
            w.len() == 1 && w.starts_with(k.prefix().to_ascii_lowercase())
                || w == k.label()
                || w == k.json_name()
        })
    }

    /// Whether rows of this kind carry a marker ID (all but kernels).
    pub fn has_id(self) -> bool {
        self != EntryKind::Kernel
    }

    /// The word the funcmap table prints (`func`, `kernel`, `user`, `point`).
    pub fn label(self) -> &'static str {
        match self {
            EntryKind::Function => "func",
            EntryKind::Kernel => "kernel",
            EntryKind::User => "user",
            EntryKind::Point => "point",
        }
    }

    /// Whether a row of this kind named `name` (or starting with it) has a `@location` part:
    /// kernels, functions and address-trace points; user names are taken whole (they may hold
    /// `@`).
    pub fn carries_source_loc(self, name: &str) -> bool {
        match self {
            EntryKind::Function | EntryKind::Kernel => true,
            EntryKind::Point => name.starts_with(ADDR_TRACE_PREFIX),
            EntryKind::User => false,
        }
    }

    /// Whether markers of this kind push and pop scopes.
    pub fn is_scope(self) -> bool {
        matches!(self, EntryKind::Function | EntryKind::User)
    }
}

/// One `F:`, `K:`, `U:` or `P:` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Marker ID; `None` for kernels.
    pub id: Option<u32>,
    pub name: String,
    /// Inline chain `inner:line -> outer:line`, when known.
    pub source_loc: Option<String>,
}

impl Entry {
    /// A row of `kind` for a name as another writer gives it (att_tool's `code.json`): the
    /// location is kept where the row grammar has one (functions, kernels, address traces) and
    /// dropped elsewhere; `id` must be given exactly when the kind has one. `None` for a name
    /// that cannot go into a row ([`name_problem`]) or a location with a line break.
    pub fn new(
        kind: EntryKind,
        id: Option<u32>,
        name: &str,
        source_loc: Option<&str>,
    ) -> Option<Entry> {
        if name_problem(name).is_some() || id.is_some() != kind.has_id() {
            return None;
        }
        let keeps_loc = kind.carries_source_loc(name);
        let source_loc = source_loc
            .filter(|l| keeps_loc && !l.is_empty())
            .map(str::to_string);
        if source_loc
            .as_deref()
            .is_some_and(|l| l.contains(['\n', '\r', '\0']))
        {
            return None;
        }
        Some(Entry {
            kind,
            id,
            name: name.to_string(),
            source_loc,
        })
    }

    pub fn is_address_trace(&self) -> bool {
        self.kind == EntryKind::Point && self.name.starts_with(ADDR_TRACE_PREFIX)
    }
}

/// `M:` row contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockLayout {
    pub shader_clock_bits: u32,
    pub shader_clock_shift: u32,
}

impl ClockLayout {
    /// A layout that fits the 32-bit header: fewer than 30 clock bits (one ID bit is left) and
    /// the sampled window inside the low word.
    pub fn new(shader_clock_bits: u32, shader_clock_shift: u32) -> Option<ClockLayout> {
        (shader_clock_bits < ID_BITS && shader_clock_bits.checked_add(shader_clock_shift)? <= 32)
            .then_some(ClockLayout {
                shader_clock_bits,
                shader_clock_shift,
            })
    }

    /// The `M:` row text after the prefix.
    pub fn row_text(self) -> String {
        format!(
            "shader_clock_bits={};shader_clock_shift={}",
            self.shader_clock_bits, self.shader_clock_shift
        )
    }
}

/// A parsed (or to-be-written) funcmap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Funcmap {
    /// `F:`, `K:`, `U:`, `P:` rows in section order.
    pub entries: Vec<Entry>,
    /// `W:` row.
    pub wave_size: Option<u32>,
    /// `R:` rows: marker ID -> extra payload count, in section order.
    pub payloads: Vec<(u32, u32)>,
    /// `M:` row, when well formed.
    pub clock_layout: Option<ClockLayout>,
    /// The text of an `M:` row that could not be read (the no-clock layout applies then).
    pub malformed_layout: Option<String>,
}

/// A row the parser could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("funcmap row {line}: {reason}: {text:?}")]
pub struct ParseError {
    /// 1-based row number.
    pub line: usize,
    pub text: String,
    pub reason: &'static str,
}

/// A problem of a well-formed funcmap that makes it unusable for decoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("marker ID {id} is used by more than one row ({first} and {second})")]
    DuplicateId {
        id: u32,
        first: String,
        second: String,
    },
    #[error("marker ID {id} of {name:?} does not fit the {bits}-bit ID field")]
    IdTooWide { id: u32, name: String, bits: u32 },
    #[error("marker ID 0 is reserved ({name:?})")]
    ZeroId { name: String },
    #[error("R: row names marker ID {id}, which no F:/U:/P: row defines")]
    PayloadForUnknownId { id: u32 },
    #[error("more than one R: row for marker ID {id}")]
    DuplicatePayload { id: u32 },
    #[error("W: row gives wave size {0}; expected 32 or 64")]
    BadWaveSize(u32),
    #[error("M: row is malformed: {0:?}")]
    MalformedLayout(String),
    #[error("marker ID {id} carries payload records, which clock packing (M: row) does not allow")]
    PayloadWithClockPacking { id: u32 },
}

impl Funcmap {
    /// Parses the section bytes. A linker that concatenates several translation units' sections
    /// leaves several NUL-terminated texts: their rows are read as one funcmap, so that
    /// [`Funcmap::validate`] sees IDs that collide across them.
    pub fn parse(bytes: &[u8]) -> Result<Funcmap, ParseError> {
        let text: String = bytes
            .split(|b| *b == 0)
            .filter(|chunk| !chunk.is_empty())
            .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
            .collect::<Vec<_>>()
            .join("\n");
        Funcmap::parse_str(&text)
    }

    /// Parses the section text.
    pub fn parse_str(text: &str) -> Result<Funcmap, ParseError> {
        let mut map = Funcmap::default();
        for (i, raw) in text.split('\n').enumerate() {
            // CRLF endings are accepted, so a row never ends in `\r` (all of them are dropped:
            // a name cannot end in one, which keeps printing and parsing a round trip).
            let row = raw.trim_end_matches('\r');
            if row.trim().is_empty() {
                continue;
            }
            let err = |reason| ParseError {
                line: i + 1,
                text: row.to_string(),
                reason,
            };
            let (tag, rest) = row.split_once(':').ok_or_else(|| err("no type prefix"))?;
            let mut tag_chars = tag.chars();
            let entry_kind = match (tag_chars.next(), tag_chars.next()) {
                (Some(c), None) => EntryKind::from_prefix(c),
                _ => None,
            };
            match (entry_kind, tag) {
                (Some(kind), _) if kind.has_id() => {
                    let (id, name) = rest
                        .split_once(':')
                        .ok_or_else(|| err("expected ID:name"))?;
                    let id: u32 = parse_id(id).ok_or_else(|| err("bad marker ID"))?;
                    let (name, source_loc) = split_source_loc(kind, name);
                    if name.is_empty() {
                        return Err(err("empty name"));
                    }
                    map.entries.push(Entry {
                        kind,
                        id: Some(id),
                        name,
                        source_loc,
                    });
                }
                (Some(kind), _) => {
                    let (name, source_loc) = split_source_loc(kind, rest);
                    if name.is_empty() {
                        return Err(err("empty kernel name"));
                    }
                    map.entries.push(Entry {
                        kind,
                        id: None,
                        name,
                        source_loc,
                    });
                }
                (None, "W") => {
                    let n: u32 = rest.trim().parse().map_err(|_| err("bad wave size"))?;
                    map.wave_size = Some(n);
                }
                (None, "R") => {
                    let (id, meta) = rest
                        .split_once(':')
                        .ok_or_else(|| err("expected ID:extra_payload_count=N"))?;
                    let id = parse_id(id).ok_or_else(|| err("bad marker ID"))?;
                    let count = meta
                        .split(';')
                        .find_map(|kv| kv.trim().strip_prefix("extra_payload_count="))
                        .ok_or_else(|| err("no extra_payload_count"))?;
                    let count: u32 = count.trim().parse().map_err(|_| err("bad payload count"))?;
                    map.payloads.push((id, count));
                }
                (None, "M") => match parse_layout(rest) {
                    Some(layout) => map.clock_layout = Some(layout),
                    None => map.malformed_layout = Some(rest.to_string()),
                },
                _ => return Err(err("unknown row type")),
            }
        }
        Ok(map)
    }

    /// The section bytes: every row ends in a newline, and a NUL ends the text.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.to_string().into_bytes();
        out.push(0);
        out
    }

    /// Extra payload count of a marker (0 without an `R:` row).
    pub fn payload_count(&self, id: u32) -> u32 {
        self.payloads
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, c)| *c)
            .unwrap_or(0)
    }

    /// The marker row with this ID.
    pub fn by_id(&self, id: u32) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == Some(id))
    }

    /// A lookup table ID -> entry index, for decoders that look up many records.
    pub fn id_index(&self) -> BTreeMap<u32, usize> {
        let mut m = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(id) = e.id {
                m.entry(id).or_insert(i);
            }
        }
        m
    }

    pub fn kernels(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.kind == EntryKind::Kernel)
    }

    /// The marker encoding this funcmap declares.
    pub fn marker_encoding(&self) -> MarkerEncoding {
        match (&self.clock_layout, &self.malformed_layout) {
            (Some(l), _) => MarkerEncoding::packed(l.shader_clock_bits, l.shader_clock_shift),
            (None, Some(text)) => MarkerEncoding::from_row(text),
            (None, None) => MarkerEncoding::legacy(),
        }
    }

    /// Checks IDs unique and within the ID width, `R:` rows naming known IDs, `W:` and `M:`.
    /// Returns every problem found.
    pub fn validate(&self) -> Vec<ValidationError> {
        let mut errs = Vec::new();
        let bits = match self.clock_layout {
            Some(l) => ID_BITS.saturating_sub(l.shader_clock_bits),
            None => ID_BITS,
        };
        let mut seen: BTreeMap<u32, String> = BTreeMap::new();
        for e in &self.entries {
            let Some(id) = e.id else { continue };
            let label = format!("{}:{}:{}", e.kind.prefix(), id, e.name);
            if id == 0 {
                errs.push(ValidationError::ZeroId {
                    name: e.name.clone(),
                });
            }
            if bits < 32 && u64::from(id) >= 1u64 << bits {
                errs.push(ValidationError::IdTooWide {
                    id,
                    name: e.name.clone(),
                    bits,
                });
            }
            if let Some(first) = seen.get(&id) {
                errs.push(ValidationError::DuplicateId {
                    id,
                    first: first.clone(),
                    second: label,
                });
            } else {
                seen.insert(id, label);
            }
        }
        let mut payload_ids = BTreeSet::new();
        for (id, count) in &self.payloads {
            if !seen.contains_key(id) {
                errs.push(ValidationError::PayloadForUnknownId { id: *id });
            }
            if !payload_ids.insert(*id) {
                errs.push(ValidationError::DuplicatePayload { id: *id });
            }
            if *count > 0 && self.clock_layout.is_some_and(|l| l.shader_clock_bits > 0) {
                errs.push(ValidationError::PayloadWithClockPacking { id: *id });
            }
        }
        if let Some(w) = self.wave_size {
            if w != 32 && w != 64 {
                errs.push(ValidationError::BadWaveSize(w));
            }
        }
        if let Some(m) = &self.malformed_layout {
            errs.push(ValidationError::MalformedLayout(m.clone()));
        }
        errs
    }
}

fn parse_id(s: &str) -> Option<u32> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// `name@loc`: kernels and functions (mangled symbols never hold `@`) and address-trace points
/// carry a source location; user scope and user point names are taken whole.
fn split_source_loc(kind: EntryKind, rest: &str) -> (String, Option<String>) {
    if kind.carries_source_loc(rest) {
        if let Some((n, loc)) = rest.split_once('@') {
            if loc.is_empty() {
                // `name\r@` ends the row at the name once the empty location goes: its `\r` is a
                // line ending like any other (printing writes `name\r\n`, read back as `name`).
                return (n.trim_end_matches('\r').to_string(), None);
            }
            return (n.to_string(), Some(loc.to_string()));
        }
    }
    (rest.to_string(), None)
}

/// The text after `M:`, when it is a well-formed layout.
pub(crate) fn parse_layout(rest: &str) -> Option<ClockLayout> {
    let mut bits = None;
    let mut shift = None;
    for kv in rest.split(';') {
        let (k, v) = kv.split_once('=')?;
        let v: u32 = v.trim().parse().ok()?;
        match k.trim() {
            "shader_clock_bits" => bits = Some(v),
            "shader_clock_shift" => shift = Some(v),
            _ => return None,
        }
    }
    ClockLayout::new(bits?, shift?)
}

impl fmt::Display for Funcmap {
    /// The rows in AMD's layout, each ending in a newline: `M:`; the entries in their order, each
    /// marker row directly followed by its `R:` row; `W:` right before the first address-trace
    /// point (at the end when there is none); then any `R:` row no entry claimed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.clock_layout {
            writeln!(f, "M:{}", l.row_text())?;
        }
        // A malformed `M:` row is kept as it was: dropping it would turn a funcmap whose encoding
        // is unknown into one that claims the legacy encoding.
        if let Some(t) = &self.malformed_layout {
            writeln!(f, "M:{t}")?;
        }
        let mut wave_size = self.wave_size;
        let mut payload_written = vec![false; self.payloads.len()];
        for e in &self.entries {
            if e.is_address_trace() {
                if let Some(w) = wave_size.take() {
                    writeln!(f, "W:{w}")?;
                }
            }
            write!(f, "{}:", e.kind.prefix())?;
            if let Some(id) = e.id {
                write!(f, "{id}:")?;
            }
            write!(f, "{}", e.name)?;
            if let Some(loc) = &e.source_loc {
                write!(f, "@{loc}")?;
            }
            writeln!(f)?;
            let Some(id) = e.id else { continue };
            for (i, (pid, n)) in self.payloads.iter().enumerate() {
                if *pid == id && !payload_written[i] {
                    payload_written[i] = true;
                    writeln!(f, "R:{id}:extra_payload_count={n}")?;
                }
            }
        }
        if let Some(w) = wave_size {
            writeln!(f, "W:{w}")?;
        }
        for (i, (id, n)) in self.payloads.iter().enumerate() {
            if !payload_written[i] {
                writeln!(f, "R:{id}:extra_payload_count={n}")?;
            }
        }
        Ok(())
    }
}

/// Why a name cannot go into a funcmap row as it is.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("the name is empty")
    } else if name.contains('\n') || name.contains('\r') {
        Some("the name contains a line break")
    } else if name.contains('\0') {
        Some("the name contains a NUL byte")
    } else {
        None
    }
}

//! Code objects and their funcmaps, with the lookup tables the decoder needs per record.

use std::path::Path;

use rustc_hash::FxHashMap;
use sqtt_codeobj::FuncmapState;
use sqtt_markers::{Entry, EntryKind, Funcmap};

use crate::error::Error;

/// Reads the funcmap of one code object file (`*_code_object_id_<N>.out`, a bare AMDGPU ELF;
/// anything `sqtt-codeobj` reads works): the funcmap of its first code object that has one.
///
/// `Ok(None)` when no code object in the file has a `.sqtt_funcmap` section. This is the one
/// place the trace tools read code objects.
pub fn read_code_object_funcmap(path: &Path) -> Result<Option<Funcmap>, Error> {
    let cos = sqtt_codeobj::read_path(path).map_err(|e| Error::CodeObject(e.to_string()))?;
    let mut malformed = None;
    for co in cos {
        match co.funcmap {
            FuncmapState::Present { map, .. } => return Ok(Some(map)),
            FuncmapState::Malformed(error) => {
                malformed.get_or_insert(error);
            }
            FuncmapState::Missing | FuncmapState::NotLinked => {}
        }
    }
    match malformed {
        Some(error) => Err(Error::Funcmap {
            path: path.to_path_buf(),
            error,
        }),
        None => Ok(None),
    }
}

/// The payload layout of an address-trace header (the table lives in sqtt-markers, next to the
/// plugin that writes it).
pub use sqtt_markers::addr_trace::Layout as AddrCategory;

/// What a marker name says about an address-trace op: category and access kind.
pub fn classify_addr_trace(name: &str) -> Option<(AddrCategory, &'static str)> {
    sqtt_markers::addr_trace::Kind::from_name(name).map(|k| (k.layout, k.access.label()))
}

/// How the decoder treats a marker ID of a code object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerClass {
    /// Not in the funcmap.
    Unknown,
    Function,
    User,
    Point,
    /// An `addr_trace_*` point header.
    Address(AddrCategory),
    /// An `addr_trace_*` name of no known kind.
    AddressUnknown,
}

impl MarkerClass {
    fn of(e: &Entry) -> MarkerClass {
        match e.kind {
            EntryKind::Function => MarkerClass::Function,
            EntryKind::User => MarkerClass::User,
            EntryKind::Kernel => MarkerClass::Unknown,
            EntryKind::Point if e.is_address_trace() => match classify_addr_trace(&e.name) {
                Some((c, _)) => MarkerClass::Address(c),
                None => MarkerClass::AddressUnknown,
            },
            EntryKind::Point => MarkerClass::Point,
        }
    }
}

const DENSE_LIMIT: u32 = 1 << 20;

/// One code object: its funcmap plus per-ID lookup tables.
#[derive(Debug, Clone)]
pub struct CodeObject {
    pub id: u64,
    pub funcmap: Funcmap,
    /// Where the funcmap came from (a file name or `code.json`).
    pub source: String,
    /// Wave size: `W:` row, else what the `R:` counts of address ops imply, else the gfxip's.
    pub wave_size: u32,
    /// The marker layout of the funcmap's `M:` row.
    pub encoding: sqtt_markers::MarkerEncoding,
    /// The packed layout was recorded in `code.json`'s `sqtt_funcmap_layout`, which att_tool
    /// writes; the shaderdata may then hold headers it already restored to the legacy form.
    pub layout_in_code_json: bool,
    /// Given with `--code-object` rather than found in the directory.
    pub from_option: bool,
    dense: Vec<IdRow>,
    sparse: FxHashMap<u32, IdRow>,
}

/// What the tables keep per marker ID: class, payload count and funcmap entry index.
#[derive(Debug, Clone, Copy)]
struct IdRow {
    class: MarkerClass,
    payload: u32,
    /// Index into the funcmap's entries; `u32::MAX`: no entry.
    entry: u32,
}

const NO_ROW: IdRow = IdRow {
    class: MarkerClass::Unknown,
    payload: 0,
    entry: u32::MAX,
};

/// What a code object says about one marker ID.
#[derive(Debug, Clone, Copy)]
pub struct Lookup<'a> {
    pub class: MarkerClass,
    /// Payload records after the header (the `R:` count, or the address-trace framing).
    pub payload: u32,
    /// The funcmap entry; `None` for an ID not in the funcmap.
    pub entry: Option<&'a Entry>,
}

impl CodeObject {
    /// Builds the tables. `default_wave_size` is used when the funcmap does not tell.
    pub fn new(id: u64, funcmap: Funcmap, source: String, default_wave_size: u32) -> CodeObject {
        let inferred = funcmap.entries.iter().find_map(|e| {
            let (cat, _) = classify_addr_trace(&e.name).filter(|_| e.is_address_trace())?;
            cat.wave_size_from_payload(funcmap.payload_count(e.id?))
        });
        let wave_size = funcmap
            .wave_size
            .filter(|w| *w == 32 || *w == 64)
            .or(inferred)
            .unwrap_or(default_wave_size);
        let mut dense = Vec::new();
        let mut sparse = FxHashMap::default();
        for (i, e) in funcmap.entries.iter().enumerate() {
            let Some(mid) = e.id else { continue };
            let class = MarkerClass::of(e);
            let mut n = funcmap.payload_count(mid);
            if let (MarkerClass::Address(cat), 0) = (class, n) {
                // No R: row (an older funcmap): the framing of W: and the op kind.
                n = cat.payload_records(wave_size);
            }
            let v = IdRow {
                class,
                payload: n,
                entry: i as u32,
            };
            if mid < DENSE_LIMIT {
                if dense.len() <= mid as usize {
                    dense.resize(mid as usize + 1, NO_ROW);
                }
                if dense[mid as usize].entry == u32::MAX {
                    dense[mid as usize] = v;
                }
            } else {
                sparse.entry(mid).or_insert(v);
            }
        }
        CodeObject {
            id,
            layout_in_code_json: false,
            from_option: false,
            encoding: funcmap.marker_encoding(),
            funcmap,
            source,
            wave_size,
            dense,
            sparse,
        }
    }

    /// Class, payload count and entry of marker `id`.
    #[inline]
    pub fn lookup(&self, id: u32) -> Lookup<'_> {
        let row = match self.dense.get(id as usize) {
            Some(row) => *row,
            None if id < DENSE_LIMIT => NO_ROW,
            None => self.sparse.get(&id).copied().unwrap_or(NO_ROW),
        };
        Lookup {
            class: row.class,
            payload: row.payload,
            entry: self.funcmap.entries.get(row.entry as usize),
        }
    }

    /// Whether marker `id` is in the funcmap.
    #[inline]
    pub fn knows(&self, id: u32) -> bool {
        match self.dense.get(id as usize) {
            Some(row) => row.entry != u32::MAX,
            None => id >= DENSE_LIMIT && self.sparse.contains_key(&id),
        }
    }

    /// Kernel names of the `K:` rows.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.funcmap.kernels().map(|e| e.name.as_str())
    }
}

/// Wave size of a gfxip name: wave64 on gfx9 (CDNA), wave32 on gfx10+; wave64 when unknown.
pub fn default_wave_size(gfxip: Option<&str>) -> u32 {
    gfxip
        .and_then(sqtt_gfx::Generation::of_name)
        .map_or(64, sqtt_gfx::Generation::default_wave_size)
}

/// Demangles an Itanium C++ name when it is one (a kernel descriptor's `.kd` suffix is
/// dropped first); other names are returned unchanged.
pub fn demangle(name: &str) -> String {
    let base = name.strip_suffix(".kd").unwrap_or(name);
    let d = sqtt_codeobj::demangle(base);
    if d == base {
        name.to_string()
    } else {
        d
    }
}

/// A readable short form of a (demangled) C++ name: template arguments, the parameter list,
/// cv/ref qualifiers and the return type dropped, so that
/// `void ns::scan<cfg<256u>, int>(int*, unsigned int)` becomes `ns::scan`. Anonymous
/// namespaces, lambda names (`{lambda(int)#1}`) and operator names are kept.
pub fn short_name(name: &str) -> String {
    const ANON: &str = "(anonymous namespace)";
    let mut out = String::with_capacity(name.len());
    // Byte offsets in `out` of the top-level spaces (where a return type may end).
    let mut cuts: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < name.len() {
        let rest = &name[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if depth == 0 {
            if rest.starts_with(ANON) {
                out.push_str(ANON);
                i += ANON.len();
                continue;
            }
            if c == '{' {
                // A lambda or unnamed type: kept whole.
                let end = matching(rest, '{', '}').unwrap_or(rest.len());
                out.push_str(&rest[..end]);
                i += end;
                continue;
            }
            if let Some(op) = rest.strip_prefix("operator") {
                let starts_word = !out
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_');
                let sym: usize = if op.starts_with("()") {
                    2
                } else {
                    op.chars()
                        .take_while(|ch| "+-*/%^&|~!=<>[],".contains(*ch))
                        .map(char::len_utf8)
                        .sum()
                };
                if starts_word && (sym > 0 || op.starts_with(' ')) {
                    out.push_str("operator");
                    out.push_str(&op[..sym]);
                    i += "operator".len() + sym;
                    if sym == 0 {
                        // `operator new`, `operator int`: the word that follows is the name.
                        out.push(' ');
                        i += 1;
                        let word: usize = name[i..]
                            .chars()
                            .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                            .map(char::len_utf8)
                            .sum();
                        out.push_str(&name[i..i + word]);
                        i += word;
                    }
                    continue;
                }
            }
        }
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => {
                cuts.push(out.len());
                out.push(' ');
            }
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        i += c.len_utf8();
    }
    // Trailing qualifiers (` const`, ` volatile`, `&`, `&&`).
    loop {
        let t = out.trim_end();
        let t = t.trim_end_matches('&').trim_end();
        let stripped = ["const", "volatile"]
            .iter()
            .find_map(|q| t.strip_suffix(q).filter(|r| r.ends_with(' ')));
        let next = stripped.unwrap_or(t).trim_end().len();
        if next == out.len() {
            break;
        }
        out.truncate(next);
    }
    // The return type ends at the last top-level space still inside the name.
    if let Some(&cut) = cuts.iter().rev().find(|&&c| c < out.len()) {
        out.drain(..=cut);
    }
    if out.is_empty() {
        name.to_string()
    } else {
        out
    }
}

/// The byte length of the group `open ... close` at the start of `s` (nesting counted).
fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i + c.len_utf8());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn short_names_drop_templates_parameters_and_return_types() {
        for (long, short) in [
            (
                "void rocprim::detail::scan_kernel<rocprim::detail::config<256u>, int>(int*, unsigned int, std::pair<int, float>)",
                "rocprim::detail::scan_kernel",
            ),
            (
                "rocprim::detail::(anonymous namespace)::helper(int (*)(int), char)",
                "rocprim::detail::(anonymous namespace)::helper",
            ),
            (
                "rocprim::detail::operator<(rocprim::detail::config<1u>, rocprim::detail::config<1u>)",
                "rocprim::detail::operator<",
            ),
            (
                "int rocprim::detail::block_scan<int>::reduce<main::{lambda(int)#1}>(int, main::{lambda(int)#1}) const",
                "rocprim::detail::block_scan::reduce",
            ),
            ("std::pair<int, float>::pair<int, float, true>()", "std::pair::pair"),
            ("Foo::operator()(int) const &", "Foo::operator()"),
            ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"),
            ("unsigned long long ns::f<3>()", "ns::f"),
            ("kernel_a(float*, int)", "kernel_a"),
            ("ns::operator new(unsigned long)", "ns::operator new"),
            ("load_phase", "load_phase"),
            ("_Z8kernel_aPfi", "_Z8kernel_aPfi"),
            ("broken<(", "broken"),
            ("", ""),
        ] {
            assert_eq!(short_name(long), short, "{long}");
        }
    }
}
